/*
 * ops_recurrent.c: ONNX's RNN, GRU and LSTM, unrolled over their time steps, which must be known
 * when the model is imported (what PyTorch's nn.RNN, nn.GRU and nn.LSTM export for a fixed
 * sequence length). Unrolling keeps every step an ordinary graph op, so fusion, memory planning
 * and every target see a recurrent model as any other; a loop would need control flow the graph
 * does not have.
 *
 * Per direction, the input projection of all steps is one matmul up front, [S, N, I] x W^T + Wb;
 * each step then adds H(t-1) R^T + Rb and applies the cell:
 *   RNN   H = f(x + h)
 *   GRU   z = f(xz + hz), r = f(xr + hr), n = g(xn + r (H R_n^T + Rb_n)) [linear_before_reset]
 *                                    or   n = g(xn + (r H) R_n^T + Rb_n), H' = n + z (H - n)
 *   LSTM  i, o, f, c gates (with peepholes P), C' = f C + i g(c), H' = o h(C')
 * A missing initial state is zero and its products are left out. The step's hidden (and cell)
 * state is named NAME.tK.h (NAME.reverse.tK.h going backwards), so explain shows the unrolling.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_import.h"

enum { CELL_RNN, CELL_GRU, CELL_LSTM };
#define MAX_STEPS 1024 /* a longer sequence is refused: its graph would be too large */

typedef struct act {
  enum { A_SIGMOID, A_TANH, A_RELU, A_HARD_SIGMOID, A_LEAKY_RELU, A_AFFINE, A_SCALED_TANH } kind;
  double alpha, beta;
} act;

static const struct {
  const char *name;
  int kind, nparams; /* how many of activation_alpha/beta it takes */
  double alpha, beta;
} act_names[] = {
    {"Sigmoid", A_SIGMOID, 0, 0, 0},         {"Tanh", A_TANH, 0, 0, 0},           {"Relu", A_RELU, 0, 0, 0},
    {"HardSigmoid", A_HARD_SIGMOID, 2, 0.2, 0.5}, {"LeakyRelu", A_LEAKY_RELU, 1, 0.01, 0}, {"Affine", A_AFFINE, 2, 1, 0},
    {"ScaledTanh", A_SCALED_TANH, 2, 1, 1},
};

typedef struct cell {
  int kind, gates, dirs; /* gates: 1, 3 or 4 blocks of H rows in W and R */
  int64_t S, H;
  act f[2][3]; /* per direction: f, g, h */
  double clip; /* 0: none */
  bool linear_before_reset, layout_batch_first;
} cell;

