/*
 * ops_nn.c: ONNX's convolution, batch normalization and pooling operators, as portc's conv2d and
 * pool2d (a 1-D one over [N, C, L] as the 2-D one over [N, C, 1, L]). portc pads symmetrically;
 * ONNX's asymmetric pads, SAME padding and ceil_mode become an explicit Pad in front (with -inf
 * for max pooling, and a count of the real elements for average pooling that leaves padding out).
 * ConvTranspose is a convolution over the input with zeros inserted, by the flipped kernel. 3-D
 * windows are in ops_nn3d.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

typedef struct window {
  int64_t k[2], s[2], d[2], pb[2], pe[2]; /* kernel, stride, dilation, pad at begin and end */
  int64_t ex[2];                          /* ceil_mode's extension past the end padding */
} window;

/* kernel, strides, dilations and pads of a 2-D window op over x of shape [N, C, H, W]; a 1-D
 * one (sd = 1: its attributes have one value per end) is the 2-D window [1, k] over [N, C, 1, L] */
static portc_status read_window(imp *c, const dim *xd, const int64_t *kernel, window *w, bool ceil_mode, int sd) {
  int64_t v[8];
  int n, at = 2 - sd; /* the first window axis the attributes give */
  for (int i = 0; i < 2; i++) w->k[i] = kernel[i], w->s[i] = 1, w->d[i] = 1, w->pb[i] = w->pe[i] = w->ex[i] = 0;
  if ((n = attr_ints(c, "strides", v, 8)) >= 0) {
    if (n != sd) return fail(c, PORTC_ERR_INVALID, "strides has %d values for a %d-D window", n, sd);
    for (int i = 0; i < sd; i++) w->s[at + i] = v[i];
  }
  if ((n = attr_ints(c, "dilations", v, 8)) >= 0) {
    if (n != sd) return fail(c, PORTC_ERR_INVALID, "dilations has %d values for a %d-D window", n, sd);
    for (int i = 0; i < sd; i++) w->d[at + i] = v[i];
  }
  char buf[32];
  const char *pad = attr_string(c, "auto_pad", "NOTSET", buf, sizeof buf);
  if ((n = attr_ints(c, "pads", v, 8)) >= 0) {
    if (n != 2 * sd) return fail(c, PORTC_ERR_INVALID, "pads has %d values for a %d-D window (%d pads)", n, sd, 2 * sd);
    for (int i = 0; i < sd; i++) w->pb[at + i] = v[i], w->pe[at + i] = v[sd + i];
  }
  for (int i = 0; i < 2; i++) {
    if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1 || w->pb[i] < 0 || w->pe[i] < 0 || w->k[i] > (1 << 20) || w->s[i] > (1 << 20) ||
        w->d[i] > (1 << 20) || w->pb[i] > (1 << 20) || w->pe[i] > (1 << 20))
      return fail(c, PORTC_ERR_INVALID, "kernel %lld, stride %lld, dilation %lld or pads %lld/%lld out of range", (long long)w->k[i],
                  (long long)w->s[i], (long long)w->d[i], (long long)w->pb[i], (long long)w->pe[i]);
  }
  bool same = !strcmp(pad, "SAME_UPPER") || !strcmp(pad, "SAME_LOWER");
  if (!same && strcmp(pad, "NOTSET") && strcmp(pad, "VALID")) return fail(c, PORTC_ERR_INVALID, "auto_pad '%s' is not an ONNX padding mode", pad);
  if (!strcmp(pad, "VALID")) memset(w->pb, 0, sizeof w->pb), memset(w->pe, 0, sizeof w->pe);
  for (int i = 0; i < 2; i++) {
    if ((same || ceil_mode) && xd[2 + i].sym >= 0) return fail(c, PORTC_ERR_SHAPE, "SAME padding or ceil_mode over a symbolic spatial size");
    int64_t size = xd[2 + i].c, span = (w->k[i] - 1) * w->d[i] + 1;
    if (same) {
      int64_t out = (size + w->s[i] - 1) / w->s[i], total = (out - 1) * w->s[i] + span - size;
      if (total < 0) total = 0;
      w->pb[i] = !strcmp(pad, "SAME_UPPER") ? total / 2 : total - total / 2;
      w->pe[i] = total - w->pb[i];
    }
    if (ceil_mode) { /* extra end padding so that floor division gives the ceil-mode size */
      int64_t padded = size + w->pb[i] + w->pe[i];
      if (padded < span) continue;
      int64_t out = (padded - span + w->s[i] - 1) / w->s[i] + 1;
      if ((out - 1) * w->s[i] >= size + w->pb[i]) out--; /* the last window must start inside */
      int64_t need = (out - 1) * w->s[i] + span - padded;
      if (need > 0) w->ex[i] = need;
    }
  }
  return PORTC_OK;
}

