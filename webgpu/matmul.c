/*
 * matmul.c: the WGSL dialect's matrix products. A float matmul is tiled through workgroup
 * memory as the SIMT skeleton of the other GPU dialects is (codegen/gpu_kernels.c), in WGSL's
 * words: a work group of WG_THREADS invocations computes a WG_MM_TILE square of the output, each
 * invocation a 4x4 block of it (rows ty + 16 i, columns tx + 16 j), from panels of WG_MM_BK
 * along k that the group stages in workgroup memory. Operands of any float dtype are read as f32
 * and the products add up in f32 (WGSL's fma); the epilogue the fusion put in the store (bias,
 * activation, cast) follows each output. Work groups: x over column tiles, y over row tiles, z
 * over batches (wg_matmul_groups), each looping where the device caps the grid. An integer
 * matmul (i32) is an invocation per output element, adding up in i32, which wraps as the other
 * targets' 64-bit sums do once stored as i32.
 */
#include <stdio.h>

#include "../codegen/emit.h"
#include "../codegen/gpu_kernels.h"
#include "../ir/dtype.h"
#include "wg.h"

static const char *const batchnames[] = {"bt0", "bt1", "bt2", "bt3", "bt4", "bt5", "bt6", "bt7"};

void wg_matmul_groups(const kir_module *m, int i, const int64_t *S, int64_t groups[3]) {
  const kir_kernel *k = &m->k[i];
  int64_t M = dim_value(k->mnk[0], S), N = dim_value(k->mnk[1], S);
  if (dtype_is_float(m->buf[k->in_buf[0]].dt)) {
    groups[0] = (N + WG_MM_TILE - 1) / WG_MM_TILE;
    groups[1] = (M + WG_MM_TILE - 1) / WG_MM_TILE;
  } else {
    groups[0] = (M * N + WG_THREADS - 1) / WG_THREADS, groups[1] = 1;
  }
  groups[2] = 1;
  for (int d = 0; d + 2 < k->dom.rank; d++) groups[2] *= dim_value(k->dom.d[d], S);
}

void wg_declare_matmul(emitter *e) {
  if (e->k->kind != KK_MATMUL || !dtype_is_float(e->m->buf[e->k->in_buf[0]].dt)) return;
  emit_line(e, "var<workgroup> pc_As: array<f32, %d>; /* [k][row] of the panel */", WG_MM_BK * WG_MM_TILE);
  emit_line(e, "var<workgroup> pc_Bs: array<f32, %d>; /* [k][column] */", WG_MM_BK * WG_MM_TILE);
}

/* "let NB, M, N, K", and the loops over batches and row tiles; fills the operands' index names
 * (A: batch, mm, kk; B: batch, kk, nn; output: batch, m, n) */
static void matmul_begin(emitter *e, const char **aidx, const char **bidx, const char **oidx) {
  const kir_kernel *k = e->k;
  int nb = k->dom.rank - 2;
  char batch[256], M[32], N[32], K[32];
  emit_count(e, &k->dom, 0, nb, batch, sizeof batch);
  emit_line(e, "let NB: i32 = %s;", batch);
  emit_line(e, "let M: i32 = %s;", emit_dim(e, k->mnk[0], M, sizeof M));
  emit_line(e, "let N: i32 = %s;", emit_dim(e, k->mnk[1], N, sizeof N));
  emit_line(e, "let K: i32 = %s;", emit_dim(e, k->mnk[2], K, sizeof K));
  emit_line(e, "for (var bt: i32 = i32(pc_wid.z); bt < NB; bt += i32(pc_groups.z)) {");
  e->indent++;
  emit_unravel(e, &k->dom, 0, nb, "bt", batchnames);
  for (int d = 0; d < nb; d++) aidx[d] = bidx[d] = oidx[d] = batchnames[d];
  aidx[nb] = "mm", aidx[nb + 1] = "kk", bidx[nb] = "kk", bidx[nb + 1] = "nn", oidx[nb] = "m", oidx[nb + 1] = "n";
}

/* the output at (m, n) from acc, through the store's epilogue */
static void store_output(emitter *e, const char *const *oidx, const char *acc) {
  emit_const(e, emit_type(e, e->m->buf[e->k->in_buf[0]].dt), "acc0", acc);
  emit_scope_push(e);
  emit_store_at(e, &e->k->store[0], &e->k->dom, oidx);
  emit_scope_pop(e);
}

/* each invocation's WG_MM_LOADS elements of both panels at k0, zeros past the edges */
static void stage_panels(emitter *e, const char *const *aidx, const char *const *bidx) {
  char ex[1200];
  emit_line(e, "for (var q: i32 = 0; q < %d; q++) {", WG_MM_BK * WG_MM_TILE / WG_THREADS);
  e->indent++;
  emit_line(e, "let ea: i32 = tid + %d * q;", WG_THREADS);
  emit_line(e, "var av: f32 = 0.0f;");
  emit_line(e, "{");
  e->indent++;
  emit_line(e, "let mm: i32 = m0 + ea / %d;", WG_MM_BK);
  emit_line(e, "let kk: i32 = k0 + ea %% %d;", WG_MM_BK);
  emit_line(e, "if (mm < M && kk < K) {");
  e->indent++;
  emit_operand(e, 0, aidx, ex, sizeof ex);
  emit_line(e, "av = %s;", ex);
  gpu_loop_end(e);
  gpu_loop_end(e);
  emit_line(e, "pc_As[(ea %% %d) * %d + ea / %d] = av;", WG_MM_BK, WG_MM_TILE, WG_MM_BK);
  emit_line(e, "var bv: f32 = 0.0f;");
  emit_line(e, "{");
  e->indent++;
  emit_line(e, "let kk: i32 = k0 + ea / %d;", WG_MM_TILE);
  emit_line(e, "let nn: i32 = n0 + ea %% %d;", WG_MM_TILE);
  emit_line(e, "if (kk < K && nn < N) {");
  e->indent++;
  emit_operand(e, 1, bidx, ex, sizeof ex);
  emit_line(e, "bv = %s;", ex);
  gpu_loop_end(e);
  gpu_loop_end(e);
  emit_line(e, "pc_Bs[ea] = bv;");
  gpu_loop_end(e);
}

