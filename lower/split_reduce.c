/*
 * split_reduce.c: a reduction of a large tensor to few values becomes two, so that its first
 * stage runs as a row reduction over many rows (every GPU core busy) and the second is short,
 * instead of a few rows of millions of elements that a few work groups walk alone. Equal groups
 * keep mean exact as a mean of means.
 *
 * To one value (a loss: mean of every element): 3.4 ms for the MSE of an 8192 x 1024 batch on an
 * H200, 0.03 ms split.
 *   before: loss = mean(d)                          d: f32[8192, 1024]
 *   after:  loss.rows = reshape(d, shape=[2048, 4096])
 *           loss.part = mean(loss.rows, axes=[1])
 *           loss      = mean(loss.part)
 *
 * Per channel over the batch and the pixels (batch norm's statistics, a convolution's bias
 * gradient): 64 rows of 401,408 for ResNet's stem; the pixels first, then the batch.
 *   before: m = mean(x, axes=[0, 2, 3], keepdim=true)        x: f32[32, 64, 112, 112]
 *   after:  m.part = mean(x, axes=[2, 3], keepdim=true)      2048 rows of 12,544
 *           m      = mean(m.part, axes=[0], keepdim=true)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum { MIN_SPLIT = 1 << 16, MAX_ROW = 4096, MIN_ROW = 256, FEW_OUTPUTS = 1024 };

/* the row length to split node x's reduction into, or 0 when it stays as it is */
static int64_t row_length(const portc_graph *g, const node *x) {
  if (op_get(x->op)->kind != K_REDUCE || shape_numel_const(&x->sh) != 1) return 0;
  int64_t n = shape_numel_const(&g->nodes[x->in[0]].sh);
  if (n < MIN_SPLIT) return 0;
  for (int64_t c = MAX_ROW; c >= MIN_ROW; c--)
    if (n % c == 0) return c;
  return 0;
}

static void name(portc_graph *out, portc_node n, const char *base, const char *piece) {
  char s[256];
  if (piece) snprintf(s, sizeof s, "%s.%s", base, piece);
  else snprintf(s, sizeof s, "%s", base);
  if (n >= 0 && !node_name_taken(out, s)) portc_set_name(out, n, s);
}

/* For a reduction to few values over axes both before and after its first kept axis: which axes
 * its first stage reduces (those after that axis, whose elements make rows long enough), or
 * false. */
static bool inner_axes(const portc_graph *g, const node *x, bool *inner) {
  if (op_get(x->op)->kind != K_REDUCE) return false;
  const shape *in = &g->nodes[x->in[0]].sh;
  int64_t n = shape_numel_const(in), out = shape_numel_const(&x->sh);
  if (n < MIN_SPLIT || out <= 1 || out > FEW_OUTPUTS) return false;
  const attr *axes = attr_get(x, "axes");
  bool red[PORTC_MAX_RANK] = {false};
  for (int k = 0; k < axes->n; k++) {
    int64_t a = norm_axis(axes->v[k], in->rank);
    if (a < 0) return false;
    red[a] = true;
  }
  int first_kept = 0;
  while (first_kept < in->rank && red[first_kept]) first_kept++;
  if (first_kept == 0 || first_kept == in->rank) return false; /* no outer axis, or all reduced (the first rule's) */
  int64_t row = 1;
  for (int d = 0; d < in->rank; d++) {
    inner[d] = red[d] && d > first_kept;
    if (inner[d]) row *= in->d[d].c;
  }
  return row >= MIN_ROW;
}

static bool large(const portc_graph *g, int i) {
  bool inner[PORTC_MAX_RANK];
  return row_length(g, &g->nodes[i]) > 0 || inner_axes(g, &g->nodes[i], inner);
}

/* the per-channel split: the inner axes with keepdim, then the outer ones */
static portc_node split_outer(portc_graph *out, const portc_graph *g, int i, const int32_t *remap, const bool *inner) {
  const node *x = &g->nodes[i];
  const shape *in = &g->nodes[x->in[0]].sh;
  char first[160] = "axes=[", second[160] = "axes=[";
  size_t a = strlen(first), b = strlen(second);
  for (int d = 0; d < in->rank; d++) {
    bool red = false;
    const attr *axes = attr_get(x, "axes");
    for (int k = 0; k < axes->n; k++) red = red || norm_axis(axes->v[k], in->rank) == d;
    if (!red) continue;
    if (inner[d]) a += (size_t)snprintf(first + a, sizeof first - a, "%s%d", a > 6 ? ", " : "", d);
    else b += (size_t)snprintf(second + b, sizeof second - b, "%s%d", b > 6 ? ", " : "", d);
  }
  snprintf(first + a, sizeof first - a, "], keepdim=true");
  snprintf(second + b, sizeof second - b, "], keepdim=true");
  const char *op = op_get(x->op)->name;
  portc_node in0 = remap[x->in[0]];
  portc_node p = portc_op(out, op, 1, &in0, first);
  name(out, p, x->name, "part");
  portc_node y = portc_op(out, op, 1, &p, second);
  if (!attr_i(x, "keepdim")) { /* the reduced axes dropped, as the node's own shape has them */
    name(out, y, x->name, "kept");
    portc_dim d[PORTC_MAX_RANK];
    for (int k = 0; k < x->sh.rank; k++) d[k] = (portc_dim){x->sh.d[k].c, NULL};
    y = portc_reshape(out, y, x->sh.rank, d);
  }
  name(out, y, x->name, NULL);
  return y;
}

static portc_node split(portc_graph *out, const portc_graph *g, int i, const int32_t *remap) {
  const node *x = &g->nodes[i];
  bool inner[PORTC_MAX_RANK];
  if (!row_length(g, x) && inner_axes(g, x, inner)) return split_outer(out, g, i, remap, inner);
  int64_t c = row_length(g, x), n = shape_numel_const(&g->nodes[x->in[0]].sh);
  portc_dim rows[2] = {{n / c, NULL}, {c, NULL}};
  portc_node r = portc_reshape(out, remap[x->in[0]], 2, rows);
  name(out, r, x->name, "rows");
  const char *op = op_get(x->op)->name;
  portc_node p = portc_op(out, op, 1, &r, "axes=[1]");
  name(out, p, x->name, "part");
  portc_node y = portc_op(out, op, 1, &p, "");
  portc_dim one[PORTC_MAX_RANK];
  for (int d = 0; d < x->sh.rank; d++) one[d] = (portc_dim){1, NULL};
  if (x->sh.rank) { /* keepdim: [1, 1, ...] */
    name(out, y, x->name, "all");
    y = portc_reshape(out, y, x->sh.rank, one);
  }
  name(out, y, x->name, NULL);
  return y;
}

portc_status split_reduce(portc_graph **gp, bool *changed) { return rebuild_replacing(gp, "split_reduce", large, split, changed); }
