/*
 * channels_last.c: convolutions in the layout their target computes fastest. A tensor-core
 * implicit GEMM wants each input pixel's channels contiguous (NHWC): a k-step of its reduction is
 * then 16-byte runs of channels that it copies as a matmul copies its operands, where NCHW makes
 * it gather 2-byte elements one by one. Where the target runs channels-last convolutions
 * (lower_options.channels_last: the dtypes), each NCHW convolution that fits becomes one, between
 * permutes, and the permutes move down through elementwise ops (relu, the residual add, autocast's
 * casts) until they meet the next convolution's and cancel:
 *
 *   before: c = conv2d(x, w); r = relu(c); d = conv2d(r, v)
 *   after:  c' = conv2d(permute(x, [0,2,3,1]), permute(w, [2,3,1,0]), channels_last=true)
 *           r' = relu(c'); d' = conv2d(r', permute(v, [2,3,1,0]), channels_last=true)
 *           d = permute(d', [0,3,1,2])
 *
 * so activations between convolutions stay NHWC, and only the network's ends (and ops that are
 * not elementwise: concat, reductions, which read NCHW through a permuted view) pay a transpose.
 * A pooling of an NHWC value pools it channels-last (ResNet's max_pool2d between its first
 * convolution and the next: an opaque op, which read NCHW, took a transpose of its input there
 * and another of its result after). Each rewritten node keeps an NCHW view of itself under its
 * own name, which DCE drops where nothing reads it; graph outputs keep their node. A
 * channels-last convolution the target cannot run natively (one a user wrote, on another target,
 * or in another dtype) goes back to NCHW between permutes, so every target takes the attribute.
 */
#include <stdlib.h>

#include "kir.h"
#include "passes.h"

static const int64_t TO_LAST[4] = {0, 2, 3, 1}, TO_FIRST[4] = {0, 3, 1, 2};
static const int64_t W_TO_LAST[4] = {2, 3, 1, 0}, W_TO_FIRST[4] = {3, 2, 0, 1}; /* OIHW <-> HWIO */

typedef struct clctx {
  portc_graph *out;
  const portc_graph *g;
  int32_t *remap; /* old node -> its value in out, in the old node's layout */
  int32_t *last;  /* old node -> an NHWC node of out holding it, or -1 */
} clctx;

static portc_node permuted(portc_graph *out, portc_node x, const int64_t *perm, const char *name) {
  node_spec s;
  spec_init(&s, OP_permute, 1, &x);
  attr *a = &s.a[attr_index(OP_permute, "perm")];
  a->set = true, a->n = 4;
  for (int d = 0; d < 4; d++) a->v[d] = perm[d], a->sym[d] = -1;
  s.name = name;
  return graph_add(out, &s);
}

/* operand j of an elementwise node of rank 4 that is not NHWC follows the others there: through
 * a permuted view (of rank 4), after a reshape to rank 4 (constant dimensions), or as it is (a
 * scalar) */
static bool follows(const portc_graph *g, int j) {
  const shape *s = &g->nodes[j].sh;
  for (int d = 0; d < s->rank && s->rank < 4; d++)
    if (s->d[d].sym >= 0) return false;
  return s->rank <= 4;
}

/* elementwise node i moves to NHWC: one of its operands is there already (a residual that is
 * not is then read through a permuted view, as the NCHW node would read the NHWC one) */
static bool sinks(const clctx *c, int i) {
  const node *n = &c->g->nodes[i];
  if (!op_elementwise(n) || n->sh.rank != 4 || graph_is_output(c->g, i)) return false;
  bool any = false;
  for (int j = 0; j < n->nin; j++) {
    if (c->last[n->in[j]] >= 0) any = true;
    else if (!follows(c->g, n->in[j])) return false;
  }
  return any;
}

/* operand j (old node) of a node that moved to NHWC: its NHWC value */
static portc_node last_operand(clctx *c, int j) {
  if (c->last[j] >= 0) return c->last[j];
  const shape *s = &c->g->nodes[j].sh;
  if (s->rank == 0) return c->remap[j];
  if (s->rank == 4) return permuted(c->out, c->remap[j], TO_LAST, NULL);
  node_spec r;
  portc_node x = c->remap[j];
  spec_init(&r, OP_reshape, 1, &x);
  attr *a = &r.a[attr_index(OP_reshape, "shape")];
  a->set = true, a->n = 4;
  for (int d = 0; d < 4; d++) a->v[d] = d < 4 - s->rank ? 1 : s->d[d - (4 - s->rank)].c, a->sym[d] = -1;
  portc_node four = graph_add(c->out, &r);
  return four < 0 ? four : permuted(c->out, four, TO_LAST, NULL);
}

/* the NHWC node y stands for old node i, whose NCHW view keeps i's name */
static portc_node keep_last(clctx *c, int i, portc_node y) {
  if (y < 0) return y;
  c->last[i] = y;
  return permuted(c->out, y, TO_FIRST, c->g->nodes[i].name);
}

/* x padded with zeros along dimension `axis` (of 4) to `to` elements */
static portc_node padded(portc_graph *out, portc_node x, int axis, int64_t to) {
  if (x < 0 || out->nodes[x].sh.d[axis].c == to) return x;
  const int64_t extra = to - out->nodes[x].sh.d[axis].c;
  node_spec s;
  spec_init(&s, OP_pad, 1, &x);
  attr *a = &s.a[attr_index(OP_pad, "pads")];
  a->set = true, a->n = 8;
  for (int d = 0; d < 8; d++) a->v[d] = d == 2 * axis + 1 ? extra : 0, a->sym[d] = -1;
  return graph_add(out, &s);
}

