/*
 * ops_shape.c: ONNX's shape and view operators. On graph values they become portc views
 * (reshape, permute, expand, slice, concat, pad, gather); on known integer tensors (what Shape
 * makes) they are evaluated at import, so that the chains PyTorch exports (Shape -> Gather ->
 * Unsqueeze -> Concat -> Reshape) end as a reshape with constants and symbols.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

sval dim_sval(const portc_graph *g, dim d) {
  if (d.sym < 0) return (sval){d.c, -1, false};
  if (g->sym_base[d.sym] >= 0) return (sval){g->sym_scale[d.sym], g->sym_base[d.sym], false};
  return (sval){1, d.sym, false};
}

#define MAX_DIM ((int64_t)1 << 40) /* larger sizes are absurd; refusing them keeps products in range */

bool sval_dim(imp *c, sval s, portc_dim *out) {
  if (s.unknown) return false;
  if (s.sym < 0) {
    *out = (portc_dim){s.c, NULL};
    return s.c >= 0 && s.c <= MAX_DIM;
  }
  if (s.c < 1 || s.c > MAX_DIM) return false;
  int k = graph_symbol_scaled(c->g, s.sym, s.c);
  if (k < 0) return false;
  *out = (portc_dim){0, c->g->syms[k]};
  return true;
}

static portc_status copy_known(imp *c, const oval *x, int rank, const int64_t *shape) {
  int64_t n = val_numel(x);
  sval *r = malloc(sizeof(sval) * (size_t)(n ? n : 1));
  if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  memcpy(r, x->i, sizeof(sval) * (size_t)n);
  return out_ints(c, 0, x->dt, rank, shape, r);
}

static portc_status op_Shape(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  dim d[PORTC_MAX_RANK];
  int rank = val_shape(c, op_in(c, 0), d);
  int64_t start = attr_int(c, "start", 0), end = attr_int(c, "end", rank);
  start = clamp_index(start, rank), end = clamp_index(end, rank);
  int64_t n = end > start ? end - start : 0;
  sval *r = malloc(sizeof(sval) * (size_t)(n ? n : 1));
  if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  for (int64_t k = 0; k < n; k++) r[k] = dim_sval(c->g, d[start + k]);
  return out_ints(c, 0, PORTC_I64, 1, &n, r);
}

static portc_status op_Size(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  dim d[PORTC_MAX_RANK];
  int rank = val_shape(c, op_in(c, 0), d);
  sval *r = malloc(sizeof(sval));
  if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  *r = (sval){1, -1, false};
  for (int k = 0; k < rank; k++) {
    sval s = dim_sval(c->g, d[k]);
    int64_t p;
    if ((s.sym >= 0 && r->sym >= 0) || __builtin_mul_overflow(r->c, s.c, &p)) *r = (sval){0, -1, true};
    else if (!r->unknown) *r = (sval){p, s.sym >= 0 ? s.sym : r->sym, false};
  }
  return out_ints(c, 0, PORTC_I64, 0, NULL, r);
}

static portc_status op_Constant(imp *c) {
  const Onnx__AttributeProto *a = c->np->n_attribute == 1 ? c->np->attribute[0] : NULL;
  if (!a || !a->name) return fail(c, PORTC_ERR_INVALID, "needs exactly one value attribute");
  oval *v = c->np->n_output && *c->np->output[0] ? val_find(c, c->np->output[0]) : NULL;
  if (!v) return PORTC_OK;
  if (!strcmp(a->name, "value") && a->t) return tensor_value(c, a->t, v);
  bool ints = !strcmp(a->name, "value_int") || !strcmp(a->name, "value_ints");
  bool floats = !strcmp(a->name, "value_float") || !strcmp(a->name, "value_floats");
  if (!ints && !floats) return fail(c, PORTC_ERR_INVALID, "attribute '%s' is not supported (value, value_int(s), value_float(s))", a->name);
  bool list = !strcmp(a->name, "value_ints") || !strcmp(a->name, "value_floats");
  int64_t n = list ? (int64_t)(ints ? a->n_ints : a->n_floats) : 1;
  if (ints) {
    sval *r = malloc(sizeof(sval) * (size_t)(n ? n : 1));
    if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < n; k++) r[k] = (sval){list ? a->ints[k] : a->i, -1, false};
    return out_ints(c, 0, PORTC_I64, list ? 1 : 0, &n, r);
  }
  portc_tensor *t = portc_tensor_new(PORTC_F32, list ? 1 : 0, &n);
  for (int64_t k = 0; t && k < n; k++) portc_tensor_set(t, k, list ? a->floats[k] : a->f);
  pdata *d = pdata_new(t);
  return d ? out_floats(c, 0, d) : fail(c, PORTC_ERR_NOMEM, "out of memory");
}

