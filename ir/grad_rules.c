/*
 * grad_rules.c: the vector-Jacobian products of elementwise ops, selection, casts, reductions and
 * views, as graph ops. Each follows PyTorch's convention where the derivative is a choice: relu'(0)
 * = 0, floor/ceil/sign have zero gradient, maximum/minimum and max/min reductions split a tie
 * evenly, pow's exponent gradient is 0 where the base is 0 and the exponent >= 0.
 *
 *   y = mul(a, b) with a [4, 3], b [3]:  a.grad = mul(gy, b)   b.grad = reshape(sum(mul(gy, a), axes=[0]))
 *
 * Contractions, pooling, normalization, softmax and attention are in grad_nn.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grad.h"

/* the builder calls, failures recorded in c */
#define G c->b.g
static portc_node add(gctx *c, portc_node a, portc_node b) { return gk(c, portc_add(G, a, b)); }
static portc_node sub(gctx *c, portc_node a, portc_node b) { return gk(c, portc_sub(G, a, b)); }
static portc_node mul(gctx *c, portc_node a, portc_node b) { return gk(c, portc_mul(G, a, b)); }
static portc_node dvd(gctx *c, portc_node a, portc_node b) { return gk(c, portc_div(G, a, b)); }
static portc_node neg(gctx *c, portc_node a) { return gk(c, portc_neg(G, a)); }
static portc_node sel(gctx *c, portc_node k, portc_node a, portc_node b) { return gk(c, portc_where(G, k, a, b)); }
static portc_node muls(gctx *c, portc_node a, double v) { return mul(c, a, g_scalar(c, G->nodes[a < 0 ? 0 : a].dt, v)); }
static portc_node adds(gctx *c, portc_node a, double v) { return add(c, a, g_scalar(c, G->nodes[a < 0 ? 0 : a].dt, v)); }
static portc_node rsub(gctx *c, double v, portc_node a) { return sub(c, g_scalar(c, G->nodes[a < 0 ? 0 : a].dt, v), a); }

static bool needs(gctx *c, const node *x, int j) { return x->in[j] >= 0 && c->need[x->in[j]]; }

/* d y / d x of y = f(x), as a factor of x, y (the forward result) and t (their dtype) */
static portc_node unary_factor(gctx *c, enum op op, portc_node x, portc_node y, portc_dtype t) {
  const double SQRT1_2 = 0.70710678118654752440, INV_SQRT_2PI = 0.39894228040143267794, K = 0.79788456080286535588;
  switch (op) {
  case OP_abs: return gk(c, portc_sign(G, x));
  case OP_exp: return y;
  case OP_log: return gk(c, portc_reciprocal(G, x));
  case OP_sqrt: return dvd(c, g_scalar(c, t, 0.5), y);
  case OP_rsqrt: return muls(c, mul(c, y, mul(c, y, y)), -0.5);
  case OP_reciprocal: return neg(c, mul(c, y, y));
  case OP_tanh: return rsub(c, 1, mul(c, y, y));
  case OP_sigmoid: return mul(c, y, rsub(c, 1, y));
  case OP_gelu: {
    portc_node cdf = muls(c, adds(c, gk(c, portc_erf(G, muls(c, x, SQRT1_2))), 1), 0.5);
    portc_node pdf = muls(c, gk(c, portc_exp(G, muls(c, mul(c, x, x), -0.5))), INV_SQRT_2PI);
    return add(c, cdf, mul(c, x, pdf));
  }
  case OP_gelu_tanh: {
    portc_node x2 = mul(c, x, x);
    portc_node th = gk(c, portc_tanh(G, muls(c, mul(c, x, adds(c, muls(c, x2, 0.044715), 1)), K)));
    portc_node left = muls(c, adds(c, th, 1), 0.5);
    portc_node dinner = muls(c, adds(c, muls(c, x2, 3 * 0.044715), 1), K);
    return add(c, left, mul(c, muls(c, x, 0.5), mul(c, rsub(c, 1, mul(c, th, th)), dinner)));
  }
  case OP_silu: {
    portc_node s = gk(c, portc_sigmoid(G, x));
    return mul(c, s, adds(c, mul(c, x, rsub(c, 1, s)), 1));
  }
  case OP_erf: return muls(c, gk(c, portc_exp(G, neg(c, mul(c, x, x)))), 1.12837916709551257390);
  case OP_sin: return gk(c, portc_cos(G, x));
  case OP_cos: return neg(c, gk(c, portc_sin(G, x)));
  default: return gfail(c, PORTC_ERR_INVALID, "%s has no gradient", op_get(op)->name);
  }
}

