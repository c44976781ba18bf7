/*
 * reference_ops.c: the reference semantics of elementwise ops, casts, reductions and views.
 * The elementwise formulas come from ops.def itself, so the table is the one definition of what
 * an op computes. Loops are plain and strided; clarity wins over speed here.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"
#include "../ir/ops_eval.h"
#include "reference.h"
#include "reference_util.h"

/* ---- elementwise formulas, expanded from ops.def ---- */


static double unary_f(enum op op, double x) {
  switch (op) {
#define UNARY(id, acc, fx, ix) case OP_##id: return fx;
#define OP(id, mi, ma, k, at)
#define BINARY(id, acc, fx, ix)
#define COMPARE(id, acc, fx)
#include "../ir/ops.def"
  default: return NAN;
  }
}

static int64_t unary_i(enum op op, int64_t x) {
  switch (op) {
#define UNARY(id, acc, fx, ix) case OP_##id: return ix;
#define OP(id, mi, ma, k, at)
#define BINARY(id, acc, fx, ix)
#define COMPARE(id, acc, fx)
#include "../ir/ops.def"
  default: return 0;
  }
}

static double binary_f(enum op op, double x, double y) {
  switch (op) {
#define BINARY(id, acc, fx, ix) case OP_##id: return fx;
#define COMPARE(id, acc, fx) case OP_##id: return fx;
#define OP(id, mi, ma, k, at)
#define UNARY(id, acc, fx, ix)
#include "../ir/ops.def"
  default: return NAN;
  }
}

static int64_t binary_i(enum op op, int64_t x, int64_t y, bool *fault) {
  switch (op) {
#define BINARY(id, acc, fx, ix) case OP_##id: return ix;
#define COMPARE(id, acc, fx) case OP_##id: return fx;
#define OP(id, mi, ma, k, at)
#define UNARY(id, acc, fx, ix)
#include "../ir/ops.def"
  default: return 0;
  }
}

/* ---- strided iteration ---- */

void bstrides(const rval *in, int orank, const int64_t *oshape, int64_t *st) {
  int64_t s = 1;
  for (int d = orank - 1; d >= 0; d--) {
    int id = d - (orank - in->rank);
    if (id < 0) {
      st[d] = 0;
      continue;
    }
    st[d] = in->shape[id] == 1 && oshape[d] != 1 ? 0 : s;
    s *= in->shape[id];
  }
}

void it_init(iter *it, int rank, const int64_t *shape, int nstreams) {
  memset(it, 0, sizeof *it);
  it->rank = rank;
  it->n = nstreams;
  memcpy(it->shape, shape, sizeof(int64_t) * (size_t)rank);
}

void it_step(iter *it) {
  for (int d = it->rank - 1; d >= 0; d--) {
    it->idx[d]++;
    for (int k = 0; k < it->n; k++) it->off[k] += it->st[k][d];
    if (it->idx[d] < it->shape[d]) return;
    for (int k = 0; k < it->n; k++) it->off[k] -= it->st[k][d] * it->shape[d];
    it->idx[d] = 0;
  }
}

void contiguous_strides(int rank, const int64_t *shape, int64_t *st) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    st[d] = s;
    s *= shape[d];
  }
}

/* ---- elementwise ---- */

static portc_status unary(const node *n, const rval *x, rval *out) {
  for (int64_t k = 0; k < out->numel; k++) {
    if (out->f) out->f[k] = unary_f(n->op, x->f[k]);
    else out->i[k] = wrap_int(unary_i(n->op, x->i[k]), out->dt);
  }
  return PORTC_OK;
}