static bool symmetric(const window *w) { return w->pb[0] == w->pe[0] && w->pb[1] == w->pe[1] && !w->ex[0] && !w->ex[1]; }
static bool padded(const window *w) { return w->pb[0] || w->pb[1] || w->pe[0] || w->pe[1] || w->ex[0] || w->ex[1]; }

/* x with explicit spatial padding: before, after, and after that the extension */
static portc_node pad_by(portc_graph *g, portc_node x, const int64_t *pb, const int64_t *pe, double value) {
  if (!pb[0] && !pb[1] && !pe[0] && !pe[1]) return x;
  int64_t pads[8] = {0, 0, 0, 0, pb[0], pe[0], pb[1], pe[1]};
  return portc_pad(g, x, 8, pads, value);
}

/* an explicit Pad of the spatial dimensions, leaving the window op no padding of its own */
static portc_node pad_spatial(portc_graph *g, portc_node x, window *w, double value) {
  int64_t pe[2] = {w->pe[0] + w->ex[0], w->pe[1] + w->ex[1]};
  x = pad_by(g, x, w->pb, pe, value);
  memset(w->pb, 0, sizeof w->pb), memset(w->pe, 0, sizeof w->pe), memset(w->ex, 0, sizeof w->ex);
  return x;
}

/* x of rank 3 [N, C, L] as [N, C, 1, L] (its dims in d, 4 of them), for a 1-D window op */
static portc_node as_2d(imp *c, const oval *v, portc_node x, dim *d) {
  portc_dim pd[PORTC_MAX_RANK];
  portc_node_shape(c->g, x, pd);
  pd[3] = pd[2], pd[2] = (portc_dim){1, NULL};
  val_shape(c, v, d);
  d[3] = d[2], d[2] = (dim){1, -1};
  return portc_reshape(c->g, x, 4, pd);
}

/* a 1-D op's result [N, C, 1, L'] as [N, C, L'] */
static portc_node as_1d(portc_graph *g, portc_node y) {
  if (y < 0) return y;
  portc_dim pd[PORTC_MAX_RANK];
  portc_node_shape(g, y, pd);
  pd[2] = pd[3];
  return portc_reshape(g, y, 3, pd);
}

static portc_status op_Conv(imp *c) {
  if (!op_in(c, 0) || !op_in(c, 1)) return fail(c, PORTC_ERR_INVALID, "needs X and W");
  portc_graph *g = c->g;
  portc_node x = val_node(c, op_in(c, 0)), wt = x < 0 ? x : val_node(c, op_in(c, 1));
  if (wt < 0) return out_node(c, 0, wt);
  int rank = portc_node_rank(g, x);
  if (rank < 3 || rank > 5 || portc_node_rank(g, wt) != rank)
    return fail(c, PORTC_ERR_SHAPE, "X has rank %d and W rank %d; portc imports 1-D, 2-D and 3-D convolutions (rank 3 to 5)", rank, portc_node_rank(g, wt));
  if (rank == 5) {
    portc_node b3 = op_in(c, 2) ? val_node(c, op_in(c, 2)) : PORTC_NONE;
    return b3 != PORTC_NONE && b3 < 0 ? out_node(c, 0, b3) : onnx_conv3d(c, x, wt, b3);
  }
  dim xd[PORTC_MAX_RANK], wd[PORTC_MAX_RANK];
  if (rank == 3) {
    x = as_2d(c, op_in(c, 0), x, xd);
    wt = as_2d(c, op_in(c, 1), wt, wd);
  } else {
    val_shape(c, op_in(c, 0), xd);
    val_shape(c, op_in(c, 1), wd);
  }
  int64_t kernel[8] = {wd[2].c, wd[3].c};
  int n = attr_ints(c, "kernel_shape", kernel + 4 - rank, 2);
  if (n != -1 && (n != rank - 2 || kernel[0] != wd[2].c || kernel[1] != wd[3].c)) return fail(c, PORTC_ERR_SHAPE, "kernel_shape does not match W");
  window w;
  portc_status st = read_window(c, xd, kernel, &w, false, rank - 2);
  if (st) return st;
  if (!symmetric(&w)) x = pad_spatial(g, x, &w, 0);
  portc_node bias = op_in(c, 2) ? val_node(c, op_in(c, 2)) : PORTC_NONE;
  if (bias != PORTC_NONE && bias < 0) return out_node(c, 0, bias);
  portc_conv2d_opts o = {.stride = {w.s[0], w.s[1]}, .padding = {w.pb[0], w.pb[1]}, .dilation = {w.d[0], w.d[1]}, .groups = attr_int(c, "group", 1)};
  portc_node y = x < 0 ? x : portc_conv2d(g, x, wt, bias, &o);
  return out_node(c, 0, rank == 3 ? as_1d(g, y) : y);
}

