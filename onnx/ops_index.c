/*
 * ops_index.c: ONNX's element-indexed operators, ScatterND, GatherElements, CumSum and TopK, over data
 * whose shape is known at import. portc's graph has no scatter and no scan; each becomes what it
 * has:
 *   ScatterND(data, idx, upd)  where(hit, gather(flat(upd), src), data): with the indices known,
 *                              the import works out which update lands on each element
 *   GatherElements(x, idx, a)  gather(flat(x), idx * stride(a) + the other coordinates' offsets)
 *   CumSum(x, a)               x moved to put a last, times a constant triangular matrix of ones
 * Shape arithmetic (known integers) is folded instead. Swin's shifted-window mask is built with
 * ScatterND from constants; GatherElements and CumSum appear in detection and sequence models.
 * TopK with a known K is K rounds of argmax. NonZero, Unique and the like, whose output sizes
 * depend on the data, are refused by name.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

#define MAX_FLAT (INT64_C(1) << 24) /* elements a constant index map may have */

/* the data's shape, every dimension constant; false (error set) otherwise */
static bool const_shape(imp *c, const oval *v, const char *what, int *rank, int64_t *shape, int64_t *n) {
  dim d[PORTC_MAX_RANK];
  *rank = val_shape(c, v, d);
  *n = 1;
  for (int i = 0; i < *rank; i++) {
    if (d[i].sym >= 0) {
      fail(c, PORTC_ERR_SHAPE, "%s '%s' has the symbolic dimension %s; it must be known at import", what, v->name, c->g->syms[d[i].sym]);
      return false;
    }
    shape[i] = d[i].c;
    *n *= d[i].c;
  }
  if (*n > MAX_FLAT) {
    fail(c, PORTC_ERR_SHAPE, "%s '%s' has %lld elements; at most 2^24 here", what, v->name, (long long)*n);
    return false;
  }
  return true;
}

/* a known integer input's values, all constants; NULL (error set) otherwise. Free it. */
static int64_t *known_values(imp *c, int k, const char *what, int64_t *count) {
  const oval *v = op_in(c, k);
  if (!int_known(v)) {
    fail(c, PORTC_ERR_INVALID, "input '%s' (%s) is computed at run time; portc needs it known at import", v ? v->name : "?", what);
    return NULL;
  }
  *count = val_numel(v);
  int64_t *out = malloc(sizeof(int64_t) * (size_t)(*count ? *count : 1));
  if (!out) {
    fail(c, PORTC_ERR_NOMEM, "out of memory");
    return NULL;
  }
  for (int64_t i = 0; i < *count; i++) {
    if (v->i[i].unknown || v->i[i].sym >= 0) {
      free(out);
      fail(c, PORTC_ERR_SHAPE, "input '%s' (%s) depends on sizes known only at run time", v->name, what);
      return NULL;
    }
    out[i] = v->i[i].c;
  }
  return out;
}

static portc_node flat(portc_graph *g, portc_node x, int64_t n) { return portc_reshape(g, x, 1, (portc_dim[]){{n, NULL}}); }