static portc_status binary(const node *n, const rval *a, const rval *b, rval *out) {
  iter it;
  it_init(&it, out->rank, out->shape, 2);
  bstrides(a, out->rank, out->shape, it.st[0]);
  bstrides(b, out->rank, out->shape, it.st[1]);
  bool fault = false;
  for (int64_t k = 0; k < out->numel; k++, it_step(&it)) {
    int64_t ia = it.off[0], ib = it.off[1];
    if (a->f) {
      double r = binary_f(n->op, a->f[ia], b->f[ib]);
      if (out->f) out->f[k] = r;
      else out->i[k] = r != 0;
    } else {
      out->i[k] = wrap_int(binary_i(n->op, a->i[ia], b->i[ib], &fault), out->dt);
      if (fault) return err_set(PORTC_ERR_RUNTIME, "integer division by zero at element %lld", (long long)k);
    }
  }
  return PORTC_OK;
}

static portc_status where(const rval *c, const rval *a, const rval *b, rval *out) {
  iter it;
  it_init(&it, out->rank, out->shape, 3);
  bstrides(c, out->rank, out->shape, it.st[0]);
  bstrides(a, out->rank, out->shape, it.st[1]);
  bstrides(b, out->rank, out->shape, it.st[2]);
  for (int64_t k = 0; k < out->numel; k++, it_step(&it)) {
    bool t = c->i[it.off[0]] != 0;
    if (out->f) out->f[k] = t ? a->f[it.off[1]] : b->f[it.off[2]];
    else out->i[k] = t ? a->i[it.off[1]] : b->i[it.off[2]];
  }
  return PORTC_OK;
}

static portc_status cast(const rval *x, rval *out) {
  for (int64_t k = 0; k < out->numel; k++) {
    if (x->f && out->f) out->f[k] = round_to_dtype(x->f[k], out->dt);
    else if (x->f) out->i[k] = float_to_int(x->f[k], out->dt);
    else if (out->f) out->f[k] = round_to_dtype((double)x->i[k], out->dt);
    else out->i[k] = wrap_int(x->i[k], out->dt);
  }
  return PORTC_OK;
}

/* ---- reductions ---- */

static portc_status reduce(const node *n, const rval *x, rval *out) {
  const attr *axes = attr_get(n, "axes");
  bool red[PORTC_MAX_RANK] = {0};
  for (int i = 0; i < axes->n; i++) red[norm_axis(axes->v[i], x->rank)] = true;
  if (axes->n == 0)
    for (int i = 0; i < x->rank; i++) red[i] = true;
  int64_t count = 1, ost[PORTC_MAX_RANK], s = 1;
  for (int d = x->rank - 1; d >= 0; d--) {
    if (red[d]) {
      count *= x->shape[d];
      ost[d] = 0;
    } else {
      ost[d] = s;
      s *= x->shape[d];
    }
  }
  if (count == 0 && (n->op == OP_max || n->op == OP_min))
    return err_set(PORTC_ERR_RUNTIME, "%s over an empty axis has no value", op_get(n->op)->name);
  double init = n->op == OP_prod ? 1 : n->op == OP_max ? -INFINITY : n->op == OP_min ? INFINITY : 0;
  for (int64_t k = 0; k < out->numel; k++) {
    if (out->f) out->f[k] = init;
    else out->i[k] = n->op == OP_prod ? 1 : n->op == OP_max ? INT64_MIN : n->op == OP_min ? INT64_MAX : 0;
  }
  iter it;
  it_init(&it, x->rank, x->shape, 1);
  memcpy(it.st[0], ost, sizeof ost);
  for (int64_t k = 0; k < x->numel; k++, it_step(&it)) {
    int64_t o = it.off[0];
    if (out->f) {
      double v = x->f[k], *a = &out->f[o];
      switch (n->op) {
      case OP_sum: case OP_mean: *a += v; break;
      case OP_prod: *a *= v; break;
      case OP_max: if (isnan(v) || v > *a) *a = v; break;
      case OP_min: if (isnan(v) || v < *a) *a = v; break;
      default: break;
      }
    } else {
      int64_t v = x->i[k], *a = &out->i[o];
      switch (n->op) {
      case OP_sum: *a = WRAP((uint64_t)*a + (uint64_t)v); break;
      case OP_prod: *a = WRAP((uint64_t)*a * (uint64_t)v); break;
      case OP_max: if (v > *a) *a = v; break;
      case OP_min: if (v < *a) *a = v; break;
      default: break;
      }
    }
  }
  for (int64_t k = 0; k < out->numel; k++) {
    if (n->op == OP_mean) out->f[k] /= (double)count;
    if (out->i) out->i[k] = wrap_int(out->i[k], out->dt);
  }
  return PORTC_OK;
}

