/*
 * grad_nn.c: the vector-Jacobian products of matmul, conv2d, pooling, softmax, normalization and
 * attention, as graph ops, so that the backward pass fuses and runs on every target like the
 * forward one.
 *
 * Convolution's gradients are convolutions again (as in every framework's backward):
 *   x.grad = conv2d(zero-inserted, padded gy, w flipped and transposed per group, dilation d)
 *   w.grad = conv2d(x with channels and batch swapped, gy with the same swap,
 *                   stride d, dilation s, groups G), cut to the kernel and swapped back
 * Pooling's are the same spreading of gy back over the windows: avg_pool2d as the input gradient
 * of a convolution by a constant kernel, max_pool2d as one masked spread per window offset (the
 * first maximum of a window takes the gradient, as PyTorch's does).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grad.h"

#define G c->b.g
static portc_node add(gctx *c, portc_node a, portc_node b) { return gk(c, portc_add(G, a, b)); }
static portc_node sub(gctx *c, portc_node a, portc_node b) { return gk(c, portc_sub(G, a, b)); }
static portc_node mul(gctx *c, portc_node a, portc_node b) { return gk(c, portc_mul(G, a, b)); }
static portc_node mm(gctx *c, portc_node a, portc_node b) { return gk(c, portc_matmul(G, a, b)); }
static portc_node mean_last(gctx *c, portc_node x) {
  int64_t last = -1;
  return gk(c, portc_mean(G, x, 1, &last, true));
}
static portc_node sum_axis(gctx *c, portc_node x, int64_t axis) { return gk(c, portc_sum(G, x, 1, &axis, true)); }
static bool needs(gctx *c, const node *x, int j) { return j < x->nin && x->in[j] >= 0 && c->need[x->in[j]]; }
static shape with_dims(int rank, const dim *d) {
  shape s = {.rank = rank};
  memcpy(s.d, d, sizeof(dim) * (size_t)rank);
  return s;
}

/* ---- matmul ---- */

static bool matmul_rule(gctx *c, const node *x, portc_node gy, portc_node *gin) {
  portc_node a = x->in[0], b = x->in[1];
  shape sa = g_shape(c, a), sb = g_shape(c, b), sy = g_shape(c, gy);
  /* 1-D operands as a row and a column, and gy with their unit dimensions back */
  shape a2 = sa, b2 = sb, y2 = sy;
  if (sa.rank == 1) a2 = with_dims(2, (dim[]){{1, -1}, sa.d[0]});
  if (sb.rank == 1) b2 = with_dims(2, (dim[]){sb.d[0], {1, -1}});
  if (sa.rank == 1) {
    y2.d[y2.rank] = y2.d[y2.rank - 1];
    y2.d[sb.rank == 1 ? y2.rank : y2.rank - 1] = (dim){1, -1};
    y2.rank++;
  }
  if (sb.rank == 1) y2.d[y2.rank++] = (dim){1, -1};
  portc_node A = g_reshape(c, a, &a2), B = g_reshape(c, b, &b2), GY = g_reshape(c, gy, &y2);
  if (needs(c, x, 0)) gin[0] = g_reshape(c, g_unbroadcast(c, mm(c, GY, g_transpose(c, B)), &a2), &sa);
  if (needs(c, x, 1)) {
    if (b2.rank == 2 && a2.rank > 2) {
      /* a weight shared by a batch: one matmul over the flattened rows instead of a sum of many */
      portc_dim ra[2] = {{-1, NULL}, {0, NULL}}, ry[2] = {{-1, NULL}, {0, NULL}};
      ra[1].size = a2.d[a2.rank - 1].c, ry[1].size = y2.d[y2.rank - 1].c;
      int syms = 0; /* the flattened rows are a constant or a multiple of one symbol */
      for (int d = 0; d < a2.rank - 1; d++) syms += a2.d[d].sym >= 0;
      bool known = a2.d[a2.rank - 1].sym < 0 && y2.d[y2.rank - 1].sym < 0 && syms <= 1;
      if (known) {
        portc_node af = gk(c, portc_reshape(G, A, 2, ra)), yf = gk(c, portc_reshape(G, GY, 2, ry));
        gin[1] = g_reshape(c, mm(c, g_transpose(c, af), yf), &sb);
        return !c->b.st;
      }
    }
    gin[1] = g_reshape(c, g_unbroadcast(c, mm(c, g_transpose(c, A), GY), &b2), &sb);
  }
  return !c->b.st;
}

/* ---- convolution ---- */

typedef struct convp {
  int64_t s[2], p[2], d[2], k[2], groups;
} convp;

