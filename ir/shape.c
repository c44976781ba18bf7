/*
 * shape.c: dtype and shape inference for every op, dispatched on the op's kind from ops.def.
 *
 * Dimensions are constants or symbols. Where an op would need arithmetic on a symbol (concat
 * along a symbolic axis, a slice or pad of one), inference refuses with a message that says so,
 * rather than inventing a symbol. Every message starts with the op and its operands, e.g.
 * "matmul(x, w1): inner dimensions differ: 3 vs 4".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "graph.h"

/* the most elements a tensor may have, and the largest size attribute (check_size) */
#define MAX_ELEMENTS (INT64_C(1) << 48)

typedef struct ctx {
  const portc_graph *g;
  const node *n;
  const node *in[64];
} ctx;

static portc_status fail(const ctx *c, portc_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static portc_status fail(const ctx *c, portc_status s, const char *fmt, ...) {
  char head[512], msg[2048];
  size_t at = (size_t)snprintf(head, sizeof head, "%s(", op_get(c->n->op)->name);
  for (int i = 0; i < c->n->nin && at < sizeof head; i++)
    at += (size_t)snprintf(head + at, sizeof head - at, "%s%s", i ? ", " : "",
                           c->in[i] ? c->in[i]->name ? c->in[i]->name : "?" : "none");
  if (at < sizeof head) snprintf(head + at, sizeof head - at, ")");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return err_set(s, "%s: %s", head, msg);
}

static const char *shp(const ctx *c, const shape *s) {
  static _Thread_local char bufs[4][256];
  static _Thread_local int k;
  char *b = bufs[k++ & 3];
  shape_str(c->g, s, b, 256);
  return b;
}

static const char *dimstr(const ctx *c, dim d) {
  static _Thread_local char bufs[4][64];
  static _Thread_local int k;
  char *b = bufs[k++ & 3];
  if (d.sym >= 0) snprintf(b, 64, "%s", c->g->syms[d.sym]);
  else snprintf(b, 64, "%lld", (long long)d.c);
  return b;
}

int64_t norm_axis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) return -1;
  return axis < 0 ? axis + rank : axis;
}

static bool is_one(dim d) { return d.sym < 0 && d.c == 1; }

bool broadcast(const shape *a, const shape *b, shape *out) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  shape o = {.rank = r};
  for (int i = 0; i < r; i++) {
    int ia = a->rank - r + i, ib = b->rank - r + i;
    dim da = ia >= 0 ? a->d[ia] : (dim){1, -1};
    dim db = ib >= 0 ? b->d[ib] : (dim){1, -1};
    if (dim_eq(da, db) || is_one(db)) o.d[i] = da;
    else if (is_one(da)) o.d[i] = db;
    else return false;
  }
  *out = o;
  return true;
}

static bool accepts(int acc, portc_dtype t) {
  if (dtype_is_float(t)) return acc & ACC_FLT;
  if (dtype_is_int(t)) return acc & ACC_INT;
  return acc & ACC_BOOL;
}

static const char *acc_name(int acc) {
  switch (acc) {
  case ACC_FLT: return "a floating dtype (f32, f16, bf16)";
  case ACC_NUM: return "a numeric dtype (f32, f16, bf16, i32, i64)";
  case ACC_BOOL: return "bool";
  default: return "any dtype";
  }
}

/* all inputs the same dtype; broadcast them all */
static portc_status elementwise(const ctx *c, int first, portc_dtype *dt, shape *sh) {
  const node *const *in = c->in;
  *sh = in[first]->sh;
  for (int i = first; i < c->n->nin; i++) {
    if (in[i]->dt != in[first]->dt)
      return fail(c, PORTC_ERR_DTYPE, "operand dtypes differ (%s vs %s); insert a cast",
                  portc_dtype_name(in[first]->dt), portc_dtype_name(in[i]->dt));
    shape o;
    if (!broadcast(sh, &in[i]->sh, &o))
      return fail(c, PORTC_ERR_SHAPE, "shapes %s and %s do not broadcast", shp(c, sh), shp(c, &in[i]->sh));
    *sh = o;
  }
  *dt = in[first]->dt;
  return PORTC_OK;
}

static portc_status check_accepts(const ctx *c, portc_dtype t) {
  int acc = op_get(c->n->op)->accepts;
  if (!accepts(acc, t))
    return fail(c, PORTC_ERR_DTYPE, "takes %s, not %s", acc_name(acc), portc_dtype_name(t));
  return PORTC_OK;
}

static portc_status need_float(const ctx *c, const node *x) {
  if (!dtype_is_float(x->dt))
    return fail(c, PORTC_ERR_DTYPE, "takes a floating dtype (f32, f16, bf16), not %s", portc_dtype_name(x->dt));
  return PORTC_OK;
}

