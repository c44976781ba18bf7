/*
 * grad.h: reverse-mode differentiation, shared by the walk (grad.c) and the rules that give each
 * op its vector-Jacobian product as graph ops (grad_rules.c for elementwise ops, reductions and
 * views; grad_nn.c for contractions, pooling, normalization, softmax and attention).
 *
 * A rule reads the forward node it differentiates, the gradient flowing into its output, and
 * appends the nodes that compute the gradient of each input that needs one. Rules build with the
 * public builder calls; a failure anywhere is kept (the first one, with its message) and the
 * walk then removes everything it appended, so a failed grad leaves the graph as it was.
 */
#ifndef PORTC_IR_GRAD_H
#define PORTC_IR_GRAD_H

#include "graph.h"

typedef struct gctx {
  build_ctx b; /* the graph, and the first failure (PORTC_OK while none) */
  const bool *need; /* per forward node: its gradient is wanted (it depends on a wrt) */
} gctx;

/* n, or the first failure recorded (with the builder's message) when n is one */
portc_node gk(gctx *c, portc_node n);
/* a failure of the rule itself (a case it does not handle): recorded, returns it as a node */
portc_node gfail(gctx *c, portc_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- small builders over the public calls (grad.c) ---- */
portc_node g_scalar(gctx *c, portc_dtype t, double v);
portc_node g_reshape(gctx *c, portc_node x, const shape *to);
portc_node g_expand(gctx *c, portc_node x, const shape *to);
/* gy, of a broadcast result's shape, summed back to the shape an operand had */
portc_node g_unbroadcast(gctx *c, portc_node gy, const shape *to);
/* the last two dimensions swapped */
portc_node g_transpose(gctx *c, portc_node x);
/* the sum over axes (keepdim) of x, expanded back to x's shape: the gradient of a reduction */
portc_node g_sum_keep(gctx *c, portc_node x, int naxes, const int64_t *axes);
/* y of length m along axis spread to (m-1)*step+1, with step-1 zeros between its elements */
portc_node g_zero_insert(gctx *c, portc_node y, int axis, int64_t step);
/* y placed at [start, start + its length) of a zero tensor of length n along axis */
portc_node g_place(gctx *c, portc_node y, int axis, int64_t start, int64_t n);
/* zeros of a shape and dtype */
portc_node g_zeros(gctx *c, portc_dtype t, const shape *sh);
/* a copy of node i's shape (nodes move as the graph grows: never hold a pointer across a build) */
shape g_shape(gctx *c, portc_node i);

/* ---- rules ----
 * node i's input gradients into gin[0..nin): PORTC_NONE where the input gets none (it does not
 * need one, or the op's derivative is zero there). Returns false, with c->st set, on failure. */
bool grad_rule(gctx *c, int i, portc_node gy, portc_node *gin);
/* the rules of grad_nn.c, called by grad_rule */
bool grad_rule_nn(gctx *c, int i, portc_node gy, portc_node *gin);

#endif