static portc_node conv(gctx *c, portc_node x, portc_node w, const int64_t *s, const int64_t *p, const int64_t *d, int64_t groups) {
  portc_conv2d_opts o = {sizeof o, {s[0], s[1]}, {p[0], p[1]}, {d[0], d[1]}, groups, false};
  return gk(c, portc_conv2d(G, x, w, PORTC_NONE, &o));
}

/* the last `len` entries of axis reversed */
static portc_node flip(gctx *c, portc_node x, int axis, int64_t len) {
  if (len == 1 || x < 0) return x;
  double rev[64];
  if (len > 64) return gfail(c, PORTC_ERR_SHAPE, "a kernel wider than 64");
  for (int64_t i = 0; i < len; i++) rev[i] = (double)(len - 1 - i);
  return gk(c, portc_gather(G, x, gk(c, portc_const(G, PORTC_I64, 1, &len, rev, len)), axis));
}

/* gy [N, O, oh, ow] spread back over an input of spatial size hw through kernel wt, already in
 * input-gradient form [C, O/G, kh, kw] (flipped, transposed per group) */
static portc_node conv_input_grad(gctx *c, portc_node gy, portc_node wt, const int64_t *hw, const convp *q) {
  shape sy = g_shape(c, gy);
  int64_t pads[8] = {0}, start[2], len[2];
  /* with stride s, gy's elements sit s apart: zeros between them, then the kernel's reach on
   * both sides, less the forward padding (cut off where that is negative) */
  for (int i = 0; i < 2; i++) {
    int64_t o = sy.d[2 + i].c, span = q->d[i] * (q->k[i] - 1);
    int64_t r = hw[i] + 2 * q->p[i] - span - 1 - (o - 1) * q->s[i];
    int64_t lo = span - q->p[i], hi = lo + r;
    pads[4 + 2 * i] = lo > 0 ? lo : 0;
    pads[5 + 2 * i] = hi > 0 ? hi : 0;
    start[i] = lo < 0 ? -lo : 0;
    len[i] = hw[i] + span;
  }
  portc_node z = g_zero_insert(c, g_zero_insert(c, gy, 2, q->s[0]), 3, q->s[1]);
  z = gk(c, portc_pad(G, z, 8, pads, 0));
  for (int i = 0; i < 2; i++)
    if (start[i] || g_shape(c, z).d[2 + i].c != len[i]) z = gk(c, portc_slice(G, z, 2 + i, start[i], start[i] + len[i], 1));
  return conv(c, z, wt, (int64_t[]){1, 1}, (int64_t[]){0, 0}, q->d, q->groups);
}

static void conv_params(const node *x, convp *q, const shape *sw) {
  const attr *s = attr_get(x, "stride"), *p = attr_get(x, "padding"), *d = attr_get(x, "dilation");
  for (int i = 0; i < 2; i++) q->s[i] = s->v[i], q->p[i] = p->v[i], q->d[i] = d->v[i], q->k[i] = sw->d[2 + i].c;
  q->groups = attr_i(x, "groups");
}

