/*
 * reference.c: the float64 reference evaluator, the ground truth every target is checked
 * against. It binds symbols from the caller and from input shapes, walks the nodes in order,
 * frees each value after its last use, and hands back the outputs.
 */
#include "reference.h"

#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"
#include "reference_util.h"

rval *rval_new(portc_dtype dt, int rank, const int64_t *shape) {
  rval *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->dt = dt;
  v->rank = rank;
  v->numel = 1;
  for (int i = 0; i < rank; i++) {
    v->shape[i] = shape[i];
    v->numel *= shape[i];
  }
  size_t bytes = (size_t)(v->numel ? v->numel : 1) * 8;
  if (dtype_is_float(dt) ? !(v->f = malloc(bytes)) : !(v->i = malloc(bytes))) {
    free(v);
    return NULL;
  }
  return v;
}

void rval_free(rval *v) {
  if (!v) return;
  free(v->f);
  free(v->i);
  free(v);
}

/* Binds the symbols in the shapes of given tensors; a clash names both sides. */
static portc_status bind_symbols(const portc_graph *g, portc_bindings *b) {
  for (int n = 0; n < g->n; n++) {
    const portc_tensor *t = b->given[n];
    if (!t) continue;
    const node *x = &g->nodes[n];
    for (int d = 0; d < x->sh.rank; d++) {
      int s = x->sh.d[d].sym;
      if (s < 0) continue;
      if (b->sym_set[s] && b->sym[s] != t->shape[d])
        return err_set(PORTC_ERR_SHAPE, "symbol %s is %lld, but %s has %lld at dimension %d", g->syms[s], (long long)b->sym[s],
                       x->name, (long long)t->shape[d], d);
      b->sym[s] = t->shape[d];
      b->sym_set[s] = true;
    }
  }
  return PORTC_OK;
}

#define MAX_ELEMENTS ((int64_t)1 << 36)

static portc_status concrete_shape(const portc_graph *g, const portc_bindings *b, const node *x, int64_t *shape) {
  int64_t numel = 1;
  for (int d = 0; d < x->sh.rank; d++) {
    int s = x->sh.d[d].sym;
    if (s >= 0 && !b->sym_set[s])
      return err_set(PORTC_ERR_SHAPE, "symbol %s has no value: set it (portc run --set %s=...), or bind an input that has it",
                     g->syms[s], g->syms[s]);
    shape[d] = s >= 0 ? b->sym[s] : x->sh.d[d].c;
    if (shape[d] && numel > MAX_ELEMENTS / shape[d])
      return err_set(PORTC_ERR_NOMEM, "%s would have more than 2^36 elements", x->name);
    numel *= shape[d];
  }
  return PORTC_OK;
}

static portc_tensor *to_tensor(const rval *v) {
  portc_dtype t = v->f ? PORTC_F64 : v->dt;
  portc_tensor *out = portc_tensor_new(t, v->rank, v->shape);
  if (!out) return NULL;
  for (int64_t k = 0; k < v->numel; k++) {
    if (v->f) ((double *)out->data)[k] = v->f[k];
    else if (t == PORTC_I64) ((int64_t *)out->data)[k] = v->i[k];
    else portc_tensor_set(out, k, (double)v->i[k]);
  }
  return out;
}

portc_status portc_reference_run(const portc_graph *g, portc_bindings *b, portc_tensor **outputs) {
  if (!g || !b || !outputs) return err_set(PORTC_ERR_INVALID, "reference_run: NULL argument");
  if (b->g != g || b->n != g->n || b->nsyms != g->nsyms)
    return err_set(PORTC_ERR_INVALID, "reference_run: the bindings were made for another graph, or the graph changed since");
  char *report = NULL;
  if (portc_graph_verify(g, &report) != PORTC_OK) {
    portc_status s = err_set(PORTC_ERR_INVALID, "%s", report ? report : portc_last_error());
    free(report);
    return s;
  }
  for (int k = 0; k < g->nout; k++) outputs[k] = NULL;
  portc_status st = bind_symbols(g, b);
  if (st) return st;
  size_t nn = (size_t)(g->n > 0 ? g->n : 1);
  int *last = malloc(sizeof(int) * nn);
  rval **vals = calloc(nn, sizeof *vals);
  if (!last || !vals) {
    free(last);
    free(vals);
    return err_set(PORTC_ERR_NOMEM, "reference_run: out of memory");
  }
  for (int i = 0; i < g->n; i++) last[i] = i;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nin; k++) last[g->nodes[i].in[k]] = i;
  for (int k = 0; k < g->nout; k++) last[g->outputs[k]] = g->n;
  for (int i = 0; i < g->n && !st; i++) {
    const node *x = &g->nodes[i];
    int64_t shape[PORTC_MAX_RANK];
    if ((st = concrete_shape(g, b, x, shape))) break;
    if (op_get(x->op)->kind == K_SOURCE) {
      st = ref_source(g, b, i, shape, &vals[i]);
    } else if (!(vals[i] = rval_new(x->dt, x->sh.rank, shape))) {
      st = err_set(PORTC_ERR_NOMEM, "node '%s' (%s): out of memory", x->name, op_get(x->op)->name);
    } else {
      rval *in[64];
      for (int k = 0; k < x->nin; k++) in[k] = vals[x->in[k]];
      if ((st = ref_eval(g, x, in, vals[i])))
        st = err_set(st, "node '%s' (%s): %s", x->name, op_get(x->op)->name, portc_last_error());
    }
    for (int k = 0; k < x->nin; k++)
      if (last[x->in[k]] == i) rval_free(vals[x->in[k]]), vals[x->in[k]] = NULL;
  }
  for (int k = 0; k < g->nout && !st; k++)
    if (!(outputs[k] = to_tensor(vals[g->outputs[k]]))) st = err_set(PORTC_ERR_NOMEM, "reference_run: out of memory");
  if (st)
    for (int k = 0; k < g->nout; k++) portc_tensor_free(outputs[k]), outputs[k] = NULL;
  for (int i = 0; i < g->n; i++) rval_free(vals[i]);
  free(vals);
  free(last);
  return st;
}
