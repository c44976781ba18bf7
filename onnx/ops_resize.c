/*
 * ops_resize.c: ONNX's Resize (opsets 11 to 18) in nearest and linear modes over the spatial
 * axes of a known size, built from portc's gather: for each resized axis, the source index of
 * every output position is computed here, once, with the coordinate transformation the node
 * names, and becomes a constant index vector; nearest mode gathers once, linear mode gathers
 * the two neighbours and blends them with constant weights (the separable form of bilinear
 * interpolation, as the ONNX reference computes it). Cubic mode, antialiasing, region-of-
 * interest crops and aspect-ratio policies other than stretch are refused by name.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

typedef enum { CT_HALF_PIXEL, CT_PYTORCH_HALF_PIXEL, CT_ALIGN_CORNERS, CT_ASYMMETRIC, CT_HALF_PIXEL_NN } coord_mode;
typedef enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL } nearest_mode;

static const char *const coord_names[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn"};
static const char *const nearest_names[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

#define MAX_RESIZED (INT64_C(1) << 24) /* the most elements a resized axis may have */

static int find_name(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return -1;
}

/* the source coordinate of output position o on an axis of `in` elements resized to `out` */
static double source_coord(coord_mode m, int64_t o, int64_t in, int64_t out, double scale) {
  switch (m) {
  case CT_HALF_PIXEL: return ((double)o + 0.5) / scale - 0.5;
  case CT_PYTORCH_HALF_PIXEL: return out > 1 ? ((double)o + 0.5) / scale - 0.5 : 0.0;
  case CT_ALIGN_CORNERS: return out > 1 ? (double)o * (double)(in - 1) / (double)(out - 1) : 0.0;
  case CT_ASYMMETRIC: return (double)o / scale;
  case CT_HALF_PIXEL_NN: return ((double)o + 0.5) / scale;
  }
  return 0.0;
}

static int64_t nearest(nearest_mode m, double x) {
  double f = floor(x);
  switch (m) {
  case NM_ROUND_PREFER_FLOOR: return (int64_t)(x - f == 0.5 ? f : floor(x + 0.5));
  case NM_ROUND_PREFER_CEIL: return (int64_t)floor(x + 0.5);
  case NM_FLOOR: return (int64_t)f;
  case NM_CEIL: return (int64_t)ceil(x);
  }
  return (int64_t)f;
}

static int64_t axis_index(int64_t i, int64_t in) { return i < 0 ? 0 : i >= in ? in - 1 : i; }

/* *y resized along `axis` from `in` to `out` elements */
static portc_status resize_axis(imp *c, portc_node *y, int rank, int axis, int64_t in, int64_t out, double scale, bool linear, coord_mode cm,
                                nearest_mode nm) {
  portc_graph *g = c->g;
  portc_node x = *y;
  double *i0 = malloc(sizeof(double) * (size_t)out), *i1 = malloc(sizeof(double) * (size_t)out), *w = malloc(sizeof(double) * (size_t)out);
  if (i0 && i1 && w) {
    for (int64_t o = 0; o < out; o++) {
      double s = source_coord(cm, o, in, out, scale);
      if (!linear) {
        i0[o] = (double)axis_index(nearest(nm, s), in);
        continue;
      }
      s = s < 0 ? 0 : s > (double)(in - 1) ? (double)(in - 1) : s;
      int64_t lo = (int64_t)floor(s);
      i0[o] = (double)lo, i1[o] = (double)axis_index(lo + 1, in), w[o] = s - (double)lo;
    }
    portc_node a = portc_gather(g, x, portc_const(g, PORTC_I64, 1, &out, i0, out), axis);
    if (!linear) {
      *y = a;
    } else {
      /* the weights broadcast over the axes after `axis`: shape [out, 1, ..., 1] */
      int64_t wshape[PORTC_MAX_RANK];
      int wrank = rank - axis;
      wshape[0] = out;
      for (int d = 1; d < wrank; d++) wshape[d] = 1;
      portc_node b = portc_gather(g, x, portc_const(g, PORTC_I64, 1, &out, i1, out), axis);
      portc_node wt = portc_const(g, portc_node_dtype(g, x), wrank, wshape, w, out);
      *y = portc_add(g, a, portc_mul(g, portc_sub(g, b, a), wt));
    }
  }
  bool made = i0 && i1 && w;
  free(i0), free(i1), free(w);
  return made ? PORTC_OK : fail(c, PORTC_ERR_NOMEM, "out of memory");
}

