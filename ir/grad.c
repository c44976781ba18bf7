/*
 * grad.c: portc_graph_grad, reverse-mode differentiation as a graph transformation (what
 * AOTAutograd does for torch.compile). The backward graph is appended to the forward one, so
 * fusion, memory planning and every target see both as one graph.
 *
 *   before: h = matmul(x, w)   loss = sum(h)
 *   after:  ... loss.seed = 1, t0 = expand(loss.seed, [4, 3]), t1 = permute(x, [1, 0]),
 *           w.grad = matmul(t1, t0)
 *
 * The walk goes from the loss back to the start (nodes are in topological order, so one pass
 * suffices), asks each node's rule for its inputs' gradients and sums those that reach a node
 * more than once. Only nodes that depend on a requested input are differentiated.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "grad.h"

portc_node gk(gctx *c, portc_node n) { return build_ok(&c->b, n); }

portc_node gfail(gctx *c, portc_status st, const char *fmt, ...) {
  if (c->b.st == PORTC_OK) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->b.why, sizeof c->b.why, fmt, ap);
    va_end(ap);
    c->b.st = st;
  }
  return -(portc_node)st;
}

shape g_shape(gctx *c, portc_node i) { return i >= 0 && i < c->b.g->n ? c->b.g->nodes[i].sh : (shape){0}; }

portc_node g_scalar(gctx *c, portc_dtype t, double v) { return gk(c, portc_scalar(c->b.g, t, v)); }

portc_node g_reshape(gctx *c, portc_node x, const shape *to) {
  if (x < 0) return x;
  shape s = g_shape(c, x);
  if (shape_eq(&s, to)) return x;
  portc_dim d[PORTC_MAX_RANK];
  shape_dims(c->b.g, to, d);
  return gk(c, portc_reshape(c->b.g, x, to->rank, d));
}

portc_node g_expand(gctx *c, portc_node x, const shape *to) {
  if (x < 0) return x;
  shape s = g_shape(c, x);
  if (shape_eq(&s, to)) return x;
  portc_dim d[PORTC_MAX_RANK];
  shape_dims(c->b.g, to, d);
  return gk(c, portc_expand(c->b.g, x, to->rank, d));
}

static bool is_one(dim d) { return d.sym < 0 && d.c == 1; }

portc_node g_unbroadcast(gctx *c, portc_node gy, const shape *to) {
  if (gy < 0) return gy;
  shape from = g_shape(c, gy);
  int lead = from.rank - to->rank, n = 0;
  int64_t axes[PORTC_MAX_RANK];
  for (int i = 0; i < from.rank; i++)
    if (i < lead || (is_one(to->d[i - lead]) && !is_one(from.d[i]))) axes[n++] = i;
  portc_node s = n ? gk(c, portc_sum(c->b.g, gy, n, axes, true)) : gy;
  return g_reshape(c, s, to);
}

portc_node g_transpose(gctx *c, portc_node x) {
  if (x < 0) return x;
  int r = g_shape(c, x).rank;
  int64_t perm[PORTC_MAX_RANK];
  for (int i = 0; i < r; i++) perm[i] = i;
  perm[r - 2] = r - 1, perm[r - 1] = r - 2;
  return gk(c, portc_permute(c->b.g, x, r, perm));
}

portc_node g_sum_keep(gctx *c, portc_node x, int naxes, const int64_t *axes) {
  if (x < 0) return x;
  shape s = g_shape(c, x);
  return g_expand(c, gk(c, portc_sum(c->b.g, x, naxes, axes, true)), &s);
}

portc_node g_zeros(gctx *c, portc_dtype t, const shape *sh) { return g_expand(c, g_reshape(c, g_scalar(c, t, 0), &(shape){.rank = 0}), sh); }

/* y of length m along axis spread to (m-1)*step+1 with step-1 zeros between its elements */
portc_node g_zero_insert(gctx *c, portc_node y, int axis, int64_t step) {
  if (step == 1 || y < 0) return y;
  shape s = g_shape(c, y), w = {.rank = s.rank + 1};
  int64_t m = s.d[axis].c;
  for (int d = 0, k = 0; d < s.rank; d++) {
    w.d[k++] = s.d[d];
    if (d == axis) w.d[k++] = (dim){1, -1};
  }
  int64_t pads[2 * PORTC_MAX_RANK] = {0};
  pads[2 * (axis + 1) + 1] = step - 1;
  portc_node p = gk(c, portc_pad(c->b.g, g_reshape(c, y, &w), 2 * w.rank, pads, 0));
  shape flat = s;
  flat.d[axis].c = m * step;
  return gk(c, portc_slice(c->b.g, g_reshape(c, p, &flat), axis, 0, (m - 1) * step + 1, 1));
}