/* a BatchNormalization not folded into a Conv: (x - mean) * (scale / sqrt(var + eps)) + bias over
 * channel dimension 1 */
static portc_status op_BatchNormalization(imp *c) {
  portc_status st;
  for (int k = 0; k < 5; k++)
    if ((st = op_need(c, k))) return st;
  if (attr_int(c, "training_mode", 0)) return fail(c, PORTC_ERR_INVALID, "training_mode=1; portc imports inference graphs");
  for (size_t k = 1; k < c->np->n_output; k++)
    if (*c->np->output[k] && val_find(c, c->np->output[k])->uses) return fail(c, PORTC_ERR_INVALID, "running statistics outputs are read (training mode)");
  portc_graph *g = c->g;
  portc_node x = val_node(c, op_in(c, 0));
  if (x < 0) return out_node(c, 0, x);
  int rank = portc_node_rank(g, x);
  if (rank < 2) return fail(c, PORTC_ERR_SHAPE, "X has rank %d; it needs a channel dimension", rank);
  portc_node p[4];
  for (int k = 0; k < 4; k++) {
    if ((p[k] = val_node(c, op_in(c, 1 + k))) < 0) return out_node(c, 0, p[k]);
    portc_dim d[PORTC_MAX_RANK];
    portc_node_shape(g, p[k], d);
    portc_dim to[PORTC_MAX_RANK] = {{-1, NULL}};
    for (int i = 1; i < rank - 1; i++) to[i] = (portc_dim){1, NULL};
    p[k] = portc_reshape(g, p[k], rank - 1, to);
  }
  portc_dtype dt = portc_node_dtype(g, x);
  portc_node scale = portc_div(g, p[0], portc_sqrt(g, portc_add(g, p[3], portc_scalar(g, dt, attr_float(c, "epsilon", 1e-5)))));
  return out_node(c, 0, portc_add(g, portc_mul(g, portc_sub(g, x, p[2]), scale), p[1]));
}

