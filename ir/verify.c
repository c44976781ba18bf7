/*
 * verify.c: checks every invariant of a graph and reports every problem, not only the first.
 *
 * Graphs built through the API or the parser are already checked node by node; the verifier is
 * the safety net for graphs changed afterwards (lower/pipeline.c runs it after every pass in
 * debug builds, or with PORTC_VERIFY_PASSES) and for whole-graph
 * rules: there are outputs, names are unique, each node's recorded type is what inference gives.
 * Like Mesa's validate, it prints the graph with each problem under the node it concerns.
 */
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "graph.h"

typedef struct problem {
  int node; /* -1: the graph as a whole */
  char *msg;
} problem;

typedef struct vstate {
  const portc_graph *g;
  problem *p;
  int n, cap;
} vstate;

static void report(vstate *v, int node, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(vstate *v, int node, const char *fmt, ...) {
  if (v->n == v->cap) {
    int cap = v->cap ? v->cap * 2 : 16;
    problem *p = realloc(v->p, (size_t)cap * sizeof *p);
    if (!p) return;
    v->p = p;
    v->cap = cap;
  }
  strbuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  v->p[v->n++] = (problem){node, sb_take(&b)};
}

static bool shape_ok(vstate *v, int i, const shape *s) {
  bool ok = true;
  if (s->rank < 0 || s->rank > PORTC_MAX_RANK) {
    report(v, i, "rank %d is outside 0..%d", s->rank, PORTC_MAX_RANK);
    return false;
  }
  for (int k = 0; k < s->rank; k++) {
    if (s->d[k].sym >= v->g->nsyms) report(v, i, "dimension %d names symbol #%d, which does not exist", k, s->d[k].sym), ok = false;
    else if (s->d[k].sym < 0 && s->d[k].c < 0) report(v, i, "dimension %d is negative (%lld)", k, (long long)s->d[k].c), ok = false;
  }
  return ok;
}

static void check_source(vstate *v, int i, const node *n) {
  if (!dtype_valid_in_graph(n->dt)) report(v, i, "dtype %d is not a graph dtype", (int)n->dt);
  if (n->nin) report(v, i, "a source has %d inputs", n->nin);
  if (n->op == OP_const) {
    int64_t numel = shape_numel_const(&n->sh);
    if (numel < 0) report(v, i, "a constant has a symbolic dimension");
    else if (n->value.n != numel) report(v, i, "holds %lld values for %lld elements", (long long)n->value.n, (long long)numel);
    else if (numel && !(dtype_is_float(n->dt) ? (void *)n->value.f : (void *)n->value.i)) report(v, i, "has no value storage for its dtype");
  }
  if (n->op == OP_param && n->file && !*n->file) report(v, i, "parameter file name is empty");
}

static void check_node(vstate *v, int i) {
  const portc_graph *g = v->g;
  const node *n = &g->nodes[i];
  const op_info *info = op_get(n->op);
  if (!info) {
    report(v, i, "op %d does not exist", (int)n->op);
    return;
  }
  if (!n->name || !valid_ident(n->name)) report(v, i, "name '%s' is not a valid identifier", n->name ? n->name : "(null)");
  else if (is_reserved(n->name)) report(v, i, "name '%s' is a reserved word", n->name);
  else {
    int j = graph_find_before(g, n->name, i);
    if (j >= 0) report(v, i, "name '%s' is also used by node %d", n->name, j);
  }
  bool ok = shape_ok(v, i, &n->sh);
  if (info->kind == K_SOURCE) {
    check_source(v, i, n);
    return;
  }
  if (n->nin < info->min_in || n->nin > info->max_in) {
    report(v, i, "has %d inputs; %s takes %d to %d", n->nin, info->name, info->min_in, info->max_in);
    ok = false;
  }
  for (int k = 0; k < n->nin; k++) {
    if (n->in[k] < 0 || n->in[k] >= i) {
      report(v, i, "input %d refers to node %d, which is not an earlier node", k, n->in[k]);
      ok = false;
    }
  }
  for (int k = 0; k < info->nattrs; k++)
    if (info->attrs[k].required && !n->a[k].set) report(v, i, "required attribute '%s' is not set", info->attrs[k].name), ok = false;
  if (!ok) return;
  portc_dtype dt;
  shape sh;
  if (infer(g, n, &dt, &sh) != PORTC_OK) {
    report(v, i, "%s", portc_last_error());
    return;
  }
  if (dt != n->dt || !shape_eq(&sh, &n->sh)) {
    char want[256], got[256];
    shape_str(g, &sh, want, sizeof want);
    shape_str(g, &n->sh, got, sizeof got);
    report(v, i, "recorded type %s%s differs from the inferred %s%s", portc_dtype_name(n->dt), got, portc_dtype_name(dt), want);
  }
}

static void check_outputs(vstate *v) {
  const portc_graph *g = v->g;
  if (g->nout == 0) report(v, -1, "the graph has no outputs");
  for (int k = 0; k < g->nout; k++) {
    if (g->outputs[k] < 0 || g->outputs[k] >= g->n) {
      report(v, -1, "output %d refers to node %d, which does not exist", k, g->outputs[k]);
      continue;
    }
    for (int j = 0; j < k; j++)
      if (g->outputs[j] == g->outputs[k]) report(v, g->outputs[k], "is listed as an output twice");
  }
}

static void write_report(const vstate *v, char **out) {
  const portc_graph *g = v->g;
  strbuf b = {0};
  sb_printf(&b, "%d problem%s in graph %s:\n", v->n, v->n == 1 ? "" : "s", g->name);
  for (int k = 0; k < v->n; k++) {
    const problem *p = &v->p[k];
    if (p->node < 0) {
      sb_printf(&b, "  graph: %s\n", p->msg);
      continue;
    }
    const node *n = &g->nodes[p->node];
    sb_printf(&b, "  node %d '%s'", p->node, n->name ? n->name : "?");
    if (n->line) sb_printf(&b, " (line %d)", n->line);
    sb_printf(&b, ": %s\n", p->msg);
  }
  sb_printf(&b, "\nannotated graph:\n");
  for (int i = 0; i < g->n; i++) {
    sb_printf(&b, "  ");
    graph_print_node(g, &g->nodes[i], &b);
    sb_printf(&b, "\n");
    for (int k = 0; k < v->n; k++)
      if (v->p[k].node == i) sb_printf(&b, "  ^^^ %s\n", v->p[k].msg);
  }
  for (int k = 0; k < v->n; k++)
    if (v->p[k].node < 0) sb_printf(&b, "  ^^^ graph: %s\n", v->p[k].msg);
  *out = sb_take(&b);
}

portc_status portc_graph_verify(const portc_graph *g, char **out) {
  if (out) *out = NULL;
  if (!g) return err_set(PORTC_ERR_INVALID, "verify: graph is NULL");
  vstate v = {.g = g};
  for (int i = 0; i < g->n; i++) check_node(&v, i);
  check_outputs(&v);
  if (v.n == 0) return PORTC_OK;
  if (out) write_report(&v, out);
  portc_status s = err_set(PORTC_ERR_INVALID, "graph %s has %d problem%s; the first: %s", g->name, v.n, v.n == 1 ? "" : "s", v.p[0].msg);
  for (int k = 0; k < v.n; k++) free(v.p[k].msg);
  free(v.p);
  return s;
}
