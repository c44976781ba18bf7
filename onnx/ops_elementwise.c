/*
 * ops_elementwise.c: ONNX's elementwise, reduction, normalization and matrix operators. Where
 * every input is a known integer tensor (shape arithmetic) the result is folded at import, with
 * symbols carried through: Mul(N, 8) is 8*N, Equal(N, -1) is false.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"
#include "onnx_import.h"

/* ---- folding integer shape arithmetic ---- */

typedef enum { F_ADD, F_SUB, F_MUL, F_DIV, F_EQ, F_LT, F_GT, F_LE, F_GE, F_MAX, F_MIN, F_AND, F_OR, F_MOD, F_FMOD } fold_op;

static bool konst(sval a) { return !a.unknown && a.sym < 0; }

static sval fold2(fold_op op, sval a, sval b) {
  sval u = {0, -1, true};
  if (a.unknown || b.unknown) return u;
  if (konst(a) && konst(b)) {
    int64_t x = a.c, y = b.c, r;
    switch (op) {
    case F_ADD: r = (int64_t)((uint64_t)x + (uint64_t)y); break;
    case F_SUB: r = (int64_t)((uint64_t)x - (uint64_t)y); break;
    case F_MUL: r = (int64_t)((uint64_t)x * (uint64_t)y); break;
    case F_DIV: if (!y || (x == INT64_MIN && y == -1)) return u; r = x / y; break;
    case F_MOD: /* the divisor's sign, as Python's % */
    case F_FMOD: /* the dividend's sign, as C's % */
      if (!y || (x == INT64_MIN && y == -1)) return u;
      r = x % y;
      if (op == F_MOD && r && ((r < 0) != (y < 0))) r += y;
      break;
    case F_EQ: r = x == y; break;
    case F_LT: r = x < y; break;
    case F_GT: r = x > y; break;
    case F_LE: r = x <= y; break;
    case F_GE: r = x >= y; break;
    case F_MAX: r = x > y ? x : y; break;
    case F_MIN: r = x < y ? x : y; break;
    case F_AND: r = x && y; break;
    default: r = x || y; break;
    }
    return (sval){r, -1, false};
  }
  /* at least one is c*S (S >= 1 at run time); coefficients that overflow are unknown */
  bool same = a.sym == b.sym && a.sym >= 0;
  int64_t r;
  switch (op) {
  case F_ADD: if (same) return __builtin_add_overflow(a.c, b.c, &r) ? u : (sval){r, r ? a.sym : -1, false};
              if (konst(b) && !b.c) return a;
              if (konst(a) && !a.c) return b;
              return u;
  case F_SUB: if (same) return __builtin_sub_overflow(a.c, b.c, &r) ? u : (sval){r, r ? a.sym : -1, false};
              return konst(b) && !b.c ? a : u;
  case F_MUL: if (!konst(a) && !konst(b)) return u;
              if (__builtin_mul_overflow(a.c, b.c, &r)) return u;
              return (sval){r, r ? (konst(b) ? a.sym : b.sym) : -1, false};
  case F_DIV: if (konst(b) && b.c > 0 && a.c % b.c == 0) return (sval){a.c / b.c, a.sym, false};
              return same && a.c == b.c ? (sval){1, -1, false} : u;
  case F_EQ: if (same) return (sval){a.c == b.c, -1, false};
             if (konst(b) && a.c > 0 && b.c <= 0) return (sval){0, -1, false}; /* a positive size is not -1 or 0 */
             if (konst(a) && b.c > 0 && a.c <= 0) return (sval){0, -1, false};
             return u;
  default: return u;
  }
}