static portc_status op_ScatterND(imp *c) {
  portc_status st;
  for (int k = 0; k < 3; k++)
    if ((st = op_need(c, k))) return st;
  char buf[16];
  const char *red = attr_string(c, "reduction", "none", buf, sizeof buf);
  int dr, ir, ur;
  int64_t ds[PORTC_MAX_RANK], is[PORTC_MAX_RANK], us[PORTC_MAX_RANK], dn, in, un;
  if (!const_shape(c, op_in(c, 0), "data", &dr, ds, &dn) || !const_shape(c, op_in(c, 2), "updates", &ur, us, &un)) return PORTC_ERR_SHAPE;
  int64_t *idx = known_values(c, 1, "indices", &in);
  if (!idx) return PORTC_ERR_INVALID;
  const oval *iv = op_in(c, 1);
  ir = iv->rank;
  memcpy(is, iv->shape, sizeof(int64_t) * (size_t)ir);
  int64_t q = ir ? is[ir - 1] : 0, slice = 1, tuples = q ? in / q : 0;
  st = PORTC_OK;
  if (ir < 1 || q < 1 || q > dr) st = fail(c, PORTC_ERR_SHAPE, "indices' last dimension is %lld; it must be 1 to the data's rank %d", (long long)q, dr);
  for (int i = (int)q; !st && i < dr; i++) slice *= ds[i];
  if (!st && (ur != ir - 1 + dr - (int)q || tuples * slice != un)) st = fail(c, PORTC_ERR_SHAPE, "updates do not have the shape indices[:-1] + data[%lld:]", (long long)q);
  int64_t *src = st ? NULL : malloc(sizeof(int64_t) * (size_t)(dn ? dn : 1));
  if (!st && !src) st = fail(c, PORTC_ERR_NOMEM, "out of memory");
  for (int64_t e = 0; !st && e < dn; e++) src[e] = -1;
  for (int64_t t = 0; !st && t < tuples; t++) { /* tuple t writes data[idx[t], :] from updates[t, :] */
    int64_t off = 0;
    for (int j = 0; j < q && !st; j++) {
      int64_t x = idx[t * q + j];
      if (x < 0) x += ds[j];
      if (x < 0 || x >= ds[j]) st = fail(c, PORTC_ERR_INVALID, "index %lld is out of range for dimension %d of size %lld", (long long)idx[t * q + j], j, (long long)ds[j]);
      off = off * ds[j] + x;
    }
    for (int64_t e = 0; !st && e < slice; e++) src[off * slice + e] = t * slice + e;
  }
  free(idx);
  if (!st && strcmp(red, "none")) st = fail(c, PORTC_ERR_INVALID, "reduction '%s': portc scatters with reduction none", red);
  if (st) {
    free(src);
    return st;
  }
  int64_t hits = 0;
  for (int64_t e = 0; e < dn; e++) hits += src[e] >= 0;
  if (!hits) { /* no element written (empty updates: Swin3D's masks of windows that shift by nothing) */
    free(src);
    return out_alias(c, 0, op_in(c, 0));
  }
  portc_graph *g = c->g;
  double *from = malloc(sizeof(double) * (size_t)(dn ? dn : 1)), *hit = malloc(sizeof(double) * (size_t)(dn ? dn : 1));
  if (!from || !hit) {
    free(src), free(from), free(hit);
    return fail(c, PORTC_ERR_NOMEM, "out of memory");
  }
  for (int64_t e = 0; e < dn; e++) from[e] = src[e] < 0 ? 0 : (double)src[e], hit[e] = src[e] >= 0;
  free(src);
  portc_node data = val_node(c, op_in(c, 0)), upd = data < 0 ? data : val_node(c, op_in(c, 2));
  portc_node gathered = portc_gather(g, flat(g, upd, un), portc_const(g, PORTC_I64, dr, ds, from, dn), 0);
  portc_node mask = portc_const(g, PORTC_BOOL, dr, ds, hit, dn);
  free(from), free(hit);
  return out_node(c, 0, upd < 0 ? upd : portc_where(g, mask, gathered, data));
}

/* GatherElements over data with a symbolic dimension: each output element picks one of the L along
 * the axis by comparison, out = sum over j of where(idx == j, x[.., j, ..], 0), exact */
