/*
 * ops_nn3d.c: ONNX Conv, MaxPool and AveragePool over three spatial dimensions (video models:
 * torchvision's R3D, MC3, R(2+1)D, S3D), as portc's 2-D ops over depth slices. The depth, height
 * and width padding is an explicit Pad in front; then
 *   conv:  x [N, C, D, H, W] seen as [N*D, C, H, W]; per kernel depth a, conv2d by W[:, :, a] gives
 *          z_a [N, D, O, H', W']; y[:, d] = sum over a of z_a[:, d*sd + a*dd] (strided slices)
 *   pool:  x seen as [N, C*D, H, W]; pool2d over H, W, then the max (or mean) of the kd strided
 *          depth slices
 * Average pooling counts the padding (count_include_pad=1, PyTorch's default); ceil_mode and
 * leaving the padding out of the count are refused for 3-D windows.
 */
#include <math.h>
#include <string.h>

#include "onnx_import.h"

typedef struct win3 {
  int64_t k[3], s[3], d[3], pb[3], pe[3];
} win3;

static portc_status read_win3(imp *c, const int64_t *kernel, win3 *w) {
  for (int i = 0; i < 3; i++) w->k[i] = kernel[i], w->s[i] = w->d[i] = 1, w->pb[i] = w->pe[i] = 0;
  int64_t v[6];
  int n;
  char buf[32];
  const char *pad = attr_string(c, "auto_pad", "NOTSET", buf, sizeof buf);
  if (strcmp(pad, "NOTSET") && strcmp(pad, "VALID")) return fail(c, PORTC_ERR_INVALID, "auto_pad '%s' over 3-D windows: portc takes explicit pads", pad);
  if ((n = attr_ints(c, "strides", v, 6)) >= 0 && n != 3) return fail(c, PORTC_ERR_INVALID, "strides has %d values for a 3-D window", n);
  for (int i = 0; n == 3 && i < 3; i++) w->s[i] = v[i];
  if ((n = attr_ints(c, "dilations", v, 6)) >= 0 && n != 3) return fail(c, PORTC_ERR_INVALID, "dilations has %d values for a 3-D window", n);
  for (int i = 0; n == 3 && i < 3; i++) w->d[i] = v[i];
  if ((n = attr_ints(c, "pads", v, 6)) >= 0 && n != 6) return fail(c, PORTC_ERR_INVALID, "pads has %d values for a 3-D window (6 pads)", n);
  for (int i = 0; n == 6 && i < 3 && strcmp(pad, "VALID"); i++) w->pb[i] = v[i], w->pe[i] = v[3 + i];
  if (attr_int(c, "ceil_mode", 0)) return fail(c, PORTC_ERR_INVALID, "ceil_mode over a 3-D window is not supported");
  for (int i = 0; i < 3; i++)
    if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1 || w->pb[i] < 0 || w->pe[i] < 0 || w->k[i] > 64 || w->s[i] > 64 || w->d[i] > 64 || w->pb[i] > 64 || w->pe[i] > 64)
      return fail(c, PORTC_ERR_INVALID, "kernel %lld, stride %lld, dilation %lld or pads %lld/%lld out of range (1 to 64)", (long long)w->k[i],
                  (long long)w->s[i], (long long)w->d[i], (long long)w->pb[i], (long long)w->pe[i]);
  return PORTC_OK;
}

/* x [N, C, D, H, W] padded on D, H, W by value; its padded dims in d */
static portc_node pad3(portc_graph *g, portc_node x, win3 *w, double value, portc_dim *d) {
  bool any = false;
  for (int i = 0; i < 3; i++) any = any || w->pb[i] || w->pe[i];
  if (any) {
    int64_t pads[10] = {0, 0, 0, 0, w->pb[0], w->pe[0], w->pb[1], w->pe[1], w->pb[2], w->pe[2]};
    x = portc_pad(g, x, 10, pads, value);
  }
  memset(w->pb, 0, sizeof w->pb), memset(w->pe, 0, sizeof w->pe);
  if (x >= 0) portc_node_shape(g, x, d);
  return x;
}

/* the depth slices a*dd, a*dd + sd, ... of z [.., Dp, ..] along axis, Do of them */
static portc_node depth_taps(portc_graph *g, portc_node z, int axis, int64_t start, int64_t Do, int64_t sd) {
  return portc_slice(g, z, axis, start, start + (Do - 1) * sd + 1, sd);
}

static bool spatial_known(imp *c, portc_node x) {
  portc_dim d[PORTC_MAX_RANK];
  portc_node_shape(c->g, x, d);
  for (int i = 1; i < 5; i++)
    if (d[i].symbol) return fail(c, PORTC_ERR_SHAPE, "dimension %d is %s; 3-D windows need the channels and spatial sizes known at import", i, d[i].symbol), false;
  return true;
}

