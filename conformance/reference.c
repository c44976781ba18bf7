/*
 * reference.c: the float64 reference evaluator, the ground truth every target is checked
 * against. It binds symbols from the caller and from input shapes, walks the nodes in order,
 * frees each value after its last use, and hands back the outputs.
 */
#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/bindings.h"
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

/* a source's tensor as a reference value: exact for every dtype; with flush, f32 and bf16
 * denormals become zeros of their sign, as a device that flushes them reads them */
static rval *from_tensor(const portc_tensor *t, bool flush) {
  rval *v = rval_new(t->dtype, t->rank, t->shape);
  bool narrow_exp = t->dtype == PORTC_F32 || t->dtype == PORTC_BF16;
  for (int64_t k = 0; v && k < v->numel; k++) {
    if (v->f) {
      v->f[k] = portc_tensor_get(t, k);
      if (flush && narrow_exp && v->f[k] != 0 && fabs(v->f[k]) < 0x1p-126) v->f[k] = copysign(0.0, v->f[k]);
    }
    else if (t->dtype == PORTC_I64) v->i[k] = ((const int64_t *)t->data)[k];
    else v->i[k] = (int64_t)portc_tensor_get(t, k);
  }
  return v;
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
  return conf_reference_update(g, b, outputs, NULL);
}

portc_status conf_reference_update(const portc_graph *g, portc_bindings *b, portc_tensor **outputs, conf_draw *draw) {
  portc_status pulled = b ? bindings_pull(b, NULL, -1) : PORTC_OK; /* values kept on a device */
  if (pulled) return pulled;
  bindings_lock(b);
  portc_status st = conf_reference_run(g, b, false, outputs, draw);
  if (!st && (st = bindings_apply_updates(g, b, outputs)))
    for (int k = 0; k < g->nout; k++) portc_tensor_free(outputs[k]), outputs[k] = NULL;
  bindings_unlock(b);
  return st;
}

/* a value no rounding touched: a source, or a view of one */
static bool exact(const portc_graph *g, int v) {
  while (op_get(g->nodes[v].op)->kind == K_VIEW && g->nodes[v].nin > 0) v = g->nodes[v].in[0];
  return op_get(g->nodes[v].op)->kind == K_SOURCE;
}

static double rms(const rval *v) {
  double sq = 0;
  for (int64_t k = 0; k < v->numel; k++) sq += isfinite(v->f[k]) ? v->f[k] * v->f[k] : 0;
  return v->numel ? sqrt(sq / (double)v->numel) : 0;
}

/* how close comparison x of f32 or f64 values came to deciding otherwise: the least nonzero
 * |a - b| over its elements, relative to the larger operand's RMS; +INF for a comparison of
 * 16-bit or integer values, or of values no rounding touched */
static double closest_call(const portc_graph *g, const node *x, rval *const *in, const rval *out) {
  const rval *a = in[0], *b = in[1];
  if (!a->f || a->dt == PORTC_F16 || a->dt == PORTC_BF16 || (exact(g, x->in[0]) && exact(g, x->in[1]))) return INFINITY;
  double scale = fmax(rms(a), rms(b)), least = INFINITY;
  iter it;
  it_init(&it, out->rank, out->shape, 2);
  bstrides(a, out->rank, out->shape, it.st[0]);
  bstrides(b, out->rank, out->shape, it.st[1]);
  for (int64_t k = 0; k < out->numel; k++, it_step(&it)) {
    double d = fabs(a->f[it.off[0]] - b->f[it.off[1]]);
    if (d > 0 && d < least) least = d;
  }
  return scale > 0 ? least / scale : INFINITY;
}

/* how far sum (or mean) x cancelled: the RMS of its results over the RMS of a sum of its terms
 * with random signs, sqrt(n) times the terms' RMS for n terms a result (a mean's divided by n);
 * +INF for terms with an infinity or a NaN, whose sums the bounds hold to exact specials */