static portc_node gather_by_compare(portc_graph *g, portc_node x, portc_node idx, int rank, int64_t axis) {
  portc_dim xd[PORTC_MAX_RANK], id[PORTC_MAX_RANK], xu[PORTC_MAX_RANK + 1], iu[PORTC_MAX_RANK + 1], od[PORTC_MAX_RANK + 1];
  portc_node_shape(g, x, xd);
  portc_node_shape(g, idx, id);
  int64_t L = xd[axis].size;
  for (int d = 0; d <= rank; d++) { /* x as [.., 1, L, ..], idx as [.., K, 1, ..], j as [1, .., L, ..] */
    xu[d] = d < axis ? xd[d] : d == axis ? (portc_dim){1, NULL} : xd[d - 1];
    iu[d] = d <= axis ? id[d] : d == axis + 1 ? (portc_dim){1, NULL} : id[d - 1];
    od[d] = (portc_dim){d == axis + 1 ? L : 1, NULL};
  }
  double *iota = malloc(sizeof(double) * (size_t)(L > 0 ? L : 1));
  if (!iota) return err_node(PORTC_ERR_NOMEM, "out of memory");
  for (int64_t j = 0; j < L; j++) iota[j] = (double)j;
  portc_node js = portc_reshape(g, portc_const(g, PORTC_I64, 1, &L, iota, L), rank + 1, od);
  free(iota);
  portc_node i = portc_cast(g, idx, PORTC_I64);
  i = portc_where(g, portc_lt(g, i, portc_scalar(g, PORTC_I64, 0)), portc_add(g, i, portc_scalar(g, PORTC_I64, (double)L)), i);
  portc_node hit = portc_eq(g, portc_reshape(g, i, rank + 1, iu), js);
  portc_node picked = portc_where(g, hit, portc_reshape(g, x, rank + 1, xu), portc_scalar(g, portc_node_dtype(g, x), 0));
  return portc_sum(g, picked, 1, (int64_t[]){axis + 1}, false);
}

static portc_status op_GatherElements(imp *c) {
  portc_status st;
  for (int k = 0; k < 2; k++)
    if ((st = op_need(c, k))) return st;
  portc_graph *g = c->g;
  dim xd[PORTC_MAX_RANK], id[PORTC_MAX_RANK];
  int xr = val_shape(c, op_in(c, 0), xd), ir = val_shape(c, op_in(c, 1), id);
  int64_t axis = attr_int(c, "axis", 0);
  if (axis < 0) axis += xr;
  if (axis < 0 || axis >= xr || ir != xr) return fail(c, PORTC_ERR_SHAPE, "axis %lld and indices of rank %d for data of rank %d", (long long)attr_int(c, "axis", 0), ir, xr);
  bool constant = true;
  for (int d = 0; d < xr; d++) {
    constant = constant && xd[d].sym < 0 && id[d].sym < 0;
    if (d != axis && (xd[d].c != id[d].c || xd[d].sym != id[d].sym)) return fail(c, PORTC_ERR_SHAPE, "indices differ from the data off the axis (dimension %d)", d);
  }
  if (xd[axis].sym >= 0) return fail(c, PORTC_ERR_SHAPE, "the gathered axis is %s; it must be known at import", c->g->syms[xd[axis].sym]);
  if (!constant) {
    portc_node x = val_node(c, op_in(c, 0)), i = x < 0 ? x : val_node(c, op_in(c, 1));
    return out_node(c, 0, i < 0 ? i : gather_by_compare(g, x, i, xr, axis));
  }
  int64_t xs[PORTC_MAX_RANK], is[PORTC_MAX_RANK], xn, in;
  if (!const_shape(c, op_in(c, 0), "data", &xr, xs, &xn) || !const_shape(c, op_in(c, 1), "indices", &ir, is, &in)) return PORTC_ERR_SHAPE;
  int64_t stride[PORTC_MAX_RANK];
  for (int i = xr - 1, s = 1; i >= 0; s *= xs[i], i--) stride[i] = s;
  /* with constant shapes, one gather from the flattened data: every element's offset from its
   * coordinates off the axis, plus its index times the axis's stride */
  double *base = malloc(sizeof(double) * (size_t)(in ? in : 1));
  if (!base) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  for (int64_t e = 0; e < in; e++) {
    int64_t r = e, off = 0;
    for (int i = ir - 1; i >= 0; i--) {
      int64_t coord = r % is[i];
      r /= is[i];
      if (i != axis) off += coord * stride[i];
    }
    base[e] = (double)off;
  }
  portc_node x = val_node(c, op_in(c, 0)), offsets;
  oval *iv = op_in(c, 1);
  if (int_known(iv)) { /* all offsets known */
    int64_t cnt, *idx = known_values(c, 1, "indices", &cnt);
    if (!idx) return free(base), PORTC_ERR_INVALID;
    for (int64_t e = 0; e < in; e++) {
      int64_t v = idx[e] < 0 ? idx[e] + xs[axis] : idx[e];
      if (v < 0 || v >= xs[axis]) {
        int64_t bad = idx[e];
        free(idx), free(base);
        return fail(c, PORTC_ERR_INVALID, "index %lld is out of range for axis %lld of size %lld", (long long)bad, (long long)axis, (long long)xs[axis]);
      }
      base[e] += (double)(v * stride[axis]);
    }
    free(idx);
    offsets = portc_const(g, PORTC_I64, ir, is, base, in);
  } else { /* indices at run time: base + (idx, negatives counted from the end) * stride */
    portc_node i = portc_cast(g, val_node(c, iv), PORTC_I64);
    i = portc_where(g, portc_lt(g, i, portc_scalar(g, PORTC_I64, 0)), portc_add(g, i, portc_scalar(g, PORTC_I64, (double)xs[axis])), i);
    offsets = portc_add(g, portc_const(g, PORTC_I64, ir, is, base, in), portc_mul(g, i, portc_scalar(g, PORTC_I64, (double)stride[axis])));
  }
  free(base);
  return out_node(c, 0, x < 0 ? x : portc_gather(g, flat(g, x, xn), offsets, 0));
}