static portc_status op_ConstantOfShape(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  const oval *s = op_in(c, 0);
  if (!int_known(s) || s->rank != 1) return fail(c, PORTC_ERR_INVALID, "the shape must be a 1-D tensor known at import");
  const Onnx__AttributeProto *a = attr_find(c, "value");
  oval val = {.name = "value", .node = -1};
  if (a && a->t && (st = tensor_value(c, a->t, &val))) return st;
  double x = 0;
  if (a && a->t && !known_scalar(&val, &x)) st = fail(c, PORTC_ERR_INVALID, "value must hold one element");
  portc_dtype dt = a && a->t ? val.dt : PORTC_F32;
  pdata_release(val.f);
  free(val.i);
  if (st) return st;
  int rank = (int)s->shape[0];
  portc_dim dims[PORTC_MAX_RANK];
  if (rank > PORTC_MAX_RANK) return fail(c, PORTC_ERR_SHAPE, "rank %d is more than %d", rank, PORTC_MAX_RANK);
  bool constant = true;
  int64_t n = 1, shape[PORTC_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    if (!sval_dim(c, s->i[k], &dims[k])) return fail(c, PORTC_ERR_SHAPE, "dimension %d is not a size portc can express", k);
    constant = constant && !dims[k].symbol;
    shape[k] = dims[k].size;
    if (__builtin_mul_overflow(n, dims[k].size, &n)) return fail(c, PORTC_ERR_SHAPE, "the shape's element count overflows");
  }
  if (constant && n <= 4096 && dt != PORTC_F32 && dt != PORTC_F16 && dt != PORTC_BF16 && dt != PORTC_F64) { /* shape arithmetic */
    sval *r = malloc(sizeof(sval) * (size_t)(n ? n : 1));
    if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < n; k++) r[k] = (sval){(int64_t)x, -1, false};
    return out_ints(c, 0, dt, rank, shape, r);
  }
  if (dt == PORTC_F64) dt = PORTC_F32;
  portc_dim ones[PORTC_MAX_RANK];
  for (int k = 0; k < rank; k++) ones[k] = (portc_dim){1, NULL};
  portc_node one = portc_reshape(c->g, portc_scalar(c->g, dt, x), rank, ones);
  return out_node(c, 0, portc_expand(c->g, one, rank, dims));
}

/* the dims of Reshape's target: 0 copies the input's (unless allowzero), -1 is inferred, and one
 * size the import cannot express becomes -1 too; a constant below -1 or over 2^48 is an error */
static portc_status op_Reshape(imp *c) {
  portc_status st = op_need(c, 0);
  if (!st) st = op_need(c, 1);
  if (st) return st;
  const oval *s = op_in(c, 1);
  if (!int_known(s) || s->rank != 1) return fail(c, PORTC_ERR_INVALID, "the new shape must be a 1-D tensor known at import");
  int rank = (int)s->shape[0];
  if (rank > PORTC_MAX_RANK) return fail(c, PORTC_ERR_SHAPE, "rank %d is more than %d", rank, PORTC_MAX_RANK);
  dim xd[PORTC_MAX_RANK];
  int xr = val_shape(c, op_in(c, 0), xd);
  portc_dim dims[PORTC_MAX_RANK];
  int inferred = -1;
  bool allowzero = attr_int(c, "allowzero", 0) != 0;
  for (int k = 0; k < rank; k++) {
    sval e = s->i[k];
    if (!e.unknown && e.sym < 0 && e.c == 0 && !allowzero) {
      if (k >= xr) return fail(c, PORTC_ERR_SHAPE, "0 at position %d copies a dimension the input (rank %d) lacks", k, xr);
      e = dim_sval(c->g, xd[k]);
    }
    if (!e.unknown && e.sym < 0 && (e.c < -1 || e.c > (INT64_C(1) << 48)))
      return fail(c, PORTC_ERR_SHAPE, "the new shape's dimension %d is %lld: a size (at most 2^48), 0 or -1", k, (long long)e.c);
    if (!e.unknown && e.sym < 0 && e.c == -1) dims[k] = (portc_dim){-1, NULL};
    else if (!sval_dim(c, e, &dims[k])) dims[k] = (portc_dim){-1, NULL};
    if (dims[k].size == -1 && !dims[k].symbol) {
      if (inferred >= 0) return fail(c, PORTC_ERR_SHAPE, "two dimensions of the new shape are unknown at import (%d and %d)", inferred, k);
      inferred = k;
    }
  }
  oval *x = op_in(c, 0);
  if (int_known(x)) { /* shape arithmetic stays known: only its shape changes */
    int64_t shape[PORTC_MAX_RANK], n = 1;
    bool ok = true;
    for (int k = 0; k < rank; k++) {
      if (k == inferred) continue;
      ok = ok && !dims[k].symbol && dims[k].size >= 0;
      shape[k] = dims[k].size;
      if (ok && __builtin_mul_overflow(n, shape[k], &n)) ok = false;
    }
    if (ok && inferred >= 0 && n > 0 && val_numel(x) % n == 0) shape[inferred] = val_numel(x) / n, n = val_numel(x);
    if (ok && n == val_numel(x)) return copy_known(c, x, rank, shape);
  }
  portc_node v = val_node(c, x);
  return out_node(c, 0, v < 0 ? v : portc_reshape(c->g, v, rank, dims));
}