static bool unary(gctx *c, int i, const node *x, portc_node gy, portc_node *gin) {
  portc_node a = x->in[0];
  shape sa = g_shape(c, a);
  switch (x->op) {
  case OP_neg: gin[0] = neg(c, gy); break;
  case OP_relu: gin[0] = sel(c, gk(c, portc_gt(G, a, g_scalar(c, x->dt, 0))), gy, g_scalar(c, x->dt, 0)); break;
  case OP_floor: case OP_ceil: case OP_sign: gin[0] = g_zeros(c, x->dt, &sa); break; /* zero almost everywhere */
  default: gin[0] = mul(c, gy, unary_factor(c, x->op, a, i, x->dt)); break;
  }
  return !c->b.st;
}

/* ties of maximum/minimum share the gradient: where(a wins, gy, where(a == b, gy/2, 0)) */
static portc_node pick(gctx *c, portc_node wins, portc_node tie, portc_node gy, portc_dtype t) {
  return sel(c, wins, gy, sel(c, tie, muls(c, gy, 0.5), g_scalar(c, t, 0)));
}

static bool binary(gctx *c, int i, const node *x, portc_node gy, portc_node *gin) {
  portc_node a = x->in[0], b = x->in[1];
  shape sa = g_shape(c, a), sb = g_shape(c, b);
  portc_dtype t = x->dt;
  portc_node ga = PORTC_NONE, gb = PORTC_NONE;
  bool na = needs(c, x, 0), nb = needs(c, x, 1);
  switch (x->op) {
  case OP_add: ga = gy, gb = gy; break;
  case OP_sub: ga = gy, gb = nb ? neg(c, gy) : PORTC_NONE; break;
  case OP_mul:
    if (na) ga = mul(c, gy, b);
    if (nb) gb = mul(c, gy, a);
    break;
  case OP_div:
    if (na) ga = dvd(c, gy, b);
    if (nb) gb = neg(c, mul(c, gy, dvd(c, i, b)));
    break;
  case OP_pow:
    if (na) ga = mul(c, gy, mul(c, b, gk(c, portc_pow(G, a, adds(c, b, -1)))));
    if (nb) {
      portc_node zero = g_scalar(c, t, 0);
      portc_node flat = gk(c, portc_and(G, gk(c, portc_eq(G, a, zero)), gk(c, portc_ge(G, b, zero))));
      gb = sel(c, flat, zero, mul(c, gy, mul(c, i, gk(c, portc_log(G, a)))));
    }
    break;
  case OP_maximum:
  case OP_minimum: {
    bool mx = x->op == OP_maximum;
    portc_node tie = gk(c, portc_eq(G, a, b));
    if (na) ga = pick(c, gk(c, mx ? portc_gt(G, a, b) : portc_lt(G, a, b)), tie, gy, t);
    if (nb) gb = pick(c, gk(c, mx ? portc_gt(G, b, a) : portc_lt(G, b, a)), tie, gy, t);
    break;
  }
  default: return gfail(c, PORTC_ERR_INVALID, "%s has no gradient", op_get(x->op)->name), false;
  }
  if (na && ga != PORTC_NONE) gin[0] = g_unbroadcast(c, ga, &sa);
  if (nb && gb != PORTC_NONE) gin[1] = g_unbroadcast(c, gb, &sb);
  return !c->b.st;
}

static bool where_rule(gctx *c, const node *x, portc_node gy, portc_node *gin) {
  portc_node zero = g_scalar(c, x->dt, 0);
  for (int j = 1; j < 3; j++) {
    if (!needs(c, x, j)) continue;
    shape s = g_shape(c, x->in[j]);
    gin[j] = g_unbroadcast(c, j == 1 ? sel(c, x->in[0], gy, zero) : sel(c, x->in[0], zero, gy), &s);
  }
  return !c->b.st;
}

/* the reduced axes of a reduction over rank r, as flags */
static void reduced(const node *x, int r, bool *red) {
  const attr *axes = attr_get(x, "axes");
  for (int d = 0; d < r; d++) red[d] = axes->n == 0;
  for (int k = 0; k < axes->n; k++) red[norm_axis(axes->v[k], r)] = true;
}

