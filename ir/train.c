/*
 * train.c: what a training step adds to a graph besides its gradients: losses, state updates
 * (portc_update: a parameter takes a computed value after each run) and optimizer steps built from
 * them, all as ordinary graph ops so that they fuse with the backward pass (the compiled-optimizer
 * idea of torch.compile).
 *
 *   param w: f32[8, 3]                        param w: f32[8, 3]
 *   ... loss, w.grad = grad(loss, w)    =>    ... t7 = mul(w.grad, lr)   w.next = sub(w, t7)
 *                                             output w.next   update w = w.next
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "train.h"

void graph_truncate(portc_graph *g, int n0, int nout0, int nupd0) {
  for (int i = n0; i < g->n; i++) node_free_data(&g->nodes[i]);
  g->n = n0 < g->n ? n0 : g->n;
  g->nout = nout0 < g->nout ? nout0 : g->nout;
  g->nupd = nupd0 < g->nupd ? nupd0 : g->nupd;
  graph_names_rebuild(g);
}

/* ---- losses ---- */

portc_node portc_cross_entropy(portc_graph *g, portc_node logits, portc_node labels, double smoothing) {
  if (!g) return err_node(PORTC_ERR_INVALID, "cross_entropy: graph is NULL");
  if (logits < 0 || logits >= g->n || labels < 0 || labels >= g->n) return err_node(PORTC_ERR_INVALID, "cross_entropy: logits or labels is not a node of this graph");
  const node *x = &g->nodes[logits], *y = &g->nodes[labels];
  if (!dtype_is_float(x->dt)) return err_node(PORTC_ERR_DTYPE, "cross_entropy: logits %s are %s, not a floating dtype", x->name, portc_dtype_name(x->dt));
  if (!dtype_is_int(y->dt)) return err_node(PORTC_ERR_DTYPE, "cross_entropy: labels %s are %s; class indices are i32 or i64", y->name, portc_dtype_name(y->dt));
  if (x->sh.rank != 2 || y->sh.rank != 1 || !dim_eq(x->sh.d[0], y->sh.d[0]) || x->sh.d[1].sym >= 0) {
    char a[128], b[128];
    shape_str(g, &x->sh, a, sizeof a), shape_str(g, &y->sh, b, sizeof b);
    return err_node(PORTC_ERR_SHAPE, "cross_entropy: logits must be [N, C] with C known and labels [N]; got %s and %s", a, b);
  }
  if (!(smoothing >= 0 && smoothing < 1)) return err_node(PORTC_ERR_INVALID, "cross_entropy: label smoothing %g is outside [0, 1)", smoothing);
  portc_dtype t = x->dt, it = y->dt;
  int64_t C = x->sh.d[1].c, row[2] = {1, C};
  if (C < 1 || C > (1 << 24)) return err_node(PORTC_ERR_SHAPE, "cross_entropy: %lld classes; 1 to 2^24 are supported", (long long)C);
  double *iota = malloc(sizeof *iota * (size_t)(C + 1));
  if (!iota) return err_node(PORTC_ERR_NOMEM, "cross_entropy: out of memory");
  for (int64_t k = 0; k < C; k++) iota[k] = (double)k;
  portc_node cls = portc_const(g, it, 2, row, iota, C);
  free(iota);
  portc_dim col[2] = {{-1, NULL}, {1, NULL}};
  portc_node target = portc_cast(g, portc_eq(g, portc_reshape(g, labels, 2, col), cls), t);
  if (smoothing > 0) target = portc_add(g, portc_mul(g, target, portc_scalar(g, t, 1 - smoothing)), portc_scalar(g, t, smoothing / (double)C));
  int64_t last = -1;
  portc_node per_row = portc_sum(g, portc_mul(g, target, portc_log_softmax(g, logits, -1)), 1, &last, false);
  return portc_neg(g, portc_mean(g, per_row, 0, NULL, false));
}

portc_node portc_mse_loss(portc_graph *g, portc_node pred, portc_node target) {
  if (!g) return err_node(PORTC_ERR_INVALID, "mse_loss: graph is NULL");
  if (pred < 0 || pred >= g->n || target < 0 || target >= g->n) return err_node(PORTC_ERR_INVALID, "mse_loss: an operand is not a node of this graph");
  if (!shape_eq(&g->nodes[pred].sh, &g->nodes[target].sh)) return err_node(PORTC_ERR_SHAPE, "mse_loss: prediction and target shapes differ");
  portc_node d = portc_sub(g, pred, target);
  return portc_mean(g, portc_mul(g, d, d), 0, NULL, false);
}

/* ---- updates ---- */