static bool conv_rule(gctx *c, const node *x, portc_node gy, portc_node *gin) {
  portc_node in = x->in[0], w = x->in[1];
  if (attr_i(x, "channels_last")) {
    gfail(c, PORTC_ERR_INVALID, "a channels-last convolution has no gradient rule; build it channels-first (x [N, C, H, W]) to train it");
    return false;
  }
  shape sx = g_shape(c, in), sw = g_shape(c, w);
  convp q;
  conv_params(x, &q, &sw);
  int64_t O = sw.d[0].c, Cg = sw.d[1].c, Gn = q.groups, C = sx.d[1].c;
  if (needs(c, x, 2)) gin[2] = g_reshape(c, gk(c, portc_sum(G, gy, 3, (int64_t[]){0, 2, 3}, false)), (shape[]){g_shape(c, x->in[2])});
  if (needs(c, x, 0)) {
    /* w [O, C/G, kh, kw] -> [G, O/G, C/G, kh, kw] -> [G, C/G, O/G, kh, kw] -> [C, O/G, kh, kw], flipped */
    shape w5 = with_dims(5, (dim[]){{Gn, -1}, {O / Gn, -1}, {Cg, -1}, sw.d[2], sw.d[3]});
    portc_node wt = gk(c, portc_permute(G, g_reshape(c, w, &w5), 5, (int64_t[]){0, 2, 1, 3, 4}));
    wt = g_reshape(c, wt, (shape[]){with_dims(4, (dim[]){{C, -1}, {O / Gn, -1}, sw.d[2], sw.d[3]})});
    wt = flip(c, flip(c, wt, 2, q.k[0]), 3, q.k[1]);
    gin[0] = conv_input_grad(c, gy, wt, (int64_t[]){sx.d[2].c, sx.d[3].c}, &q);
  }
  if (needs(c, x, 1)) {
    if (sx.d[0].sym >= 0) {
      gfail(c, PORTC_ERR_SHAPE, "the weight gradient of a convolution needs a known batch size (%s is symbolic)", G->syms[sx.d[0].sym]);
      return false;
    }
    int64_t N = sx.d[0].c;
    /* x [N, C, H, W] -> [C/G, G*N, H, W] (batch as channels, per group); gy [N, O, oh, ow] -> [O, N, oh, ow] */
    portc_node xr;
    if (Gn == 1) {
      xr = gk(c, portc_permute(G, in, 4, (int64_t[]){1, 0, 2, 3}));
    } else {
      shape x5 = with_dims(5, (dim[]){{N, -1}, {Gn, -1}, {Cg, -1}, sx.d[2], sx.d[3]});
      xr = gk(c, portc_permute(G, g_reshape(c, in, &x5), 5, (int64_t[]){2, 1, 0, 3, 4}));
      xr = g_reshape(c, xr, (shape[]){with_dims(4, (dim[]){{Cg, -1}, {Gn * N, -1}, sx.d[2], sx.d[3]})});
    }
    portc_node gt = gk(c, portc_permute(G, gy, 4, (int64_t[]){1, 0, 2, 3}));
    portc_node r = conv(c, xr, gt, q.d, q.p, q.s, Gn); /* [C/G, O, >= kh, >= kw] */
    for (int i = 0; i < 2; i++)
      if (r >= 0 && g_shape(c, r).d[2 + i].c != q.k[i]) r = gk(c, portc_slice(G, r, 2 + i, 0, q.k[i], 1));
    gin[1] = gk(c, portc_permute(G, r, 4, (int64_t[]){1, 0, 2, 3}));
  }
  return !c->b.st;
}

/* ---- pooling ---- */

static void pool_params(const node *x, convp *q) {
  const attr *k = attr_get(x, "kernel"), *s = attr_get(x, "stride"), *p = attr_get(x, "padding");
  for (int i = 0; i < 2; i++) {
    q->k[i] = k->v[i], q->p[i] = p->v[i], q->d[i] = 1;
    q->s[i] = s->set ? s->v[i] : k->v[i];
  }
  q->groups = 1;
}

/* the rules below spread NCHW windows: a channels-last pooling (which the lowering makes, after
 * the gradient is built) has none */
static bool pool_first(gctx *c, const node *x) {
  if (!attr_i(x, "channels_last")) return true;
  gfail(c, PORTC_ERR_INVALID, "a channels-last pooling has no gradient rule; build it channels-first (x [N, C, H, W]) to train it");
  return false;
}

static portc_node avg_pool_grad(gctx *c, const node *x, portc_node gy) {
  shape sx = g_shape(c, x->in[0]), sy = g_shape(c, gy);
  convp q;
  pool_params(x, &q);
  int64_t n = q.k[0] * q.k[1], ksh[4] = {1, 1, q.k[0], q.k[1]};
  double *w = malloc(sizeof *w * (size_t)n);
  if (!w) return gfail(c, PORTC_ERR_NOMEM, "out of memory");
  for (int64_t i = 0; i < n; i++) w[i] = 1.0 / (double)n;
  portc_node k = gk(c, portc_const(G, x->dt, 4, ksh, w, n));
  free(w);
  /* every channel alone: [N, C, oh, ow] -> [N*C, 1, oh, ow] */
  portc_dim d[4] = {{-1, NULL}, {1, NULL}, {sy.d[2].c, NULL}, {sy.d[3].c, NULL}};
  portc_node r = conv_input_grad(c, gk(c, portc_reshape(G, gy, 4, d)), k, (int64_t[]){sx.d[2].c, sx.d[3].c}, &q);
  return g_reshape(c, r, &sx);
}

/* max_pool2d's input gradient. Window offset (a, b) sends the output's gradient, where its element
 * is the window's first maximum, to padded input rows a + s*i and columns b + s*j. Rows of one
 * phase a % s form a grid of rows Y = i + a / s: so each offset's share is the output-sized
 * where(hit, gy, 0) shifted by (a / s, b / s) in its phase's grid (one small pad), the shares of
 * a phase add up, and the s x s phase grids interleave (reshapes and two concats) into the padded
 * input, which a slice cuts to the input. (Spreading each share over the whole padded input with
 * zeros between its elements made eight full-size kernels per offset: 3.6 of a 30 ms ResNet-18
 * step on an H200.) */