portc_status onnx_conv3d(imp *c, portc_node x, portc_node wt, portc_node bias) {
  portc_graph *g = c->g;
  if (!spatial_known(c, x)) return PORTC_ERR_SHAPE;
  portc_dim wd[PORTC_MAX_RANK], xd[PORTC_MAX_RANK];
  portc_node_shape(g, wt, wd);
  for (int i = 0; i < 5; i++)
    if (wd[i].symbol) return fail(c, PORTC_ERR_SHAPE, "W's dimension %d is symbolic", i);
  int64_t kernel[3] = {wd[2].size, wd[3].size, wd[4].size};
  win3 w;
  portc_status st = read_win3(c, kernel, &w);
  if (st) return st;
  x = pad3(g, x, &w, 0, xd);
  int64_t Dp = xd[2].size, O = wd[0].size, span = (w.k[0] - 1) * w.d[0] + 1;
  if (x < 0) return out_node(c, 0, x);
  if (Dp < span) return fail(c, PORTC_ERR_SHAPE, "a kernel of depth %lld does not fit the padded depth %lld", (long long)span, (long long)Dp);
  int64_t Do = (Dp - span) / w.s[0] + 1;
  /* [N, C, Dp, H, W] -> [N, Dp, C, H, W] -> [N*Dp, C, H, W] */
  portc_node x2 = portc_reshape(g, portc_permute(g, x, 5, (int64_t[]){0, 2, 1, 3, 4}), 4, (portc_dim[]){{-1, NULL}, xd[1], xd[3], xd[4]});
  portc_conv2d_opts o = {.stride = {w.s[1], w.s[2]}, .dilation = {w.d[1], w.d[2]}, .groups = attr_int(c, "group", 1)};
  portc_node y = PORTC_NONE;
  for (int64_t a = 0; a < w.k[0]; a++) {
    portc_node wa = portc_reshape(g, portc_slice(g, wt, 2, a, a + 1, 1), 4, (portc_dim[]){wd[0], wd[1], wd[3], wd[4]});
    portc_node z = portc_conv2d(g, x2, wa, PORTC_NONE, &o);
    portc_dim zd[PORTC_MAX_RANK];
    if (z < 0) return out_node(c, 0, z);
    portc_node_shape(g, z, zd);
    z = portc_reshape(g, z, 5, (portc_dim[]){xd[0], {Dp, NULL}, {O, NULL}, zd[2], zd[3]});
    z = depth_taps(g, z, 1, a * w.d[0], Do, w.s[0]);
    y = y == PORTC_NONE ? z : portc_add(g, y, z);
  }
  if (bias != PORTC_NONE) y = portc_add(g, y, portc_reshape(g, bias, 5, (portc_dim[]){{1, NULL}, {1, NULL}, {O, NULL}, {1, NULL}, {1, NULL}}));
  return out_node(c, 0, portc_permute(g, y, 5, (int64_t[]){0, 2, 1, 3, 4}));
}

portc_status onnx_pool3d(imp *c, portc_node x, bool is_max) {
  portc_graph *g = c->g;
  if (!spatial_known(c, x)) return PORTC_ERR_SHAPE;
  int64_t kernel[6];
  if (attr_ints(c, "kernel_shape", kernel, 6) != 3) return fail(c, PORTC_ERR_INVALID, "kernel_shape must have 3 values");
  win3 w;
  portc_status st = read_win3(c, kernel, &w);
  if (st) return st;
  if (w.d[0] != 1 || w.d[1] != 1 || w.d[2] != 1) return fail(c, PORTC_ERR_INVALID, "dilated pooling is not supported");
  bool padded = w.pb[0] || w.pb[1] || w.pb[2] || w.pe[0] || w.pe[1] || w.pe[2];
  if (!is_max && padded && !attr_int(c, "count_include_pad", 0))
    return fail(c, PORTC_ERR_INVALID, "average pooling over a padded 3-D window that leaves the padding out of the count is not supported");
  portc_dim d[PORTC_MAX_RANK];
  x = pad3(g, x, &w, is_max ? -INFINITY : 0, d);
  if (x < 0) return out_node(c, 0, x);
  int64_t C = d[1].size, Dp = d[2].size;
  if (Dp < w.k[0]) return fail(c, PORTC_ERR_SHAPE, "a window of depth %lld does not fit the padded depth %lld", (long long)w.k[0], (long long)Dp);
  int64_t Do = (Dp - w.k[0]) / w.s[0] + 1;
  portc_node x2 = portc_reshape(g, x, 4, (portc_dim[]){d[0], {C * Dp, NULL}, d[3], d[4]});
  portc_pool2d_opts o = {.kernel = {w.k[1], w.k[2]}, .stride = {w.s[1], w.s[2]}};
  portc_node z = (is_max ? portc_max_pool2d : portc_avg_pool2d)(g, x2, &o);
  portc_dim zd[PORTC_MAX_RANK];
  if (z < 0) return out_node(c, 0, z);
  portc_node_shape(g, z, zd);
  z = portc_reshape(g, z, 5, (portc_dim[]){d[0], {C, NULL}, {Dp, NULL}, zd[2], zd[3]});
  portc_node y = PORTC_NONE;
  for (int64_t a = 0; a < w.k[0]; a++) {
    portc_node t = depth_taps(g, z, 2, a, Do, w.s[0]);
    y = y == PORTC_NONE ? t : is_max ? portc_maximum(g, y, t) : portc_add(g, y, t);
  }
  if (!is_max && w.k[0] > 1) y = portc_div(g, y, portc_scalar(g, portc_node_dtype(g, x), (double)w.k[0]));
  return out_node(c, 0, y);
}
