/*
 * ops_control.c: ONNX Loop, unrolled at import, and If, its branch chosen at import. A portc
 * graph has no control flow; a Loop whose trip count and condition are known when the model is
 * imported (PyTorch writes one for torch.tensor_split with a list of indices, as in MViT, and for
 * Python loops over a known range) becomes its body's nodes once per iteration. Each
 * iteration's values are named with a prefix of their own, LOOP_OUTPUT#ITERATION/, so `portc
 * explain` and errors name the iteration a node came from; a body reads the values around it by
 * their plain names (val_resolve). Carried values pass from one iteration to the next; scan
 * outputs are stacked along a new first axis.
 */
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

#define LOOP_MAX_UNROLL 4096 /* iterations one Loop may unroll into */

/* ---- what subgraphs read from around them ---- */

typedef struct names {
  const char **v;
  int n, cap;
  bool oom;
} names;

static bool has(const names *s, const char *x) {
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->v[i], x)) return true;
  return false;
}

static void add(names *s, const char *x) {
  if (!x || !*x || has(s, x)) return;
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    const char **v = realloc(s->v, sizeof *v * (size_t)cap);
    if (!v) {
      s->oom = true;
      return;
    }
    s->v = v, s->cap = cap;
  }
  s->v[s->n++] = x;
}

static void graph_reads(const Onnx__GraphProto *g, names *out);

static void node_subgraph_reads(const Onnx__NodeProto *np, names *out) {
  for (size_t a = 0; a < np->n_attribute; a++) {
    const Onnx__AttributeProto *at = np->attribute[a];
    if (at->g) graph_reads(at->g, out);
    for (size_t k = 0; k < at->n_graphs; k++) graph_reads(at->graphs[k], out);
  }
}

/* the names g reads that g does not define (its inputs, initializers and node outputs) */
static void graph_reads(const Onnx__GraphProto *g, names *out) {
  names def = {0}, inner = {0};
  for (size_t i = 0; i < g->n_input; i++) add(&def, g->input[i]->name);
  for (size_t i = 0; i < g->n_initializer; i++) add(&def, g->initializer[i]->name);
  for (size_t i = 0; i < g->n_node; i++)
    for (size_t k = 0; k < g->node[i]->n_output; k++) add(&def, g->node[i]->output[k]);
  for (size_t i = 0; i < g->n_node; i++) {
    for (size_t k = 0; k < g->node[i]->n_input; k++) add(&inner, g->node[i]->input[k]);
    node_subgraph_reads(g->node[i], &inner);
  }
  for (size_t i = 0; i < g->n_output; i++) add(&inner, g->output[i]->name);
  for (int i = 0; i < inner.n; i++)
    if (!has(&def, inner.v[i])) add(out, inner.v[i]);
  out->oom = out->oom || def.oom || inner.oom;
  free(def.v);
  free(inner.v);
}

int onnx_subgraph_reads(const Onnx__NodeProto *np, const char ***out) {
  names r = {0};
  node_subgraph_reads(np, &r);
  if (r.oom) {
    free(r.v);
    return -1;
  }
  *out = r.v;
  return r.n;
}

bool onnx_takes_sequences(const char *op) {
  return !strncmp(op, "Sequence", 8) || !strcmp(op, "ConcatFromSequence") || !strcmp(op, "Loop") || !strcmp(op, "If") ||
         !strcmp(op, "Identity");
}

/* ---- Loop ---- */

/* a value of the iteration being unrolled: prefix + name */
static oval *declare(imp *c, const char *prefix, const char *name) {
  const char *n = imp_name(c, prefix, name);
  if (!n) {
    fail(c, PORTC_ERR_NOMEM, "out of memory");
    return NULL;
  }
  return val_new(c, n);
}

static portc_status known_scalar_int(imp *c, oval *v, portc_dtype dt, int rank, int64_t x) {
  if (!(v->i = malloc(sizeof(sval)))) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  v->i[0] = (sval){x, -1, false};
  v->known = true, v->dt = dt, v->rank = rank, v->shape[0] = 1;
  return PORTC_OK;
}

/* a body node with its names resolved where it stands: inputs to the values they mean, outputs
 * to this iteration's */