static portc_status reduce(const ctx *c, portc_dtype *dt, shape *sh) {
  const node *x = c->in[0];
  const attr *axes = attr_get(c->n, "axes");
  bool keep = attr_i(c->n, "keepdim");
  bool red[PORTC_MAX_RANK] = {0};
  for (int i = 0; i < axes->n; i++) {
    int64_t a = norm_axis(axes->v[i], x->sh.rank);
    if (a < 0) return fail(c, PORTC_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)axes->v[i], x->sh.rank);
    if (red[a]) return fail(c, PORTC_ERR_INVALID, "axis %lld is listed twice", (long long)axes->v[i]);
    red[a] = true;
  }
  if (axes->n == 0)
    for (int i = 0; i < x->sh.rank; i++) red[i] = true;
  if (c->n->op == OP_mean && !dtype_is_float(x->dt))
    return fail(c, PORTC_ERR_DTYPE, "takes a floating dtype (f32, f16, bf16), not %s; cast first", portc_dtype_name(x->dt));
  if (x->dt == PORTC_BOOL) return fail(c, PORTC_ERR_DTYPE, "does not take bool; cast first");
  if (c->n->op == OP_max || c->n->op == OP_min)
    for (int i = 0; i < x->sh.rank; i++)
      if (red[i] && x->sh.d[i].sym < 0 && x->sh.d[i].c == 0)
        return fail(c, PORTC_ERR_SHAPE, "cannot reduce axis %d of size 0: %s has no identity", i, op_get(c->n->op)->name);
  sh->rank = 0;
  for (int i = 0; i < x->sh.rank; i++) {
    if (!red[i]) sh->d[sh->rank++] = x->sh.d[i];
    else if (keep) sh->d[sh->rank++] = (dim){1, -1};
  }
  *dt = x->dt;
  return PORTC_OK;
}

static portc_status argmax(const ctx *c, portc_dtype *dt, shape *sh) {
  const node *x = c->in[0];
  if (x->sh.rank == 0) return fail(c, PORTC_ERR_SHAPE, "needs rank 1 or more");
  int64_t a = norm_axis(attr_i(c->n, "axis"), x->sh.rank);
  if (a < 0) return fail(c, PORTC_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)attr_i(c->n, "axis"), x->sh.rank);
  if (x->dt == PORTC_BOOL) return fail(c, PORTC_ERR_DTYPE, "does not take bool; cast first");
  if (x->sh.d[a].sym < 0 && x->sh.d[a].c == 0) return fail(c, PORTC_ERR_SHAPE, "axis %lld has size 0", (long long)a);
  sh->rank = 0;
  for (int i = 0; i < x->sh.rank; i++) {
    if (i != a) sh->d[sh->rank++] = x->sh.d[i];
    else if (attr_i(c->n, "keepdim")) sh->d[sh->rank++] = (dim){1, -1};
  }
  *dt = PORTC_I64;
  return PORTC_OK;
}

static portc_status matmul(const ctx *c, portc_dtype *dt, shape *sh) {
  const node *a = c->in[0], *b = c->in[1];
  if (a->dt != b->dt) return fail(c, PORTC_ERR_DTYPE, "operand dtypes differ (%s vs %s)", portc_dtype_name(a->dt), portc_dtype_name(b->dt));
  if (a->dt == PORTC_BOOL) return fail(c, PORTC_ERR_DTYPE, "does not take bool");
  if (a->sh.rank == 0 || b->sh.rank == 0) return fail(c, PORTC_ERR_SHAPE, "operands need rank 1 or more, got %s and %s", shp(c, &a->sh), shp(c, &b->sh));
  shape sa = a->sh, sb = b->sh;
  if (sa.rank == 1) { sa.rank = 2; sa.d[1] = sa.d[0]; sa.d[0] = (dim){1, -1}; }
  if (sb.rank == 1) { sb.rank = 2; sb.d[1] = (dim){1, -1}; }
  dim k1 = sa.d[sa.rank - 1], k2 = sb.d[sb.rank - 2];
  if (!dim_eq(k1, k2))
    return fail(c, PORTC_ERR_SHAPE, "inner dimensions differ: %s is %s, %s is %s (%s vs %s)", a->name, shp(c, &a->sh),
                b->name, shp(c, &b->sh), dimstr(c, k1), dimstr(c, k2));
  shape ba = {.rank = sa.rank - 2}, bb = {.rank = sb.rank - 2}, bo;
  memcpy(ba.d, sa.d, sizeof(dim) * (size_t)ba.rank);
  memcpy(bb.d, sb.d, sizeof(dim) * (size_t)bb.rank);
  if (!broadcast(&ba, &bb, &bo))
    return fail(c, PORTC_ERR_SHAPE, "batch dimensions %s and %s do not broadcast", shp(c, &ba), shp(c, &bb));
  *sh = bo;
  if (a->sh.rank > 1) sh->d[sh->rank++] = sa.d[sa.rank - 2];
  if (b->sh.rank > 1) sh->d[sh->rank++] = sb.d[sb.rank - 1];
  *dt = a->dt;
  return PORTC_OK;
}