portc_status portc_update(portc_graph *g, portc_node param, portc_node value) {
  if (!g) return err_set(PORTC_ERR_INVALID, "update: graph is NULL");
  if (param < 0 || param >= g->n || value < 0 || value >= g->n) return err_set(PORTC_ERR_INVALID, "update: an argument is not a node of this graph");
  const node *p = &g->nodes[param], *v = &g->nodes[value];
  if (p->op != OP_param) return err_set(PORTC_ERR_INVALID, "update: %s is a%s %s, not a parameter; only parameters carry state from run to run", p->name, p->op == OP_input ? "n" : "", op_get(p->op)->name);
  if (p->dt != v->dt || !shape_eq(&p->sh, &v->sh)) {
    char a[128], b[128];
    shape_str(g, &p->sh, a, sizeof a), shape_str(g, &v->sh, b, sizeof b);
    return err_set(PORTC_ERR_SHAPE, "update: %s is %s%s but its new value %s is %s%s", p->name, portc_dtype_name(p->dt), a, v->name, portc_dtype_name(v->dt), b);
  }
  for (int k = 0; k < g->nupd; k++)
    if (g->upd_param[k] == param) return err_set(PORTC_ERR_INVALID, "update: %s already takes the value of %s", p->name, g->nodes[g->upd_value[k]].name);
  int32_t *pp = realloc(g->upd_param, sizeof *pp * (size_t)(g->nupd + 1));
  if (pp) g->upd_param = pp;
  int32_t *vv = pp ? realloc(g->upd_value, sizeof *vv * (size_t)(g->nupd + 1)) : NULL;
  if (vv) g->upd_value = vv;
  if (!pp || !vv) return err_set(PORTC_ERR_NOMEM, "update: out of memory");
  bool listed = false;
  for (int k = 0; k < g->nout; k++) listed = listed || g->outputs[k] == value;
  portc_status st = listed ? PORTC_OK : portc_output(g, value);
  if (st) return st;
  g->upd_param[g->nupd] = param;
  g->upd_value[g->nupd++] = value;
  return PORTC_OK;
}

/* ---- optimizers ---- */

typedef struct optx {
  build_ctx b;
  portc_node skip; /* a bool scalar: when true, every update keeps the old value (PORTC_NONE: none) */
} optx;

static portc_node ok(optx *c, portc_node n) { return build_ok(&c->b, n); }

/* a zero-initialized parameter like p, named after it */
static portc_node state_like(optx *c, portc_node p, const char *suffix) {
  const node *x = &c->b.g->nodes[p];
  char name[256];
  snprintf(name, sizeof name, "%s.%s", x->name, suffix);
  portc_dim d[PORTC_MAX_RANK];
  shape_dims(c->b.g, &x->sh, d);
  return ok(c, portc_param_init(c->b.g, name, x->dt, x->sh.rank, d, PORTC_INIT_ZEROS, 0, 0, 0));
}

static void updated(optx *c, portc_node state, portc_node value) {
  if (c->b.st || state < 0 || value < 0) return;
  if (c->skip != PORTC_NONE && (value = ok(c, portc_where(c->b.g, c->skip, state, value))) < 0) return;
  char name[256];
  snprintf(name, sizeof name, "%s.next", c->b.g->nodes[state].name);
  if (!node_name_taken(c->b.g, name) && valid_ident(name)) portc_set_name(c->b.g, value, name);
  portc_status st = portc_update(c->b.g, state, value);
  if (st) ok(c, -(portc_node)st);
}

static portc_node S(optx *c, portc_dtype t, double v) { return ok(c, portc_scalar(c->b.g, t, v)); }

static portc_status check_step(const portc_graph *g, const portc_optimizer *o, int n, const portc_node *params, const portc_node *grads) {
  if (!g || !o || n < 1 || !params || !grads) return err_set(PORTC_ERR_INVALID, "optimizer_step: NULL argument or no parameters");
  if (o->kind < PORTC_OPT_SGD || o->kind > PORTC_OPT_ADAMW) return err_set(PORTC_ERR_INVALID, "optimizer_step: unknown optimizer kind %d", (int)o->kind);
  if (!(o->lr > 0) || !isfinite(o->lr)) return err_set(PORTC_ERR_INVALID, "optimizer_step: learning rate %g is not a positive number", o->lr);
  if (!(o->momentum >= 0 && o->momentum < 1) || !(o->weight_decay >= 0)) return err_set(PORTC_ERR_INVALID, "optimizer_step: momentum must be in [0, 1) and weight decay >= 0");
  for (int k = 0; k < n; k++) {
    if (params[k] < 0 || params[k] >= g->n || grads[k] < 0 || grads[k] >= g->n) return err_set(PORTC_ERR_INVALID, "optimizer_step: entry %d is not a node of this graph", k);
    const node *p = &g->nodes[params[k]], *d = &g->nodes[grads[k]];
    if (p->op != OP_param) return err_set(PORTC_ERR_INVALID, "optimizer_step: %s is a%s %s, not a parameter; an optimizer updates parameters", p->name, p->op == OP_input ? "n" : "", op_get(p->op)->name);
    if (!dtype_is_float(p->dt)) return err_set(PORTC_ERR_DTYPE, "optimizer_step: parameter %s is %s, not a floating dtype", p->name, portc_dtype_name(p->dt));
    if (d->dt != p->dt || !shape_eq(&d->sh, &p->sh)) return err_set(PORTC_ERR_SHAPE, "optimizer_step: gradient %s does not have the dtype and shape of parameter %s", d->name, p->name);
  }
  return PORTC_OK;
}