static portc_node max_pool_grad(gctx *c, int i, const node *x, portc_node gy) {
  portc_node in = x->in[0];
  shape sx = g_shape(c, in), sy = g_shape(c, gy);
  convp q;
  pool_params(x, &q);
  int64_t pads[8] = {0, 0, 0, 0, q.p[0], q.p[0], q.p[1], q.p[1]};
  int64_t hp = sx.d[2].c + 2 * q.p[0], wp = sx.d[3].c + 2 * q.p[1], oh = sy.d[2].c, ow = sy.d[3].c;
  int64_t s0 = q.s[0], s1 = q.s[1], yn = (hp + s0 - 1) / s0, xn = (wp + s1 - 1) / s1; /* a phase's grid */
  if (q.k[0] * q.k[1] > 64) return gfail(c, PORTC_ERR_SHAPE, "a window of %lld elements; the gradient spreads at most 64", (long long)(q.k[0] * q.k[1]));
  if (s0 > 8 || s1 > 8) return gfail(c, PORTC_ERR_SHAPE, "a stride of %lld x %lld; the gradient interleaves at most 8 x 8 phases", (long long)s0, (long long)s1);
  portc_node xp = q.p[0] || q.p[1] ? gk(c, portc_pad(G, in, 8, pads, -INFINITY)) : in;
  portc_node zero = g_scalar(c, x->dt, 0), taken = PORTC_NONE, phase[8][8];
  for (int a = 0; a < 8; a++)
    for (int b = 0; b < 8; b++) phase[a][b] = PORTC_NONE;
  for (int64_t a = 0; a < q.k[0] && !c->b.st; a++)
    for (int64_t b = 0; b < q.k[1] && !c->b.st; b++) {
      portc_node xs = gk(c, portc_slice(G, xp, 2, a, a + (oh - 1) * s0 + 1, s0));
      xs = gk(c, portc_slice(G, xs, 3, b, b + (ow - 1) * s1 + 1, s1));
      portc_node hit = gk(c, portc_eq(G, xs, i));
      if (taken != PORTC_NONE) hit = gk(c, portc_and(G, hit, gk(c, portc_not(G, taken))));
      taken = taken == PORTC_NONE ? hit : gk(c, portc_or(G, taken, hit));
      int64_t shift[8] = {0, 0, 0, 0, a / s0, yn - oh - a / s0, b / s1, xn - ow - b / s1};
      portc_node part = gk(c, portc_pad(G, gk(c, portc_where(G, hit, gy, zero)), 8, shift, 0));
      portc_node *ph = &phase[a % s0][b % s1];
      *ph = *ph == PORTC_NONE ? part : add(c, *ph, part);
    }
  shape grid = sy, cell = sy; /* [N, C, yn, xn], and one phase as [N, C, yn, 1, xn, 1] */
  grid.d[2].c = yn, grid.d[3].c = xn;
  cell.rank = 6;
  cell.d[2] = (dim){yn, -1}, cell.d[3] = (dim){1, -1}, cell.d[4] = (dim){xn, -1}, cell.d[5] = (dim){1, -1};
  portc_node rows[8], cols[8];
  for (int j = 0; j < 8; j++) rows[j] = cols[j] = PORTC_NONE;
  for (int64_t a = 0; a < s0 && !c->b.st; a++) {
    for (int64_t b = 0; b < s1; b++) /* a phase no offset reaches (a stride longer than the window) holds zeros */
      cols[b] = g_reshape(c, phase[a][b] != PORTC_NONE ? phase[a][b] : g_zeros(c, x->dt, &grid), &cell);
    rows[a] = s1 > 1 ? gk(c, portc_concat(G, (int)s1, cols, 5)) : cols[0];
  }
  if (c->b.st) return PORTC_NONE;
  portc_node all = s0 > 1 ? gk(c, portc_concat(G, (int)s0, rows, 3)) : rows[0];
  shape padded = sy;
  padded.d[2].c = yn * s0, padded.d[3].c = xn * s1;
  portc_node acc = g_reshape(c, all, &padded);
  if (q.p[0] || padded.d[2].c != sx.d[2].c) acc = gk(c, portc_slice(G, acc, 2, q.p[0], q.p[0] + sx.d[2].c, 1));
  if (q.p[1] || padded.d[3].c != sx.d[3].c) acc = gk(c, portc_slice(G, acc, 3, q.p[1], q.p[1] + sx.d[3].c, 1));
  return acc;
}

/* ---- softmax, normalization, attention ---- */

/* y * (gy - sum(gy * y)): softmax's gradient along axis */
static portc_node softmax_grad(gctx *c, portc_node y, portc_node gy, int64_t axis) {
  return mul(c, y, sub(c, gy, sum_axis(c, mul(c, gy, y), axis)));
}