static portc_status op_CumSum(imp *c) {
  portc_status st;
  for (int k = 0; k < 2; k++)
    if ((st = op_need(c, k))) return st;
  int64_t axis;
  int n;
  if ((st = known_ints(c, 1, "axis", &axis, 1, &n))) return st;
  bool exclusive = attr_int(c, "exclusive", 0) != 0, reverse = attr_int(c, "reverse", 0) != 0;
  portc_graph *g = c->g;
  portc_node x = val_node(c, op_in(c, 0));
  if (x < 0) return out_node(c, 0, x);
  int rank = portc_node_rank(g, x);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return fail(c, PORTC_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)axis, rank);
  portc_dtype dt = portc_node_dtype(g, x);
  if (dt != PORTC_F32 && dt != PORTC_F16 && dt != PORTC_BF16) return fail(c, PORTC_ERR_DTYPE, "CumSum of %s run-time tensors: portc sums floating tensors", portc_dtype_name(dt));
  portc_dim d[PORTC_MAX_RANK];
  portc_node_shape(g, x, d);
  if (d[axis].symbol) return fail(c, PORTC_ERR_SHAPE, "the summed axis is %s; it must be known at import", d[axis].symbol);
  int64_t L = d[axis].size;
  if (L > 4096) return fail(c, PORTC_ERR_SHAPE, "a running sum over %lld elements (4096 at most)", (long long)L);
  double *tri = malloc(sizeof(double) * (size_t)(L > 0 ? L * L : 1));
  if (!tri) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  for (int64_t i = 0; i < L; i++) /* y[j] = sum of x[i] over i <= j (i < j exclusive; reversed: i >= j) */
    for (int64_t j = 0; j < L; j++) tri[i * L + j] = reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j);
  portc_node m = portc_const(g, dt, 2, (int64_t[]){L, L}, tri, L * L);
  free(tri);
  int64_t perm[PORTC_MAX_RANK];
  for (int i = 0; i < rank; i++) perm[i] = i;
  perm[axis] = rank - 1, perm[rank - 1] = axis; /* a swap: its own inverse */
  portc_node y = portc_matmul(g, portc_permute(g, x, rank, perm), m);
  return out_node(c, 0, portc_permute(g, y, rank, perm));
}