static portc_status read_acts(imp *c, cell *k) {
  static const char *const defaults[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
  int per = k->kind == CELL_RNN ? 1 : k->kind == CELL_GRU ? 2 : 3;
  const Onnx__AttributeProto *names = attr_find(c, "activations");
  const Onnx__AttributeProto *al = attr_find(c, "activation_alpha"), *be = attr_find(c, "activation_beta");
  if (names && (int)names->n_strings != per * k->dirs)
    return fail(c, PORTC_ERR_INVALID, "activations has %zu names; %d are needed (%d per direction)", names->n_strings, per * k->dirs, per);
  size_t na = 0, nb = 0;
  for (int d = 0; d < k->dirs; d++)
    for (int j = 0; j < per; j++) {
      char name[32];
      if (names) snprintf(name, sizeof name, "%.*s", (int)names->strings[d * per + j].len, (const char *)names->strings[d * per + j].data);
      else snprintf(name, sizeof name, "%s", defaults[per - 1][j]);
      size_t a = 0;
      while (a < sizeof act_names / sizeof act_names[0] && strcmp(act_names[a].name, name)) a++;
      if (a == sizeof act_names / sizeof act_names[0])
        return fail(c, PORTC_ERR_INVALID, "activation '%s': portc imports Sigmoid, Tanh, Relu, HardSigmoid, LeakyRelu, Affine and ScaledTanh", name);
      act *x = &k->f[d][j];
      x->kind = act_names[a].kind, x->alpha = act_names[a].alpha, x->beta = act_names[a].beta;
      if (act_names[a].nparams >= 1 && al && na < al->n_floats) x->alpha = al->floats[na++];
      if (act_names[a].nparams >= 2 && be && nb < be->n_floats) x->beta = be->floats[nb++];
    }
  return PORTC_OK;
}

static portc_node activate(portc_graph *g, const act *a, portc_node x) {
  portc_dtype dt = portc_node_dtype(g, x);
  portc_node al = portc_scalar(g, dt, a->alpha), be = portc_scalar(g, dt, a->beta);
  switch (a->kind) {
  case A_SIGMOID: return portc_sigmoid(g, x);
  case A_TANH: return portc_tanh(g, x);
  case A_RELU: return portc_relu(g, x);
  case A_HARD_SIGMOID:
    return portc_maximum(g, portc_scalar(g, dt, 0), portc_minimum(g, portc_scalar(g, dt, 1), portc_add(g, portc_mul(g, x, al), be)));
  case A_LEAKY_RELU: return portc_where(g, portc_gt(g, x, portc_scalar(g, dt, 0)), x, portc_mul(g, x, al));
  case A_AFFINE: return portc_add(g, portc_mul(g, x, al), be);
  default: return portc_mul(g, al, portc_tanh(g, portc_mul(g, x, be)));
  }
}

/* a pre-activation clipped to [-clip, clip] when the node asks for it, then activated */
static portc_node gate(portc_graph *g, const cell *k, const act *a, portc_node x) {
  if (k->clip > 0) {
    portc_dtype dt = portc_node_dtype(g, x);
    x = portc_maximum(g, portc_scalar(g, dt, -k->clip), portc_minimum(g, portc_scalar(g, dt, k->clip), x));
  }
  return activate(g, a, x);
}

/* columns [j H, (j + n) H) of a [rows, G H] value */
static portc_node cols(portc_graph *g, portc_node x, int j, int n, int64_t H) { return portc_slice(g, x, 1, j * H, (j + n) * H, 1); }

static portc_node add_opt(portc_graph *g, portc_node a, portc_node b) { return b == PORTC_NONE ? a : a == PORTC_NONE ? b : portc_add(g, a, b); }

/* row d of a [D, ...] value, without its leading axis */
static portc_node dir_row(portc_graph *g, portc_node x, int d) {
  portc_dim dims[PORTC_MAX_RANK];
  int rank = portc_node_rank(g, x);
  portc_node_shape(g, x, dims);
  return portc_reshape(g, portc_slice(g, x, 0, d, d + 1, 1), rank - 1, dims + 1);
}

/* a [rows, cols] value as [1, rows, cols] (or [1, 1, rows, cols] with two) */
static portc_node lead_ones(portc_graph *g, portc_node x, int ones) {
  portc_dim d[PORTC_MAX_RANK], to[PORTC_MAX_RANK];
  portc_node_shape(g, x, d);
  for (int i = 0; i < ones; i++) to[i] = (portc_dim){1, NULL};
  to[ones] = d[0], to[ones + 1] = d[1];
  return portc_reshape(g, x, ones + 2, to);
}

static void name_step(imp *c, portc_node n, int reverse, int64_t t, const char *what) {
  if (n < 0) return;
  char want[200], name[160];
  snprintf(want, sizeof want, "%s.%st%lld.%s", *c->np->name ? c->np->name : c->np->op_type, reverse ? "reverse." : "", (long long)t, what);
  unique_name(c, want, name, sizeof name);
  portc_set_name(c->g, n, name);
}

/* one direction over all steps: hs[t] the hidden state after step t, hs[S] the last cell state
 * (LSTM); h and cst the initial states, PORTC_NONE for zeros */
static portc_status run_direction(imp *c, const cell *k, int d, bool reverse, portc_node xs, portc_node W, portc_node R, portc_node B,
                                  portc_node h, portc_node cst, portc_node P, portc_node *hs) {
  portc_graph *g = c->g;
  int64_t H = k->H, GH = k->gates * H;
  const act *f = k->f[d];
  portc_node Wt = portc_permute(g, dir_row(g, W, d), 2, (int64_t[]){1, 0}); /* [I, GH] */
  portc_node Rt = portc_permute(g, dir_row(g, R, d), 2, (int64_t[]){1, 0}); /* [H, GH] */
  portc_node Wb = PORTC_NONE, Rb = PORTC_NONE;
  if (B != PORTC_NONE) {
    portc_node b = dir_row(g, B, d);
    Wb = portc_slice(g, b, 0, 0, GH, 1), Rb = portc_slice(g, b, 0, GH, 2 * GH, 1);
  }
  portc_node xp = add_opt(g, portc_matmul(g, xs, Wt), Wb); /* [S, N, GH] */
  portc_dim xd[PORTC_MAX_RANK];
  portc_node_shape(g, xp, xd);
  portc_node Pi = PORTC_NONE, Po = PORTC_NONE, Pf = PORTC_NONE;
  if (P != PORTC_NONE) {
    portc_node p = dir_row(g, P, d);
    Pi = portc_slice(g, p, 0, 0, H, 1), Po = portc_slice(g, p, 0, H, 2 * H, 1), Pf = portc_slice(g, p, 0, 2 * H, 3 * H, 1);
  }
  for (int64_t s = 0; s < k->S; s++) {
    int64_t t = reverse ? k->S - 1 - s : s;
    portc_node x = portc_reshape(g, portc_slice(g, xp, 0, t, t + 1, 1), 2, xd + 1); /* [N, GH] */
    if (k->kind == CELL_RNN) {
      h = gate(g, k, &f[0], add_opt(g, add_opt(g, x, h == PORTC_NONE ? PORTC_NONE : portc_matmul(g, h, Rt)), Rb));
    } else if (k->kind == CELL_LSTM) { /* gates i, o, f, c */
      portc_node hr = add_opt(g, h == PORTC_NONE ? PORTC_NONE : portc_matmul(g, h, Rt), Rb), pre = add_opt(g, x, hr);
      bool has_c = cst != PORTC_NONE;
      portc_node ig = gate(g, k, &f[0], add_opt(g, cols(g, pre, 0, 1, H), has_c && Pi != PORTC_NONE ? portc_mul(g, Pi, cst) : PORTC_NONE));
      portc_node fg = gate(g, k, &f[0], add_opt(g, cols(g, pre, 2, 1, H), has_c && Pf != PORTC_NONE ? portc_mul(g, Pf, cst) : PORTC_NONE));
      portc_node cg = gate(g, k, &f[1], cols(g, pre, 3, 1, H));
      cst = add_opt(g, has_c ? portc_mul(g, fg, cst) : PORTC_NONE, portc_mul(g, ig, cg));
      portc_node og = gate(g, k, &f[0], add_opt(g, cols(g, pre, 1, 1, H), Po != PORTC_NONE ? portc_mul(g, Po, cst) : PORTC_NONE));
      h = portc_mul(g, og, activate(g, &f[2], cst));
      name_step(c, cst, reverse, t, "c");
    } else { /* GRU: gates z, r, h */
      portc_node hzr = add_opt(g, h == PORTC_NONE ? PORTC_NONE : portc_matmul(g, h, cols(g, Rt, 0, 2, H)), Rb == PORTC_NONE ? PORTC_NONE : portc_slice(g, Rb, 0, 0, 2 * H, 1));
      portc_node zr = add_opt(g, cols(g, x, 0, 2, H), hzr);
      portc_node z = gate(g, k, &f[0], cols(g, zr, 0, 1, H)), r = gate(g, k, &f[0], cols(g, zr, 1, 1, H));
      portc_node Rn = cols(g, Rt, 2, 1, H), Rbn = Rb == PORTC_NONE ? PORTC_NONE : portc_slice(g, Rb, 0, 2 * H, 3 * H, 1), hn;
      if (k->linear_before_reset) hn = portc_mul(g, r, add_opt(g, h == PORTC_NONE ? PORTC_NONE : portc_matmul(g, h, Rn), Rbn));
      else hn = add_opt(g, h == PORTC_NONE ? PORTC_NONE : portc_matmul(g, portc_mul(g, r, h), Rn), Rbn);
      portc_node n = gate(g, k, &f[1], add_opt(g, cols(g, x, 2, 1, H), hn));
      h = h == PORTC_NONE ? portc_sub(g, n, portc_mul(g, z, n)) : portc_add(g, n, portc_mul(g, z, portc_sub(g, h, n)));
    }
    name_step(c, h, reverse, t, "h");
    if (h < 0) return out_node(c, 0, h);
    hs[t] = h;
  }
  hs[k->S] = cst; /* the last cell state, for Y_c */
  return PORTC_OK;
}

static portc_status recurrent(imp *c, int kind) {
  portc_status st;
  for (int i = 0; i < 3; i++)
    if ((st = op_need(c, i))) return st;
  portc_graph *g = c->g;
  cell k = {.kind = kind, .gates = kind == CELL_RNN ? 1 : kind == CELL_GRU ? 3 : 4};
  char buf[32];
  const char *dir = attr_string(c, "direction", "forward", buf, sizeof buf);
  bool bi = !strcmp(dir, "bidirectional"), rev = !strcmp(dir, "reverse");
  if (!bi && !rev && strcmp(dir, "forward")) return fail(c, PORTC_ERR_INVALID, "direction '%s' is not forward, reverse or bidirectional", dir);
  k.dirs = bi ? 2 : 1;
  k.H = attr_int(c, "hidden_size", 0);
  k.clip = attr_float(c, "clip", 0);
  k.linear_before_reset = attr_int(c, "linear_before_reset", 0) != 0;
  k.layout_batch_first = attr_int(c, "layout", 0) != 0;
  if (kind == CELL_LSTM && attr_int(c, "input_forget", 0)) return fail(c, PORTC_ERR_INVALID, "input_forget=1 (coupled input and forget gates) is not supported");
  if ((st = read_acts(c, &k))) return st;
  portc_node x = val_node(c, op_in(c, 0)), W = x < 0 ? x : val_node(c, op_in(c, 1)), R = W < 0 ? W : val_node(c, op_in(c, 2));
  if (R < 0) return out_node(c, 0, R);
  if (portc_node_rank(g, x) != 3) return fail(c, PORTC_ERR_SHAPE, "X has rank %d; it must be [sequence, batch, input]", portc_node_rank(g, x));
  if (k.layout_batch_first) x = portc_permute(g, x, 3, (int64_t[]){1, 0, 2});
  portc_dim xd[PORTC_MAX_RANK], wd[PORTC_MAX_RANK];
  portc_node_shape(g, x, xd);
  portc_node_shape(g, W, wd);
  if (xd[0].symbol) return fail(c, PORTC_ERR_SHAPE, "the sequence length is %s; it must be known at import to unroll the steps", xd[0].symbol);
  k.S = xd[0].size;
  if (k.S < 1 || k.S > MAX_STEPS) return fail(c, PORTC_ERR_SHAPE, "a sequence of %lld steps (1 to %d can be unrolled)", (long long)k.S, MAX_STEPS);
  if (k.H < 1 || portc_node_rank(g, W) != 3 || wd[0].symbol || wd[0].size != k.dirs || wd[1].size != k.gates * k.H)
    return fail(c, PORTC_ERR_SHAPE, "W must be [%d, %lld, input] for hidden_size %lld and %d directions", k.dirs, (long long)(k.gates * k.H), (long long)k.H, k.dirs);
  if (op_in(c, 4)) { /* sequence_lens: only full sequences */
    int64_t lens[4096];
    int n;
    if (!int_known(op_in(c, 4))) return fail(c, PORTC_ERR_INVALID, "sequence_lens is computed at run time; portc unrolls full sequences only");
    if ((st = known_ints(c, 4, "sequence_lens", lens, 4096, &n))) return st;
    for (int i = 0; i < n; i++)
      if (lens[i] != k.S) return fail(c, PORTC_ERR_INVALID, "sequence_lens[%d] is %lld, not the full %lld steps; portc unrolls full sequences only", i, (long long)lens[i], (long long)k.S);
  }
  portc_node B = op_in(c, 3) ? val_node(c, op_in(c, 3)) : PORTC_NONE;
  portc_node h0 = op_in(c, 5) ? val_node(c, op_in(c, 5)) : PORTC_NONE;
  portc_node c0 = kind == CELL_LSTM && op_in(c, 6) ? val_node(c, op_in(c, 6)) : PORTC_NONE;
  portc_node P = kind == CELL_LSTM && op_in(c, 7) ? val_node(c, op_in(c, 7)) : PORTC_NONE;
  portc_node opt[4] = {B, h0, c0, P};
  for (int i = 0; i < 4; i++)
    if (opt[i] != PORTC_NONE && opt[i] < 0) return out_node(c, 0, opt[i]);
  if (k.layout_batch_first) {
    if (h0 != PORTC_NONE) h0 = portc_permute(g, h0, 3, (int64_t[]){1, 0, 2});
    if (c0 != PORTC_NONE) c0 = portc_permute(g, c0, 3, (int64_t[]){1, 0, 2});
  }
  portc_node hs[MAX_STEPS + 1], ys[2], last_h[2], last_c[2];
  for (int d = 0; d < k.dirs; d++) {
    bool backwards = rev || d == 1;
    portc_node hd = h0 == PORTC_NONE ? PORTC_NONE : dir_row(g, h0, d), cd = c0 == PORTC_NONE ? PORTC_NONE : dir_row(g, c0, d);
    if ((st = run_direction(c, &k, d, backwards, x, W, R, B, hd, cd, P, hs))) return st;
    last_h[d] = lead_ones(g, hs[backwards ? 0 : k.S - 1], 1);
    last_c[d] = kind == CELL_LSTM ? lead_ones(g, hs[k.S], 1) : PORTC_NONE;
    for (int64_t t = 0; t < k.S; t++) hs[t] = lead_ones(g, hs[t], 2);
    ys[d] = onnx_concat_all(g, (int)k.S, hs, 0); /* [S, 1, N, H] */
  }
  portc_node y = k.dirs == 2 ? portc_concat(g, 2, ys, 1) : ys[0];
  portc_node yh = k.dirs == 2 ? portc_concat(g, 2, last_h, 0) : last_h[0];
  portc_node yc = kind != CELL_LSTM ? PORTC_NONE : k.dirs == 2 ? portc_concat(g, 2, last_c, 0) : last_c[0];
  if (k.layout_batch_first) {
    y = portc_permute(g, y, 4, (int64_t[]){2, 0, 1, 3});
    yh = portc_permute(g, yh, 3, (int64_t[]){1, 0, 2});
    if (yc != PORTC_NONE) yc = portc_permute(g, yc, 3, (int64_t[]){1, 0, 2});
  }
  if ((st = out_node(c, 0, y)) || (st = out_node(c, 1, yh))) return st;
  return yc == PORTC_NONE ? PORTC_OK : out_node(c, 2, yc);
}

static portc_status op_RNN(imp *c) { return recurrent(c, CELL_RNN); }
static portc_status op_GRU(imp *c) { return recurrent(c, CELL_GRU); }
static portc_status op_LSTM(imp *c) { return recurrent(c, CELL_LSTM); }

const onnx_op onnx_ops_recurrent[] = {
    {"RNN", op_RNN}, {"GRU", op_GRU}, {"LSTM", op_LSTM}, {NULL, NULL},
};