static portc_status pool(imp *c, bool is_max) {
  if (!op_in(c, 0)) return fail(c, PORTC_ERR_INVALID, "input X is missing");
  if (is_max && c->np->n_output > 1 && *c->np->output[1] && val_find(c, c->np->output[1])->uses)
    return fail(c, PORTC_ERR_INVALID, "the Indices output is read; portc computes only Y");
  portc_graph *g = c->g;
  portc_node x = val_node(c, op_in(c, 0));
  if (x < 0) return out_node(c, 0, x);
  int rank = portc_node_rank(g, x);
  if (rank == 5) return onnx_pool3d(c, x, is_max);
  if (rank != 4 && rank != 3) return fail(c, PORTC_ERR_SHAPE, "X has rank %d; portc imports 1-D, 2-D and 3-D pooling (rank 3 to 5)", rank);
  dim xd[PORTC_MAX_RANK];
  if (rank == 3) x = as_2d(c, op_in(c, 0), x, xd);
  else val_shape(c, op_in(c, 0), xd);
  int64_t kernel[8] = {1, 1};
  if (attr_ints(c, "kernel_shape", kernel + 4 - rank, 2) != rank - 2) return fail(c, PORTC_ERR_INVALID, "kernel_shape must have %d values", rank - 2);
  window w;
  portc_status st = read_window(c, xd, kernel, &w, attr_int(c, "ceil_mode", 0) != 0, rank - 2);
  if (st) return st;
  if (w.d[0] != 1 || w.d[1] != 1) return fail(c, PORTC_ERR_INVALID, "dilated pooling is not supported");
  bool fits = symmetric(&w) && 2 * w.pb[0] <= w.k[0] && 2 * w.pb[1] <= w.k[1];
  if (is_max) {
    if (!fits) x = pad_spatial(g, x, &w, -INFINITY);
    portc_pool2d_opts o = {.kernel = {w.k[0], w.k[1]}, .stride = {w.s[0], w.s[1]}, .padding = {w.pb[0], w.pb[1]}};
    portc_node y = portc_max_pool2d(g, x, &o);
    return out_node(c, 0, rank == 3 ? as_1d(g, y) : y);
  }
  /* average: portc's divides by the whole window; where ONNX leaves padding out of the count, or
   * the ceil_mode extension is not counted, divide by the pooled count of real elements instead */
  bool include = attr_int(c, "count_include_pad", 0) != 0;
  portc_node count = PORTC_NONE;
  if (!fits || (!include && padded(&w))) {
    if (xd[2].sym >= 0 || xd[3].sym >= 0) return fail(c, PORTC_ERR_SHAPE, "average pooling that leaves padding out needs constant spatial sizes");
    portc_dtype dt = portc_node_dtype(g, x);
    portc_dim ones[4] = {{1, NULL}, {1, NULL}, {1, NULL}, {1, NULL}}, od[4] = {{1, NULL}, {1, NULL}, {xd[2].c, NULL}, {xd[3].c, NULL}};
    portc_node mask = portc_expand(g, portc_reshape(g, portc_scalar(g, dt, 1), 4, ones), 4, od);
    static const int64_t none[2] = {0, 0};
    if (include) mask = pad_by(g, pad_by(g, mask, w.pb, w.pe, 1), none, w.ex, 0); /* declared padding counts */
    else mask = pad_by(g, mask, w.pb, (int64_t[]){w.pe[0] + w.ex[0], w.pe[1] + w.ex[1]}, 0);
    portc_pool2d_opts mo = {.kernel = {w.k[0], w.k[1]}, .stride = {w.s[0], w.s[1]}};
    count = portc_avg_pool2d(g, mask, &mo);
    x = pad_spatial(g, x, &w, 0);
  }
  portc_pool2d_opts o = {.kernel = {w.k[0], w.k[1]}, .stride = {w.s[0], w.s[1]}, .padding = {w.pb[0], w.pb[1]}};
  portc_node y = portc_avg_pool2d(g, x, &o);
  if (count != PORTC_NONE) y = portc_div(g, y, count);
  return out_node(c, 0, rank == 3 ? as_1d(g, y) : y);
}
static portc_status op_MaxPool(imp *c) { return pool(c, true); }
static portc_status op_AveragePool(imp *c) { return pool(c, false); }

static portc_status global_pool(imp *c, bool is_max) {
  if (!op_in(c, 0)) return fail(c, PORTC_ERR_INVALID, "input X is missing");
  portc_node x = val_node(c, op_in(c, 0));
  if (x < 0) return out_node(c, 0, x);
  int rank = portc_node_rank(c->g, x);
  if (rank < 3) return fail(c, PORTC_ERR_SHAPE, "X has rank %d; it needs spatial dimensions", rank);
  int64_t axes[PORTC_MAX_RANK];
  for (int i = 2; i < rank; i++) axes[i - 2] = i;
  return out_node(c, 0, (is_max ? portc_max : portc_mean)(c->g, x, rank - 2, axes, true));
}
static portc_status op_GlobalAveragePool(imp *c) { return global_pool(c, false); }
static portc_status op_GlobalMaxPool(imp *c) { return global_pool(c, true); }