static bool is_const(dim d) { return d.sym < 0; }

static portc_status pair_attr(const ctx *c, const char *name, int64_t v[2], int64_t min) {
  const attr *a = attr_get(c->n, name);
  if (a->n != 2) return fail(c, PORTC_ERR_INVALID, "'%s' needs 2 values, got %d", name, a->n);
  for (int i = 0; i < 2; i++) {
    if (a->v[i] < min) return fail(c, PORTC_ERR_INVALID, "'%s' values must be >= %lld, got %lld", name, (long long)min, (long long)a->v[i]);
    if (a->v[i] > MAX_ELEMENTS)
      return fail(c, PORTC_ERR_INVALID, "'%s' value %lld is more than 2^48", name, (long long)a->v[i]);
    v[i] = a->v[i];
  }
  return PORTC_OK;
}

/* channels_last: x [N, H, W, C], w [kh, kw, C/groups, O] and the result [N, OH, OW, O]; else
 * x [N, C, H, W], w [O, C/groups, kh, kw] and [N, O, OH, OW] */
static portc_status conv2d(const ctx *c, portc_dtype *dt, shape *sh) {
  const node *x = c->in[0], *w = c->in[1], *b = c->n->nin > 2 ? c->in[2] : NULL;
  const bool last = attr_i(c->n, "channels_last");
  const conv_axes a = conv_axes_of(c->n);
  portc_status st = PORTC_OK;
  if ((st = need_float(c, x))) return st;
  if (w->dt != x->dt || (b && b->dt != x->dt)) return fail(c, PORTC_ERR_DTYPE, "operand dtypes differ");
  if (x->sh.rank != 4) return fail(c, PORTC_ERR_SHAPE, "input must be %s, got %s", last ? "[N, H, W, C]" : "[N, C, H, W]", shp(c, &x->sh));
  if (w->sh.rank != 4)
    return fail(c, PORTC_ERR_SHAPE, "weight must be %s, got %s", last ? "[kh, kw, C/groups, O]" : "[O, C/groups, kh, kw]", shp(c, &w->sh));
  for (int i = 1; i < 4; i++)
    if (!is_const(x->sh.d[i])) return fail(c, PORTC_ERR_SHAPE, "input dimension %d is symbolic (%s); only the batch may be", i, dimstr(c, x->sh.d[i]));
  for (int i = 0; i < 4; i++)
    if (!is_const(w->sh.d[i])) return fail(c, PORTC_ERR_SHAPE, "weight dimension %d is symbolic", i);
  int64_t s[2], p[2], d[2], groups = attr_i(c->n, "groups");
  if ((st = pair_attr(c, "stride", s, 1)) || (st = pair_attr(c, "padding", p, 0)) || (st = pair_attr(c, "dilation", d, 1))) return st;
  int64_t C = x->sh.d[a.c].c, O = w->sh.d[a.wo].c;
  if (groups < 1 || C % groups || O % groups)
    return fail(c, PORTC_ERR_SHAPE, "groups=%lld must divide the %lld input and %lld output channels", (long long)groups, (long long)C, (long long)O);
  if (w->sh.d[a.wc].c != C / groups)
    return fail(c, PORTC_ERR_SHAPE, "weight has %lld input channels, expected C/groups = %lld", (long long)w->sh.d[a.wc].c, (long long)(C / groups));
  if (b && (b->sh.rank != 1 || !dim_eq(b->sh.d[0], w->sh.d[a.wo])))
    return fail(c, PORTC_ERR_SHAPE, "bias must be [%lld], got %s", (long long)O, shp(c, &b->sh));
  *sh = (shape){.rank = 4};
  sh->d[0] = x->sh.d[0];
  sh->d[a.c] = (dim){O, -1};
  for (int i = 0; i < 2; i++) {
    int64_t in = x->sh.d[a.h + i].c, k = w->sh.d[a.wh + i].c, span;
    if (k >= 1 && (__builtin_mul_overflow(d[i], k - 1, &span) || span >= MAX_ELEMENTS))
      return fail(c, PORTC_ERR_SHAPE, "the kernel's span (dilation %lld x %lld) is more than 2^48 along %s", (long long)d[i], (long long)(k - 1),
                  i ? "W" : "H");
    span = k >= 1 ? span + 1 : 0;
    int64_t o = s[i] ? (in + 2 * p[i] - span) / s[i] + 1 : 0;
    if (k < 1 || in + 2 * p[i] < span)
      return fail(c, PORTC_ERR_SHAPE, "kernel of extent %lld does not fit the padded input of %lld along %s", (long long)span,
                  (long long)(in + 2 * p[i]), i ? "W" : "H");
    sh->d[a.h + i] = (dim){o, -1};
  }
  *dt = x->dt;
  return PORTC_OK;
}