/* numpy broadcasting of known integer tensors */
static portc_status fold_binary(imp *c, fold_op op, portc_dtype out_dt) {
  const oval *a = op_in(c, 0), *b = op_in(c, 1);
  int rank = a->rank > b->rank ? a->rank : b->rank;
  int64_t shape[PORTC_MAX_RANK], n = 1;
  for (int d = 0; d < rank; d++) {
    int64_t x = d - (rank - a->rank) >= 0 ? a->shape[d - (rank - a->rank)] : 1, y = d - (rank - b->rank) >= 0 ? b->shape[d - (rank - b->rank)] : 1;
    if (x != y && x != 1 && y != 1) return fail(c, PORTC_ERR_SHAPE, "known operands of shapes that do not broadcast");
    shape[d] = x == 1 ? y : x;
    n *= shape[d];
  }
  if (n > (1 << 20)) return fail(c, PORTC_ERR_SHAPE, "folding %lld elements of shape arithmetic", (long long)n);
  sval *r = malloc(sizeof(sval) * (size_t)(n ? n : 1));
  if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  for (int64_t k = 0; k < n; k++) {
    int64_t ia = 0, ib = 0, rem = k, sa = 1, sb = 1;
    for (int d = rank - 1; d >= 0; d--) {
      int64_t idx = rem % shape[d];
      rem /= shape[d];
      int da = d - (rank - a->rank), db = d - (rank - b->rank);
      if (da >= 0) ia += (a->shape[da] == 1 ? 0 : idx) * sa, sa *= a->shape[da];
      if (db >= 0) ib += (b->shape[db] == 1 ? 0 : idx) * sb, sb *= b->shape[db];
    }
    r[k] = fold2(op, a->i[ia], b->i[ib]);
  }
  return out_ints(c, 0, out_dt, rank, shape, r);
}

/* ---- unary ---- */

typedef portc_node (*unary_fn)(portc_graph *, portc_node);

static portc_status unary(imp *c, unary_fn fn) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  portc_node x = val_node(c, op_in(c, 0));
  return out_node(c, 0, x < 0 ? x : fn(c->g, x));
}

#define UNARY_OP(name, fn) \
  static portc_status op_##name(imp *c) { return unary(c, fn); }
UNARY_OP(Sqrt, portc_sqrt)
UNARY_OP(Reciprocal, portc_reciprocal)
UNARY_OP(Exp, portc_exp)
UNARY_OP(Log, portc_log)
UNARY_OP(Erf, portc_erf)
UNARY_OP(Tanh, portc_tanh)
UNARY_OP(Sigmoid, portc_sigmoid)
UNARY_OP(Relu, portc_relu)
UNARY_OP(Floor, portc_floor)
UNARY_OP(Ceil, portc_ceil)
UNARY_OP(Sin, portc_sin)
UNARY_OP(Cos, portc_cos)
UNARY_OP(Sign, portc_sign)

/* Neg, Abs and Not fold on known integers */
static portc_status int_unary(imp *c, int which, unary_fn fn) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  oval *x = op_in(c, 0);
  if (!int_known(x)) return unary(c, fn);
  int64_t n = val_numel(x);
  sval *r = malloc(sizeof(sval) * (size_t)(n ? n : 1));
  if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  for (int64_t k = 0; k < n; k++) {
    sval a = x->i[k];
    if (a.unknown) r[k] = a;
    else if (which == 0) r[k] = (sval){(int64_t)(0 - (uint64_t)a.c), a.sym, false}; /* wraps, as the integer op does */
    else if (which == 1) r[k] = a.sym >= 0 ? a : (sval){a.c < 0 ? (int64_t)(0 - (uint64_t)a.c) : a.c, -1, false};
    else r[k] = a.sym >= 0 ? (sval){0, -1, true} : (sval){!a.c, -1, false};
  }
  return out_ints(c, 0, x->dt, x->rank, x->shape, r);
}
static portc_status op_Neg(imp *c) { return int_unary(c, 0, portc_neg); }
static portc_status op_Abs(imp *c) { return int_unary(c, 1, portc_abs); }
static portc_status op_Not(imp *c) { return int_unary(c, 2, portc_not); }

static portc_status op_Identity(imp *c) {
  portc_status st = op_need(c, 0);
  return st ? st : out_alias(c, 0, op_in(c, 0));
}

/* inference: Dropout is the identity; its mask output is refused where something reads it */
static portc_status op_Dropout(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  if (c->np->n_output > 1 && *c->np->output[1] && val_find(c, c->np->output[1])->uses)
    return fail(c, PORTC_ERR_INVALID, "the mask output is read; portc imports Dropout for inference only");
  return out_alias(c, 0, op_in(c, 0));
}

static portc_status op_Gelu(imp *c) {
  char buf[16];
  const char *approx = attr_string(c, "approximate", "none", buf, sizeof buf);
  if (strcmp(approx, "none") && strcmp(approx, "tanh")) return fail(c, PORTC_ERR_INVALID, "approximate='%s' (none or tanh)", approx);
  return unary(c, strcmp(approx, "tanh") ? portc_gelu : portc_gelu_tanh);
}