static portc_status translate_body_node(imp *c, const Onnx__NodeProto *bn, const char *prefix) {
  const Onnx__NodeProto *loop = c->np;
  const char **in = malloc(sizeof(char *) * (bn->n_input + 1)), **out = malloc(sizeof(char *) * (bn->n_output + 1));
  const char *name = imp_name(c, prefix, bn->name && *bn->name ? bn->name : bn->op_type);
  portc_status st = in && out && name ? PORTC_OK : fail(c, PORTC_ERR_NOMEM, "out of memory");
  Onnx__NodeProto copy = *bn;
  copy.name = (char *)name, copy.input = (char **)in, copy.output = (char **)out;
  c->np = &copy; /* errors name the iteration's node */
  if (!st && (bn->n_input > ONNX_MAX_IO || bn->n_output > ONNX_MAX_IO)) st = fail(c, PORTC_ERR_INVALID, "more than %d inputs or outputs", ONNX_MAX_IO);
  for (size_t k = 0; k < bn->n_input && !st; k++) {
    oval *v = *bn->input[k] ? val_resolve(c, bn->input[k]) : NULL;
    in[k] = v ? v->name : "";
    if (*bn->input[k] && !v) st = fail(c, PORTC_ERR_INVALID, "reads '%s', which nothing in its subgraph (a Loop's body, an If's branch) or around it defines", bn->input[k]);
    else if (v && v->node < 0 && !v->known && !v->is_seq)
      st = fail(c, PORTC_ERR_INVALID, "reads '%s' before its body computes it (a body's nodes must be in order)", bn->input[k]);
  }
  for (size_t k = 0; k < bn->n_output && !st; k++) {
    oval *v = *bn->output[k] ? val_resolve(c, bn->output[k]) : NULL;
    out[k] = v ? v->name : "";
  }
  if (!st) st = onnx_translate_node(c, &copy, -1);
  c->np = loop; /* not the copy, which ends here */
  free(in);
  free(out);
  return st;
}

/* a body's own values declared under prefix (initializers, node outputs), their uses counted, its
 * nodes translated in order; a Loop's iteration and an If's branch both run through here */
static portc_status translate_body(imp *c, const Onnx__GraphProto *b, const char *prefix) {
  portc_status st = PORTC_OK;
  oval *v;
  for (size_t i = 0; i < b->n_initializer; i++) {
    if (!(v = declare(c, prefix, b->initializer[i]->name))) return PORTC_ERR_PARSE;
    if ((st = tensor_value(c, b->initializer[i], v))) return st;
  }
  for (size_t i = 0; i < b->n_node; i++)
    for (size_t k = 0; k < b->node[i]->n_output; k++)
      if (*b->node[i]->output[k] && !declare(c, prefix, b->node[i]->output[k])) return PORTC_ERR_PARSE;
  /* uses, for the translators that ask whether an output is read */
  for (size_t i = 0; i < b->n_node; i++) {
    const char **outer = NULL;
    int nouter = onnx_subgraph_reads(b->node[i], &outer);
    if (nouter < 0) return fail(c, PORTC_ERR_NOMEM, "out of memory");
    for (int k = 0; k < (int)b->node[i]->n_input + nouter; k++) {
      const char *in = k < (int)b->node[i]->n_input ? b->node[i]->input[k] : outer[k - b->node[i]->n_input];
      if (*in && (v = val_resolve(c, in))) v->uses++;
    }
    free(outer);
  }
  for (size_t i = 0; i < b->n_output; i++)
    if ((v = val_resolve(c, b->output[i]->name))) v->uses++;
  for (size_t i = 0; i < b->n_node && !st; i++) st = translate_body_node(c, b->node[i], prefix);
  return st;
}

typedef struct loop_state {
  const Onnx__GraphProto *body;
  int ncarry, nscan;
  int *carry; /* the carried values' indices in imp.v */
  int *scan;  /* [nscan][limit]: each iteration's scan values */
  int limit;
  bool cond;
} loop_state;