/* x viewed as [outer, n, inner] around axis */
void split_axis(const rval *x, int64_t axis, int64_t *outer, int64_t *n, int64_t *inner) {
  *outer = 1, *inner = 1;
  for (int d = 0; d < axis; d++) *outer *= x->shape[d];
  *n = x->shape[axis];
  for (int d = (int)axis + 1; d < x->rank; d++) *inner *= x->shape[d];
}

static portc_status argmax(const node *n, const rval *x, rval *out) {
  int64_t axis = norm_axis(attr_i(n, "axis"), x->rank), outer, len, inner;
  split_axis(x, axis, &outer, &len, &inner);
  if (len == 0) return err_set(PORTC_ERR_RUNTIME, "argmax over an empty axis has no value");
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t best = 0;
      for (int64_t j = 1; j < len; j++) {
        int64_t a = (o * len + best) * inner + i, b = (o * len + j) * inner + i;
        if (x->f ? !isnan(x->f[a]) && (isnan(x->f[b]) || x->f[b] > x->f[a]) : x->i[b] > x->i[a]) best = j;
      }
      out->i[o * inner + i] = best;
    }
  return PORTC_OK;
}

/* ---- views ---- */

static void copy_el(const rval *x, int64_t from, rval *out, int64_t to) {
  if (out->f) out->f[to] = x->f[from];
  else out->i[to] = x->i[from];
}

static portc_status strided_copy(const rval *x, const int64_t *st, int64_t base, rval *out) {
  iter it;
  it_init(&it, out->rank, out->shape, 1);
  memcpy(it.st[0], st, sizeof(int64_t) * (size_t)out->rank);
  for (int64_t k = 0; k < out->numel; k++, it_step(&it)) copy_el(x, base + it.off[0], out, k);
  return PORTC_OK;
}

static portc_status permute(const node *n, const rval *x, rval *out) {
  const attr *p = attr_get(n, "perm");
  int64_t xs[PORTC_MAX_RANK], st[PORTC_MAX_RANK];
  contiguous_strides(x->rank, x->shape, xs);
  for (int d = 0; d < out->rank; d++) st[d] = xs[norm_axis(p->v[d], x->rank)];
  return strided_copy(x, st, 0, out);
}

static portc_status slice(const node *n, const rval *x, rval *out) {
  int64_t axis = norm_axis(attr_i(n, "axis"), x->rank), st[PORTC_MAX_RANK];
  contiguous_strides(x->rank, x->shape, st);
  int64_t start = clamp_index(attr_i(n, "start"), x->shape[axis]);
  int64_t base = start * st[axis];
  st[axis] = out->shape[axis] > 1 ? st[axis] * attr_i(n, "step") : 0; /* a step past the end takes one element */
  return strided_copy(x, st, base, out);
}

static portc_status concat(const node *n, rval *const *in, rval *out) {
  int64_t axis = norm_axis(attr_i(n, "axis"), out->rank), outer, len, inner, at = 0;
  split_axis(out, axis, &outer, &len, &inner);
  for (int k = 0; k < n->nin; k++) {
    const rval *x = in[k];
    int64_t xl = x->shape[axis];
    for (int64_t o = 0; o < outer; o++)
      for (int64_t j = 0; j < xl * inner; j++) copy_el(x, o * xl * inner + j, out, (o * len + at) * inner + j);
    at += xl;
  }
  return PORTC_OK;
}