static portc_status op_LeakyRelu(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  portc_graph *g = c->g;
  portc_node x = val_node(c, op_in(c, 0));
  if (x < 0) return out_node(c, 0, x);
  portc_dtype dt = portc_node_dtype(g, x);
  portc_node zero = portc_scalar(g, dt, 0), alpha = portc_scalar(g, dt, attr_float(c, "alpha", 0.01));
  return out_node(c, 0, portc_where(g, portc_gt(g, x, zero), x, portc_mul(g, x, alpha)));
}

/* max(0, min(1, alpha x + beta)): HardSigmoid's, and HardSwish's with alpha 1/6, beta 1/2 */
static portc_node hard_sigmoid(portc_graph *g, portc_node x, double alpha, double beta) {
  portc_dtype dt = portc_node_dtype(g, x);
  portc_node y = portc_add(g, portc_mul(g, x, portc_scalar(g, dt, alpha)), portc_scalar(g, dt, beta));
  return portc_maximum(g, portc_minimum(g, y, portc_scalar(g, dt, 1)), portc_scalar(g, dt, 0));
}

static portc_status op_HardSigmoid(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  portc_node x = val_node(c, op_in(c, 0));
  if (x < 0) return out_node(c, 0, x);
  return out_node(c, 0, hard_sigmoid(c->g, x, attr_float(c, "alpha", 0.2), attr_float(c, "beta", 0.5)));
}

static portc_status op_HardSwish(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  portc_node x = val_node(c, op_in(c, 0));
  if (x < 0) return out_node(c, 0, x);
  return out_node(c, 0, portc_mul(c->g, x, hard_sigmoid(c->g, x, 1.0 / 6.0, 0.5)));
}

/* ---- binary ---- */

typedef portc_node (*binary_fn)(portc_graph *, portc_node, portc_node);

static portc_status binary(imp *c, binary_fn fn, int fold, portc_dtype fold_dt_or_neg) {
  portc_status st = op_need(c, 0);
  if (!st) st = op_need(c, 1);
  if (st) return st;
  if (fold >= 0 && int_known(op_in(c, 0)) && int_known(op_in(c, 1)))
    return fold_binary(c, (fold_op)fold, (int)fold_dt_or_neg >= 0 ? fold_dt_or_neg : op_in(c, 0)->dt);
  portc_node a = val_node(c, op_in(c, 0)), b = a < 0 ? a : val_node(c, op_in(c, 1));
  return out_node(c, 0, b < 0 ? b : fn(c->g, a, b));
}

#define BINARY_OP(name, fn, fold, dt) \
  static portc_status op_##name(imp *c) { return binary(c, fn, fold, dt); }
BINARY_OP(Add, portc_add, F_ADD, -1)
BINARY_OP(Sub, portc_sub, F_SUB, -1)
BINARY_OP(Mul, portc_mul, F_MUL, -1)
BINARY_OP(Div, portc_div, F_DIV, -1)
BINARY_OP(Equal, portc_eq, F_EQ, PORTC_BOOL)
BINARY_OP(Less, portc_lt, F_LT, PORTC_BOOL)
BINARY_OP(Greater, portc_gt, F_GT, PORTC_BOOL)
BINARY_OP(LessOrEqual, portc_le, F_LE, PORTC_BOOL)
BINARY_OP(GreaterOrEqual, portc_ge, F_GE, PORTC_BOOL)
BINARY_OP(And, portc_and, F_AND, PORTC_BOOL)
BINARY_OP(Or, portc_or, F_OR, PORTC_BOOL)

/* Mod: folded where both operands are known integers (shape arithmetic); on float tensors, with
 * fmod=1 as the standard asks, a - trunc(a / b) b */
static portc_status op_Mod(imp *c) {
  portc_status st = op_need(c, 0);
  if (!st) st = op_need(c, 1);
  if (st) return st;
  bool fmod = attr_int(c, "fmod", 0) != 0;
  if (int_known(op_in(c, 0)) && int_known(op_in(c, 1))) return fold_binary(c, fmod ? F_FMOD : F_MOD, op_in(c, 0)->dt);
  portc_graph *g = c->g;
  portc_node a = val_node(c, op_in(c, 0)), b = a < 0 ? a : val_node(c, op_in(c, 1));
  if (b < 0) return out_node(c, 0, b);
  if (!dtype_is_float(portc_node_dtype(g, a)))
    return fail(c, PORTC_ERR_INVALID, "the integer remainder of tensors known only at run time is not supported");
  if (!fmod) return fail(c, PORTC_ERR_INVALID, "fmod=0 on floating-point operands (the standard requires fmod=1)");
  portc_node q = portc_div(g, a, b), t = portc_mul(g, portc_sign(g, q), portc_floor(g, portc_abs(g, q)));
  return out_node(c, 0, portc_sub(g, a, portc_mul(g, t, b)));
}