/* y placed at [start, start + len) of a zero tensor of length n along axis */
portc_node g_place(gctx *c, portc_node y, int axis, int64_t start, int64_t n) {
  if (y < 0) return y;
  shape s = g_shape(c, y);
  int64_t pads[2 * PORTC_MAX_RANK] = {0};
  pads[2 * axis] = start;
  pads[2 * axis + 1] = n - start - s.d[axis].c;
  if (!pads[2 * axis] && !pads[2 * axis + 1]) return y;
  return gk(c, portc_pad(c->b.g, y, 2 * s.rank, pads, 0));
}

/* a forward node whose inputs all exist and whose result a gradient can flow through */
static bool carries_grad(const node *n) { return dtype_is_float(n->dt); }

static portc_status check_args(const portc_graph *g, portc_node loss, int n, const portc_node *wrt, const portc_node *grads) {
  if (!g || n < 1 || !wrt || !grads) return err_set(PORTC_ERR_INVALID, "grad: NULL argument or nothing to differentiate for");
  if (loss < 0 || loss >= g->n) return err_set(PORTC_ERR_INVALID, "grad: the loss is not a node of this graph");
  const node *l = &g->nodes[loss];
  if (!carries_grad(l)) return err_set(PORTC_ERR_DTYPE, "grad: loss %s is %s; a loss has a floating dtype", l->name, portc_dtype_name(l->dt));
  if (shape_numel_const(&l->sh) != 1) {
    char s[128];
    shape_str(g, &l->sh, s, sizeof s);
    return err_set(PORTC_ERR_SHAPE, "grad: loss %s is %s%s; a loss is a scalar (one element): reduce it with sum or mean first", l->name,
                   portc_dtype_name(l->dt), s);
  }
  for (int k = 0; k < n; k++) {
    if (wrt[k] < 0 || wrt[k] >= g->n) return err_set(PORTC_ERR_INVALID, "grad: wrt[%d] is not a node of this graph", k);
    const node *w = &g->nodes[wrt[k]];
    if (!carries_grad(w)) return err_set(PORTC_ERR_DTYPE, "grad: %s is %s; gradients are taken for floating values only", w->name, portc_dtype_name(w->dt));
    if (wrt[k] > loss) return err_set(PORTC_ERR_INVALID, "grad: %s comes after loss %s, so the loss cannot depend on it", w->name, l->name);
  }
  return PORTC_OK;
}

/* the first node that depends on w and whose result carries no gradient (an integer or bool
 * result: argmax, a comparison, a cast to an integer), to name in the error; -1 when none */
static int blocker(const portc_graph *g, int w, int loss) {
  bool *on = calloc((size_t)loss + 1, sizeof *on);
  int b = -1;
  if (!on) return -1;
  on[w] = true;
  for (int i = w + 1; i <= loss && b < 0; i++) {
    for (int j = 0; j < g->nodes[i].nin && !on[i]; j++) on[i] = g->nodes[i].in[j] >= 0 && on[g->nodes[i].in[j]];
    if (on[i] && !carries_grad(&g->nodes[i])) b = i;
  }
  free(on);
  return b;
}