static portc_status pool2d(const ctx *c, portc_dtype *dt, shape *sh) {
  const node *x = c->in[0];
  portc_status st = PORTC_OK;
  if (x->dt == PORTC_BOOL || (c->n->op == OP_avg_pool2d && (st = need_float(c, x))))
    return x->dt == PORTC_BOOL ? fail(c, PORTC_ERR_DTYPE, "does not take bool") : st;
  const conv_axes a = conv_axes_of(c->n); /* channels_last: [N, H, W, C] */
  if (x->sh.rank != 4)
    return fail(c, PORTC_ERR_SHAPE, "input must be %s, got %s", a.c == 3 ? "[N, H, W, C]" : "[N, C, H, W]", shp(c, &x->sh));
  int64_t k[2], s[2], p[2];
  if ((st = pair_attr(c, "kernel", k, 1)) || (st = pair_attr(c, "padding", p, 0))) return st;
  if (attr_get(c->n, "stride")->set) {
    if ((st = pair_attr(c, "stride", s, 1))) return st;
  } else {
    s[0] = k[0], s[1] = k[1];
  }
  *sh = x->sh;
  for (int i = 0; i < 2; i++) {
    if (!is_const(x->sh.d[a.h + i])) return fail(c, PORTC_ERR_SHAPE, "spatial dimension %s is symbolic", dimstr(c, x->sh.d[a.h + i]));
    if (2 * p[i] > k[i]) return fail(c, PORTC_ERR_SHAPE, "padding %lld is more than half the kernel %lld", (long long)p[i], (long long)k[i]);
    int64_t in = x->sh.d[a.h + i].c;
    if (in + 2 * p[i] < k[i]) return fail(c, PORTC_ERR_SHAPE, "kernel %lld is larger than the padded input %lld", (long long)k[i], (long long)(in + 2 * p[i]));
    sh->d[a.h + i] = (dim){(in + 2 * p[i] - k[i]) / s[i] + 1, -1};
  }
  *dt = x->dt;
  return PORTC_OK;
}

/* A product of dimensions as coefficient x symbols (sorted), to compare element counts. */
typedef struct mono {
  int64_t coef;
  int n;
  int32_t syms[PORTC_MAX_RANK];
} mono;

/* false when the coefficient overflows (absurd sizes) */
static bool mono_mul(const portc_graph *g, mono *m, dim d) {
  if (d.sym < 0) return !__builtin_mul_overflow(m->coef, d.c, &m->coef);
  if (g->sym_base[d.sym] >= 0) {
    if (__builtin_mul_overflow(m->coef, g->sym_scale[d.sym], &m->coef)) return false;
    d.sym = g->sym_base[d.sym];
  }
  int i = m->n++;
  while (i > 0 && m->syms[i - 1] > d.sym) m->syms[i] = m->syms[i - 1], i--;
  m->syms[i] = d.sym;
  return true;
}

static bool mono_eq(const mono *a, const mono *b) {
  if (a->coef != b->coef) return false;
  if (a->coef == 0) return true;
  return a->n == b->n && memcmp(a->syms, b->syms, sizeof(int32_t) * (size_t)a->n) == 0;
}