/* Max, Min, Sum, Mean: any number of operands, folded pairwise */
static portc_status variadic(imp *c, binary_fn fn, int fold, bool mean) {
  if (c->nin < 1) return fail(c, PORTC_ERR_INVALID, "needs at least one input");
  oval *first = op_in(c, 0);
  portc_status st = op_need(c, 0);
  if (st || c->nin == 1) return st ? st : out_alias(c, 0, first);
  if (c->nin == 2 && !mean) return binary(c, fn, fold, (portc_dtype)-1);
  portc_node acc = val_node(c, first);
  for (int k = 1; k < c->nin && acc >= 0; k++) {
    if ((st = op_need(c, k))) return st;
    portc_node x = val_node(c, op_in(c, k));
    acc = x < 0 ? x : fn(c->g, acc, x);
  }
  if (mean && acc >= 0) acc = portc_div(c->g, acc, portc_scalar(c->g, portc_node_dtype(c->g, acc), c->nin));
  return out_node(c, 0, acc);
}
static portc_status op_Max(imp *c) { return variadic(c, portc_maximum, F_MAX, false); }
static portc_status op_Min(imp *c) { return variadic(c, portc_minimum, F_MIN, false); }
static portc_status op_Sum(imp *c) { return variadic(c, portc_add, F_ADD, false); }
static portc_status op_Mean(imp *c) { return variadic(c, portc_add, -1, true); }

/* Pow with a known exponent avoids pow() where it can: GPU pow is undefined for x < 0 */
static portc_status op_Pow(imp *c) {
  portc_status st = op_need(c, 0);
  if (!st) st = op_need(c, 1);
  if (st) return st;
  double e;
  portc_graph *g = c->g;
  if (known_scalar(op_in(c, 1), &e) && (e == 1 || e == 2 || e == 3 || e == 0.5 || e == -1)) {
    portc_node x = val_node(c, op_in(c, 0));
    if (x < 0) return out_node(c, 0, x);
    portc_node y = e == 1 ? x : e == 2 ? portc_mul(g, x, x) : e == 3 ? portc_mul(g, portc_mul(g, x, x), x) : e == 0.5 ? portc_sqrt(g, x) : portc_reciprocal(g, x);
    return out_node(c, 0, y);
  }
  portc_node x = val_node(c, op_in(c, 0)), y = x < 0 ? x : val_node(c, op_in(c, 1));
  if (y >= 0 && portc_node_dtype(g, y) != portc_node_dtype(g, x)) y = portc_cast(g, y, portc_node_dtype(g, x));
  return out_node(c, 0, y < 0 ? y : portc_pow(g, x, y));
}

static portc_status op_Where(imp *c) {
  portc_status st;
  for (int k = 0; k < 3; k++)
    if ((st = op_need(c, k))) return st;
  oval *cond = op_in(c, 0), *a = op_in(c, 1), *b = op_in(c, 2);
  if (int_known(cond) && int_known(a) && int_known(b) && val_numel(cond) == val_numel(a) && val_numel(a) == val_numel(b) &&
      cond->rank == a->rank && a->rank == b->rank) {
    int64_t n = val_numel(a);
    sval *r = malloc(sizeof(sval) * (size_t)(n ? n : 1));
    if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < n; k++)
      r[k] = cond->i[k].unknown || cond->i[k].sym >= 0 ? (sval){0, -1, true} : cond->i[k].c ? a->i[k] : b->i[k];
    return out_ints(c, 0, a->dt, a->rank, a->shape, r);
  }
  portc_node x = val_node(c, cond), y = x < 0 ? x : val_node(c, a), z = y < 0 ? y : val_node(c, b);
  return out_node(c, 0, z < 0 ? z : portc_where(c->g, x, y, z));
}