enum { RB = WG_MM_TILE / 16 }; /* rows (and columns) of the output each invocation holds */

static void matmul_float(emitter *e) {
  const char *aidx[PORTC_MAX_RANK + 2], *bidx[PORTC_MAX_RANK + 2], *oidx[PORTC_MAX_RANK + 2];
  emit_line(e, "let tid: i32 = i32(pc_lid);");
  emit_line(e, "let tx: i32 = tid %% 16;");
  emit_line(e, "let ty: i32 = tid / 16;");
  matmul_begin(e, aidx, bidx, oidx);
  /* the bounds of these loops come from read-only bindings and built-ins, so the barriers in them
   * are in uniform control flow */
  emit_line(e, "for (var m0: i32 = i32(pc_wid.y) * %d; m0 < M; m0 += i32(pc_groups.y) * %d) {", WG_MM_TILE, WG_MM_TILE);
  e->indent++;
  emit_line(e, "for (var n0: i32 = i32(pc_wid.x) * %d; n0 < N; n0 += i32(pc_groups.x) * %d) {", WG_MM_TILE, WG_MM_TILE);
  e->indent++;
  emit_line(e, "var c: array<f32, %d>;", RB * RB);
  emit_line(e, "for (var k0: i32 = 0; k0 < K; k0 += %d) {", WG_MM_BK);
  e->indent++;
  stage_panels(e, aidx, bidx);
  emit_line(e, "workgroupBarrier();");
  emit_line(e, "for (var p: i32 = 0; p < %d; p++) {", WG_MM_BK);
  e->indent++;
  emit_line(e, "var a: array<f32, %d>;", RB);
  emit_line(e, "var b: array<f32, %d>;", RB);
  emit_line(e, "for (var i: i32 = 0; i < %d; i++) { a[i] = pc_As[p * %d + ty + 16 * i]; b[i] = pc_Bs[p * %d + tx + 16 * i]; }", RB, WG_MM_TILE,
            WG_MM_TILE);
  emit_line(e, "for (var i: i32 = 0; i < %d; i++) {", RB);
  emit_line(e, "  for (var j: i32 = 0; j < %d; j++) { c[i * %d + j] = fma(a[i], b[j], c[i * %d + j]); }", RB, RB, RB);
  emit_line(e, "}");
  gpu_loop_end(e);
  emit_line(e, "workgroupBarrier();");
  gpu_loop_end(e);
  emit_line(e, "for (var i: i32 = 0; i < %d; i++) {", RB);
  e->indent++;
  emit_line(e, "let m: i32 = m0 + ty + 16 * i;");
  emit_line(e, "for (var j: i32 = 0; j < %d; j++) {", RB);
  e->indent++;
  emit_line(e, "let n: i32 = n0 + tx + 16 * j;");
  emit_line(e, "if (m < M && n < N) {");
  e->indent++;
  char acc[32];
  snprintf(acc, sizeof acc, "c[i * %d + j]", RB);
  store_output(e, oidx, acc);
  gpu_loop_end(e);
  gpu_loop_end(e);
  gpu_loop_end(e);
  gpu_loop_end(e); /* n0 */
  gpu_loop_end(e); /* m0 */
  gpu_loop_end(e); /* bt */
}

static void matmul_int(emitter *e) {
  const char *aidx[PORTC_MAX_RANK + 2], *bidx[PORTC_MAX_RANK + 2], *oidx[PORTC_MAX_RANK + 2];
  char ae[1200], be[1200];
  matmul_begin(e, aidx, bidx, oidx);
  emit_line(e, "for (var t: i32 = i32(pc_gid.x); t < M * N; t += i32(pc_groups.x) * %d) {", WG_THREADS);
  e->indent++;
  emit_line(e, "let m: i32 = t / N;");
  emit_line(e, "let n: i32 = t %% N;");
  emit_line(e, "let mm: i32 = m;");
  emit_line(e, "let nn: i32 = n;");
  emit_line(e, "var s: i32 = 0;");
  emit_line(e, "for (var kk: i32 = 0; kk < K; kk++) {");
  e->indent++;
  emit_operand(e, 0, aidx, ae, sizeof ae);
  emit_operand(e, 1, bidx, be, sizeof be);
  emit_line(e, "s += %s * %s;", ae, be);
  gpu_loop_end(e);
  store_output(e, oidx, "s");
  gpu_loop_end(e);
  gpu_loop_end(e); /* bt */
}

void wg_matmul(emitter *e) {
  if (dtype_is_float(e->m->buf[e->k->in_buf[0]].dt)) matmul_float(e);
  else matmul_int(e);
}