static portc_status reshape(const ctx *c, shape *sh) {
  const node *x = c->in[0];
  const attr *a = attr_get(c->n, "shape");
  if (a->n > PORTC_MAX_RANK) return fail(c, PORTC_ERR_SHAPE, "rank %d is more than %d", a->n, PORTC_MAX_RANK);
  mono in = {1, 0, {0}}, known = {1, 0, {0}};
  for (int i = 0; i < x->sh.rank; i++)
    if (!mono_mul(c->g, &in, x->sh.d[i])) return fail(c, PORTC_ERR_SHAPE, "the input's element count overflows");
  int infer_at = -1;
  sh->rank = a->n;
  for (int i = 0; i < a->n; i++) {
    dim d = {a->v[i], a->sym[i]};
    if (d.sym < 0 && d.c == -1) {
      if (infer_at >= 0) return fail(c, PORTC_ERR_SHAPE, "more than one -1 in the new shape");
      infer_at = i;
      continue;
    }
    if (d.sym < 0 && d.c < 0) return fail(c, PORTC_ERR_SHAPE, "dimension %d is negative (%lld)", i, (long long)d.c);
    sh->d[i] = d;
    if (!mono_mul(c->g, &known, d)) return fail(c, PORTC_ERR_SHAPE, "the new shape's element count overflows");
  }
  if (infer_at >= 0) {
    /* in / known must be a constant or a single symbol */
    if (known.coef == 0 || in.coef % known.coef)
      return fail(c, PORTC_ERR_SHAPE, "cannot infer -1: %s does not divide into the new shape", shp(c, &x->sh));
    mono rest = {in.coef / known.coef, 0, {0}};
    int j = 0;
    for (int i = 0; i < in.n; i++) {
      if (j < known.n && known.syms[j] == in.syms[i]) j++;
      else rest.syms[rest.n++] = in.syms[i];
    }
    if (j != known.n || rest.n > 1)
      return fail(c, PORTC_ERR_SHAPE, "cannot infer -1: the remaining size is not a constant or a multiple of one symbol");
    /* a multiple of a symbol is a derived symbol, interned in the graph the node is added to */
    int sym = rest.n ? graph_symbol_scaled((portc_graph *)c->g, rest.syms[0], rest.coef) : -1;
    if (rest.n && sym < 0) return fail(c, PORTC_ERR_NOMEM, "out of memory");
    sh->d[infer_at] = rest.n ? (dim){0, sym} : (dim){rest.coef, -1};
    if (!mono_mul(c->g, &known, sh->d[infer_at])) return fail(c, PORTC_ERR_SHAPE, "the new shape's element count overflows");
  }
  if (!mono_eq(&in, &known)) {
    shape want = *sh;
    return fail(c, PORTC_ERR_SHAPE, "cannot reshape %s into %s: element counts differ", shp(c, &x->sh), shp(c, &want));
  }
  return PORTC_OK;
}

static portc_status permute(const ctx *c, shape *sh) {
  const node *x = c->in[0];
  const attr *p = attr_get(c->n, "perm");
  if (p->n != x->sh.rank) return fail(c, PORTC_ERR_SHAPE, "perm has %d entries for rank %d", p->n, x->sh.rank);
  bool seen[PORTC_MAX_RANK] = {0};
  sh->rank = p->n;
  for (int i = 0; i < p->n; i++) {
    int64_t a = norm_axis(p->v[i], x->sh.rank);
    if (a < 0 || seen[a]) return fail(c, PORTC_ERR_SHAPE, "perm is not a permutation of 0..%d", x->sh.rank - 1);
    seen[a] = true;
    sh->d[i] = x->sh.d[a];
  }
  return PORTC_OK;
}

static portc_status expand(const ctx *c, shape *sh) {
  const node *x = c->in[0];
  const attr *a = attr_get(c->n, "shape");
  if (a->n < x->sh.rank || a->n > PORTC_MAX_RANK)
    return fail(c, PORTC_ERR_SHAPE, "target rank %d is below the input rank %d or above %d", a->n, x->sh.rank, PORTC_MAX_RANK);
  sh->rank = a->n;
  for (int i = 0; i < a->n; i++) {
    int j = i - (a->n - x->sh.rank);
    dim t = {a->v[i], a->sym[i]};
    dim s = j >= 0 ? x->sh.d[j] : (dim){1, -1};
    if (t.sym < 0 && t.c == -1) {
      if (j < 0) return fail(c, PORTC_ERR_SHAPE, "-1 at new leading dimension %d", i);
      t = s;
    } else if (t.sym < 0 && t.c < 0) {
      return fail(c, PORTC_ERR_SHAPE, "dimension %d is negative", i);
    }
    if (!dim_eq(s, t) && !is_one(s))
      return fail(c, PORTC_ERR_SHAPE, "cannot expand dimension %d from %s to %s (only size 1 expands)", i, dimstr(c, s), dimstr(c, t));
    sh->d[i] = t;
  }
  return PORTC_OK;
}

int64_t clamp_index(int64_t i, int64_t n) {
  if (i < 0) i += n;
  return i < 0 ? 0 : i > n ? n : i;
}

static portc_status slice(const ctx *c, shape *sh) {
  const node *x = c->in[0];
  int64_t axis = norm_axis(attr_i(c->n, "axis"), x->sh.rank);
  if (axis < 0) return fail(c, PORTC_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)attr_i(c->n, "axis"), x->sh.rank);
  int64_t step = attr_i(c->n, "step"), start = attr_i(c->n, "start");
  const attr *stop = attr_get(c->n, "stop");
  if (step < 1) return fail(c, PORTC_ERR_INVALID, "step must be 1 or more, got %lld", (long long)step);
  *sh = x->sh;
  dim d = x->sh.d[axis];
  if (d.sym >= 0) {
    if (start == 0 && step == 1 && !stop->set) return PORTC_OK;
    return fail(c, PORTC_ERR_SHAPE, "cannot slice symbolic dimension %s", dimstr(c, d));
  }
  int64_t b = clamp_index(start, d.c), e = stop->set ? clamp_index(stop->v[0], d.c) : d.c;
  sh->d[axis].c = e > b ? (e - b - 1) / step + 1 : 0; /* no overflow for any step */
  return PORTC_OK;
}