static portc_status op_Cast(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  int32_t to = (int32_t)attr_int(c, "to", 0);
  portc_dtype dt;
  oval *x = op_in(c, 0);
  bool to_int = to == 6 || to == 7 || to == 9;
  if (int_known(x) && to_int) { /* shape arithmetic stays known */
    int64_t n = val_numel(x);
    sval *r = malloc(sizeof(sval) * (size_t)(n ? n : 1));
    if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
    memcpy(r, x->i, sizeof(sval) * (size_t)n);
    onnx_dtype(to, &dt);
    for (int64_t k = 0; k < n && dt == PORTC_BOOL; k++)
      if (!r[k].unknown) r[k] = r[k].sym >= 0 ? (sval){1, -1, false} : (sval){r[k].c != 0, -1, false};
    return out_ints(c, 0, dt, x->rank, x->shape, r);
  }
  if (to == 11) to = 1; /* double: portc computes in f32; the reference checks in f64 anyway */
  if (!onnx_dtype(to, &dt)) return fail(c, PORTC_ERR_DTYPE, "cast to %s, which portc does not have", onnx_dtype_name(to));
  portc_node v = val_node(c, x);
  if (v < 0) return out_node(c, 0, v);
  return out_node(c, 0, portc_node_dtype(c->g, v) == dt ? v : portc_cast(c->g, v, dt));
}

static portc_status op_Clip(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  portc_graph *g = c->g;
  portc_node y = val_node(c, op_in(c, 0));
  for (int k = 1; k <= 2 && y >= 0; k++) {
    if (!op_in(c, k)) continue;
    portc_node b = val_node(c, op_in(c, k));
    y = b < 0 ? b : k == 1 ? portc_maximum(g, y, b) : portc_minimum(g, y, b);
  }
  return out_node(c, 0, y);
}

/* ---- rows: softmax and normalization ---- */

static portc_status op_Softmax(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  portc_node x = val_node(c, op_in(c, 0));
  return out_node(c, 0, x < 0 ? x : portc_softmax(c->g, x, attr_int(c, "axis", -1)));
}

static portc_status op_LogSoftmax(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  portc_node x = val_node(c, op_in(c, 0));
  return out_node(c, 0, x < 0 ? x : portc_log_softmax(c->g, x, attr_int(c, "axis", -1)));
}

static portc_status op_LayerNormalization(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  for (size_t k = 1; k < c->np->n_output; k++)
    if (*c->np->output[k] && val_find(c, c->np->output[k])->uses) return fail(c, PORTC_ERR_INVALID, "output %zu (mean or inverse deviation) is read; portc computes only Y", k);
  portc_node x = val_node(c, op_in(c, 0));
  if (x < 0) return out_node(c, 0, x);
  int rank = portc_node_rank(c->g, x);
  int64_t axis = attr_int(c, "axis", -1);
  if (axis != -1 && axis != rank - 1) return fail(c, PORTC_ERR_INVALID, "axis %lld: portc normalizes over the last dimension only", (long long)axis);
  portc_node w = op_in(c, 1) ? val_node(c, op_in(c, 1)) : PORTC_NONE, b = op_in(c, 2) ? val_node(c, op_in(c, 2)) : PORTC_NONE;
  if (w != PORTC_NONE && w < 0) return out_node(c, 0, w);
  if (b != PORTC_NONE && b < 0) return out_node(c, 0, b);
  return out_node(c, 0, portc_layer_norm(c->g, x, w, b, attr_float(c, "epsilon", 1e-5)));
}

/* (x - mean) / sqrt(var + eps) * scale + B over each sample's and channel's spatial extent
 * (PyTorch's InstanceNorm and, after a reshape, GroupNorm); scale and B are per channel */
static portc_status op_InstanceNormalization(imp *c) {
  portc_status st = op_need(c, 0);
  if (!st) st = op_need(c, 1);
  if (!st) st = op_need(c, 2);
  if (st) return st;
  portc_graph *g = c->g;
  portc_node x = val_node(c, op_in(c, 0)), scale = val_node(c, op_in(c, 1)), bias = val_node(c, op_in(c, 2));
  if (x < 0 || scale < 0 || bias < 0) return out_node(c, 0, x < 0 ? x : scale < 0 ? scale : bias);
  int rank = portc_node_rank(g, x);
  if (rank < 3) return fail(c, PORTC_ERR_SHAPE, "the input has rank %d; InstanceNormalization needs [N, C, D1, ...]", rank);
  int64_t axes[PORTC_MAX_RANK];
  for (int a = 2; a < rank; a++) axes[a - 2] = a;
  portc_dim xd[PORTC_MAX_RANK], cd[PORTC_MAX_RANK];
  portc_node_shape(g, x, xd);
  cd[0] = xd[1];
  for (int a = 1; a < rank - 1; a++) cd[a] = (portc_dim){1, NULL};
  portc_dtype dt = portc_node_dtype(g, x);
  portc_node mean = portc_mean(g, x, rank - 2, axes, true), centered = portc_sub(g, x, mean);
  portc_node var = portc_mean(g, portc_mul(g, centered, centered), rank - 2, axes, true);
  portc_node y = portc_div(g, centered, portc_sqrt(g, portc_add(g, var, portc_scalar(g, dt, attr_float(c, "epsilon", 1e-5)))));
  y = portc_add(g, portc_mul(g, y, portc_reshape(g, scale, rank - 1, cd)), portc_reshape(g, bias, rank - 1, cd));
  return out_node(c, 0, y);
}