portc_status portc_graph_grad(portc_graph *g, portc_node loss, int n, const portc_node *wrt, portc_node *grads) {
  portc_status st = check_args(g, loss, n, wrt, grads);
  if (st) return st;
  const int n0 = g->n;
  portc_node *adj = malloc(sizeof *adj * (size_t)n0);
  bool *dep = calloc((size_t)n0, sizeof *dep);
  if (!adj || !dep) {
    free(adj), free(dep);
    return err_set(PORTC_ERR_NOMEM, "grad: out of memory");
  }
  for (int i = 0; i < n0; i++) adj[i] = PORTC_NONE;
  for (int k = 0; k < n; k++) dep[wrt[k]] = true;
  for (int i = 0; i < n0; i++)
    for (int j = 0; j < g->nodes[i].nin && !dep[i]; j++) dep[i] = g->nodes[i].in[j] >= 0 && dep[g->nodes[i].in[j]];
  gctx c = {.b = {.g = g}, .need = dep};
  shape lsh = g->nodes[loss].sh;
  adj[loss] = g_expand(&c, g_scalar(&c, g->nodes[loss].dt, 1.0), &lsh);
  if (adj[loss] >= 0) portc_set_name(g, adj[loss], node_name_taken(g, "loss.seed") ? NULL : "loss.seed");
  for (int i = loss; i >= 0 && !c.b.st; i--) {
    const node *x = &g->nodes[i];
    if (adj[i] == PORTC_NONE || !dep[i] || op_get(x->op)->kind == K_SOURCE) continue;
    portc_node gin[64];
    int nin = x->nin;
    for (int j = 0; j < nin; j++) gin[j] = PORTC_NONE;
    if (!grad_rule(&c, i, adj[i], gin) || c.b.st) {
      char why[sizeof c.b.why];
      memcpy(why, c.b.why, sizeof why);
      int at = snprintf(c.b.why, sizeof c.b.why, "the gradient of %.100s (%s): ", g->nodes[i].name, op_get(g->nodes[i].op)->name);
      if (at > 0 && at < (int)sizeof c.b.why) str_cut(c.b.why + at, sizeof c.b.why - (size_t)at, "%s", why);
      break;
    }
    for (int j = 0; j < nin && !c.b.st; j++) {
      int in = g->nodes[i].in[j];
      if (gin[j] == PORTC_NONE || in < 0 || !dep[in] || !carries_grad(&g->nodes[in])) continue;
      adj[in] = adj[in] == PORTC_NONE ? gin[j] : gk(&c, portc_add(g, adj[in], gin[j]));
    }
  }
  for (int k = 0; k < n && !c.b.st; k++) {
    if (adj[wrt[k]] != PORTC_NONE) continue;
    int b = blocker(g, wrt[k], loss);
    const node *w = &g->nodes[wrt[k]], *l = &g->nodes[loss];
    if (b >= 0)
      gfail(&c, PORTC_ERR_INVALID, "loss %s depends on %s only through %s (%s), which is not differentiable: its result is %s", l->name, w->name,
            g->nodes[b].name, op_get(g->nodes[b].op)->name, portc_dtype_name(g->nodes[b].dt));
    else gfail(&c, PORTC_ERR_INVALID, "loss %s does not depend on %s", l->name, w->name);
  }
  /* each result its own node, named WRT.grad where that name is free */
  bool *claimed = c.b.st ? NULL : calloc((size_t)(g->n - n0 + 2 * n + 1), sizeof *claimed);
  if (!c.b.st && !claimed) gfail(&c, PORTC_ERR_NOMEM, "out of memory");
  for (int k = 0; k < n && !c.b.st; k++) {
    portc_node r = adj[wrt[k]];
    if (r < n0 || claimed[r - n0]) {
      shape s = g_shape(&c, r);
      portc_dim d[PORTC_MAX_RANK];
      shape_dims(g, &s, d);
      r = gk(&c, portc_reshape(g, r, s.rank, d));
      if (r < 0) break;
    }
    claimed[r - n0] = true;
    char name[256];
    snprintf(name, sizeof name, "%s.grad", g->nodes[wrt[k]].name);
    if (!node_name_taken(g, name) && valid_ident(name)) portc_set_name(g, r, name);
    grads[k] = r;
  }
  free(claimed);
  free(adj);
  free(dep);
  if (c.b.st) {
    graph_truncate(g, n0, g->nout, g->nupd);
    for (int k = 0; k < n; k++) grads[k] = -(portc_node)c.b.st;
    return err_set(c.b.st, "grad: %s", c.b.why);
  }
  return PORTC_OK;
}