static portc_status concat(const ctx *c, portc_dtype *dt, shape *sh) {
  const node *x = c->in[0];
  int64_t axis = norm_axis(attr_i(c->n, "axis"), x->sh.rank);
  if (axis < 0) return fail(c, PORTC_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)attr_i(c->n, "axis"), x->sh.rank);
  *sh = x->sh;
  for (int k = 1; k < c->n->nin; k++) {
    const node *y = c->in[k];
    if (y->dt != x->dt) return fail(c, PORTC_ERR_DTYPE, "operand dtypes differ (%s vs %s)", portc_dtype_name(x->dt), portc_dtype_name(y->dt));
    if (y->sh.rank != x->sh.rank) return fail(c, PORTC_ERR_SHAPE, "operand ranks differ (%d vs %d)", x->sh.rank, y->sh.rank);
    for (int i = 0; i < x->sh.rank; i++)
      if (i != axis && !dim_eq(x->sh.d[i], y->sh.d[i]))
        return fail(c, PORTC_ERR_SHAPE, "operand %d is %s, operand 0 is %s: they differ off the concat axis", k, shp(c, &y->sh), shp(c, &x->sh));
    if (!is_const(y->sh.d[axis]) || !is_const(sh->d[axis]))
      return fail(c, PORTC_ERR_SHAPE, "cannot concat along symbolic dimension");
    if (__builtin_add_overflow(sh->d[axis].c, y->sh.d[axis].c, &sh->d[axis].c))
      return fail(c, PORTC_ERR_SHAPE, "the concatenated dimension %d overflows", (int)axis);
  }
  *dt = x->dt;
  return PORTC_OK;
}

static portc_status pad(const ctx *c, shape *sh) {
  const node *x = c->in[0];
  const attr *p = attr_get(c->n, "pads");
  if (p->n != 2 * x->sh.rank) return fail(c, PORTC_ERR_SHAPE, "pads needs 2 values per dimension (%d), got %d", 2 * x->sh.rank, p->n);
  double v = attr_f(c->n, "value");
  if (!dtype_is_float(x->dt) && (v != floor(v) || !isfinite(v)))
    return fail(c, PORTC_ERR_INVALID, "value %g is not representable in %s", v, portc_dtype_name(x->dt));
  *sh = x->sh;
  for (int i = 0; i < x->sh.rank; i++) {
    int64_t lo = p->v[2 * i], hi = p->v[2 * i + 1];
    if (lo < 0 || hi < 0) return fail(c, PORTC_ERR_INVALID, "negative padding on dimension %d; use slice", i);
    if (lo == 0 && hi == 0) continue;
    if (!is_const(x->sh.d[i])) return fail(c, PORTC_ERR_SHAPE, "cannot pad symbolic dimension %s", dimstr(c, x->sh.d[i]));
    if (__builtin_add_overflow(sh->d[i].c, lo, &sh->d[i].c) || __builtin_add_overflow(sh->d[i].c, hi, &sh->d[i].c))
      return fail(c, PORTC_ERR_SHAPE, "padding dimension %d by %lld and %lld overflows", i, (long long)lo, (long long)hi);
  }
  return PORTC_OK;
}

static portc_status gather(const ctx *c, shape *sh) {
  const node *x = c->in[0], *idx = c->in[1];
  if (!dtype_is_int(idx->dt)) return fail(c, PORTC_ERR_DTYPE, "indices must be i32 or i64, not %s", portc_dtype_name(idx->dt));
  int64_t axis = norm_axis(attr_i(c->n, "axis"), x->sh.rank);
  if (axis < 0) return fail(c, PORTC_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)attr_i(c->n, "axis"), x->sh.rank);
  int r = x->sh.rank - 1 + idx->sh.rank;
  if (r > PORTC_MAX_RANK) return fail(c, PORTC_ERR_SHAPE, "result rank %d is more than %d", r, PORTC_MAX_RANK);
  sh->rank = 0;
  for (int i = 0; i < axis; i++) sh->d[sh->rank++] = x->sh.d[i];
  for (int i = 0; i < idx->sh.rank; i++) sh->d[sh->rank++] = idx->sh.d[i];
  for (int i = (int)axis + 1; i < x->sh.rank; i++) sh->d[sh->rank++] = x->sh.d[i];
  return PORTC_OK;
}