/* ---- ConvTranspose ----
 * The transposed convolution as a convolution of stride 1 over the input with s - 1 zeros
 * inserted between its elements, by the kernel flipped in space with its channel axes swapped:
 *   y = conv(zero_insert(x, s), W', pad_begin = d(k-1) - pb, pad_end = d(k-1) - pe + op)
 * where W'[g*Cout_g + o, i, a, b] = W[g*Cin_g + i, o, kH-1-a, kW-1-b]. A negative pad crops the
 * input instead. This spends s^2 times the multiplies of a direct transposed convolution on the
 * inserted zeros; the decoders that use it are a small part of a model's work. */

typedef struct tconv {
  int64_t k[2], s[2], d[2], pb[2], pe[2], op[2];
} tconv;

/* strides, dilations, pads, output_padding and output_shape / auto_pad of a ConvTranspose over
 * spatial sizes in[2] (as 2-D: a 1-D one is [1, L]) */
static portc_status read_tconv(imp *c, const int64_t *in, tconv *t, int sd) {
  int at = 2 - sd;
  for (int i = 0; i < 2; i++) t->s[i] = t->d[i] = 1, t->pb[i] = t->pe[i] = t->op[i] = 0;
  static const char *const names[] = {"strides", "dilations", "output_padding"};
  int64_t *dst[] = {t->s, t->d, t->op};
  int64_t v[8];
  int n;
  for (int a = 0; a < 3; a++) {
    if ((n = attr_ints(c, names[a], v, 8)) < 0) continue;
    if (n != sd) return fail(c, PORTC_ERR_INVALID, "%s has %d values for a %d-D convolution", names[a], n, sd);
    for (int i = 0; i < sd; i++) dst[a][at + i] = v[i];
  }
  if ((n = attr_ints(c, "pads", v, 8)) >= 0) {
    if (n != 2 * sd) return fail(c, PORTC_ERR_INVALID, "pads has %d values for a %d-D convolution (%d pads)", n, sd, 2 * sd);
    for (int i = 0; i < sd; i++) t->pb[at + i] = v[i], t->pe[at + i] = v[sd + i];
  }
  char buf[32];
  const char *pad = attr_string(c, "auto_pad", "NOTSET", buf, sizeof buf);
  bool same = !strcmp(pad, "SAME_UPPER") || !strcmp(pad, "SAME_LOWER");
  if (!same && strcmp(pad, "NOTSET") && strcmp(pad, "VALID")) return fail(c, PORTC_ERR_INVALID, "auto_pad '%s' is not an ONNX padding mode", pad);
  int64_t oshape[8];
  int no = attr_ints(c, "output_shape", oshape, 8);
  if (no >= 0 && no != sd) return fail(c, PORTC_ERR_INVALID, "output_shape has %d values for a %d-D convolution", no, sd);
  for (int i = 0; i < 2; i++) {
    if (t->s[i] < 1 || t->d[i] < 1 || t->pb[i] < 0 || t->pe[i] < 0 || t->op[i] < 0 || t->s[i] > 64 || t->d[i] > (1 << 20) ||
        t->pb[i] > (1 << 20) || t->pe[i] > (1 << 20))
      return fail(c, PORTC_ERR_INVALID, "stride %lld (1 to 64), dilation %lld or pads %lld/%lld out of range", (long long)t->s[i],
                  (long long)t->d[i], (long long)t->pb[i], (long long)t->pe[i]);
    if (t->op[i] >= t->s[i] && t->op[i] >= t->d[i])
      return fail(c, PORTC_ERR_INVALID, "output_padding %lld must be less than the stride %lld or the dilation %lld", (long long)t->op[i],
                  (long long)t->s[i], (long long)t->d[i]);
    if (!strcmp(pad, "VALID")) t->pb[i] = t->pe[i] = 0;
    if (no < 0 && !same) continue;
    /* the output size is given (output_shape, or the input's times the stride for SAME): the
     * padding is what makes it so */
    int64_t want = no >= 0 ? (i < at ? 1 : oshape[i - at]) : in[i] * t->s[i];
    int64_t total = t->s[i] * (in[i] - 1) + t->op[i] + (t->k[i] - 1) * t->d[i] + 1 - want;
    if (total < 0) return fail(c, PORTC_ERR_SHAPE, "output_shape %lld is larger than the convolution makes", (long long)want);
    bool upper = !strcmp(pad, "SAME_UPPER");
    t->pb[i] = upper ? total / 2 : total - total / 2;
    t->pe[i] = total - t->pb[i];
  }
  return PORTC_OK;
}