static portc_status op_Flatten(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  dim d[PORTC_MAX_RANK];
  int rank = val_shape(c, op_in(c, 0), d);
  int64_t axis = attr_int(c, "axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return fail(c, PORTC_ERR_INVALID, "axis %lld is outside 0..%d", (long long)attr_int(c, "axis", 1), rank);
  portc_dim out[2];
  int unknown = -1;
  for (int part = 0; part < 2; part++) {
    sval p = {1, -1, false};
    for (int k = part ? (int)axis : 0; k < (part ? rank : axis); k++) {
      sval s = dim_sval(c->g, d[k]);
      int64_t q;
      if ((s.sym >= 0 && p.sym >= 0) || __builtin_mul_overflow(p.c, s.c, &q)) p.unknown = true;
      else if (!p.unknown) p = (sval){q, s.sym >= 0 ? s.sym : p.sym, false};
    }
    if (!sval_dim(c, p, &out[part])) out[part] = (portc_dim){-1, NULL}, unknown = part;
  }
  if (unknown >= 0 && out[0].size == -1 && out[1].size == -1 && !out[0].symbol && !out[1].symbol)
    return fail(c, PORTC_ERR_SHAPE, "both sides of the flattened shape are products of symbols");
  portc_node x = val_node(c, op_in(c, 0));
  return out_node(c, 0, x < 0 ? x : portc_reshape(c->g, x, 2, out));
}

static portc_status op_Transpose(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  oval *v = op_in(c, 0);
  dim d[PORTC_MAX_RANK];
  int rank = val_shape(c, v, d);
  int64_t perm[PORTC_MAX_RANK];
  int n = attr_ints(c, "perm", perm, PORTC_MAX_RANK);
  if (n == -2) return fail(c, PORTC_ERR_INVALID, "perm is longer than rank %d", PORTC_MAX_RANK);
  if (n < 0)
    for (n = 0; n < rank; n++) perm[n] = rank - 1 - n;
  if (int_known(v)) { /* shape arithmetic: move the elements */
    bool seen[PORTC_MAX_RANK] = {false};
    for (int k = 0; k < n; k++) {
      if (n != rank || perm[k] < 0 || perm[k] >= rank || seen[perm[k]]) return fail(c, PORTC_ERR_INVALID, "perm is not a permutation of %d axes", rank);
      seen[perm[k]] = true;
    }
    int64_t shape[PORTC_MAX_RANK], total = val_numel(v);
    for (int k = 0; k < rank; k++) shape[k] = v->shape[perm[k]];
    sval *r = malloc(sizeof(sval) * (size_t)(total ? total : 1));
    if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
    for (int64_t o = 0; o < total; o++) {
      int64_t rem = o, src = 0, stride[PORTC_MAX_RANK];
      for (int k = rank - 1, s = 1; k >= 0; k--) stride[k] = s, s *= (int)v->shape[k];
      for (int k = rank - 1; k >= 0; k--) src += (rem % shape[k]) * stride[perm[k]], rem /= shape[k];
      r[o] = v->i[src];
    }
    return out_ints(c, 0, v->dt, rank, shape, r);
  }
  portc_node x = val_node(c, v);
  return out_node(c, 0, x < 0 ? x : portc_permute(c->g, x, n, perm));
}

/* Squeeze and Unsqueeze: the new dims, then a reshape (or a new shape of a known value) */
static portc_status resqueeze(imp *c, bool unsqueeze) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  int64_t axes[PORTC_MAX_RANK];
  int n = -1;
  if (op_in(c, 1)) {
    if ((st = known_ints(c, 1, "axes", axes, PORTC_MAX_RANK, &n))) return st;
  } else {
    n = attr_ints(c, "axes", axes, PORTC_MAX_RANK);
    if (n == -2) return fail(c, PORTC_ERR_INVALID, "more than %d axes", PORTC_MAX_RANK);
  }
  if (unsqueeze && n < 0) return fail(c, PORTC_ERR_INVALID, "axes are missing");
  dim d[PORTC_MAX_RANK];
  int rank = val_shape(c, op_in(c, 0), d), out_rank = unsqueeze ? rank + n : 0;
  if (out_rank > PORTC_MAX_RANK) return fail(c, PORTC_ERR_SHAPE, "rank %d is more than %d", out_rank, PORTC_MAX_RANK);
  bool mark[PORTC_MAX_RANK * 2] = {false};
  for (int k = 0; k < n; k++) {
    int64_t a = axes[k] < 0 ? axes[k] + (unsqueeze ? out_rank : rank) : axes[k];
    if (a < 0 || a >= (unsqueeze ? out_rank : rank) || mark[a]) return fail(c, PORTC_ERR_INVALID, "axis %lld is out of range or repeated", (long long)axes[k]);
    if (!unsqueeze && !(d[a].sym < 0 && d[a].c == 1)) return fail(c, PORTC_ERR_SHAPE, "axis %lld does not have size 1", (long long)axes[k]);
    mark[a] = true;
  }
  portc_dim dims[PORTC_MAX_RANK];
  int64_t shape[PORTC_MAX_RANK];
  int r = 0;
  if (unsqueeze) {
    for (int k = 0, j = 0; k < out_rank; k++) {
      dim x = mark[k] ? (dim){1, -1} : d[j++];
      dims[r] = (portc_dim){x.c, x.sym >= 0 ? c->g->syms[x.sym] : NULL}, shape[r++] = x.c;
    }
  } else {
    for (int k = 0; k < rank; k++) {
      bool drop = n > 0 ? mark[k] : d[k].sym < 0 && d[k].c == 1;
      if (!drop) dims[r] = (portc_dim){d[k].c, d[k].sym >= 0 ? c->g->syms[d[k].sym] : NULL}, shape[r++] = d[k].c;
    }
  }
  oval *x = op_in(c, 0);
  if (int_known(x)) return copy_known(c, x, r, shape); /* even where a graph node holds it too */
  portc_node v = val_node(c, x);
  return out_node(c, 0, v < 0 ? v : portc_reshape(c->g, v, r, dims));
}
static portc_status op_Squeeze(imp *c) { return resqueeze(c, false); }
static portc_status op_Unsqueeze(imp *c) { return resqueeze(c, true); }