static portc_status view(const ctx *c, portc_dtype *dt, shape *sh) {
  *dt = c->in[0]->dt;
  switch (c->n->op) {
  case OP_reshape: return reshape(c, sh);
  case OP_permute: return permute(c, sh);
  case OP_expand: return expand(c, sh);
  case OP_slice: return slice(c, sh);
  case OP_concat: return concat(c, dt, sh);
  case OP_pad: return pad(c, sh);
  case OP_gather: return gather(c, sh);
  default: return fail(c, PORTC_ERR_INVALID, "not a view");
  }
}

static portc_status norm_params(const ctx *c, const node *x) {
  dim d = x->sh.d[x->sh.rank - 1];
  for (int i = 1; i < c->n->nin; i++) {
    const node *p = c->in[i];
    if (p->dt != x->dt) return fail(c, PORTC_ERR_DTYPE, "operand dtypes differ (%s vs %s)", portc_dtype_name(x->dt), portc_dtype_name(p->dt));
    if (p->sh.rank != 1 || !dim_eq(p->sh.d[0], d))
      return fail(c, PORTC_ERR_SHAPE, "%s must be [%s] (the last dimension), got %s", i == 1 ? "weight" : "bias", dimstr(c, d), shp(c, &p->sh));
  }
  return PORTC_OK;
}

static portc_status attention(const ctx *c, portc_dtype *dt, shape *sh) {
  const node *q = c->in[0], *k = c->in[1], *v = c->in[2];
  if (q->dt != k->dt || q->dt != v->dt) return fail(c, PORTC_ERR_DTYPE, "q, k and v dtypes differ");
  if (q->sh.rank < 2 || k->sh.rank < 2 || v->sh.rank < 2)
    return fail(c, PORTC_ERR_SHAPE, "q, k and v need rank 2 or more ([..., L, D])");
  dim dq = q->sh.d[q->sh.rank - 1], dk = k->sh.d[k->sh.rank - 1];
  dim lk = k->sh.d[k->sh.rank - 2], lv = v->sh.d[v->sh.rank - 2];
  if (!dim_eq(dq, dk)) return fail(c, PORTC_ERR_SHAPE, "q and k head sizes differ (%s vs %s)", dimstr(c, dq), dimstr(c, dk));
  if (!dim_eq(lk, lv)) return fail(c, PORTC_ERR_SHAPE, "k and v lengths differ (%s vs %s)", dimstr(c, lk), dimstr(c, lv));
  if (lk.sym < 0 && lk.c == 0) return fail(c, PORTC_ERR_SHAPE, "k and v have no keys (length 0): the softmax over them has no value");
  shape bq = q->sh, bk = k->sh, bv = v->sh, b1, b2;
  bq.rank -= 2, bk.rank -= 2, bv.rank -= 2;
  if (!broadcast(&bq, &bk, &b1) || !broadcast(&b1, &bv, &b2))
    return fail(c, PORTC_ERR_SHAPE, "batch dimensions of q, k and v do not broadcast");
  if (c->n->nin > 3) { /* the mask: [..., Lq or 1, Lk or 1], its batch dims within the output's */
    const node *m = c->in[3];
    shape scores = b2, all;
    scores.d[scores.rank++] = q->sh.d[q->sh.rank - 2];
    scores.d[scores.rank++] = lk;
    if (m->dt != q->dt) return fail(c, PORTC_ERR_DTYPE, "the mask's dtype (%s) is not q's (%s)", portc_dtype_name(m->dt), portc_dtype_name(q->dt));
    if (m->sh.rank < 2 || !broadcast(&m->sh, &scores, &all) || !shape_eq(&all, &scores))
      return fail(c, PORTC_ERR_SHAPE, "the mask %s does not broadcast to the scores %s (rank 2 or more)", shp(c, &m->sh), shp(c, &scores));
  }
  *sh = b2;
  sh->d[sh->rank++] = q->sh.d[q->sh.rank - 2];
  sh->d[sh->rank++] = v->sh.d[v->sh.rank - 1];
  *dt = q->dt;
  return PORTC_OK;
}

