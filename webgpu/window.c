/*
 * window.c: the WGSL dialect's sliding-window kernels, convolution (conv2d, any stride, padding,
 * dilation and groups, with its bias and the fused epilogue) and pooling (max_pool2d,
 * avg_pool2d), written as the other GPU dialects' direct kernels are (codegen/gpu_kernels.c's
 * gpu_conv, codegen/opaque.c's pool): an invocation per output element in a grid-stride loop,
 * adding up in f32. Padding reads as nothing: skipped for the sums, and avg_pool2d divides by
 * the whole window, as the reference does; max_pool2d keeps a NaN.
 */
#include <stdio.h>

#include "../codegen/emit.h"
#include "../codegen/gpu_kernels.h"
#include "../ir/dtype.h"
#include "wg.h"

static const char *const idxnames[] = {"i0", "i1", "i2", "i3"};

/* for t over the output's elements, i0..i3 unravelled from it */
static void output_loop(emitter *e) {
  char count[256];
  emit_count(e, &e->k->dom, 0, 4, count, sizeof count);
  emit_line(e, "for (var t: i32 = i32(pc_gid.x); t < %s; t += i32(pc_groups.x) * %d) {", count, WG_THREADS);
  e->indent++;
  emit_unravel(e, &e->k->dom, 0, 4, "t", idxnames);
}

/* "for (var kh ...) { let ih = ...; if (outside) { continue; }" and the same for kw: the
 * window's rows and columns over the input, stride st, padding pad and dilation dil, from the
 * output's row and column oh and ow (index names) */
static void window_loops(emitter *e, int64_t kh, int64_t kw, const int64_t st[2], const int64_t pad[2], const int64_t dil[2],
                         const char *oh, const char *ow) {
  emit_line(e, "for (var kh: i32 = 0; kh < %lld; kh++) {", (long long)kh);
  e->indent++;
  emit_line(e, "let ih: i32 = %s * %lld - %lld + kh * %lld;", oh, (long long)st[0], (long long)pad[0], (long long)dil[0]);
  emit_line(e, "if (ih < 0 || ih >= H) { continue; }");
  emit_line(e, "for (var kw: i32 = 0; kw < %lld; kw++) {", (long long)kw);
  e->indent++;
  emit_line(e, "let iw: i32 = %s * %lld - %lld + kw * %lld;", ow, (long long)st[1], (long long)pad[1], (long long)dil[1]);
  emit_line(e, "if (iw < 0 || iw >= W) { continue; }");
}

void wg_conv(emitter *e) {
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  const shape *xs = &e->m->buf[k->in_buf[0]].sh, *ws = &e->m->buf[k->in_buf[1]].sh;
  emit_line(e, "let C: i32 = %lld;", (long long)xs->d[1].c);
  emit_line(e, "let H: i32 = %lld;", (long long)xs->d[2].c);
  emit_line(e, "let W: i32 = %lld;", (long long)xs->d[3].c);
  emit_line(e, "let CG: i32 = %lld;", (long long)ws->d[1].c);
  emit_line(e, "let OG: i32 = %lld;", (long long)(k->dom.d[1].c / attr_i(n, "groups")));
  output_loop(e);
  char bias[256], xv[512], wv[512];
  if (k->nin > 2) emit_load(e, k->in_buf[2], "i1", bias, sizeof bias);
  emit_line(e, "let g: i32 = i1 / OG;");
  emit_line(e, "var s: f32 = %s;", k->nin > 2 ? bias : "0.0f");
  emit_line(e, "for (var c: i32 = 0; c < CG; c++) {");
  e->indent++;
  const int64_t st[2] = {attr_or_one(n, "stride", 0), attr_or_one(n, "stride", 1)};
  const int64_t dil[2] = {attr_or_one(n, "dilation", 0), attr_or_one(n, "dilation", 1)};
  window_loops(e, ws->d[2].c, ws->d[3].c, st, attr_get(n, "padding")->v, dil, "i2", "i3");
  emit_load(e, k->in_buf[0], "((i0 * C + g * CG + c) * H + ih) * W + iw", xv, sizeof xv);
  char woff[128];
  snprintf(woff, sizeof woff, "((i1 * CG + c) * %lld + kh) * %lld + kw", (long long)ws->d[2].c, (long long)ws->d[3].c);
  emit_load(e, k->in_buf[1], woff, wv, sizeof wv);
  emit_line(e, "s = fma(%s, %s, s);", xv, wv);
  gpu_loop_end(e); /* kw */
  gpu_loop_end(e); /* kh */
  gpu_loop_end(e); /* c */
  emit_const(e, "f32", "acc0", "s");
  emit_scope_push(e);
  emit_stores_at(e, &k->dom, idxnames);
  emit_scope_pop(e);
  gpu_loop_end(e);
}

void wg_pool(emitter *e) {
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  const shape *xs = &e->m->buf[k->in_buf[0]].sh;
  const attr *ka = attr_get(n, "kernel"), *sa = attr_get(n, "stride");
  const int64_t *st = sa->set ? sa->v : ka->v, one[2] = {1, 1};
  bool mx = n->op == OP_max_pool2d, last = conv_axes_of(n).c == 3; /* channels last: i1, i2 the row and column, i3 the channel */
  emit_line(e, "let H: i32 = %lld;", (long long)xs->d[last ? 1 : 2].c);
  emit_line(e, "let W: i32 = %lld;", (long long)xs->d[last ? 2 : 3].c);
  output_loop(e);
  emit_line(e, "var acc: f32 = %s;", mx ? "-INFINITY" : "0.0f");
  window_loops(e, ka->v[0], ka->v[1], st, attr_get(n, "padding")->v, one, last ? "i1" : "i2", last ? "i2" : "i3");
  char ld[512];
  char off[160];
  if (last) snprintf(off, sizeof off, "((i0 * H + ih) * W + iw) * %lld + i3", (long long)xs->d[3].c);
  else snprintf(off, sizeof off, "((i0 * %lld + i1) * H + ih) * W + iw", (long long)xs->d[1].c);
  emit_load(e, k->in_buf[0], off, ld, sizeof ld);
  emit_line(e, "let v: f32 = %s;", ld);
  if (mx) emit_line(e, "if (!pc_isnan(acc) && (pc_isnan(v) || v > acc)) { acc = v; }");
  else emit_line(e, "acc += v;");
  gpu_loop_end(e); /* kw */
  gpu_loop_end(e); /* kh */
  if (!mx) emit_line(e, "acc /= %lld.0f;", (long long)(ka->v[0] * ka->v[1]));
  emit_store(e, k->store[0].buf, "t", "acc");
  gpu_loop_end(e);
}