/* one iteration: the body's values declared under prefix, its nodes translated in order */
static portc_status iteration(imp *c, loop_state *L, const char *prefix, int it) {
  const Onnx__GraphProto *b = L->body;
  portc_status st = PORTC_OK;
  oval *v;
  /* the iteration number (the body declares it scalar or [1]), the condition, the carried values */
  const Onnx__TypeProto *tp = b->input[0]->type;
  int rank = tp && tp->tensor_type && tp->tensor_type->shape && tp->tensor_type->shape->n_dim == 1;
  if (!(v = declare(c, prefix, b->input[0]->name)) || (st = known_scalar_int(c, v, PORTC_I64, rank, it))) return st ? st : PORTC_ERR_PARSE;
  if (!(v = declare(c, prefix, b->input[1]->name)) || (st = known_scalar_int(c, v, PORTC_BOOL, 0, L->cond))) return st ? st : PORTC_ERR_PARSE;
  for (int k = 0; k < L->ncarry; k++) {
    if (!(v = declare(c, prefix, b->input[2 + k]->name))) return PORTC_ERR_PARSE;
    if ((st = val_copy(c, v, &c->v[L->carry[k]]))) return st;
  }
  if ((st = translate_body(c, b, prefix))) return st;
  /* what the iteration hands on */
  oval *out[ONNX_MAX_IO];
  for (size_t i = 0; i < b->n_output; i++)
    if (!(out[i] = val_resolve(c, b->output[i]->name)) || (out[i]->node < 0 && !out[i]->known && !out[i]->is_seq))
      return fail(c, PORTC_ERR_INVALID, "its body's output %zu ('%s') is not computed in iteration %d", i, b->output[i]->name, it);
  double cond;
  if (!known_scalar(out[0], &cond))
    return fail(c, PORTC_ERR_INVALID, "its body's condition ('%s') depends on data: portc unrolls loops, and needs the condition known when the model is imported",
                b->output[0]->name);
  L->cond = cond != 0;
  for (int k = 0; k < L->ncarry; k++) L->carry[k] = (int)(out[1 + k] - c->v);
  for (int j = 0; j < L->nscan; j++) {
    if (out[1 + L->ncarry + j]->is_seq) return fail(c, PORTC_ERR_INVALID, "its scan output %d ('%s') is a sequence", j, b->output[1 + L->ncarry + j]->name);
    L->scan[j * L->limit + it] = (int)(out[1 + L->ncarry + j] - c->v);
  }
  return PORTC_OK;
}

static portc_status op_Loop(imp *c) {
  const Onnx__NodeProto *np = c->np;
  const Onnx__AttributeProto *a = attr_find(c, "body");
  loop_state L = {.body = a ? a->g : NULL, .cond = true};
  const Onnx__GraphProto *b = L.body;
  if (!b) return fail(c, PORTC_ERR_INVALID, "has no body graph");
  if (c->nin < 2) return fail(c, PORTC_ERR_INVALID, "needs a trip count and a condition input (either may be left empty)");
  L.ncarry = c->nin - 2;
  if ((int)b->n_input != 2 + L.ncarry)
    return fail(c, PORTC_ERR_INVALID, "its body takes %zu inputs; with %d carried values it takes %d (iteration, condition, carried values)", b->n_input, L.ncarry,
                2 + L.ncarry);
  if ((int)b->n_output < 1 + L.ncarry) return fail(c, PORTC_ERR_INVALID, "its body gives %zu outputs; it must give at least %d (condition, carried values)", b->n_output, 1 + L.ncarry);
  L.nscan = (int)b->n_output - 1 - L.ncarry;
  if ((int)np->n_output > L.ncarry + L.nscan)
    return fail(c, PORTC_ERR_INVALID, "has %zu outputs; its body gives %d carried values and %d scan outputs", np->n_output, L.ncarry, L.nscan);
  if (c->depth >= ONNX_MAX_DEPTH) return fail(c, PORTC_ERR_INVALID, "Loops nested more than %d deep", ONNX_MAX_DEPTH);
  int64_t trips = -1;
  double x;
  oval *m = op_in(c, 0), *cond = op_in(c, 1);
  if (m && (!known_scalar(m, &x) || !m->i))
    return fail(c, PORTC_ERR_INVALID, "its trip count ('%s') must be known when the model is imported (a constant or shape arithmetic): portc unrolls loops", m->name);
  if (m) trips = x < 0 ? 0 : (int64_t)x;
  if (cond && !known_scalar(cond, &x))
    return fail(c, PORTC_ERR_INVALID, "its condition ('%s') must be known when the model is imported: portc unrolls loops", cond->name);
  if (cond) L.cond = x != 0;
  if (trips > LOOP_MAX_UNROLL) return fail(c, PORTC_ERR_INVALID, "runs %lld iterations; portc unrolls at most %d at import", (long long)trips, LOOP_MAX_UNROLL);
  L.limit = trips >= 0 ? (int)trips : LOOP_MAX_UNROLL;
  int carry[ONNX_MAX_IO];
  for (int k = 0; k < L.ncarry; k++) {
    if (!op_in(c, 2 + k)) return fail(c, PORTC_ERR_INVALID, "carried value %d (input %d) is missing", k, 2 + k);
    carry[k] = (int)(op_in(c, 2 + k) - c->v);
  }
  L.carry = carry;
  L.scan = malloc(sizeof(int) * (size_t)(L.nscan ? L.nscan : 1) * (size_t)(L.limit ? L.limit : 1));
  if (!L.scan) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  char anchor[64];
  snprintf(anchor, sizeof anchor, "loop%d", c->loops++);
  const char *base = np->n_output && *np->output[0] ? np->output[0] : anchor;
  portc_status st = PORTC_OK;
  int it = 0;
  for (; !st && L.cond && it < L.limit; it++) {
    char tag[24];
    snprintf(tag, sizeof tag, "#%d/", it);
    const char *prefix = imp_name(c, base, tag);
    if (!prefix) st = fail(c, PORTC_ERR_NOMEM, "out of memory");
    else {
      c->scope[c->depth++] = prefix;
      st = iteration(c, &L, prefix, it);
      c->depth--;
    }
  }
  c->np = np;
  if (!st && trips < 0 && L.cond) st = fail(c, PORTC_ERR_INVALID, "its condition still holds after %d iterations; portc unrolls at most %d at import", it, LOOP_MAX_UNROLL);
  for (int k = 0; k < L.ncarry && k < (int)np->n_output && !st; k++) st = out_alias(c, k, &c->v[L.carry[k]]);
  for (int j = 0; j < L.nscan && L.ncarry + j < (int)np->n_output && !st; j++) {
    if (!*np->output[L.ncarry + j]) continue;
    if (!it) st = fail(c, PORTC_ERR_SHAPE, "runs no iteration: its scan output %d would be empty, which portc cannot shape", j);
    else st = out_node(c, L.ncarry + j, onnx_stack(c, L.scan + j * L.limit, it, 0, true));
  }
  free(L.scan);
  return st;
}