/* ---- reductions ---- */

typedef portc_node (*reduce_fn)(portc_graph *, portc_node, int, const int64_t *, bool);

static portc_status reduce(imp *c, reduce_fn fn, bool axes_input) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  int64_t axes[PORTC_MAX_RANK];
  int n = 0;
  if (axes_input) {
    if (op_in(c, 1) && (st = known_ints(c, 1, "axes", axes, PORTC_MAX_RANK, &n))) return st;
  } else {
    n = attr_ints(c, "axes", axes, PORTC_MAX_RANK);
    if (n == -2) return fail(c, PORTC_ERR_INVALID, "more than %d axes", PORTC_MAX_RANK);
    if (n < 0) n = 0;
  }
  if (n == 0 && attr_int(c, "noop_with_empty_axes", 0)) return out_alias(c, 0, op_in(c, 0));
  portc_node x = val_node(c, op_in(c, 0));
  return out_node(c, 0, x < 0 ? x : fn(c->g, x, n, axes, attr_int(c, "keepdims", 1) != 0));
}
static portc_status op_ReduceMean(imp *c) { return reduce(c, portc_mean, c->opset >= 18); }
static portc_status op_ReduceSum(imp *c) { return reduce(c, portc_sum, true); }
static portc_status op_ReduceMax(imp *c) { return reduce(c, portc_max, c->opset >= 18); }
static portc_status op_ReduceMin(imp *c) { return reduce(c, portc_min, c->opset >= 18); }
static portc_status op_ReduceProd(imp *c) { return reduce(c, portc_prod, c->opset >= 18); }

/* the reductions that are a sum or a max with an expression around them */
static portc_node sum_square(portc_graph *g, portc_node x, int n, const int64_t *axes, bool keep) { return portc_sum(g, portc_mul(g, x, x), n, axes, keep); }
static portc_node l2(portc_graph *g, portc_node x, int n, const int64_t *axes, bool keep) { return portc_sqrt(g, sum_square(g, x, n, axes, keep)); }
static portc_node l1(portc_graph *g, portc_node x, int n, const int64_t *axes, bool keep) { return portc_sum(g, portc_abs(g, x), n, axes, keep); }
static portc_node log_sum(portc_graph *g, portc_node x, int n, const int64_t *axes, bool keep) { return portc_log(g, portc_sum(g, x, n, axes, keep)); }
static portc_node log_sum_exp(portc_graph *g, portc_node x, int n, const int64_t *axes, bool keep) { /* m + log sum exp(x - m) */
  portc_node m = portc_max(g, x, n, axes, true), s = portc_sum(g, portc_exp(g, portc_sub(g, x, m)), n, axes, keep);
  return portc_add(g, portc_log(g, s), keep ? m : portc_max(g, x, n, axes, false));
}
static portc_status op_ReduceSumSquare(imp *c) { return reduce(c, sum_square, c->opset >= 18); }
static portc_status op_ReduceL2(imp *c) { return reduce(c, l2, c->opset >= 18); }
static portc_status op_ReduceL1(imp *c) { return reduce(c, l1, c->opset >= 18); }
static portc_status op_ReduceLogSum(imp *c) { return reduce(c, log_sum, c->opset >= 18); }
static portc_status op_ReduceLogSumExp(imp *c) { return reduce(c, log_sum_exp, c->opset >= 18); }

/* ArgMax, and ArgMin as the ArgMax of -x: the first index of the extreme, as i64 */
static portc_status arg_extreme(imp *c, bool is_max) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  if (attr_int(c, "select_last_index", 0)) return fail(c, PORTC_ERR_INVALID, "select_last_index=1: portc returns the first index of the extreme");
  portc_node x = val_node(c, op_in(c, 0));
  if (x < 0) return out_node(c, 0, x);
  if (!is_max) x = portc_neg(c->g, x);
  return out_node(c, 0, portc_argmax(c->g, x, attr_int(c, "axis", 0), attr_int(c, "keepdims", 1) != 0));
}
static portc_status op_ArgMax(imp *c) { return arg_extreme(c, true); }
static portc_status op_ArgMin(imp *c) { return arg_extreme(c, false); }