/* Expand broadcasts x against the shape: a 1 in the shape keeps x's dimension */
static portc_status op_Expand(imp *c) {
  portc_status st = op_need(c, 0);
  if (!st) st = op_need(c, 1);
  if (st) return st;
  const oval *s = op_in(c, 1);
  if (!int_known(s) || s->rank != 1) return fail(c, PORTC_ERR_INVALID, "the shape must be a 1-D tensor known at import");
  dim xd[PORTC_MAX_RANK];
  int xr = val_shape(c, op_in(c, 0), xd), sr = (int)s->shape[0], rank = xr > sr ? xr : sr;
  if (rank > PORTC_MAX_RANK) return fail(c, PORTC_ERR_SHAPE, "rank %d is more than %d", rank, PORTC_MAX_RANK);
  portc_dim dims[PORTC_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    int xi = k - (rank - xr), si = k - (rank - sr);
    sval e = si >= 0 ? s->i[si] : (sval){1, -1, false};
    if (!e.unknown && e.sym < 0 && e.c == 1) dims[k] = xi >= 0 ? (portc_dim){-1, NULL} : (portc_dim){1, NULL};
    else if (!sval_dim(c, e, &dims[k])) {
      if (xi < 0) return fail(c, PORTC_ERR_SHAPE, "dimension %d of the shape is not a size portc can express", k);
      dims[k] = (portc_dim){-1, NULL}; /* unknown here: the input's own size must be it */
    }
  }
  if (int_known(op_in(c, 0))) { /* shape arithmetic stays known: broadcast the values */
    const oval *v = op_in(c, 0);
    int64_t shape[PORTC_MAX_RANK], n = 1;
    bool constant = true;
    for (int k = 0; k < rank && constant; k++) {
      int xi = k - (rank - xr);
      shape[k] = dims[k].symbol ? 0 : dims[k].size == -1 ? xd[xi].c : dims[k].size;
      constant = !dims[k].symbol && (xi < 0 || xd[xi].sym < 0) && (xi < 0 || xd[xi].c == 1 || xd[xi].c == shape[k]) && shape[k] <= 4096;
      n *= constant ? shape[k] : 1;
      constant = constant && n <= 4096; /* larger: a graph node, as before */
    }
    if (constant) {
      sval *r = malloc(sizeof(sval) * (size_t)(n ? n : 1));
      if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
      for (int64_t e = 0; e < n; e++) { /* element e's source: its coordinates, 0 where v broadcasts */
        int64_t rem = e, src = 0, stride = 1;
        for (int k = rank - 1; k >= 0; k--) {
          int64_t coord = rem % shape[k];
          rem /= shape[k];
          int xi = k - (rank - xr);
          if (xi < 0) continue;
          src += (xd[xi].c == 1 ? 0 : coord) * stride;
          stride *= xd[xi].c;
        }
        r[e] = v->i[src];
      }
      return out_ints(c, 0, v->dt, rank, shape, r);
    }
  }
  portc_node x = val_node(c, op_in(c, 0));
  if (x >= 0 && xr < rank) {
    portc_dim up[PORTC_MAX_RANK];
    for (int k = 0; k < rank; k++) {
      int xi = k - (rank - xr);
      up[k] = xi < 0 ? (portc_dim){1, NULL} : (portc_dim){xd[xi].c, xd[xi].sym >= 0 ? c->g->syms[xd[xi].sym] : NULL};
    }
    x = portc_reshape(c->g, x, rank, up);
  }
  return out_node(c, 0, x < 0 ? x : portc_expand(c->g, x, rank, dims));
}