/* TopK with K known at import, as K rounds of argmax along the axis: each takes the first index
 * of the extreme, its value, and masks it out for the next round. (A value that is itself the
 * mask's infinity may be picked twice.) */
#define MAX_TOPK 64

static portc_status op_TopK(imp *c) {
  portc_status st;
  for (int k = 0; k < 2; k++)
    if ((st = op_need(c, k))) return st;
  if (!int_known(op_in(c, 1)))
    return fail(c, PORTC_ERR_SHAPE, "K ('%s') is computed at run time, so the output's size would depend on the data; portc needs K known at import",
                op_in(c, 1)->name);
  int64_t K;
  int n;
  if ((st = known_ints(c, 1, "K", &K, 1, &n))) return st;
  portc_graph *g = c->g;
  portc_node x = val_node(c, op_in(c, 0));
  if (x < 0) return out_node(c, 0, x);
  int rank = portc_node_rank(g, x);
  int64_t axis = attr_int(c, "axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return fail(c, PORTC_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)attr_int(c, "axis", -1), rank);
  portc_dtype dt = portc_node_dtype(g, x);
  if (dt != PORTC_F32 && dt != PORTC_F16 && dt != PORTC_BF16) return fail(c, PORTC_ERR_DTYPE, "TopK of %s: portc selects from floating tensors", portc_dtype_name(dt));
  portc_dim d[PORTC_MAX_RANK], one[PORTC_MAX_RANK];
  portc_node_shape(g, x, d);
  if (d[axis].symbol) return fail(c, PORTC_ERR_SHAPE, "the axis is %s; it must be known at import", d[axis].symbol);
  int64_t L = d[axis].size;
  if (K < 1 || K > L || K > MAX_TOPK) return fail(c, PORTC_ERR_INVALID, "K is %lld; it must be 1 to the axis's %lld (and %d at most)", (long long)K, (long long)L, MAX_TOPK);
  bool largest = attr_int(c, "largest", 1) != 0;
  double *iota = malloc(sizeof(double) * (size_t)L);
  if (!iota) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  for (int64_t j = 0; j < L; j++) iota[j] = (double)j;
  for (int i = 0; i < rank; i++) one[i] = (portc_dim){i == axis ? L : 1, NULL};
  portc_node js = portc_reshape(g, portc_const(g, PORTC_I64, 1, &L, iota, L), rank, one);
  free(iota);
  portc_node work = largest ? x : portc_neg(g, x), vals[MAX_TOPK], idxs[MAX_TOPK], gone = portc_scalar(g, dt, -INFINITY);
  for (int64_t r = 0; r < K; r++) {
    idxs[r] = portc_argmax(g, work, axis, true);
    portc_node v = portc_max(g, work, 1, &axis, true);
    vals[r] = largest ? v : portc_neg(g, v);
    if (r + 1 < K) work = portc_where(g, portc_eq(g, js, idxs[r]), gone, work);
  }
  portc_node values = K == 1 ? vals[0] : portc_concat(g, (int)K, vals, axis), indices = K == 1 ? idxs[0] : portc_concat(g, (int)K, idxs, axis);
  if ((st = out_node(c, 0, values))) return st;
  return out_node(c, 1, indices);
}

/* operators whose output's size depends on the values of their input */
static portc_status op_data_dependent(imp *c) {
  return fail(c, PORTC_ERR_SHAPE, "the size of its output depends on the values of its input ('%s'); portc compiles graphs whose sizes follow from the input sizes",
              op_in(c, 0) ? op_in(c, 0)->name : "?");
}

const onnx_op onnx_ops_index[] = {
    {"ScatterND", op_ScatterND}, {"GatherElements", op_GatherElements}, {"CumSum", op_CumSum}, {"TopK", op_TopK},
    {"NonZero", op_data_dependent}, {"Unique", op_data_dependent}, {"Compress", op_data_dependent},
    {"NonMaxSuppression", op_data_dependent}, {NULL, NULL},
};
