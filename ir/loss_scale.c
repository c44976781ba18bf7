/*
 * loss_scale.c: portc_train_step, the gradients and the optimizer's step in one call, with
 * dynamic loss scaling for f16 mixed precision (what torch.amp.GradScaler does). f16 holds
 * nothing below 6e-8, where small gradients vanish; the loss is multiplied by a scale (2^16 at
 * first) before differentiating and the gradients divided by it again, in f32. A step whose
 * gradients overflowed (an inf or NaN anywhere) changes nothing and halves the scale; after
 * GROWTH_INTERVAL good steps in a row the scale doubles. All of it is graph ops: the check is
 * one sum of g * 0 over every gradient, NaN exactly when some element is not finite.
 *
 *   loss.scaled = mul(loss, amp.scale)   ... gradients of loss.scaled ...   w.grad.unscaled = mul(w.grad, 1 / amp.scale)
 *   amp.bad = ne(t, t) with t = sum(w.grad.unscaled * 0) + ...
 *   update w = where(amp.bad, w, w - lr * ...)   update amp.scale = where(amp.bad, scale / 2, ...)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "dtype.h"
#include "train.h"

enum { GROWTH_INTERVAL = 2000 }; /* torch.amp.GradScaler's default, with factors 2 and 0.5 */

static portc_node ok(build_ctx *c, portc_node n) { return build_ok(c, n); }

static portc_node num(build_ctx *c, double v) { return ok(c, portc_scalar(c->g, PORTC_F32, v)); }

static portc_node state(build_ctx *c, const char *name, double start) {
  if (node_name_taken(c->g, name)) return ok(c, err_node(PORTC_ERR_INVALID, "graph %s already has %s: one loss-scaled step per graph", c->g->name, name));
  return ok(c, portc_param_init(c->g, name, PORTC_F32, 0, NULL, PORTC_INIT_NORMAL, 0, start, 0)); /* exactly start */
}

static void named(build_ctx *c, portc_node n, const char *name) {
  if (n >= 0 && !node_name_taken(c->g, name)) portc_set_name(c->g, n, name);
}

portc_status portc_train_step(portc_graph *g, portc_node loss, int n, const portc_node *params, const portc_optimizer *o, double loss_scale) {
  if (!g || !o || n < 1 || n > 4096 || !params) return err_set(PORTC_ERR_INVALID, "train_step: NULL argument or no parameters");
  if (!(loss_scale >= 0) || !isfinite(loss_scale)) return err_set(PORTC_ERR_INVALID, "train_step: loss scale %g is not a number >= 0", loss_scale);
  portc_node *grads = malloc(sizeof *grads * (size_t)n);
  if (!grads) return err_set(PORTC_ERR_NOMEM, "train_step: out of memory");
  if (loss_scale == 0) { /* no scaling: the two calls */
    portc_status st = portc_graph_grad(g, loss, n, params, grads);
    if (!st) st = portc_optimizer_step(g, o, n, params, grads);
    free(grads);
    return st;
  }
  if (loss < 0 || loss >= g->n || !dtype_is_float(g->nodes[loss].dt)) {
    free(grads);
    return err_set(PORTC_ERR_INVALID, "train_step: the loss is not a floating node of this graph");
  }
  const int n0 = g->n, nout0 = g->nout, nupd0 = g->nupd;
  build_ctx c = {.g = g};
  portc_node scale = state(&c, "amp.scale", loss_scale), growth = state(&c, "amp.growth", 0);
  portc_node scaled = ok(&c, portc_mul(g, loss, ok(&c, portc_cast(g, scale, g->nodes[loss < 0 ? 0 : loss].dt))));
  named(&c, scaled, "loss.scaled");
  portc_status st = c.st ? c.st : portc_graph_grad(g, scaled, n, params, grads);
  if (st && !c.st) ok(&c, -(portc_node)st);
  /* unscaled in f32, and the check: any inf or NaN makes the sum of g * 0 NaN */
  portc_node inv = ok(&c, portc_reciprocal(g, scale)), probe = PORTC_NONE;
  for (int k = 0; k < n && !c.st; k++) {
    portc_dtype t = g->nodes[grads[k]].dt;
    grads[k] = ok(&c, portc_mul(g, grads[k], t == PORTC_F32 ? inv : ok(&c, portc_cast(g, inv, t))));
    portc_node z = ok(&c, portc_cast(g, ok(&c, portc_sum(g, ok(&c, portc_mul(g, grads[k], ok(&c, portc_scalar(g, t, 0)))), 0, NULL, false)), PORTC_F32));
    probe = probe == PORTC_NONE ? z : ok(&c, portc_add(g, probe, z));
  }
  portc_node bad = ok(&c, portc_ne(g, probe, probe));
  named(&c, bad, "amp.bad");
  if (!c.st && (st = optimizer_step_unless(g, o, n, params, grads, bad))) ok(&c, -(portc_node)st);
  /* the scale: halved after a bad step; doubled after GROWTH_INTERVAL good ones in a row */
  portc_node count = ok(&c, portc_add(g, growth, num(&c, 1)));
  portc_node full = ok(&c, portc_ge(g, count, num(&c, GROWTH_INTERVAL)));
  portc_node grown = ok(&c, portc_where(g, full, ok(&c, portc_mul(g, scale, num(&c, 2))), scale));
  portc_node next_scale = ok(&c, portc_where(g, bad, ok(&c, portc_mul(g, scale, num(&c, 0.5))), grown));
  portc_node next_growth = ok(&c, portc_where(g, bad, num(&c, 0), ok(&c, portc_where(g, full, num(&c, 0), count))));
  named(&c, next_scale, "amp.scale.next");
  named(&c, next_growth, "amp.growth.next");
  if (!c.st && ((st = portc_update(g, scale, next_scale)) || (st = portc_update(g, growth, next_growth)))) ok(&c, -(portc_node)st);
  free(grads);
  if (c.st) {
    graph_truncate(g, n0, nout0, nupd0);
    return err_set(c.st, "train_step: %s", c.why);
  }
  return PORTC_OK;
}