static double cancelled_sum(const node *x, const rval *in, const rval *out) {
  if (!in->f || !out->f || !in->numel || !out->numel) return INFINITY;
  for (int64_t k = 0; k < in->numel; k++)
    if (!isfinite(in->f[k])) return INFINITY;
  const double n = (double)in->numel / (double)out->numel;
  const double terms = rms(in) * sqrt(n) / (x->op == OP_mean ? n : 1);
  return terms > 0 ? rms(out) / terms : INFINITY;
}

/* the sums and means whose results are outputs, as they are or through views and casts */
static void mark_output_sums(const portc_graph *g, bool *sum_out) {
  for (int k = 0; k < g->nout; k++) {
    int v = g->outputs[k];
    while (g->nodes[v].nin > 0 && (op_get(g->nodes[v].op)->kind == K_VIEW || op_get(g->nodes[v].op)->kind == K_CAST)) v = g->nodes[v].in[0];
    if (g->nodes[v].op == OP_sum || g->nodes[v].op == OP_mean) sum_out[v] = true;
  }
}

portc_status conf_reference_run(const portc_graph *g, portc_bindings *b, bool flush_denormals, portc_tensor **outputs, conf_draw *draw) {
  if (draw) *draw = (conf_draw){INFINITY, INFINITY};
  if (!g || !b || !outputs) return err_set(PORTC_ERR_INVALID, "reference_run: NULL argument");
  char *report = NULL;
  if (portc_graph_verify(g, &report) != PORTC_OK) {
    portc_status s = err_set(PORTC_ERR_INVALID, "%s", report ? report : portc_last_error());
    free(report);
    return s;
  }
  for (int k = 0; k < g->nout; k++) outputs[k] = NULL;
  portc_status st = bindings_bind_symbols(g, b);
  if (st) return st;
  size_t nn = (size_t)(g->n > 0 ? g->n : 1);
  int *last = malloc(sizeof(int) * nn);
  rval **vals = calloc(nn, sizeof *vals);
  bool *sum_out = calloc(nn, sizeof *sum_out);
  if (!last || !vals || !sum_out) {
    free(last);
    free(vals);
    free(sum_out);
    return err_set(PORTC_ERR_NOMEM, "reference_run: out of memory");
  }
  mark_output_sums(g, sum_out);
  for (int i = 0; i < g->n; i++) last[i] = i;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nin; k++) last[g->nodes[i].in[k]] = i;
  for (int k = 0; k < g->nout; k++) last[g->outputs[k]] = g->n;
  for (int i = 0; i < g->n && !st; i++) {
    const node *x = &g->nodes[i];
    int64_t shape[PORTC_MAX_RANK];
    if ((st = bindings_shape(g, b, x, shape))) break;
    if (op_get(x->op)->kind == K_SOURCE) {
      portc_tensor *t = NULL;
      if (!(st = bindings_source(g, b, i, &t)) && !(vals[i] = from_tensor(t, flush_denormals)))
        st = err_set(PORTC_ERR_NOMEM, "%s: out of memory", x->name);
      portc_tensor_free(t);
    } else if (!(vals[i] = rval_new(x->dt, x->sh.rank, shape))) {
      st = err_set(PORTC_ERR_NOMEM, "node '%s' (%s): out of memory", x->name, op_get(x->op)->name);
    } else {
      rval *in[64];
      for (int k = 0; k < x->nin; k++) in[k] = vals[x->in[k]];
      if ((st = ref_eval(x, in, vals[i])))
        st = err_set(st, "node '%s' (%s): %s", x->name, op_get(x->op)->name, portc_last_error());
      else if (draw && op_get(x->op)->kind == K_COMPARE)
        draw->closest = fmin(draw->closest, closest_call(g, x, in, vals[i]));
      else if (draw && sum_out[i])
        draw->cancelled = fmin(draw->cancelled, cancelled_sum(x, in[0], vals[i]));
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
  free(sum_out);
  return st;
}