static portc_status op_Resize(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  oval *xv = op_in(c, 0), *scales = c->nin > 2 ? op_in(c, 2) : NULL, *sizes = c->nin > 3 ? op_in(c, 3) : NULL;
  char buf[32], cbuf[32], nbuf[32], kbuf[32];
  const char *mode = attr_string(c, "mode", "nearest", buf, sizeof buf);
  const char *coord = attr_string(c, "coordinate_transformation_mode", "half_pixel", cbuf, sizeof cbuf);
  const char *nmode = attr_string(c, "nearest_mode", "round_prefer_floor", nbuf, sizeof nbuf);
  const char *policy = attr_string(c, "keep_aspect_ratio_policy", "stretch", kbuf, sizeof kbuf);
  bool linear = strcmp(mode, "linear") == 0;
  int cm = find_name(coord, coord_names, 5), nm = find_name(nmode, nearest_names, 4);
  if (!linear && strcmp(mode, "nearest")) return fail(c, PORTC_ERR_INVALID, "mode '%s': portc resizes in nearest and linear modes", mode);
  if (cm < 0) return fail(c, PORTC_ERR_INVALID, "coordinate_transformation_mode '%s' is not supported (half_pixel, pytorch_half_pixel, "
                          "align_corners, asymmetric, tf_half_pixel_for_nn)", coord);
  if (nm < 0) return fail(c, PORTC_ERR_INVALID, "nearest_mode '%s' is not one of round_prefer_floor, round_prefer_ceil, floor, ceil", nmode);
  if (attr_int(c, "antialias", 0)) return fail(c, PORTC_ERR_INVALID, "antialias=1 is not supported");
  if (strcmp(policy, "stretch")) return fail(c, PORTC_ERR_INVALID, "keep_aspect_ratio_policy '%s': only stretch", policy);
  if (!scales == !sizes) return fail(c, PORTC_ERR_INVALID, "exactly one of scales and sizes must be given");
  dim d[PORTC_MAX_RANK];
  int rank = val_shape(c, xv, d);
  int64_t axes[PORTC_MAX_RANK];
  int naxes = attr_ints(c, "axes", axes, PORTC_MAX_RANK);
  if (naxes == -2) return fail(c, PORTC_ERR_INVALID, "more axes than the input's %d", rank);
  if (naxes < 0) {
    naxes = rank;
    for (int a = 0; a < rank; a++) axes[a] = a;
  }
  const oval *given = scales ? scales : sizes;
  if (!given->known || val_numel(given) != naxes)
    return fail(c, PORTC_ERR_INVALID, "%s must be known at import, one value per axis (%d)", scales ? "scales" : "sizes", naxes);
  portc_node y = val_node(c, xv);
  if (y < 0) return out_node(c, 0, y);
  for (int k = 0; k < naxes; k++) {
    int a = (int)(axes[k] < 0 ? axes[k] + rank : axes[k]);
    if (a < 0 || a >= rank) return fail(c, PORTC_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axes[k], rank);
    double scale;
    int64_t out;
    if (scales) {
      scale = given->f ? portc_tensor_get(given->f->t, k) : (double)given->i[k].c;
      if (scale == 1.0) continue;
      if (!(scale > 0) || d[a].sym >= 0) return fail(c, PORTC_ERR_INVALID, "axis %d: scale %g of a dimension known only at run time, or not positive", a, scale);
      double o = floor((double)d[a].c * scale);
      out = o >= 1 && o <= (double)MAX_RESIZED ? (int64_t)o : -1;
    } else {
      sval s = given->i ? given->i[k] : (sval){0, -1, true};
      sval now = dim_sval(c->g, d[a]);
      if (!s.unknown && s.sym == now.sym && s.c == now.c) continue; /* unchanged (the batch, perhaps symbolic) */
      if (s.unknown || s.sym >= 0 || d[a].sym >= 0) return fail(c, PORTC_ERR_SHAPE, "axis %d: sizes known only at run time are not supported", a);
      out = s.c;
      scale = (double)out / (double)d[a].c;
    }
    if (out < 1 || out > MAX_RESIZED || d[a].c < 1)
      return fail(c, PORTC_ERR_SHAPE, "axis %d: %lld elements resized to %s%lld (1 to 2^24)", a, (long long)d[a].c, out < 0 ? "beyond " : "",
                  (long long)(out < 0 ? MAX_RESIZED : out));
    if ((st = resize_axis(c, &y, rank, a, d[a].c, out, scale, linear, (coord_mode)cm, (nearest_mode)nm))) return st;
    if (y < 0) return out_node(c, 0, y);
  }
  return out_node(c, 0, y);
}

const onnx_op onnx_ops_resize[] = {
    {"Resize", op_Resize},
    {NULL, NULL},
};