/* ---- matrices ---- */


/* nn.Linear exports Gemm(x, W, transB=1) with W [out, in]: transposing a known W here, once,
 * gives the matmul an operand that lies as it is, which the GPU targets' fast paths (cuBLASLt,
 * tensor cores) need. PORTC_ERR_INVALID: not a known matrix, keep the permute. */
static portc_status transposed_weights(imp *c, const oval *w, oval *out) {
  if (!w->known || !w->f || w->rank != 2 || w->node >= 0) return PORTC_ERR_INVALID;
  const portc_tensor *t = w->f->t;
  int64_t r = t->shape[0], k = t->shape[1], shape[2] = {k, r};
  portc_tensor *x = portc_tensor_new(t->dtype, 2, shape);
  pdata *d = pdata_new(x);
  if (!d) return fail(c, PORTC_ERR_NOMEM, "out of memory transposing '%s'", w->name);
  size_t es = portc_dtype_size(t->dtype);
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < k; j++) memcpy((char *)x->data + (size_t)(j * r + i) * es, (const char *)t->data + (size_t)(i * k + j) * es, es);
  size_t len = strlen(w->name) + 3;
  char *name = malloc(len);
  if (!name) {
    pdata_release(d);
    return fail(c, PORTC_ERR_NOMEM, "out of memory");
  }
  snprintf(name, len, "%s.T", w->name);
  *out = (oval){.name = name, .node = -1, .known = true, .dt = t->dtype, .rank = 2, .shape = {k, r}, .f = d, .producer = -1};
  return PORTC_OK;
}

/* A known weight matrix larger than every GPU binds as one buffer (2^27 bytes: the Vulkan spec's
 * least maxStorageBufferRange, lavapipe's, and WebGPU's default binding size; AlexNet's and
 * VGG's first linear layers pass it) becomes row blocks under that size: a b = sum over blocks
 * of a[.., k0:k1] b[k0:k1, :]. PORTC_NONE when w needs no split. */
#define MAX_WEIGHT_BYTES ((int64_t)1 << 27)

static portc_node row_blocks_matmul(imp *c, portc_node a, const oval *w) {
  if (!w->known || !w->f || w->rank != 2) return PORTC_NONE;
  const portc_tensor *t = w->f->t;
  int64_t K = t->shape[0], N = t->shape[1], es = (int64_t)portc_dtype_size(t->dtype);
  if (K * N * es <= MAX_WEIGHT_BYTES || N * es > MAX_WEIGHT_BYTES) return PORTC_NONE;
  int64_t rows = MAX_WEIGHT_BYTES / (N * es), axis = portc_node_rank(c->g, a) - 1;
  rows = (K + (K + rows - 1) / rows - 1) / ((K + rows - 1) / rows); /* as many blocks, of even size */
  portc_node y = PORTC_NONE;
  for (int64_t k0 = 0; k0 < K; k0 += rows) {
    int64_t k1 = k0 + rows < K ? k0 + rows : K, shape[2] = {k1 - k0, N};
    portc_tensor *part = portc_tensor_new(t->dtype, 2, shape);
    pdata *d = pdata_new(part);
    if (!d) return -(portc_node)fail(c, PORTC_ERR_NOMEM, "out of memory splitting '%s'", w->name);
    memcpy(part->data, (const char *)t->data + k0 * N * es, (size_t)((k1 - k0) * N * es));
    char name[160];
    snprintf(name, sizeof name, "%s.rows%lld", w->name, (long long)k0);
    oval block = {.name = name, .node = -1, .known = true, .dt = t->dtype, .rank = 2, .shape = {k1 - k0, N}, .f = d, .producer = -1};
    portc_node b = val_node(c, &block);
    pdata_release(d);
    portc_node p = portc_matmul(c->g, portc_slice(c->g, a, axis, k0, k1, 1), b);
    y = y == PORTC_NONE ? p : portc_add(c->g, y, p);
  }
  return y;
}

static portc_status op_MatMul(imp *c) {
  portc_status st = op_need(c, 0);
  if (!st) st = op_need(c, 1);
  if (st) return st;
  portc_node a = val_node(c, op_in(c, 0));
  portc_node y = a < 0 ? a : row_blocks_matmul(c, a, op_in(c, 1));
  return y == PORTC_NONE ? binary(c, portc_matmul, -1, (portc_dtype)-1) : out_node(c, 0, y);
}

