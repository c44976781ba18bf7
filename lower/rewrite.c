/*
 * rewrite.c: copying nodes between graphs, the building block of passes that rebuild a graph.
 * A copy goes through graph_add, so every rewritten node is checked and re-inferred.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static dim subst(const portc_graph *src, dim d, portc_graph *dst, const int64_t *symvals) {
  if (d.sym < 0) return d;
  if (symvals) return (dim){symvals[d.sym], -1};
  return (dim){0, graph_symbol(dst, src->syms[d.sym])};
}

portc_node copy_node(portc_graph *dst, const portc_graph *src, int i, const int32_t *remap, const int64_t *symvals) {
  return copy_node_named(dst, src, i, remap, symvals, NULL);
}

portc_node copy_node_named(portc_graph *dst, const portc_graph *src, int i, const int32_t *remap, const int64_t *symvals, const char *name) {
  const node *x = &src->nodes[i];
  if (!name) name = x->name;
  const op_info *info = op_get(x->op);
  if (info->kind == K_SOURCE) {
    shape sh = x->sh;
    for (int d = 0; d < sh.rank; d++) sh.d[d] = subst(src, sh.d[d], dst, symvals);
    portc_node n = x->op == OP_const ? graph_add_const(dst, name, x->dt, &sh, &x->value)
                                     : graph_add_source(dst, x->op, name, x->dt, &sh);
    if (n < 0) return n;
    node *y = &dst->nodes[n];
    y->has_init = x->has_init, y->init = x->init, y->seed = x->seed, y->p0 = x->p0, y->p1 = x->p1;
    y->line = x->line;
    if ((x->file && !(y->file = strdup(x->file))) || (x->file_key && !(y->file_key = strdup(x->file_key))))
      return err_node(PORTC_ERR_NOMEM, "out of memory");
    pdata_retain(y->data = x->data);
    return n;
  }
  int32_t in[64];
  for (int k = 0; k < x->nin; k++) in[k] = remap[x->in[k]];
  return copy_op_onto(dst, src, i, in, symvals, name);
}

bool op_elementwise(const node *n) {
  switch (op_get(n->op)->kind) {
  case K_UNARY: case K_BINARY: case K_COMPARE: case K_WHERE: case K_CAST: return true;
  default: return false;
  }
}

portc_node copy_op_onto(portc_graph *dst, const portc_graph *src, int i, const int32_t *in, const int64_t *symvals, const char *name) {
  const node *x = &src->nodes[i];
  const op_info *info = op_get(x->op);
  node_spec s;
  spec_init(&s, x->op, x->nin, in);
  memcpy(s.a, x->a, sizeof s.a);
  for (int k = 0; k < info->nattrs; k++)
    if (info->attrs[k].kind == A_DIMS)
      for (int j = 0; j < s.a[k].n; j++) {
        dim d = subst(src, (dim){s.a[k].v[j], s.a[k].sym[j]}, dst, symvals);
        s.a[k].v[j] = d.c, s.a[k].sym[j] = d.sym;
      }
  s.name = name;
  portc_node n = graph_add(dst, &s);
  if (n >= 0) dst->nodes[n].line = x->line, dst->nodes[n].stored = x->stored, dst->nodes[n].recomputed = x->recomputed;
  if (n >= 0) dst->nodes[n].copied = x->copied;
  if (n >= 0 && x->autocast_widening) dst->nodes[n].autocast_widening = true; /* or graph_add made it one (an autocast copy) */
  return n;
}

/* a number past every automatic name (t12, c3) of g, even ones read back from text, so that the
 * passes' new nodes never take a name a later copied node has */
static int past_auto_names(const portc_graph *g) {
  int next = g->next_auto;
  for (int i = 0; i < g->n; i++) {
    const char *s = g->nodes[i].name;
    if (!s || (s[0] != 't' && s[0] != 'c') || !s[1]) continue;
    char *end;
    long v = strtol(s + 1, &end, 10);
    if (!*end && s[1] >= '0' && s[1] <= '9' && v >= next && v < (1L << 30)) next = (int)v + 1;
  }
  return next;
}

portc_status graph_copy(const portc_graph *g, const int64_t *symvals, portc_graph **out) { return graph_copy_autocast(g, symvals, PORTC_F32, out, NULL); }

portc_status graph_copy_autocast(const portc_graph *g, const int64_t *symvals, portc_dtype autocast, portc_graph **out, int *converted) {
  portc_graph *c = portc_graph_new(g->name);
  int32_t *remap = malloc(sizeof(int32_t) * (size_t)(g->n + 1));
  if (!c || !remap || (g->basedir && !(c->basedir = strdup(g->basedir)))) {
    portc_graph_free(c);
    free(remap);
    return err_set(PORTC_ERR_NOMEM, "out of memory copying graph %s", g->name);
  }
  portc_status st = PORTC_OK;
  c->next_auto = past_auto_names(g);
  c->autocast = autocast;
  int n = 0;
  for (int i = 0; i < g->n && !st; i++) {
    remap[i] = copy_node(c, g, i, remap, symvals);
    if (remap[i] < 0) st = portc_node_status(remap[i]);
    else n += c->nodes[remap[i]].op != g->nodes[i].op; /* built under autocast: the cast back stands for it */
  }
  if (converted) *converted = n;
  c->autocast = PORTC_F32;
  for (int k = 0; k < g->nout && !st; k++) st = portc_output(c, remap[g->outputs[k]]);
  free(remap);
  if (st) {
    portc_graph_free(c);
    return st;
  }
  *out = c;
  return PORTC_OK;
}

portc_status rebuild_finish(portc_graph **gp, portc_graph *out, const int32_t *remap, portc_status st) {
  portc_graph *g = *gp;
  for (int k = 0; k < g->nout && !st; k++) st = portc_output(out, remap[g->outputs[k]]);
  if (st) {
    portc_graph_free(out);
    return st;
  }
  if (g->basedir) out->basedir = strdup(g->basedir);
  portc_graph_free(g);
  *gp = out;
  return PORTC_OK;
}

portc_status rebuild_replacing(portc_graph **gp, const char *pass, node_test replaces, node_rewrite replace, bool *changed) {
  portc_graph *g = *gp;
  *changed = false;
  bool any = false;
  for (int i = 0; i < g->n && !any; i++) any = replaces(g, i);
  if (!any) return PORTC_OK;
  portc_graph *out = portc_graph_new(g->name);
  int32_t *remap = malloc(sizeof(int32_t) * (size_t)(g->n + 1));
  if (!out || !remap) {
    portc_graph_free(out);
    free(remap);
    return err_set(PORTC_ERR_NOMEM, "%s: out of memory", pass);
  }
  out->next_auto = g->next_auto;
  portc_status st = PORTC_OK;
  for (int i = 0; i < g->n && !st; i++) {
    remap[i] = replaces(g, i) ? replace(out, g, i, remap) : copy_node(out, g, i, remap, NULL);
    if (remap[i] < 0) st = err_set(portc_node_status(remap[i]), "%s %s: %s", pass, g->nodes[i].name, portc_last_error());
  }
  st = rebuild_finish(gp, out, remap, st);
  free(remap);
  *changed = !st;
  return st;
}