static portc_status op_Concat(imp *c) {
  if (c->nin < 1) return fail(c, PORTC_ERR_INVALID, "needs inputs");
  int64_t axis = attr_int(c, "axis", 0);
  bool known = true;
  portc_status st;
  for (int k = 0; k < c->nin; k++) {
    if ((st = op_need(c, k))) return st;
    known = known && int_known(op_in(c, k)) && op_in(c, k)->rank == op_in(c, 0)->rank;
  }
  const oval *first = c->in[0];
  int rank = first->rank;
  if (known && axis < 0) axis += rank;
  if (known && axis >= 0 && axis < rank) { /* shape arithmetic (shape vectors, index grids): stays known */
    int64_t shape[PORTC_MAX_RANK], outer = 1, inner = 1, n = 1;
    for (int d = 0; d < rank; d++) shape[d] = d == axis ? 0 : first->shape[d];
    for (int k = 0; k < c->nin; k++) {
      for (int d = 0; d < rank; d++)
        if (d != axis && op_in(c, k)->shape[d] != shape[d]) return fail(c, PORTC_ERR_SHAPE, "input %d's dimension %d differs off the concat axis", k, d);
      shape[axis] += op_in(c, k)->shape[axis];
    }
    for (int d = 0; d < rank; d++) n *= shape[d], outer *= d < axis ? shape[d] : 1, inner *= d > axis ? shape[d] : 1;
    sval *r = malloc(sizeof(sval) * (size_t)(n ? n : 1));
    if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
    int64_t at = 0;
    for (int64_t o = 0; o < outer; o++)
      for (int k = 0; k < c->nin; k++) {
        int64_t run = op_in(c, k)->shape[axis] * inner;
        memcpy(r + at, op_in(c, k)->i + o * run, sizeof(sval) * (size_t)run), at += run;
      }
    return out_ints(c, 0, first->dt, rank, shape, r);
  }
  portc_node xs[ONNX_MAX_IO];
  for (int k = 0; k < c->nin; k++)
    if ((xs[k] = val_node(c, op_in(c, k))) < 0) return out_node(c, 0, xs[k]);
  return out_node(c, 0, c->nin == 1 ? xs[0] : portc_concat(c->g, c->nin, xs, axis));
}

/* ONNX Slice on a known tensor, steps of either sign (PyTorch reverses pad lists this way) */
static portc_status slice_known(imp *c, const oval *x, int n, const int64_t *starts, const int64_t *ends, const int64_t *axes, const int64_t *steps) {
  int64_t first[PORTC_MAX_RANK], step[PORTC_MAX_RANK], count[PORTC_MAX_RANK], total = 1;
  for (int d = 0; d < x->rank; d++) first[d] = 0, step[d] = 1, count[d] = x->shape[d];
  for (int k = 0; k < n; k++) {
    int64_t a = axes[k], dim = x->shape[a], st = steps[k], b = starts[k], e = ends[k];
    if (b < 0) b = b < -dim ? 0 : b + dim;
    if (e < 0) e = e < -dim ? -1 : e + dim;
    if (st > 0) b = b > dim ? dim : b, e = e < 0 ? 0 : e > dim ? dim : e;
    else b = b > dim - 1 ? dim - 1 : b, e = e > dim - 1 ? dim - 1 : e;
    int64_t span = st > 0 ? e - b : b - e, mag = st > 0 ? st : -st;
    first[a] = b, step[a] = st, count[a] = span > 0 ? (span - 1) / mag + 1 : 0;
  }
  int64_t shape[PORTC_MAX_RANK];
  for (int d = 0; d < x->rank; d++) shape[d] = count[d], total *= count[d];
  sval *r = malloc(sizeof(sval) * (size_t)(total ? total : 1));
  if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  for (int64_t o = 0; o < total; o++) {
    int64_t rem = o, src = 0, stride = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
      int64_t i = rem % count[d];
      rem /= count[d];
      src += (first[d] + i * step[d]) * stride;
      stride *= x->shape[d];
    }
    r[o] = x->i[src];
  }
  return out_ints(c, 0, x->dt, x->rank, shape, r);
}

static portc_status op_Slice(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  int64_t starts[PORTC_MAX_RANK], ends[PORTC_MAX_RANK], axes[PORTC_MAX_RANK], steps[PORTC_MAX_RANK];
  int n, ne, na = -1, ns = -1;
  if ((st = known_ints(c, 1, "starts", starts, PORTC_MAX_RANK, &n)) || (st = known_ints(c, 2, "ends", ends, PORTC_MAX_RANK, &ne))) return st;
  if (op_in(c, 3) && (st = known_ints(c, 3, "axes", axes, PORTC_MAX_RANK, &na))) return st;
  if (op_in(c, 4) && (st = known_ints(c, 4, "steps", steps, PORTC_MAX_RANK, &ns))) return st;
  if (ne != n || (na >= 0 && na != n) || (ns >= 0 && ns != n)) return fail(c, PORTC_ERR_INVALID, "starts, ends, axes and steps differ in length");
  oval *x = op_in(c, 0);
  dim d[PORTC_MAX_RANK];
  int rank = val_shape(c, x, d);
  for (int k = 0; k < n; k++) {
    if (na < 0) axes[k] = k;
    if (ns < 0) steps[k] = 1;
    if (steps[k] == 0) return fail(c, PORTC_ERR_INVALID, "step 0");
    if (axes[k] < 0) axes[k] += rank;
    if (axes[k] < 0 || axes[k] >= rank) return fail(c, PORTC_ERR_INVALID, "axis %lld is out of range", (long long)axes[k]);
  }
  if (int_known(x)) return slice_known(c, x, n, starts, ends, axes, steps);
  for (int k = 0; k < n; k++)
    if (steps[k] < 0) return fail(c, PORTC_ERR_INVALID, "step %lld on a tensor computed at run time: portc slices forwards only", (long long)steps[k]);
  portc_node v = val_node(c, x);
  for (int k = 0; k < n && v >= 0; k++) {
    int64_t e = ends[k] >= ((int64_t)1 << 62) ? PORTC_END : ends[k] <= -((int64_t)1 << 62) ? 0 : ends[k];
    int64_t s = starts[k] <= -((int64_t)1 << 62) ? 0 : starts[k] >= ((int64_t)1 << 62) ? PORTC_END : starts[k];
    if (s == PORTC_END) s = d[axes[k]].sym < 0 ? d[axes[k]].c : 0;
    if (s == 0 && e == PORTC_END && steps[k] == 1) continue;
    v = portc_slice(c->g, v, axes[k], s, e, steps[k]);
  }
  return out_node(c, 0, v);
}