static portc_status composite(const ctx *c, portc_dtype *dt, shape *sh) {
  const node *x = c->in[0];
  portc_status st = need_float(c, x);
  if (st) return st;
  *dt = x->dt;
  *sh = x->sh;
  switch (c->n->op) {
  case OP_softmax:
  case OP_log_softmax:
    if (norm_axis(attr_i(c->n, "axis"), x->sh.rank) < 0)
      return fail(c, PORTC_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)attr_i(c->n, "axis"), x->sh.rank);
    return PORTC_OK;
  case OP_layer_norm:
  case OP_rms_norm:
    if (x->sh.rank == 0) return fail(c, PORTC_ERR_SHAPE, "needs rank 1 or more");
    if (attr_f(c->n, "eps") < 0 || isnan(attr_f(c->n, "eps"))) return fail(c, PORTC_ERR_INVALID, "eps must be >= 0");
    return norm_params(c, x);
  case OP_attention: return attention(c, dt, sh);
  default: return fail(c, PORTC_ERR_INVALID, "not a composite");
  }
}

/* Every tensor stays far from int64 overflow: no dimension is negative, and the element count
 * (a symbol counted by its coefficient) is at most 2^48, so that the index arithmetic of every
 * target and of the reference cannot overflow. */
bool shape_fits(const portc_graph *g, const shape *sh) {
  mono m = {1, 0, {0}};
  for (int i = 0; i < sh->rank; i++)
    if ((sh->d[i].sym < 0 && sh->d[i].c < 0) || !mono_mul(g, &m, sh->d[i]) || m.coef > MAX_ELEMENTS) return false;
  return true;
}

static portc_status check_size(const ctx *c, const shape *sh) {
  return shape_fits(c->g, sh) ? PORTC_OK : fail(c, PORTC_ERR_SHAPE, "%s has a negative dimension or more than 2^48 elements", shp(c, sh));
}

static portc_status infer_kind(const ctx *cx, const node *n, portc_dtype *dt, shape *sh);

portc_status infer(const portc_graph *g, const node *n, portc_dtype *dt, shape *sh) {
  ctx c = {.g = g, .n = n};
  for (int i = 0; i < n->nin && i < 64; i++) c.in[i] = n->in[i] >= 0 && n->in[i] < g->n ? &g->nodes[n->in[i]] : NULL;
  for (int i = 0; i < n->nin; i++)
    if (!c.in[i]) return fail(&c, PORTC_ERR_INVALID, "input %d is not an earlier node", i);
  portc_status st = infer_kind(&c, n, dt, sh);
  return st ? st : check_size(&c, sh);
}

static portc_status infer_kind(const ctx *cx, const node *n, portc_dtype *dt, shape *sh) {
  ctx c = *cx;
  portc_status st = PORTC_OK;
  switch (op_get(n->op)->kind) {
  case K_SOURCE: *dt = n->dt, *sh = n->sh; return PORTC_OK;
  case K_UNARY:
    *dt = c.in[0]->dt, *sh = c.in[0]->sh;
    return check_accepts(&c, *dt);
  case K_BINARY:
    if ((st = elementwise(&c, 0, dt, sh))) return st;
    return check_accepts(&c, *dt);
  case K_COMPARE:
    if ((st = elementwise(&c, 0, dt, sh)) || (st = check_accepts(&c, *dt))) return st;
    *dt = PORTC_BOOL;
    return PORTC_OK;
  case K_WHERE: {
    if (c.in[0]->dt != PORTC_BOOL) return fail(&c, PORTC_ERR_DTYPE, "condition must be bool, not %s", portc_dtype_name(c.in[0]->dt));
    if ((st = elementwise(&c, 1, dt, sh))) return st;
    shape o;
    if (!broadcast(&c.in[0]->sh, sh, &o))
      return fail(&c, PORTC_ERR_SHAPE, "condition %s does not broadcast with %s", shp(&c, &c.in[0]->sh), shp(&c, sh));
    *sh = o;
    return PORTC_OK;
  }
  case K_CAST: {
    portc_dtype to = (portc_dtype)attr_i(n, "to");
    if (!dtype_valid_in_graph(to)) return fail(&c, PORTC_ERR_DTYPE, "cannot cast to %s", portc_dtype_name(to));
    *dt = to, *sh = c.in[0]->sh;
    return PORTC_OK;
  }
  case K_REDUCE: return reduce(&c, dt, sh);
  case K_ARGMAX: return argmax(&c, dt, sh);
  case K_MATMUL: return matmul(&c, dt, sh);
  case K_CONV: return conv2d(&c, dt, sh);
  case K_POOL: return pool2d(&c, dt, sh);
  case K_VIEW: return view(&c, dt, sh);
  case K_COMPOSITE: return composite(&c, dt, sh);
  case K_MASK:
    if ((st = need_float(&c, c.in[0]))) return st;
    if (c.in[0]->sh.rank < 2) return fail(&c, PORTC_ERR_SHAPE, "needs rank 2 or more ([..., L, S])");
    *dt = c.in[0]->dt, *sh = c.in[0]->sh;
    return PORTC_OK;
  }
  return fail(&c, PORTC_ERR_INVALID, "unknown op kind");
}