/* W [Cin, Cout/g, kH, kW] as the flipped, channel-swapped W' [Cout, Cin/g, kH, kW]: computed at
 * import for known weights, as graph operations for ones computed at run time */
static portc_node flip_weights(imp *c, oval *wv, const int64_t *wd, int64_t groups) {
  portc_graph *g = c->g;
  int64_t cin = wd[0], cog = wd[1], kh = wd[2], kw = wd[3], cig = cin / groups, sp = kh * kw;
  if (wv->f) {
    int64_t shape[4] = {cog * groups, cig, kh, kw};
    portc_tensor *t = portc_tensor_new(wv->f->t->dtype, 4, shape);
    pdata *d = pdata_new(t);
    if (!d) return -(portc_node)fail(c, PORTC_ERR_NOMEM, "out of memory");
    for (int64_t gi = 0; gi < groups; gi++)
      for (int64_t o = 0; o < cog; o++)
        for (int64_t i = 0; i < cig; i++)
          for (int64_t a = 0; a < sp; a++)
            portc_tensor_set(t, ((gi * cog + o) * cig + i) * sp + a, portc_tensor_get(wv->f->t, ((gi * cig + i) * cog + o) * sp + sp - 1 - a));
    char name[160];
    snprintf(name, sizeof name, "%s.flipped", wv->name);
    oval w = {.name = name, .node = -1, .known = true, .dt = t->dtype, .rank = 4, .shape = {shape[0], shape[1], kh, kw}, .f = d};
    portc_node n = val_node(c, &w);
    pdata_release(d);
    return n;
  }
  portc_node w = val_node(c, wv);
  portc_dim d5[5] = {{groups, NULL}, {cig, NULL}, {cog, NULL}, {kh, NULL}, {kw, NULL}};
  portc_dim d4[4] = {{groups * cog, NULL}, {cig, NULL}, {kh, NULL}, {kw, NULL}};
  w = portc_reshape(g, portc_permute(g, portc_reshape(g, w, 5, d5), 5, (int64_t[]){0, 2, 1, 3, 4}), 4, d4);
  for (int ax = 2; ax < 4; ax++) {
    int64_t k = wd[ax];
    if (k == 1) continue;
    double vals[64];
    if (k > 64) return -(portc_node)fail(c, PORTC_ERR_SHAPE, "a kernel of extent %lld computed at run time (64 at most)", (long long)k);
    for (int64_t j = 0; j < k; j++) vals[j] = (double)(k - 1 - j);
    w = portc_gather(g, w, portc_const(g, PORTC_I64, 1, &k, vals, k), ax);
  }
  return w;
}

/* x [N, C, H, W] with s - 1 zeros after each element along each spatial axis, the trailing ones
 * included: [N, C, H*sH, W*sW] */
static portc_node zero_insert(portc_graph *g, portc_node x, const int64_t *s) {
  if (s[0] == 1 && s[1] == 1) return x;
  portc_dim d[PORTC_MAX_RANK];
  portc_node_shape(g, x, d);
  portc_dim d6[6] = {d[0], d[1], d[2], {1, NULL}, d[3], {1, NULL}};
  int64_t pads[12] = {0, 0, 0, 0, 0, 0, 0, s[0] - 1, 0, 0, 0, s[1] - 1};
  portc_dim d4[4] = {d[0], d[1], {d[2].size * s[0], NULL}, {d[3].size * s[1], NULL}};
  return portc_reshape(g, portc_pad(g, portc_reshape(g, x, 6, d6), 12, pads, 0), 4, d4);
}