portc_status portc_optimizer_step(portc_graph *g, const portc_optimizer *o, int n, const portc_node *params, const portc_node *grads) {
  return optimizer_step_unless(g, o, n, params, grads, PORTC_NONE);
}

portc_status optimizer_step_unless(portc_graph *g, const portc_optimizer *o, int n, const portc_node *params, const portc_node *grads, portc_node skip) {
  portc_status st = check_step(g, o, n, params, grads);
  if (st) return st;
  const int n0 = g->n, nout0 = g->nout, nupd0 = g->nupd;
  optx c = {.b = {.g = g}, .skip = skip};
  double lr = o->lr, wd = o->weight_decay, b1 = o->beta1, b2 = o->beta2, eps = o->eps;
  if (b1 == 0 && b2 == 0 && eps == 0) b1 = 0.9, b2 = 0.999, eps = 1e-8;
  bool adam = o->kind != PORTC_OPT_SGD;
  portc_node bc1 = PORTC_NONE, bc2s = PORTC_NONE;
  portc_dtype t0 = g->nodes[params[0]].dt;
  if (adam) {
    /* one step count for the parameters of this step: bias corrections 1 - beta^t */
    if (node_name_taken(g, "optimizer.step")) return err_set(PORTC_ERR_INVALID, "optimizer_step: graph %s already has an optimizer step (optimizer.step)", g->name);
    portc_node step = ok(&c, portc_param_init(g, "optimizer.step", t0, 0, NULL, PORTC_INIT_ZEROS, 0, 0, 0));
    portc_node t = ok(&c, portc_add(g, step, S(&c, t0, 1)));
    updated(&c, step, t);
    bc1 = ok(&c, portc_sub(g, S(&c, t0, 1), ok(&c, portc_pow(g, S(&c, t0, b1), t))));
    bc2s = ok(&c, portc_sqrt(g, ok(&c, portc_sub(g, S(&c, t0, 1), ok(&c, portc_pow(g, S(&c, t0, b2), t))))));
  }
  for (int k = 0; k < n && !c.b.st; k++) {
    portc_node p = params[k], d = grads[k];
    portc_dtype t = g->nodes[p].dt;
    if (wd > 0 && o->kind != PORTC_OPT_ADAMW) d = ok(&c, portc_add(g, d, ok(&c, portc_mul(g, p, S(&c, t, wd)))));
    portc_node next;
    if (!adam) {
      if (o->momentum > 0) {
        portc_node buf = state_like(&c, p, "momentum");
        portc_node nb = ok(&c, portc_add(g, ok(&c, portc_mul(g, buf, S(&c, t, o->momentum))), d));
        updated(&c, buf, nb);
        d = nb;
      }
      next = ok(&c, portc_sub(g, p, ok(&c, portc_mul(g, d, S(&c, t, lr)))));
    } else {
      portc_node m = state_like(&c, p, "exp_avg"), v = state_like(&c, p, "exp_avg_sq");
      portc_node m1 = ok(&c, portc_add(g, ok(&c, portc_mul(g, m, S(&c, t, b1))), ok(&c, portc_mul(g, d, S(&c, t, 1 - b1)))));
      portc_node v1 = ok(&c, portc_add(g, ok(&c, portc_mul(g, v, S(&c, t, b2))), ok(&c, portc_mul(g, ok(&c, portc_mul(g, d, d)), S(&c, t, 1 - b2)))));
      updated(&c, m, m1);
      updated(&c, v, v1);
      portc_node base = o->kind == PORTC_OPT_ADAMW && wd > 0 ? ok(&c, portc_mul(g, p, S(&c, t, 1 - lr * wd))) : p;
      portc_node denom = ok(&c, portc_add(g, ok(&c, portc_div(g, ok(&c, portc_sqrt(g, v1)), bc2s)), S(&c, t, eps)));
      portc_node stepsz = ok(&c, portc_div(g, S(&c, t, lr), bc1));
      next = ok(&c, portc_sub(g, base, ok(&c, portc_mul(g, stepsz, ok(&c, portc_div(g, m1, denom))))));
    }
    updated(&c, p, next);
  }
  if (c.b.st) {
    graph_truncate(g, n0, nout0, nupd0);
    return err_set(c.b.st, "optimizer_step: %s", c.b.why);
  }
  return PORTC_OK;
}
