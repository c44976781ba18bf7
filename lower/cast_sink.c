/*
 * cast_sink.c: 16-bit values stay 16-bit across ops that only select or move them. Under
 * autocast a convolution's f16 result is cast back to f32 (torch.autocast's rule, so that the
 * graph's f32 ops see f32), so a relu, a max-pool or a reshape after it reads and writes f32, and
 * the next convolution casts to f16 again: three times an f16 activation's bytes. An op that only
 * selects or moves values gives the same bits on 16-bit values as on their widening to f32, so
 * the widening moves past it; a widening narrowed again to its own dtype cancels:
 *
 *   before: c = cast(y, f32); r = relu(c); p = max_pool2d(r); x = cast(p, f16); conv2d(x, ..)
 *   after:  r' = relu(y); p' = max_pool2d(r'); conv2d(p', ..)        (y f16: the same bits)
 *
 * An op that rounds (an addition) is left in f32: its 16-bit result would round where the
 * graph's f32 one does not. The exception is autocast's own: an addition of two values autocast
 * widened (node.autocast_widening) adds in their 16-bit dtype, as torch.autocast adds two f16
 * tensors, so a residual network's stream stays f16 from block to block:
 *
 *   before: c = cast(conv2d(..), f32); s = add(c, r); t = relu(s); x = cast(t, f16); conv2d(x, ..)
 *   after:  s' = add(conv2d(..), r'); t' = relu(s'); conv2d(t', ..)      (r' the f16 of r)
 *
 * Their f16 sum rounds once more than the f32 one: within autocast's bounds, and what PyTorch
 * computes. A graph output keeps its node, so its name stays.
 */
#include "passes.h"

/* node v is a widening to f32 of a 16-bit float value: its dtype in *t */
static bool widened(const portc_graph *g, int32_t v, portc_dtype *t) {
  const node *n = &g->nodes[v];
  if (n->op != OP_cast || n->dt != PORTC_F32) return false;
  *t = g->nodes[n->in[0]].dt;
  return *t == PORTC_F16 || *t == PORTC_BF16;
}

/* the op's result is one of its operands' values, or moves them, so its bits do not depend on
 * whether those are held in f32 or in a narrower float (max-pooling pads with -inf) */
static bool moves_only(enum op op) {
  switch (op) {
  case OP_relu: case OP_neg: case OP_abs: case OP_maximum: case OP_minimum: case OP_max_pool2d:
  case OP_reshape: case OP_permute: case OP_expand: case OP_slice: case OP_concat: return true;
  default: return false;
  }
}

/* every operand of node n a widening autocast made */
static bool autocast_operands(const portc_graph *g, const node *n) {
  for (int j = 0; j < n->nin; j++)
    if (!g->nodes[n->in[j]].autocast_widening) return false;
  return true;
}

/* an f32 op that only moves values, or an addition of autocast's widenings, all of its operands
 * widened from one 16-bit dtype */
static bool sinks(const portc_graph *g, int i) {
  const node *n = &g->nodes[i];
  if (n->dt != PORTC_F32 || n->nin < 1) return false;
  if (!moves_only(n->op) && !(n->op == OP_add && autocast_operands(g, n))) return false;
  portc_dtype t0 = PORTC_F32, t;
  for (int j = 0; j < n->nin; j++) {
    if (!widened(g, n->in[j], &t) || (j && t != t0)) return false;
    t0 = t;
  }
  return true;
}

/* a narrowing of a widening back to the dtype it came from */
static bool cancels(const portc_graph *g, int i) {
  const node *n = &g->nodes[i];
  portc_dtype t;
  return n->op == OP_cast && widened(g, n->in[0], &t) && t == n->dt && !graph_is_output(g, i);
}

static bool rewrites(const portc_graph *g, int i) { return sinks(g, i) || cancels(g, i); }

static portc_node rewrite(portc_graph *out, const portc_graph *g, int i, const int32_t *remap) {
  const node *n = &g->nodes[i];
  if (cancels(g, i)) return remap[g->nodes[n->in[0]].in[0]];
  int32_t in[64];
  for (int j = 0; j < n->nin; j++) in[j] = remap[g->nodes[n->in[j]].in[0]]; /* the 16-bit values */
  portc_node narrow = copy_op_onto(out, g, i, in, NULL, NULL);
  if (narrow < 0) return narrow;
  node_spec back;
  spec_init(&back, OP_cast, 1, &narrow);
  back.a[attr_index(OP_cast, "to")] = (attr){.set = true, .v = {PORTC_F32}};
  back.name = n->name; /* the f32 value under the op's own name, for whatever still reads f32 */
  portc_node r = graph_add(out, &back);
  if (r >= 0) out->nodes[r].autocast_widening = autocast_operands(g, n); /* so the stream's next addition sinks too */
  return r;
}

portc_status cast_sink(portc_graph **g, bool *changed) {
  *changed = false;
  for (bool again = true; again;) { /* a widening moves one op a round; chains take several */
    portc_status st = rebuild_replacing(g, "cast_sink", rewrites, rewrite, &again);
    if (st) return st;
    *changed = *changed || again;
  }
  return PORTC_OK;
}