static bool reduce_rule(gctx *c, int i, const node *x, portc_node gy, portc_node *gin) {
  portc_node a = x->in[0];
  shape sa = g_shape(c, a), keep = sa;
  portc_dtype t = x->dt;
  bool red[PORTC_MAX_RANK];
  int64_t axes[PORTC_MAX_RANK];
  int na = 0;
  reduced(x, sa.rank, red);
  for (int d = 0; d < sa.rank; d++)
    if (red[d]) keep.d[d] = (dim){1, -1}, axes[na++] = d;
  portc_node gk_ = g_reshape(c, gy, &keep), yk = g_reshape(c, i, &keep);
  switch (x->op) {
  case OP_sum: gin[0] = g_expand(c, gk_, &sa); break;
  case OP_mean: {
    /* divided by the count of reduced elements, counted in the graph when a dimension is symbolic */
    double count = 1;
    bool known = true;
    for (int k = 0; k < na; k++) {
      if (sa.d[axes[k]].sym >= 0) known = false;
      else count *= (double)sa.d[axes[k]].c;
    }
    /* a known count as its reciprocal: an f16 count past 65504 would be inf, its reciprocal is not */
    portc_node scaled = known ? muls(c, gk_, 1.0 / count)
                              : dvd(c, gk_, gk(c, portc_sum(G, g_expand(c, g_reshape(c, g_scalar(c, t, 1), &(shape){0}), &sa), na, axes, true)));
    gin[0] = g_expand(c, scaled, &sa);
    break;
  }
  case OP_max:
  case OP_min: {
    portc_node hit = gk(c, portc_cast(G, gk(c, portc_eq(G, a, yk)), t));
    portc_node ties = gk(c, portc_sum(G, hit, na, axes, true));
    gin[0] = mul(c, hit, dvd(c, gk_, ties));
    break;
  }
  case OP_prod: {
    /* the product of the others: y / x where no element is 0; where one is, the product of the
     * rest at that element and 0 elsewhere; 0 everywhere when two or more are */
    portc_node zero = g_scalar(c, t, 0), one = g_scalar(c, t, 1);
    portc_node isz = gk(c, portc_eq(G, a, zero));
    portc_node zeros = gk(c, portc_sum(G, gk(c, portc_cast(G, isz, t)), na, axes, true));
    portc_node rest = gk(c, portc_prod(G, sel(c, isz, one, a), na, axes, true));
    portc_node lone = gk(c, portc_and(G, isz, gk(c, portc_eq(G, zeros, one))));
    portc_node others = sel(c, gk(c, portc_eq(G, zeros, zero)), dvd(c, yk, a), sel(c, lone, rest, zero));
    gin[0] = mul(c, gk_, others);
    break;
  }
  default: return gfail(c, PORTC_ERR_INVALID, "%s has no gradient", op_get(x->op)->name), false;
  }
  return !c->b.st;
}

static portc_node slice_grad(gctx *c, const node *x, portc_node gy) {
  shape sx = g_shape(c, x->in[0]);
  int axis = (int)norm_axis(attr_i(x, "axis"), sx.rank);
  if (sx.d[axis].sym >= 0) return gy; /* a symbolic dimension is only ever sliced whole */
  int64_t n = sx.d[axis].c, step = attr_i(x, "step"), m = g_shape(c, gy).d[axis].c;
  int64_t b = clamp_index(attr_i(x, "start"), n);
  if (m == 0) return g_zeros(c, x->dt, &sx);
  return g_place(c, g_zero_insert(c, gy, axis, step), axis, b, n);
}

/* gather's gradient: the gradient summed into the rows it was taken from, as a matmul by the
 * one-hot matrix of the indices: [pre, I, post] -> [pre, post, I] x [I, V] -> [pre, V, post] */
static portc_node gather_grad(gctx *c, const node *x, portc_node gy) {
  portc_node idx = x->in[1];
  shape sx = g_shape(c, x->in[0]), si = g_shape(c, idx);
  int axis = (int)norm_axis(attr_i(x, "axis"), sx.rank), post = sx.rank - axis - 1;
  if (sx.d[axis].sym >= 0) return gfail(c, PORTC_ERR_SHAPE, "the gathered dimension is symbolic; its gradient needs it known");
  int64_t V = sx.d[axis].c;
  if (V > (1 << 24)) return gfail(c, PORTC_ERR_SHAPE, "the gathered dimension (%lld) is past 2^24, the one-hot matrix its gradient uses", (long long)V);
  portc_dtype it = G->nodes[idx].dt;
  double *iota = malloc(sizeof *iota * (size_t)(V + 1));
  if (!iota) return gfail(c, PORTC_ERR_NOMEM, "out of memory");
  for (int64_t k = 0; k < V; k++) iota[k] = (double)k;
  int64_t row[2] = {1, V};
  portc_node cols = gk(c, portc_const(G, it, 2, row, iota, V));
  free(iota);
  portc_dim flat[2] = {{-1, NULL}, {1, NULL}};
  portc_node ix = gk(c, portc_reshape(G, idx, 2, flat));
  portc_node vv = gk(c, portc_scalar(G, it, (double)V)), z = gk(c, portc_scalar(G, it, 0));
  ix = sel(c, gk(c, portc_lt(G, ix, z)), add(c, ix, vv), ix); /* negative indices count from the end */
  portc_node onehot = gk(c, portc_cast(G, gk(c, portc_eq(G, ix, cols)), x->dt));
  /* gy [pre, I..., post] -> [pre, I, post] -> [pre, post, I] */
  shape sy = g_shape(c, gy), m = {.rank = axis + 1 + post};
  for (int d = 0; d < axis; d++) m.d[d] = sy.d[d];
  for (int d = 0; d < post; d++) m.d[axis + 1 + d] = sy.d[axis + si.rank + d];
  m.d[axis] = (dim){-1, -1}; /* the indices' dimensions, merged: inferred (-1) */
  portc_dim dm[PORTC_MAX_RANK];
  shape_dims(G, &m, dm);
  dm[axis] = (portc_dim){-1, NULL};
  portc_node r = gk(c, portc_reshape(G, gy, m.rank, dm));
  int64_t perm[PORTC_MAX_RANK], back[PORTC_MAX_RANK];
  for (int d = 0, k = 0; d < m.rank; d++)
    if (d != axis) perm[k++] = d;
  perm[m.rank - 1] = axis;
  if (m.rank > 1) r = gk(c, portc_permute(G, r, m.rank, perm));
  r = gk(c, portc_matmul(G, r, onehot)); /* [pre, post, V] */
  for (int d = 0; d < m.rank; d++) back[perm[d]] = d;
  if (m.rank > 1) r = gk(c, portc_permute(G, r, m.rank, back));
  return g_reshape(c, r, &sx);
}