static portc_status op_Gather(imp *c) {
  portc_status st = op_need(c, 0);
  if (!st) st = op_need(c, 1);
  if (st) return st;
  oval *x = op_in(c, 0), *idx = op_in(c, 1);
  dim d[PORTC_MAX_RANK];
  int rank = val_shape(c, x, d);
  int64_t axis = attr_int(c, "axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return fail(c, PORTC_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)attr_int(c, "axis", 0), rank);
  bool idx_const = int_known(idx);
  for (int64_t k = 0; idx_const && k < val_numel(idx); k++) idx_const = !idx->i[k].unknown && idx->i[k].sym < 0;
  if (int_known(x) && idx_const && rank == 1) { /* entries of a shape vector */
    int64_t n = val_numel(idx);
    sval *r = malloc(sizeof(sval) * (size_t)(n ? n : 1));
    if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < n; k++) {
      int64_t i = idx->i[k].c < 0 ? idx->i[k].c + x->shape[0] : idx->i[k].c;
      if (i < 0 || i >= x->shape[0]) {
        free(r);
        return fail(c, PORTC_ERR_INVALID, "index %lld is out of range for %lld entries", (long long)idx->i[k].c, (long long)x->shape[0]);
      }
      r[k] = x->i[i];
    }
    return out_ints(c, 0, x->dt, idx->rank, idx->shape, r);
  }
  portc_node v = val_node(c, x);
  if (v < 0) return out_node(c, 0, v);
  if (idx_const && idx->rank == 0 && d[axis].sym < 0) { /* one known index: a slice, then drop the axis */
    int64_t i = idx->i[0].c < 0 ? idx->i[0].c + d[axis].c : idx->i[0].c;
    if (i < 0 || i >= d[axis].c) return fail(c, PORTC_ERR_INVALID, "index %lld is out of range for size %lld", (long long)idx->i[0].c, (long long)d[axis].c);
    portc_dim dims[PORTC_MAX_RANK];
    int r = 0;
    for (int k = 0; k < rank; k++)
      if (k != axis) dims[r++] = (portc_dim){d[k].c, d[k].sym >= 0 ? c->g->syms[d[k].sym] : NULL};
    return out_node(c, 0, portc_reshape(c->g, portc_slice(c->g, v, axis, i, i + 1, 1), r, dims));
  }
  portc_node ix = val_node(c, idx);
  return out_node(c, 0, ix < 0 ? ix : portc_gather(c->g, v, ix, axis));
}