/* ---- If ---- */

/* An If whose condition is known at import (PyTorch writes them for Python branches on shapes,
 * MViT's pool_skip among them) is the taken branch's nodes, named BASE#then/ or BASE#else/; the
 * other branch is never translated. */
static portc_status op_If(imp *c) {
  const Onnx__NodeProto *np = c->np;
  oval *cond = op_in(c, 0);
  double x;
  if (!cond) return fail(c, PORTC_ERR_INVALID, "needs a condition input");
  if (!known_scalar(cond, &x))
    return fail(c, PORTC_ERR_INVALID,
                "its condition ('%s') depends on data: portc has no control flow, and takes an If only where its condition is known when the model is imported "
                "(a constant or shape arithmetic)",
                cond->name);
  const char *which = x != 0 ? "then_branch" : "else_branch";
  const Onnx__AttributeProto *a = attr_find(c, which);
  const Onnx__GraphProto *b = a ? a->g : NULL;
  if (!b) return fail(c, PORTC_ERR_INVALID, "has no %s graph", which);
  if (b->n_input) return fail(c, PORTC_ERR_INVALID, "its %s takes %zu inputs; an If's branches take none", which, b->n_input);
  if (b->n_output < np->n_output) return fail(c, PORTC_ERR_INVALID, "has %zu outputs; its %s gives %zu", np->n_output, which, b->n_output);
  if (c->depth >= ONNX_MAX_DEPTH) return fail(c, PORTC_ERR_INVALID, "subgraphs nested more than %d deep", ONNX_MAX_DEPTH);
  char anchor[64];
  snprintf(anchor, sizeof anchor, "if%d", c->loops++);
  const char *prefix = imp_name(c, np->n_output && *np->output[0] ? np->output[0] : anchor, x != 0 ? "#then/" : "#else/");
  if (!prefix) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  c->scope[c->depth++] = prefix;
  portc_status st = translate_body(c, b, prefix);
  oval *out[ONNX_MAX_IO];
  for (size_t k = 0; k < np->n_output && !st; k++)
    if (!(out[k] = val_resolve(c, b->output[k]->name)) || (out[k]->node < 0 && !out[k]->known && !out[k]->is_seq))
      st = fail(c, PORTC_ERR_INVALID, "its %s's output %zu ('%s') is not computed", which, k, b->output[k]->name);
  c->depth--;
  c->np = np;
  for (size_t k = 0; k < np->n_output && !st; k++)
    if (*np->output[k]) st = out_alias(c, (int)k, out[k]);
  return st;
}

const onnx_op onnx_ops_control[] = {{"Loop", op_Loop}, {"If", op_If}, {NULL, NULL}};