/* convolution or pooling i of the old graph on the operands `in` of out, in the layout `last` */
static portc_node layout_onto(clctx *c, int i, const int32_t *in, bool last) {
  const node *n = &c->g->nodes[i];
  for (int j = 0; j < n->nin; j++)
    if (in[j] < 0) return in[j];
  node_spec s;
  spec_init(&s, n->op, n->nin, in);
  for (int a = 0; a < op_get(n->op)->nattrs; a++) s.a[a] = n->a[a];
  s.a[attr_index(n->op, "channels_last")] = (attr){.set = true, .v = {last}};
  return graph_add(c->out, &s);
}

/* the input's channels padded with zeros to a multiple of 8, and the weights' with them (the
 * 3 of an RGB image: a network's first convolution then runs on tensor cores too) */
static portc_node to_last(clctx *c, int i) {
  const node *n = &c->g->nodes[i];
  const int64_t C = (c->g->nodes[n->in[0]].sh.d[1].c + 7) / 8 * 8;
  int32_t in[3] = {c->last[n->in[0]] >= 0 ? c->last[n->in[0]] : permuted(c->out, c->remap[n->in[0]], TO_LAST, NULL),
                   permuted(c->out, c->remap[n->in[1]], W_TO_LAST, NULL), n->nin > 2 ? c->remap[n->in[2]] : 0};
  in[0] = padded(c->out, in[0], 3, C), in[1] = padded(c->out, in[1], 2, C);
  return keep_last(c, i, layout_onto(c, i, in, true));
}

/* a channels-last convolution the target does not run: NCHW between permutes */
static portc_node to_first(clctx *c, int i) {
  const node *n = &c->g->nodes[i];
  int32_t in[3] = {permuted(c->out, c->remap[n->in[0]], TO_FIRST, NULL), permuted(c->out, c->remap[n->in[1]], W_TO_FIRST, NULL),
                   n->nin > 2 ? c->remap[n->in[2]] : 0};
  portc_node y = layout_onto(c, i, in, false);
  return y < 0 ? y : permuted(c->out, y, TO_LAST, n->name);
}

/* node i is a convolution the target runs channels-last (one of `dtypes`, and it fits) */
static bool native(const portc_graph *g, int i, unsigned dtypes) { return (dtypes >> g->nodes[i].dt & 1u) && kir_channels_last_fits(g, i); }

/* pooling i of the old graph, whose input is NHWC in out: the same pooling channels-last */
static bool pools_last(const clctx *c, int i) {
  const node *n = &c->g->nodes[i];
  return (n->op == OP_max_pool2d || n->op == OP_avg_pool2d) && !attr_i(n, "channels_last") && c->last[n->in[0]] >= 0 &&
         !graph_is_output(c->g, i);
}

static portc_node rewrite(clctx *c, int i, unsigned dtypes, bool convert) {
  const node *n = &c->g->nodes[i];
  if (n->op == OP_conv2d && attr_i(n, "channels_last"))
    return native(c->g, i, dtypes) ? copy_node(c->out, c->g, i, c->remap, NULL) : to_first(c, i);
  if (convert && n->op == OP_conv2d && native(c->g, i, dtypes) && !graph_is_output(c->g, i)) return to_last(c, i);
  if (convert && pools_last(c, i)) return keep_last(c, i, layout_onto(c, i, &c->last[n->in[0]], true));
  if (convert && sinks(c, i)) {
    int32_t in[3];
    for (int j = 0; j < n->nin; j++)
      if ((in[j] = last_operand(c, n->in[j])) < 0) return in[j];
    return keep_last(c, i, copy_op_onto(c->out, c->g, i, in, NULL, NULL));
  }
  return copy_node(c->out, c->g, i, c->remap, NULL);
}

static bool touches(const portc_graph *g, int i, unsigned dtypes, bool convert) {
  const node *n = &g->nodes[i];
  if (n->op != OP_conv2d) return false;
  return attr_i(n, "channels_last") ? !native(g, i, dtypes) : convert && native(g, i, dtypes);
}

portc_status channels_last(portc_graph **gp, unsigned dtypes, bool convert, bool *changed) {
  portc_graph *g = *gp;
  *changed = false;
  bool any = false;
  for (int i = 0; i < g->n && !any; i++) any = touches(g, i, dtypes, convert);
  if (!any) return PORTC_OK;
  clctx c = {portc_graph_new(g->name), g, malloc(sizeof(int32_t) * (size_t)(g->n + 1)), malloc(sizeof(int32_t) * (size_t)(g->n + 1))};
  if (!c.out || !c.remap || !c.last) {
    portc_graph_free(c.out);
    free(c.remap), free(c.last);
    return err_set(PORTC_ERR_NOMEM, "channels_last: out of memory");
  }
  c.out->next_auto = g->next_auto;
  portc_status st = PORTC_OK;
  for (int i = 0; i < g->n && !st; i++) {
    c.last[i] = -1;
    c.remap[i] = rewrite(&c, i, dtypes, convert);
    if (c.remap[i] < 0) st = err_set(portc_node_status(c.remap[i]), "channels_last %s: %s", g->nodes[i].name, portc_last_error());
  }
  st = rebuild_finish(gp, c.out, c.remap, st);
  free(c.remap), free(c.last);
  *changed = !st;
  return st;
}