static portc_status op_Split(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  dim d[PORTC_MAX_RANK];
  int rank = val_shape(c, op_in(c, 0), d);
  int64_t axis = attr_int(c, "axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return fail(c, PORTC_ERR_INVALID, "axis %lld is out of range", (long long)attr_int(c, "axis", 0));
  int nout = (int)c->np->n_output;
  int64_t sizes[ONNX_MAX_IO];
  int n = -1;
  if (op_in(c, 1)) {
    if ((st = known_ints(c, 1, "split", sizes, ONNX_MAX_IO, &n))) return st;
  } else if ((n = attr_ints(c, "split", sizes, ONNX_MAX_IO)) < 0) {
    if (d[axis].sym >= 0) return fail(c, PORTC_ERR_SHAPE, "an even split of a symbolic dimension");
    int64_t each = (d[axis].c + nout - 1) / (nout ? nout : 1);
    for (n = 0; n < nout; n++) sizes[n] = n + 1 < nout ? each : d[axis].c - each * (nout - 1);
  }
  if (n != nout) return fail(c, PORTC_ERR_INVALID, "%d split sizes for %d outputs", n, nout);
  oval *xv = op_in(c, 0);
  bool known = int_known(xv) && rank == 1; /* a known vector (repeat_interleave's repeats, MViT): pieces stay known */
  portc_node x = known ? 0 : val_node(c, xv);
  if (x < 0) return out_node(c, 0, x);
  int64_t at = 0;
  for (int k = 0; k < nout; k++) {
    if (sizes[k] < 0 || sizes[k] > MAX_DIM || (known && at + sizes[k] > xv->shape[0]))
      return fail(c, PORTC_ERR_INVALID, "split size %lld is out of range", (long long)sizes[k]);
    if (known) {
      sval *r = malloc(sizeof(sval) * (size_t)(sizes[k] ? sizes[k] : 1));
      if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
      memcpy(r, xv->i + at, sizeof(sval) * (size_t)sizes[k]);
      st = out_ints(c, k, xv->dt, 1, &sizes[k], r);
    } else st = out_node(c, k, portc_slice(c->g, x, axis, at, at + sizes[k], 1));
    if (st) return st;
    at += sizes[k];
  }
  return PORTC_OK;
}

static portc_status op_Pad(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  char buf[16];
  const char *mode = attr_string(c, "mode", "constant", buf, sizeof buf);
  if (strcmp(mode, "constant")) return fail(c, PORTC_ERR_INVALID, "mode '%s': portc pads with a constant only", mode);
  portc_node x = val_node(c, op_in(c, 0));
  if (x < 0) return out_node(c, 0, x);
  int rank = portc_node_rank(c->g, x), n, na = -1;
  int64_t pads[2 * PORTC_MAX_RANK], axes[PORTC_MAX_RANK], out[2 * PORTC_MAX_RANK] = {0};
  if ((st = known_ints(c, 1, "pads", pads, 2 * PORTC_MAX_RANK, &n))) return st;
  if (op_in(c, 3) && (st = known_ints(c, 3, "axes", axes, PORTC_MAX_RANK, &na))) return st;
  if (na < 0)
    for (na = 0; na < rank; na++) axes[na] = na;
  if (n != 2 * na) return fail(c, PORTC_ERR_INVALID, "%d pads for %d axes", n, na);
  for (int k = 0; k < na; k++) {
    int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (a < 0 || a >= rank) return fail(c, PORTC_ERR_INVALID, "axis %lld is out of range", (long long)axes[k]);
    if (pads[k] < 0 || pads[na + k] < 0) return fail(c, PORTC_ERR_INVALID, "negative pads (cropping) are not supported");
    if (pads[k] > MAX_DIM || pads[na + k] > MAX_DIM) return fail(c, PORTC_ERR_INVALID, "pads of %lld are absurd", (long long)pads[k]);
    out[2 * a] = pads[k], out[2 * a + 1] = pads[na + k];
  }
  double value = 0;
  if (op_in(c, 2) && !known_scalar(op_in(c, 2), &value)) return fail(c, PORTC_ERR_INVALID, "constant_value must be a scalar known at import");
  return out_node(c, 0, portc_pad(c->g, x, 2 * rank, out, value));
}

/* Range with known start, limit and delta: folded into a known vector (integers stay shape
 * arithmetic, as torch.arange over a size exports) */
static portc_status op_Range(imp *c) {
  portc_status st = PORTC_OK;
  double v[3];
  for (int k = 0; k < 3 && !st; k++) st = op_need(c, k);
  if (st) return st;
  for (int k = 0; k < 3; k++)
    if (!known_scalar(op_in(c, k), &v[k]))
      return fail(c, PORTC_ERR_INVALID, "start, limit and delta must be known at import (a constant or shape arithmetic)");
  if (v[2] == 0 || !isfinite(v[0]) || !isfinite(v[1]) || !isfinite(v[2])) return fail(c, PORTC_ERR_INVALID, "delta 0, or a bound that is not finite");
  double count = ceil((v[1] - v[0]) / v[2]);
  if (count > (double)(INT64_C(1) << 24)) return fail(c, PORTC_ERR_SHAPE, "%.0f elements, more than 2^24", count);
  int64_t n = count > 0 ? (int64_t)count : 0;
  portc_dtype dt = op_in(c, 0)->dt;
  if (op_in(c, 0)->i && op_in(c, 2)->i) { /* integers: exact */
    int64_t start = op_in(c, 0)->i[0].c, delta = op_in(c, 2)->i[0].c;
    sval *r = malloc(sizeof(sval) * (size_t)(n ? n : 1));
    if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) {
      int64_t step, x;
      if (__builtin_mul_overflow(i, delta, &step) || __builtin_add_overflow(start, step, &x)) {
        free(r);
        return fail(c, PORTC_ERR_INVALID, "the range overflows 64-bit integers");
      }
      r[i] = (sval){x, -1, false};
    }
    return out_ints(c, 0, dt, 1, &n, r);
  }
  portc_tensor *t = portc_tensor_new(dt, 1, &n);
  pdata *d = t ? pdata_new(t) : NULL;
  if (!d) return portc_tensor_free(t), fail(c, PORTC_ERR_NOMEM, "out of memory");
  for (int64_t i = 0; i < n; i++) portc_tensor_set(t, i, v[0] + (double)i * v[2]);
  return out_floats(c, 0, d);
}

/* Tile with known repeats: each repeated axis of a known size as a broadcast along a new axis in
 * front of it, then merged into it ([.., d, ..] -> [.., 1, d, ..] -> [.., r, d, ..] -> [.., r d, ..]:
 * repeat_interleave's 3136 repeats in MViT); of a symbolic size as a concatenation of copies */