static portc_status op_Gemm(imp *c) {
  portc_status st = op_need(c, 0);
  if (!st) st = op_need(c, 1);
  if (st) return st;
  portc_graph *g = c->g;
  bool ta = attr_int(c, "transA", 0) != 0, tb = attr_int(c, "transB", 0) != 0;
  oval bt = {0}, *w = op_in(c, 1);
  if (tb) {
    st = transposed_weights(c, w, &bt);
    if (st && st != PORTC_ERR_INVALID) return st;
    if (!st) c->in[1] = &bt, tb = false;
  }
  portc_node a = val_node(c, op_in(c, 0)), y = PORTC_NONE, b = a;
  if (a >= 0 && !ta) y = row_blocks_matmul(c, a, c->in[1]); /* the whole product, for a weight too large to bind */
  if (a >= 0 && y == PORTC_NONE) b = val_node(c, op_in(c, 1));
  if (c->in[1] == &bt) {
    c->in[1] = w;
    pdata_release(bt.f);
    free((char *)bt.name);
  }
  if (b < 0) return out_node(c, 0, b);
  static const int64_t swap[2] = {1, 0};
  if (y == PORTC_NONE) {
    if (ta) a = portc_permute(g, a, 2, swap);
    if (tb) b = portc_permute(g, b, 2, swap);
    y = portc_matmul(g, a, b);
  }
  portc_dtype dt = y >= 0 ? portc_node_dtype(g, y) : PORTC_F32;
  double alpha = attr_float(c, "alpha", 1), beta = attr_float(c, "beta", 1);
  if (alpha != 1) y = portc_mul(g, y, portc_scalar(g, dt, alpha));
  if (op_in(c, 2) && beta != 0) {
    portc_node bias = val_node(c, op_in(c, 2));
    if (beta != 1 && bias >= 0) bias = portc_mul(g, bias, portc_scalar(g, dt, beta));
    y = bias < 0 ? bias : portc_add(g, y, bias);
  }
  return out_node(c, 0, y);
}

const onnx_op onnx_ops_elementwise[] = {
    {"Sqrt", op_Sqrt}, {"Reciprocal", op_Reciprocal}, {"Exp", op_Exp}, {"Log", op_Log}, {"Erf", op_Erf},
    {"Tanh", op_Tanh}, {"Sigmoid", op_Sigmoid}, {"Relu", op_Relu}, {"Floor", op_Floor}, {"Ceil", op_Ceil},
    {"Sin", op_Sin}, {"Cos", op_Cos}, {"Sign", op_Sign}, {"Neg", op_Neg}, {"Abs", op_Abs}, {"Not", op_Not},
    {"Identity", op_Identity}, {"Dropout", op_Dropout}, {"Gelu", op_Gelu}, {"LeakyRelu", op_LeakyRelu},
    {"HardSigmoid", op_HardSigmoid}, {"HardSwish", op_HardSwish},
    {"Mod", op_Mod}, {"Add", op_Add}, {"Sub", op_Sub}, {"Mul", op_Mul}, {"Div", op_Div}, {"Pow", op_Pow}, {"Equal", op_Equal},
    {"Less", op_Less}, {"Greater", op_Greater}, {"LessOrEqual", op_LessOrEqual}, {"GreaterOrEqual", op_GreaterOrEqual},
    {"And", op_And}, {"Or", op_Or}, {"Max", op_Max}, {"Min", op_Min}, {"Sum", op_Sum}, {"Mean", op_Mean},
    {"Where", op_Where}, {"Cast", op_Cast}, {"Clip", op_Clip}, {"Softmax", op_Softmax}, {"LogSoftmax", op_LogSoftmax},
    {"LayerNormalization", op_LayerNormalization}, {"InstanceNormalization", op_InstanceNormalization},
    {"ReduceMean", op_ReduceMean}, {"ReduceSum", op_ReduceSum},
    {"ReduceMax", op_ReduceMax}, {"ReduceMin", op_ReduceMin}, {"ReduceProd", op_ReduceProd}, {"ReduceSumSquare", op_ReduceSumSquare},
    {"ReduceL2", op_ReduceL2}, {"ReduceL1", op_ReduceL1}, {"ReduceLogSum", op_ReduceLogSum}, {"ReduceLogSumExp", op_ReduceLogSumExp},
    {"ArgMax", op_ArgMax}, {"ArgMin", op_ArgMin},
    {"MatMul", op_MatMul},
    {"Gemm", op_Gemm}, {NULL, NULL},
};