static portc_status op_ConvTranspose(imp *c) {
  if (!op_in(c, 0) || !op_in(c, 1)) return fail(c, PORTC_ERR_INVALID, "needs X and W");
  portc_graph *g = c->g;
  portc_node x = val_node(c, op_in(c, 0));
  if (x < 0) return out_node(c, 0, x);
  int rank = portc_node_rank(g, x);
  dim xd[PORTC_MAX_RANK], wd[PORTC_MAX_RANK];
  int wrank = val_shape(c, op_in(c, 1), wd);
  if ((rank != 4 && rank != 3) || wrank != rank)
    return fail(c, PORTC_ERR_SHAPE, "X has rank %d and W rank %d; portc imports 1-D and 2-D transposed convolutions (rank 3 or 4)", rank, wrank);
  if (rank == 3) {
    x = as_2d(c, op_in(c, 0), x, xd);
    wd[3] = wd[2], wd[2] = (dim){1, -1};
  } else val_shape(c, op_in(c, 0), xd);
  int64_t groups = attr_int(c, "group", 1);
  for (int i = 0; i < 4; i++)
    if (wd[i].sym >= 0) return fail(c, PORTC_ERR_SHAPE, "W's dimension %d is symbolic", i);
  if (groups < 1 || wd[0].c % groups || xd[1].sym >= 0 || xd[1].c != wd[0].c)
    return fail(c, PORTC_ERR_SHAPE, "X has %s channels and W %lld input channels in %lld groups", xd[1].sym >= 0 ? "symbolic" : "", (long long)wd[0].c,
                (long long)groups);
  tconv t = {.k = {wd[2].c, wd[3].c}};
  int64_t kernel[8];
  int n = attr_ints(c, "kernel_shape", kernel, 8);
  if (n != -1 && (n != rank - 2 || kernel[n - 1] != wd[3].c || (n == 2 && kernel[0] != wd[2].c))) return fail(c, PORTC_ERR_SHAPE, "kernel_shape does not match W");
  int64_t in[2] = {xd[2].c, xd[3].c};
  bool strided_or_cropped = false;
  portc_status st = read_tconv(c, in, &t, rank - 2);
  if (st) return st;
  int64_t pb[2], pe[2];
  for (int i = 0; i < 2; i++) {
    int64_t span = t.d[i] * (t.k[i] - 1);
    pb[i] = span - t.pb[i], pe[i] = span - t.pe[i] + t.op[i] - (t.s[i] - 1); /* after zero insertion */
    strided_or_cropped |= t.s[i] > 1 || pb[i] < 0 || pe[i] < 0 || pb[i] != pe[i];
  }
  if (strided_or_cropped && (xd[2].sym >= 0 || xd[3].sym >= 0))
    return fail(c, PORTC_ERR_SHAPE, "a strided or asymmetrically padded transposed convolution needs constant spatial sizes");
  x = zero_insert(g, x, t.s);
  for (int i = 0; i < 2; i++) { /* negative padding crops */
    int64_t size = in[i] * t.s[i];
    if (pb[i] < 0 || pe[i] < 0) x = portc_slice(g, x, 2 + i, pb[i] < 0 ? -pb[i] : 0, pe[i] < 0 ? size + pe[i] : size, 1);
    if (pb[i] < 0) pb[i] = 0;
    if (pe[i] < 0) pe[i] = 0;
  }
  if (pb[0] != pe[0] || pb[1] != pe[1]) {
    x = pad_by(g, x, pb, pe, 0);
    memset(pb, 0, sizeof pb);
  }
  portc_node w = flip_weights(c, op_in(c, 1), (int64_t[]){wd[0].c, wd[1].c, wd[2].c, wd[3].c}, groups);
  portc_node bias = op_in(c, 2) ? val_node(c, op_in(c, 2)) : PORTC_NONE;
  if (w < 0) return out_node(c, 0, w);
  if (bias != PORTC_NONE && bias < 0) return out_node(c, 0, bias);
  portc_conv2d_opts o = {.stride = {1, 1}, .padding = {pb[0], pb[1]}, .dilation = {t.d[0], t.d[1]}, .groups = groups};
  portc_node y = portc_conv2d(g, x, w, bias, &o);
  return out_node(c, 0, rank == 3 ? as_1d(g, y) : y);
}

const onnx_op onnx_ops_nn[] = {
    {"Conv", op_Conv}, {"ConvTranspose", op_ConvTranspose}, {"BatchNormalization", op_BatchNormalization}, {"MaxPool", op_MaxPool},
    {"AveragePool", op_AveragePool}, {"GlobalAveragePool", op_GlobalAveragePool}, {"GlobalMaxPool", op_GlobalMaxPool},
    {NULL, NULL},
};