static bool norm_rule(gctx *c, const node *x, portc_node gy, portc_node *gin) {
  bool rms = x->op == OP_rms_norm;
  portc_node in = x->in[0];
  portc_dtype t = x->dt;
  portc_node xc = rms ? in : sub(c, in, mean_last(c, in));
  portc_node var = mean_last(c, mul(c, xc, xc));
  portc_node r = gk(c, portc_rsqrt(G, add(c, var, g_scalar(c, t, attr_f(x, "eps")))));
  portc_node xhat = mul(c, xc, r);
  portc_node gh = x->nin > 1 ? mul(c, gy, x->in[1]) : gy;
  if (needs(c, x, 0)) {
    portc_node inner = sub(c, gh, mul(c, xhat, mean_last(c, mul(c, gh, xhat))));
    if (!rms) inner = sub(c, inner, mean_last(c, gh));
    gin[0] = mul(c, r, inner);
  }
  if (needs(c, x, 1)) gin[1] = g_unbroadcast(c, mul(c, gy, xhat), (shape[]){g_shape(c, x->in[1])});
  if (needs(c, x, 2)) gin[2] = g_unbroadcast(c, gy, (shape[]){g_shape(c, x->in[2])});
  return !c->b.st;
}

static bool attention_rule(gctx *c, const node *x, portc_node gy, portc_node *gin) {
  portc_node q = x->in[0], k = x->in[1], v = x->in[2];
  shape sq = g_shape(c, q), sk = g_shape(c, k), sv = g_shape(c, v);
  const attr *sc = attr_get(x, "scale");
  dim D = sq.d[sq.rank - 1];
  if (!sc->set && D.sym >= 0) return gfail(c, PORTC_ERR_SHAPE, "a symbolic head size needs an explicit scale"), false;
  double scale = sc->set ? sc->f : 1.0 / sqrt((double)D.c);
  portc_node sv_ = g_scalar(c, x->dt, scale);
  /* the probabilities again (recomputed, as a fused attention kernel's backward does) */
  portc_node s = mul(c, mm(c, q, g_transpose(c, k)), sv_);
  if (x->nin > 3) s = add(c, s, x->in[3]);
  if (attr_i(x, "causal")) s = gk(c, portc_causal_mask(G, s));
  portc_node p = gk(c, portc_softmax(G, s, -1));
  if (needs(c, x, 2)) gin[2] = g_unbroadcast(c, mm(c, g_transpose(c, p), gy), &sv);
  if (needs(c, x, 0) || needs(c, x, 1) || needs(c, x, 3)) {
    portc_node gb = softmax_grad(c, p, mm(c, gy, g_transpose(c, v)), -1); /* the gradient of the biased scores */
    if (needs(c, x, 3)) gin[3] = g_unbroadcast(c, gb, (shape[]){g_shape(c, x->in[3])});
    portc_node gs = mul(c, gb, sv_);
    if (needs(c, x, 0)) gin[0] = g_unbroadcast(c, mm(c, gs, k), &sq);
    if (needs(c, x, 1)) gin[1] = g_unbroadcast(c, mm(c, g_transpose(c, gs), q), &sk);
  }
  return !c->b.st;
}

bool grad_rule_nn(gctx *c, int i, portc_node gy, portc_node *gin) {
  node x = c->b.g->nodes[i];
  switch (x.op) {
  case OP_matmul: return matmul_rule(c, &x, gy, gin);
  case OP_conv2d: return conv_rule(c, &x, gy, gin);
  case OP_avg_pool2d: gin[0] = pool_first(c, &x) ? avg_pool_grad(c, &x, gy) : PORTC_NONE; return !c->b.st;
  case OP_max_pool2d: gin[0] = pool_first(c, &x) ? max_pool_grad(c, i, &x, gy) : PORTC_NONE; return !c->b.st;
  case OP_softmax: gin[0] = softmax_grad(c, i, gy, attr_i(&x, "axis")); return !c->b.st;
  case OP_log_softmax: {
    int64_t axis = attr_i(&x, "axis");
    gin[0] = sub(c, gy, mul(c, gk(c, portc_exp(G, i)), sum_axis(c, gy, axis)));
    return !c->b.st;
  }
  case OP_layer_norm:
  case OP_rms_norm: return norm_rule(c, &x, gy, gin);
  case OP_attention: return attention_rule(c, &x, gy, gin);
  default: return gfail(c, PORTC_ERR_INVALID, "%s has no gradient", op_get(x.op)->name), false;
  }
}