static portc_status op_Tile(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  portc_node x = val_node(c, op_in(c, 0));
  if (x < 0) return out_node(c, 0, x);
  int rank = portc_node_rank(c->g, x), n;
  int64_t reps[PORTC_MAX_RANK];
  if ((st = known_ints(c, 1, "repeats", reps, PORTC_MAX_RANK, &n))) return st;
  if (n != rank) return fail(c, PORTC_ERR_INVALID, "%d repeats for an input of rank %d", n, rank);
  for (int a = 0; a < rank; a++) {
    if (reps[a] < 1 || reps[a] > MAX_DIM) return fail(c, PORTC_ERR_INVALID, "axis %d repeats %lld times", a, (long long)reps[a]);
    if (reps[a] == 1) continue;
    portc_dim d[PORTC_MAX_RANK], wide[PORTC_MAX_RANK];
    portc_node_shape(c->g, x, d);
    if (d[a].symbol || rank >= PORTC_MAX_RANK) { /* no room for the new axis, or r d of a symbolic d: copies */
      if (reps[a] > ONNX_MAX_IO) return fail(c, PORTC_ERR_INVALID, "axis %d repeats %lld times (1 to %d here)", a, (long long)reps[a], ONNX_MAX_IO);
      portc_node copies[ONNX_MAX_IO];
      for (int64_t r = 0; r < reps[a]; r++) copies[r] = x;
      if ((x = portc_concat(c->g, (int)reps[a], copies, a)) < 0) return out_node(c, 0, x);
      continue;
    }
    for (int k = 0, j = 0; k <= rank; k++) wide[k] = k == a ? (portc_dim){1, NULL} : d[j++];
    if (__builtin_mul_overflow(d[a].size, reps[a], &d[a].size) || d[a].size > MAX_DIM)
      return fail(c, PORTC_ERR_SHAPE, "axis %d repeated %lld times is too large", a, (long long)reps[a]);
    portc_node one = portc_reshape(c->g, x, rank + 1, wide);
    wide[a].size = reps[a];
    portc_node spread = one < 0 ? one : portc_expand(c->g, one, rank + 1, wide);
    if ((x = spread < 0 ? spread : portc_reshape(c->g, spread, rank, d)) < 0) return out_node(c, 0, x);
  }
  return out_node(c, 0, x);
}

/* Trilu over known last two dimensions: a constant mask, j - i >= k (upper) or <= k (lower) */
static portc_status op_Trilu(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  portc_node x = val_node(c, op_in(c, 0));
  if (x < 0) return out_node(c, 0, x);
  int64_t k = 0;
  int n = 0;
  if (c->nin > 1 && op_in(c, 1) && (st = known_ints(c, 1, "k", &k, 1, &n))) return st;
  bool upper = attr_int(c, "upper", 1) != 0;
  int rank = portc_node_rank(c->g, x);
  portc_dim d[PORTC_MAX_RANK];
  portc_node_shape(c->g, x, d);
  if (rank < 2) return fail(c, PORTC_ERR_SHAPE, "the input has rank %d; Trilu needs at least 2", rank);
  if (d[rank - 2].symbol || d[rank - 1].symbol) return fail(c, PORTC_ERR_SHAPE, "the last two dimensions must be known at import");
  int64_t shape[2] = {d[rank - 2].size, d[rank - 1].size};
  if (shape[0] > 0 && shape[1] > (INT64_C(1) << 26) / shape[0])
    return fail(c, PORTC_ERR_SHAPE, "a %lldx%lld mask is too large (2^26 elements at most)", (long long)shape[0], (long long)shape[1]);
  int64_t count = shape[0] * shape[1];
  double *mask = malloc(sizeof(double) * (size_t)(count > 0 ? count : 1));
  if (!mask) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  for (int64_t i = 0; i < shape[0]; i++)
    for (int64_t j = 0; j < shape[1]; j++) mask[i * shape[1] + j] = upper ? j - i >= k : j - i <= k;
  portc_node m = portc_const(c->g, PORTC_BOOL, 2, shape, mask, count);
  free(mask);
  return out_node(c, 0, portc_where(c->g, m, x, portc_scalar(c->g, portc_node_dtype(c->g, x), 0)));
}

const onnx_op onnx_ops_shape[] = {
    {"Shape", op_Shape}, {"Size", op_Size}, {"Constant", op_Constant}, {"ConstantOfShape", op_ConstantOfShape},
    {"Reshape", op_Reshape}, {"Flatten", op_Flatten}, {"Transpose", op_Transpose}, {"Squeeze", op_Squeeze},
    {"Unsqueeze", op_Unsqueeze}, {"Expand", op_Expand}, {"Concat", op_Concat}, {"Slice", op_Slice},
    {"Gather", op_Gather}, {"Split", op_Split}, {"Pad", op_Pad}, {"Tile", op_Tile}, {"Trilu", op_Trilu}, {"Range", op_Range},
    {NULL, NULL},
};