static portc_status pad(const node *n, const rval *x, rval *out) {
  const attr *p = attr_get(n, "pads");
  double v = attr_f(n, "value");
  for (int64_t k = 0; k < out->numel; k++) {
    if (out->f) out->f[k] = round_to_dtype(v, out->dt);
    else out->i[k] = wrap_int((int64_t)v, out->dt);
  }
  int64_t ost[PORTC_MAX_RANK], base = 0;
  contiguous_strides(out->rank, out->shape, ost);
  for (int d = 0; d < out->rank; d++) base += p->v[2 * d] * ost[d];
  iter it;
  it_init(&it, x->rank, x->shape, 1);
  memcpy(it.st[0], ost, sizeof ost);
  for (int64_t k = 0; k < x->numel; k++, it_step(&it)) copy_el(x, k, out, base + it.off[0]);
  return PORTC_OK;
}

static portc_status gather(const node *n, const rval *x, const rval *idx, rval *out) {
  int64_t axis = norm_axis(attr_i(n, "axis"), x->rank), outer, len, inner;
  split_axis(x, axis, &outer, &len, &inner);
  for (int64_t j = 0; j < idx->numel; j++) {
    int64_t i = idx->i[j];
    if (i < -len || i >= len)
      return err_set(PORTC_ERR_RUNTIME, "index %lld at position %lld is out of range for axis %lld of size %lld", (long long)i,
                     (long long)j, (long long)axis, (long long)len);
  }
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < idx->numel; j++) {
      int64_t i = idx->i[j] < 0 ? idx->i[j] + len : idx->i[j];
      for (int64_t r = 0; r < inner; r++) copy_el(x, (o * len + i) * inner + r, out, (o * idx->numel + j) * inner + r);
    }
  return PORTC_OK;
}

static portc_status view(const node *n, rval *const *in, rval *out) {
  const rval *x = in[0];
  int64_t st[PORTC_MAX_RANK];
  switch (n->op) {
  case OP_reshape:
    for (int64_t k = 0; k < out->numel; k++) copy_el(x, k, out, k);
    return PORTC_OK;
  case OP_expand:
    bstrides(x, out->rank, out->shape, st);
    return strided_copy(x, st, 0, out);
  case OP_permute: return permute(n, x, out);
  case OP_slice: return slice(n, x, out);
  case OP_concat: return concat(n, in, out);
  case OP_pad: return pad(n, x, out);
  case OP_gather: return gather(n, x, in[1], out);
  default: return err_set(PORTC_ERR_INVALID, "not a view");
  }
}

portc_status ref_eval(const node *n, rval *const *in, rval *out) {
  switch (op_get(n->op)->kind) {
  case K_UNARY: return unary(n, in[0], out);
  case K_BINARY:
  case K_COMPARE: return binary(n, in[0], in[1], out);
  case K_WHERE: return where(in[0], in[1], in[2], out);
  case K_CAST: return cast(in[0], out);
  case K_REDUCE: return reduce(n, in[0], out);
  case K_ARGMAX: return argmax(n, in[0], out);
  case K_VIEW: return view(n, in, out);
  case K_MATMUL: return ref_matmul(in[0], in[1], out);
  case K_CONV: return ref_conv2d(n, in[0], in[1], n->nin > 2 ? in[2] : NULL, out);
  case K_POOL: return ref_pool2d(n, in[0], out);
  case K_COMPOSITE: return ref_composite(n, in, out);
  case K_MASK: {
    int64_t L = out->shape[out->rank - 2], S = out->shape[out->rank - 1];
    for (int64_t k = 0; k < out->numel; k++) out->f[k] = k % S > (k / S) % L ? -INFINITY : in[0]->f[k];
    return PORTC_OK;
  }
  case K_SOURCE: break;
  }
  return err_set(PORTC_ERR_INVALID, "%s cannot be evaluated here", op_get(n->op)->name);
}