static bool view_rule(gctx *c, const node *x, portc_node gy, portc_node *gin) {
  shape sx = g_shape(c, x->in[0]);
  switch (x->op) {
  case OP_reshape: gin[0] = g_reshape(c, gy, &sx); break;
  case OP_expand: gin[0] = g_unbroadcast(c, gy, &sx); break;
  case OP_permute: {
    const attr *p = attr_get(x, "perm");
    int64_t inv[PORTC_MAX_RANK];
    for (int d = 0; d < p->n; d++) inv[norm_axis(p->v[d], p->n)] = d;
    gin[0] = gk(c, portc_permute(G, gy, p->n, inv));
    break;
  }
  case OP_slice: gin[0] = slice_grad(c, x, gy); break;
  case OP_concat: {
    int axis = (int)norm_axis(attr_i(x, "axis"), sx.rank);
    int64_t at = 0;
    for (int j = 0; j < x->nin; j++) {
      int64_t len = g_shape(c, x->in[j]).d[axis].c;
      if (needs(c, x, j)) gin[j] = gk(c, portc_slice(G, gy, axis, at, at + len, 1));
      at += len;
    }
    break;
  }
  case OP_pad: {
    const attr *p = attr_get(x, "pads");
    portc_node r = gy;
    for (int d = 0; d < sx.rank; d++)
      if (p->v[2 * d] || p->v[2 * d + 1]) r = gk(c, portc_slice(G, r, d, p->v[2 * d], p->v[2 * d] + sx.d[d].c, 1));
    gin[0] = r;
    break;
  }
  case OP_gather: gin[0] = gather_grad(c, x, gy); break;
  default: return gfail(c, PORTC_ERR_INVALID, "%s has no gradient", op_get(x->op)->name), false;
  }
  return !c->b.st;
}

bool grad_rule(gctx *c, int i, portc_node gy, portc_node *gin) {
  node x = c->b.g->nodes[i]; /* a copy: building moves the node array */
  switch (op_get(x.op)->kind) {
  case K_UNARY: return unary(c, i, &x, gy, gin);
  case K_BINARY: return binary(c, i, &x, gy, gin);
  case K_WHERE: return where_rule(c, &x, gy, gin);
  case K_CAST: gin[0] = needs(c, &x, 0) ? gk(c, portc_cast(G, gy, c->b.g->nodes[x.in[0]].dt)) : PORTC_NONE; return !c->b.st;
  case K_REDUCE: return reduce_rule(c, i, &x, gy, gin);
  case K_VIEW: return view_rule(c, &x, gy, gin);
  case K_MASK: {
    shape s = g_shape(c, i);
    portc_node zero = g_scalar(c, x.dt, 0);
    portc_node kept = gk(c, portc_eq(G, gk(c, portc_causal_mask(G, g_zeros(c, x.dt, &s))), zero));
    gin[0] = sel(c, kept, gy, zero);
    return !c->b.st;
  }
  case K_MATMUL: case K_CONV: case K_POOL: case K_COMPOSITE: return grad_rule_nn(c, i, gy, gin);
  default: return gfail(c, PORTC_ERR_INVALID, "%s has no gradient", op_get(x.op)->name), false;
  }
}
