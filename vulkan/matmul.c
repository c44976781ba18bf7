/*
 * matmul.c: the Vulkan target's own matmul kernels, for matmuls whose operands move in 16-byte
 * words. Two variants, each staging both operands through shared memory with a double
 * buffer and one barrier per k-step:
 *  - words (KS_TILED with vector 4): f32, SIMT, 16x16 invocations each holding an 8x8 or 4x4
 *    block of sums, operands read from shared memory four floats at a time, sums stored four at
 *    a time where the output lies as it is (vk_words_store_words); also batched, with
 *    operands read through views that keep runs of 4 along k (A; B: along n or k); one GEMM
 *    may split its reduction (split-K: partial sums, then a second phase adds them); and f32
 *    convolutions as implicit GEMMs on the same tiles, the input window gathered;
 *  - coop (KS_MMA): f16 operands, f32 sums, on cooperative matrices (the device's NV or KHR
 *    extension) of a subgroup; those of a whole work group are matmul_wg.c's (wg_matrices).
 * Every other matmul runs the GPU dialects' shared SIMT skeleton (codegen/gpu_kernels.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../codegen/emit.h"
#include "../codegen/gpu_kernels.h"
#include "vk.h"

/* ---- f32 on 16x16 invocations, operands in 16-byte words ---- */

/* A T x T tile (T = 64 or 128) per work group of 16x16 invocations; invocation (tx, ty) sums the
 * T/16 x T/16 block of rows 64 g + 4 ty + v and columns 64 h + 4 tx + u (g, h < T/64, u, v < 4),
 * so that its rows and columns of each operand panel are whole 16-byte words of shared memory.
 * Per k-step of BK (vk_words_k_step) both panels arrive as 16-byte words: words along k (A's,
 * and B's where its runs lie along k) are written to shared memory transposed (k-major), a float
 * at a time, words along n as they are. The next step's words are loaded into registers while
 * the current step multiplies, then written to the other half of the double buffer. Rows past M,
 * columns past N and k past K load zeros; N and K are multiples of 4 (whole words).
 * One GEMM (fold_batch) addresses its operands directly; a batched matmul takes a batch per work
 * group of the grid's z and addresses each word through a function of the operand's view
 * (words_address), whose runs of 4 the schedule checked (operand_runs_along). */
int vk_words_k_step(const kir_schedule *s) { return s->tile_k ? s->tile_k : 1024 / s->tile_m; }

/* words of one operand panel each invocation moves per k-step (T * BK / 4 words over 256) */
static int words_per_thread(int tile, int bk) { return tile * bk / 4 / 256; }

/* 16-byte words from one k of a shared panel to the next: T / 4, and a word more in the matmul,
 * so that the two invocations that store the same row of A at k and k + 4 (transposed, a float
 * at a time) hit different banks: 3.384 -> 3.364 ms on the 4096^3 matmul (H200). The
 * convolutions keep T / 4: padded, ResNet-50 took 11.04 ms against 10.50. */
static int words_row(int T, int kind) { return T / 4 + (kind == KK_MATMUL); }

bool vk_words_fit(const kir_schedule *s, int kind, size_t shared_max, char *why, size_t len) {
  const int tile = s->tile_m, bk = vk_words_k_step(s);
  const size_t bytes = (size_t)2 * 2 * bk * words_row(tile, kind) * 16; /* two stages of both panels */
  if (tile != s->tile_n || (tile != 64 && tile != 128))
    return snprintf(why, len, "tile %dx%d: the f32 word matmul takes 64x64 or 128x128", s->tile_m, s->tile_n), false;
  if ((bk != 8 && bk != 16 && bk != 32) || words_per_thread(tile, bk) < 1)
    return snprintf(why, len, "k-step %d with tile %d: the f32 word matmul takes 8, 16 or 32, at least 1024 / tile", bk, tile), false;
  if (bytes > shared_max)
    return snprintf(why, len, "tile %d with k-step %d takes %zu bytes of shared memory, the device allows %zu", tile, bk, bytes, shared_max), false;
  return true;
}

static const char *const bnames[] = {"bt0", "bt1", "bt2", "bt3", "bt4", "bt5", "bt6", "bt7"};

/* "uint NAME(int bt0, ..., int I, int J)": the word of operand slot's buffer that holds its
 * element at that index, the first of a run of 4 */
static void words_address(emitter *e, const char *name, int slot, const char *i, const char *j) {
  const kir_kernel *k = e->k;
  const int r = k->dom.rank;
  const char *idx[PORTC_MAX_RANK];
  strbuf params = {0};
  for (int d = 0; d < r; d++) {
    idx[d] = d == r - 2 ? i : d == r - 1 ? j : bnames[d];
    sb_printf(&params, "%sint %s", d ? ", " : "", idx[d]);
  }
  char *ps = emit_take(e, &params), off[128];
  emit_line(e, "uint %s(%s) {", name, ps ? ps : "");
  free(ps);
  e->indent++;
  emit_scope_push(e);
  emit_offset(e, k->in_path[slot], &e->m->buf[k->in_buf[slot]].sh, idx, off, sizeof off);
  emit_line(e, "return uint(%s) >> 2;", off);
  emit_scope_pop(e);
  e->indent--;
  emit_line(e, "}");
}

/* whether the batched word matmul reads B in runs along k (its words then go to shared memory
 * transposed, as A's) */
static bool b_along_k(const emitter *e) {
  const kir_kernel *k = e->k;
  return !k->sched.fold_batch && !operand_runs_along(e->m, k, 1, k->dom.rank - 1, 4);
}

static void words_declare(emitter *e, int index) {
  const int T = e->k->sched.tile_m, BK = vk_words_k_step(&e->k->sched);
  emit_line(e, "layout(local_size_x = 16, local_size_y = 16) in;");
  vk_declare_buffers(e, index, true);
  const int S = words_row(T, e->k->kind);
  emit_line(e, "shared vec4 pc_As[2 * %d * %d], pc_Bs[2 * %d * %d]; /* [stage][k][row or column / 4] */", BK, S, BK, S);
  if (e->k->sched.fold_batch || e->k->kind == KK_CONV) return;
  words_address(e, "pc_wa", 0, "mm", "kk");
  words_address(e, "pc_wb", 1, "kk", "nn");
}

/* "bt0, ..., " for a call of a words_address function */
static void batch_args(const emitter *e, char *out, size_t len) {
  size_t at = 0;
  out[0] = 0;
  for (int d = 0; d + 2 < e->k->dom.rank && at < len; d++) at += (size_t)snprintf(out + at, len - at, "%s, ", bnames[d]);
}

/* the macros PC_FETCH(k0) (the words of the step from k0 into registers wa, wb) and PC_STAGE(s)
 * (from there into half s of the double buffer) */
static void words_fetch_stage(emitter *e, int T, int BK, int H) {
  const kir_kernel *k = e->k;
  const bool fold = k->sched.fold_batch, bk = b_along_k(e);
  const int W = T / 4, S = words_row(T, k->kind), arows = 256 / (BK / 4), brows = 256 / W;
  char a[16], b[16], args[128], aw[256], bw[256];
  snprintf(a, sizeof a, "%s", emit_buf(e, k->in_buf[0]));
  snprintf(b, sizeof b, "%s", emit_buf(e, k->in_buf[1]));
  batch_args(e, args, sizeof args);
  if (fold) {
    snprintf(aw, sizeof aw, "(uint(r) * uint(K) + uint(c)) >> 2");
    snprintf(bw, sizeof bw, "(uint(r) * uint(N) + uint(c)) >> 2");
  } else {
    snprintf(aw, sizeof aw, "pc_wa(%sr, c)", args);
    snprintf(bw, sizeof bw, bk ? "pc_wb(%sc, r)" : "pc_wb(%sr, c)", args);
  }
  /* invocation tid moves words tid + 256 h: rows of BK / 4 words along k (A's T rows; B's T
   * columns where its runs lie along k), or B's BK rows of T / 4 words along n */
  emit_line(e, "const int ar0 = tid / %d, akw = tid %% %d, br0 = tid / %d, bw = tid %% %d;", BK / 4, BK / 4, W, W);
  emit_line(e, "uvec4 wa[%d], wb[%d];", H, H);
  emit_line(e, "#define PC_FETCH(k0) { \\");
  emit_line(e, "  [[unroll]] for (int h = 0; h < %d; h++) { const int r = m0 + ar0 + %d * h, c = (k0) + 4 * akw; \\", H, arows);
  emit_line(e, "    wa[h] = r < M && c < KE ? %sv[%s] : uvec4(0u); } \\", a, aw);
  if (bk) {
    emit_line(e, "  [[unroll]] for (int h = 0; h < %d; h++) { const int r = n0 + ar0 + %d * h, c = (k0) + 4 * akw; \\", H, arows);
    emit_line(e, "    wb[h] = r < N && c < KE ? %sv[%s] : uvec4(0u); } }", b, bw);
  } else {
    emit_line(e, "  [[unroll]] for (int h = 0; h < %d; h++) { const int r = (k0) + br0 + %d * h, c = n0 + 4 * bw; \\", H, brows);
    emit_line(e, "    wb[h] = r < KE && c < N ? %sv[%s] : uvec4(0u); } }", b, bw);
  }
  emit_line(e, "#define PC_STAGE(s) { [[unroll]] for (int h = 0; h < %d; h++) { const int r = ar0 + %d * h, q = (s) * %d + 4 * akw; \\", H, arows,
            BK);
  if (bk) {
    emit_line(e, "    [[unroll]] for (int c = 0; c < 4; c++) pc_As[(q + c) * %d + (r >> 2)][r & 3] = uintBitsToFloat(wa[h][c]); \\", S);
    emit_line(e, "    [[unroll]] for (int c = 0; c < 4; c++) pc_Bs[(q + c) * %d + (r >> 2)][r & 3] = uintBitsToFloat(wb[h][c]); } }", S);
  } else {
    emit_line(e, "    [[unroll]] for (int c = 0; c < 4; c++) pc_As[(q + c) * %d + (r >> 2)][r & 3] = uintBitsToFloat(wa[h][c]); } \\", S);
    emit_line(e, "  [[unroll]] for (int h = 0; h < %d; h++) pc_Bs[((s) * %d + br0 + %d * h) * %d + bw] = uintBitsToFloat(wb[h]); }", H, BK, brows,
              S);
  }
}

/* whether the epilogue calls a function (exp, erf, tanh, ...) or divides: such code written once
 * per sum of the invocation's block pushed the sums out of registers (below) */
static bool heavy_epilogue(const kir_kernel *k) {
  for (int v = 0; v < k->nval; v++) {
    if (k->val[v].kind != KV_OP) continue;
    switch (k->val[v].op) {
    case OP_exp: case OP_log: case OP_tanh: case OP_sigmoid: case OP_silu: case OP_erf: case OP_gelu: case OP_gelu_tanh: case OP_sin:
    case OP_cos: case OP_pow: case OP_div: case OP_reciprocal: case OP_sqrt: case OP_rsqrt: return true;
    default: break;
    }
  }
  return false;
}

/* The sums c[RB][RB] of the tile at (m0, n0) over k in [kb, ke), from PC_FETCH and PC_STAGE.
 * Every step fetches and stages the next step's words, the last one too (past ke they are
 * zeros, staged into the half no step reads): with the two guarded by `if` (only while steps
 * remain), NVIDIA's driver ran the 4096^3 matmul in 3.99 ms, without them in 3.42 (H200). */
static void words_main_loop(emitter *e, int T, int BK, const char *kb, const char *ke) {
  const int RB = T / 16, G = T / 64, S = words_row(T, e->k->kind);
  emit_line(e, "PC_FETCH(%s);", kb);
  emit_line(e, "PC_STAGE(0);");
  emit_line(e, "barrier();");
  emit_line(e, "float c[%d][%d];", RB, RB);
  emit_line(e, "[[unroll]] for (int i = 0; i < %d; i++) [[unroll]] for (int j = 0; j < %d; j++) c[i][j] = 0.0;", RB, RB);
  emit_line(e, "for (int kk = %s; kk < %s; kk += %d) {", kb, ke, BK);
  e->indent++;
  emit_line(e, "const int cur = ((kk - %s) / %d) & 1; /* the k-step's half of the double buffer */", kb, BK);
  emit_line(e, "PC_FETCH(kk + %d);", BK);
  emit_line(e, "[[unroll]] for (int p = 0; p < %d; p++) {", BK);
  e->indent++;
  emit_line(e, "vec4 av[%d], bv[%d];", G, G);
  emit_line(e, "[[unroll]] for (int g = 0; g < %d; g++) av[g] = pc_As[(cur * %d + p) * %d + 16 * g + ty];", G, BK, S);
  emit_line(e, "[[unroll]] for (int g = 0; g < %d; g++) bv[g] = pc_Bs[(cur * %d + p) * %d + 16 * g + tx];", G, BK, S);
  emit_line(e, "[[unroll]] for (int i = 0; i < %d; i++) [[unroll]] for (int j = 0; j < %d; j++) c[i][j] = fma(av[i >> 2][i & 3], bv[j >> 2][j & 3], c[i][j]);",
            RB, RB);
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "PC_STAGE(cur ^ 1);");
  emit_line(e, "barrier();");
  e->indent--;
  emit_line(e, "}");
}

/* The epilogue of the sums c, element by element: `element` writes the output at (m, n) (guarded
 * to lie inside it) from its sum, named `sum` (heavy: see below); `column` is the tile column of
 * the invocation's sum c[i][j] (B's layout in shared memory decides it). */
static void words_epilogue(emitter *e, int RB, bool heavy, const char *sum, const char *column, void (*element)(emitter *e)) {
  /* The epilogue, element by element. A light one (stores, adds, relu) is unrolled over c, with
   * constant indices. A heavy one is written once, in a rolled loop over a copy of the sums:
   * unrolled, a gelu epilogue (64 erf) made NVIDIA's driver keep c in memory through the main
   * loop (16x512x1024 with gelu: 1.93 ms, 0.18 rolled), and indexed by the loop's counter, c
   * itself would be; rolled, the plain 4096^3 ran 3.95 ms against 3.33 unrolled (H200). */
  if (heavy) {
    emit_line(e, "float ce[%d];", RB * RB);
    emit_line(e, "[[unroll]] for (int i = 0; i < %d; i++) [[unroll]] for (int j = 0; j < %d; j++) ce[i * %d + j] = c[i][j];", RB, RB, RB);
    emit_line(e, "[[dont_unroll]] for (int q = 0; q < %d; q++) {", RB * RB);
    emit_line(e, "  const int i = q / %d, j = q %% %d;", RB, RB);
    emit_line(e, "  const float %s = ce[q];", sum);
  } else {
    emit_line(e, "[[unroll]] for (int i = 0; i < %d; i++) [[unroll]] for (int j = 0; j < %d; j++) {", RB, RB);
    emit_line(e, "  const float %s = c[i][j];", sum);
  }
  e->indent++;
  emit_line(e, "const int n = n0 + %s, m = m0 + 64 * (i >> 2) + 4 * ty + (i & 3);", column);
  emit_line(e, "if (n >= N || m >= M) continue;");
  element(e);
  gpu_loop_end(e);
}

/* the output's indices of the sum at (m, n): the batch's, m's and n's */
static void words_out_indices(emitter *e, const char **oidx) {
  const int nb = e->k->dom.rank - 2;
  if (e->k->sched.fold_batch) gpu_gemm_indices(e, oidx);
  else {
    for (int d = 0; d < nb; d++) oidx[d] = bnames[d];
    oidx[nb] = "m", oidx[nb + 1] = "n";
  }
}

static void matmul_element(emitter *e) {
  const kir_kernel *k = e->k;
  if (vk_split(k) > 1) {
    emit_line(e, "pc_acc[(int(gl_WorkGroupID.z) * M + m) * N + n] = acc0;");
    return;
  }
  const char *oidx[PORTC_MAX_RANK];
  emit_scope_push(e);
  words_out_indices(e, oidx);
  emit_store_at(e, &k->store[0], &k->dom, oidx);
  emit_scope_pop(e);
}

/* whether the word matmul stores its sums four columns at a time: one f32 output as it lies
 * (no view), in rows of whole 16-byte words, sums stored once (no split), a light epilogue.
 * A float at a time, a subgroup's store touched 4 rows x 8 floats 16 bytes apart; in words the
 * transformer's K = 512 projections ran 5-12% faster (4096x2048 0.241 -> 0.227 ms, H200). */
bool vk_words_store_words(const kir_module *m, const kir_kernel *k) {
  if (k->kind != KK_MATMUL || k->sched.variant != KS_TILED || k->sched.vector != 4 || k->nstore != 1 || vk_split(k) > 1 || heavy_epilogue(k) ||
      k->mnk[1].sym >= 0 || k->mnk[1].c % 4)
    return false;
  const kir_store *st = &k->store[0];
  return m->buf[st->buf].dt == PORTC_F32 && m->buf[st->buf].sh.rank == k->dom.rank && path_is_identity(k, st->path);
}

/* the epilogue of vk_words_store_words: each invocation's four neighbouring columns of a row
 * (c[i][4 g .. 4 g + 3]) computed one by one, each in a scope of its own column n, then stored
 * as one word at the first column's offset */
static void words_epilogue_words(emitter *e, int RB) {
  const kir_kernel *k = e->k;
  const char *oidx[PORTC_MAX_RANK];
  char off[128];
  emit_line(e, "[[unroll]] for (int i = 0; i < %d; i++) [[unroll]] for (int g = 0; g < %d; g++) {", RB, RB / 4);
  e->indent++;
  emit_scope_push(e);
  emit_line(e, "const int m = m0 + 64 * (i >> 2) + 4 * ty + (i & 3), nq = n0 + 64 * g + 4 * tx;");
  emit_line(e, "if (nq >= N || m >= M) continue;");
  words_out_indices(e, oidx); /* the batch's indices come from m alone; n is each scope's own */
  emit_line(e, "vec4 r_;");
  for (int u = 0; u < 4; u++) {
    emit_line(e, "{");
    e->indent++;
    emit_scope_push(e);
    emit_line(e, "const int n = nq + %d;", u);
    emit_line(e, "const float acc0 = c[i][4 * g + %d];", u);
    emit_line(e, "r_[%d] = %s;", u, emit_value(e, k->store[0].val, oidx));
    emit_scope_pop(e);
    e->indent--;
    emit_line(e, "}");
  }
  emit_line(e, "{");
  e->indent++;
  emit_line(e, "const int n = nq;");
  emit_offset(e, k->store[0].path, &k->dom, oidx, off, sizeof off);
  emit_line(e, "%sw[(%s) >> 2] = r_;", emit_buf(e, k->store[0].buf), off);
  e->indent--;
  emit_line(e, "}");
  emit_scope_pop(e);
  gpu_loop_end(e);
}

static void matmul_words(emitter *e) {
  const kir_kernel *k = e->k;
  const int T = k->sched.tile_m, BK = vk_words_k_step(&k->sched), H = words_per_thread(T, BK);
  const int nb = k->dom.rank - 2;
  const bool fold = k->sched.fold_batch;
  char M[64];
  if (fold) gpu_emit_gemm_rows(e);
  else emit_line(e, "const int M = %s;", emit_dim(e, k->mnk[0], M, sizeof M));
  emit_line(e, "const int N = %lld, K = %lld;", (long long)k->mnk[1].c, (long long)k->mnk[2].c);
  if (vk_split(k) > 1) /* this work group's slice of the reduction: whole k-steps */
    emit_line(e, "const int KS = (K + %d) / %d * %d, KB = int(gl_WorkGroupID.z) * KS, KE = min(K, KB + KS);", vk_split(k) * BK - 1, vk_split(k) * BK, BK);
  else
    emit_line(e, "const int KB = 0, KE = K;");
  /* each subgroup of 32 takes 8 x 4 invocations of the 16 x 16, so that its reads of a panel
   * row fall on 8 words of B and 4 of A rather than 16 and 2 (3.99 ms against 4.09 on the
   * 4096^3 matmul, H200) */
  emit_line(e, "const int tid = int(gl_LocalInvocationIndex), tx = (tid >> 5 & 1) * 8 + (tid & 7), ty = (tid >> 6) * 4 + (tid >> 3 & 3);");
  emit_line(e, "const int n0 = int(gl_WorkGroupID.x) * %d;", T);
  words_fetch_stage(e, T, BK, H);
  if (!fold) {
    char batch[256];
    emit_count(e, &k->dom, 0, nb, batch, sizeof batch);
    emit_line(e, "const int NB = %s;", batch);
    emit_line(e, "for (int bt = int(gl_WorkGroupID.z); bt < NB; bt += int(gl_NumWorkGroups.z)) {");
    e->indent++;
    emit_unravel(e, &k->dom, 0, nb, "bt", bnames);
  }
  emit_line(e, "for (int m0 = int(gl_WorkGroupID.y) * %d; m0 < M; m0 += int(gl_NumWorkGroups.y) * %d) {", T, T);
  e->indent++;
  words_main_loop(e, T, BK, "KB", "KE");
  if (vk_words_store_words(e->m, k)) words_epilogue_words(e, T / 16);
  else words_epilogue(e, T / 16, vk_split(k) == 1 && heavy_epilogue(k), "acc0", "64 * (j >> 2) + 4 * tx + (j & 3)", matmul_element);
  gpu_loop_end(e);
  if (!fold) gpu_loop_end(e);
}

/* a split GEMM's second phase: the slices added, and the epilogue, over the M x N outputs */
static void matmul_split_sum(emitter *e) { gpu_gemm_sum(e, vk_split(e->k)); }

/* ---- conv2d as an implicit GEMM on the f32 word tiles ---- */

/* whether the weights' rows (C x KH x KW) are whole 16-byte words */
static bool conv_weight_words(const kir_module *m, const kir_kernel *k) {
  const shape *ws = &m->buf[k->in_buf[1]].sh;
  return ws->d[1].c * ws->d[2].c * ws->d[3].c % 4 == 0;
}

/* out[o, pixel] = sum over (c, kh, kw) of w[o, c, kh, kw] * x at the pixel's window, the tiles,
 * k-steps and sums of the word matmul above: A is the weights [O, C * KH * KW] as they lie, moved
 * as the matmul's A (in 16-byte words where K is a multiple of 4, else 4 floats at a time); B,
 * the input window, is gathered. B's word w of a panel row holds the tile's columns 64 (w / 16) +
 * w % 16 + 16 u (u < 4), not 4 w + u as the matmul's: invocation (bw, br0) gathers those 4
 * pixels, the same in every k-step, whose window origins it computes once per tile (px, ph, pw),
 * at rows br0 + 256 / (T / 4) h of each step (one (c, kh, kw) per row, shared by its 4 pixels);
 * so neighbouring invocations read neighbouring pixels, and the epilogue's stores of a subgroup
 * are runs of 16 neighbouring pixels (c[i][j] is column 64 (j / 4) + tx + 16 (j % 4)). Padding,
 * pixels past N and k past the work group's range (split-K's slice) read as zeros. */
static void conv_fetch_stage(emitter *e, int T, int BK, int H) {
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  const int W = T / 4, S = words_row(T, k->kind), arows = 256 / (BK / 4), brows = 256 / W;
  char x[256];
  emit_line(e, "const int ar0 = tid / %d, akw = tid %% %d, br0 = tid / %d, bw = tid %% %d;", BK / 4, BK / 4, W, W);
  emit_line(e, "uvec4 wa[%d];", H);
  emit_line(e, "vec4 wb[%d];", H);
  emit_line(e, "int px[4], ph[4], pw[4]; /* the 4 pixels' images (-1: past N) and window origins */");
  emit_line(e, "#define PC_FETCH(k0) { \\");
  emit_line(e, "  [[unroll]] for (int h = 0; h < %d; h++) { const int r = m0 + ar0 + %d * h, c = (k0) + 4 * akw; \\", H, arows);
  if (conv_weight_words(e->m, k)) {
    emit_line(e, "    wa[h] = r < M && c < KE ? %sv[(uint(r) * uint(K) + uint(c)) >> 2] : uvec4(0u); } \\", emit_buf(e, k->in_buf[1]));
  } else {
    char w[256];
    emit_load(e, k->in_buf[1], "r * K + c + u", w, sizeof w);
    emit_line(e, "    [[unroll]] for (int u = 0; u < 4; u++) wa[h][u] = r < M && c + u < KE ? floatBitsToUint(%s) : 0u; } \\", w);
  }
  emit_line(e, "  [[unroll]] for (int h = 0; h < %d; h++) { \\", H);
  emit_line(e, "    const int kk = (k0) + br0 + %d * h, ci = kk / (KH * KW), kh = kk / KW %% KH, kw = kk %% KW; \\", brows);
  emit_line(e, "    [[unroll]] for (int u = 0; u < 4; u++) { const int ih = ph[u] + kh * %lld, iw = pw[u] + kw * %lld; \\",
            (long long)attr_or_one(n, "dilation", 0), (long long)attr_or_one(n, "dilation", 1));
  emit_load(e, k->in_buf[0], "px[u] + (ci * H + ih) * W + iw", x, sizeof x);
  emit_line(e, "      wb[h][u] = kk < KE && px[u] >= 0 && uint(ih) < uint(H) && uint(iw) < uint(W) ? %s : 0.0; } } }", x);
  emit_line(e, "#define PC_STAGE(s) { [[unroll]] for (int h = 0; h < %d; h++) { const int r = ar0 + %d * h, q = (s) * %d + 4 * akw; \\", H, arows, BK);
  emit_line(e, "    [[unroll]] for (int c = 0; c < 4; c++) pc_As[(q + c) * %d + (r >> 2)][r & 3] = uintBitsToFloat(wa[h][c]); } \\", S);
  emit_line(e, "  [[unroll]] for (int h = 0; h < %d; h++) pc_Bs[((s) * %d + br0 + %d * h) * %d + bw] = wb[h]; }", H, BK, brows, S);
}

static void conv_element(emitter *e) { gpu_conv_element(e, "s"); }

static void conv_words(emitter *e) {
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  const int T = k->sched.tile_m, BK = vk_words_k_step(&k->sched), H = words_per_thread(T, BK);
  gpu_conv_gemm_sizes(e);
  gpu_conv_k_range(e, BK);
  emit_line(e, "const int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y), tid = ty * 16 + tx;");
  conv_fetch_stage(e, T, BK, H);
  emit_line(e, "for (int n0 = int(gl_WorkGroupID.x) * %d; n0 < N; n0 += int(gl_NumWorkGroups.x) * %d) {", T, T);
  e->indent++;
  emit_line(e, "[[unroll]] for (int u = 0; u < 4; u++) {");
  emit_line(e, "  const int pn = n0 + 64 * (bw >> 4) + (bw & 15) + 16 * u, oh = pn / OW %% OH, ow = pn %% OW;");
  emit_line(e, "  px[u] = pn < N ? pn / (OH * OW) * (C * H * W) : -1;");
  emit_line(e, "  ph[u] = oh * %lld - %lld, pw[u] = ow * %lld - %lld;", (long long)attr_or_one(n, "stride", 0), (long long)attr_get(n, "padding")->v[0],
            (long long)attr_or_one(n, "stride", 1), (long long)attr_get(n, "padding")->v[1]);
  emit_line(e, "}");
  emit_line(e, "for (int m0 = int(gl_WorkGroupID.y) * %d; m0 < M; m0 += int(gl_NumWorkGroups.y) * %d) {", T, T);
  e->indent++;
  words_main_loop(e, T, BK, "KB", "KE");
  words_epilogue(e, T / 16, gpu_conv_split(k) == 1 && heavy_epilogue(k), "s", "64 * (j >> 2) + tx + 16 * (j & 3)", conv_element);
  gpu_loop_end(e);
  gpu_loop_end(e);
}

/* ---- matmul on cooperative matrices (GL_NV_cooperative_matrix): f16 operands, f32 sums ---- */

/* One 2-D GEMM (matmul_gemm_view: batches fold into rows). S subgroups of 32 (the schedule's
 * threads / 32: 4 or 8) share a BM x BN tile (64, 128 or 256 each way), each computing a WM x WN
 * block of it as 16x16 fragments (coop_shape: 2 x 2 subgroups, or 2 x 4 / 4 x 2 along the longer
 * side). The operands pass through shared memory in k-steps of BK (the schedule's tile_k: 16, 32
 * or 64; 0 is 32), as 16-byte words (rows padded by one word, so that the eight rows a fragment
 * load reads at once fall in distinct banks); the next step's words are loaded into registers
 * while the current step multiplies, then written to the other half of the double buffer, so one
 * barrier per step suffices. Rows past M, columns past N and k past K load as zeros, so any M and
 * any N and K that are multiples of 8 (whole words) run here. Each subgroup passes its sums
 * through its own 16x16 shared tile, one fragment at a time, so that the epilogue runs per
 * element as in the SIMT variant, with no barrier across the work group.
 *
 * A channels-last convolution (groups 1, C a multiple of 8: what the lowering made so) is the
 * same GEMM: A's rows the output pixels, its k the window's (row, column, channel), gathered from
 * the NHWC input a 16-byte word of 8 channels at a time (zeros where the window leaves the
 * image); B the weights [KH*KW*C x O] as they lie; the output [pixels x O] is NHWC. It splits
 * its reduction (split-K, vk_split_phases) where its tiles are too few to fill the device. */
typedef struct coop_shape {
  int bm, bn, bk, threads;
  int sg_n, wm, wn; /* subgroups along n; each one's block */
  int ha, hb;       /* 16-byte words each invocation moves per stage, of A and of B */
  int arow, brow;   /* a shared row's words, padded: A's BK / 8 + 1, B's BN / 8 + 1 */
} coop_shape;

enum { COOP_MAX_FRAGMENTS = 16 };

/* the shared memory of a shape: two stages of both operands, and a 16x16 f32 tile per subgroup */
static size_t coop_shared(const coop_shape *c) {
  return 16 * 2 * (size_t)(c->bm * c->arow + c->bk * c->brow) + 4 * 256 * (size_t)(c->threads / 32);
}

static bool coop_shape_of(const kir_schedule *s, size_t shared_max, coop_shape *c, char *why, size_t len) {
  const int bm = s->tile_m, bn = s->tile_n, bk = s->tile_k ? s->tile_k : VK_COOP_K, t = s->threads[0];
  if ((bm != 64 && bm != 128 && bm != 256) || (bn != 64 && bn != 128 && bn != 256))
    return snprintf(why, len, "tile %dx%d: the cooperative-matrix tile is 64, 128 or 256 each way", bm, bn), false;
  if (bk != 16 && bk != 32 && bk != 64) return snprintf(why, len, "tile_k=%d: the cooperative-matrix k-step is 16, 32 or 64", bk), false;
  if ((t != 128 && t != 256) || s->threads[1] > 1 || s->threads[2] > 1)
    return snprintf(why, len, "threads=%d: the cooperative-matrix matmul runs 4 or 8 subgroups of 32 (128 or 256)", t), false;
  const int sg = t / 32, sg_n = sg == 4 || bn < bm ? 2 : 4;
  *c = (coop_shape){.bm = bm, .bn = bn, .bk = bk, .threads = t, .sg_n = sg_n, .wm = bm / (sg / sg_n), .wn = bn / sg_n,
                    .ha = bm * bk / 8 / t, .hb = bk * bn / 8 / t, .arow = bk / 8 + 1, .brow = bn / 8 + 1};
  if (c->wm / 16 * (c->wn / 16) > COOP_MAX_FRAGMENTS)
    return snprintf(why, len, "tile %dx%d on %d subgroups: %d fragments of sums each, at most %d", bm, bn, sg, c->wm / 16 * (c->wn / 16),
                    COOP_MAX_FRAGMENTS), false;
  if (c->ha < 1 || c->hb < 1)
    return snprintf(why, len, "tile %dx%d with k-step %d: fewer words per stage than %d invocations", bm, bn, bk, t), false;
  if (coop_shared(c) > shared_max)
    return snprintf(why, len, "tile %dx%d with k-step %d on %d subgroups takes %zu bytes of shared memory, the device allows %zu", bm, bn, bk, sg,
                    coop_shared(c), shared_max), false;
  return true;
}

bool vk_coop_fit(const kir_schedule *s, size_t shared_max, char *why, size_t len) {
  coop_shape c;
  return coop_shape_of(s, shared_max, &c, why, len);
}

static coop_shape coop_shape_get(const kir_kernel *k) {
  coop_shape c = {0};
  char why[200];
  if (!coop_shape_of(&k->sched, SIZE_MAX, &c, why, sizeof why)) abort(); /* the schedule's check refused it */
  return c;
}

static void coop_declare(emitter *e, int index) {
  const coop_shape c = coop_shape_get(e->k);
  emit_line(e, "layout(local_size_x = %d) in;", c.threads);
  vk_declare_buffers(e, index, true);
  emit_line(e, "const int PC_AS = %d, PC_BS = %d; /* the words of one stage: A %d x %d, B %d x %d, rows padded by a word */", c.bm * c.arow,
            c.bk * c.brow, c.bm, c.bk, c.bk, c.bn);
  emit_line(e, "shared uvec4 pc_As[2 * PC_AS], pc_Bs[2 * PC_BS];");
  emit_line(e, "shared float pc_C[%d * 256]; /* a 16x16 fragment of sums per subgroup */", c.threads / 32);
}

/* PC_FETCH's A of a channels-last convolution: invocation tid's words of each stage, k (the
 * window's row, column and channel) the same for all of them, a row (an output pixel) each. A
 * 1x1 convolution of stride 1 without padding reads the input as the matmul reads A: [pixels x C]
 * as it lies. */
static bool coop_gather_plain(const emitter *e) {
  const node *n = &e->m->g->nodes[e->k->node];
  const shape *ws = &e->m->buf[e->k->in_buf[1]].sh;
  const attr *pad = attr_get(n, "padding");
  return ws->d[0].c == 1 && ws->d[1].c == 1 && attr_or_one(n, "stride", 0) == 1 && attr_or_one(n, "stride", 1) == 1 && !pad->v[0] && !pad->v[1];
}

static void coop_gather(emitter *e, const coop_shape *c, const char *x) {
  const node *n = &e->m->g->nodes[e->k->node];
  if (coop_gather_plain(e)) {
    emit_line(e, "  [[unroll]] for (int h = 0; h < %d; h++) { const int r = m0 + ar0 + %d * h, kc = (k0) + ac; \\", c->ha, c->threads / (c->bk / 8));
    emit_line(e, "    wa[h] = r < M && kc < K ? %sv[(uint(r) * uint(C) + uint(kc)) >> 3] : uvec4(0u); } \\", x);
    return;
  }
  emit_line(e, "  const int kc = (k0) + ac, ci = kc %% C, win = kc / C, dh = win / KW * %lld, dw = win %% KW * %lld; \\",
            (long long)attr_or_one(n, "dilation", 0), (long long)attr_or_one(n, "dilation", 1));
  emit_line(e, "  [[unroll]] for (int h = 0; h < %d; h++) { \\", c->ha);
  emit_line(e, "    const int r = m0 + ar0 + %d * h, ih = r / OW %% OH * %lld - %lld + dh, iw = r %% OW * %lld - %lld + dw; \\",
            c->threads / (c->bk / 8), (long long)attr_or_one(n, "stride", 0), (long long)attr_get(n, "padding")->v[0],
            (long long)attr_or_one(n, "stride", 1), (long long)attr_get(n, "padding")->v[1]);
  emit_line(e, "    wa[h] = r < M && kc < K && uint(ih) < uint(H) && uint(iw) < uint(W) ? \\");
  emit_line(e, "      %sv[uint(r / (OH * OW)) * uint(H * W * C / 8) + (uint((ih * W + iw) * C + ci) >> 3)] : uvec4(0u); } \\", x);
}

static void matmul_coop(emitter *e) {
  const kir_kernel *k = e->k;
  const coop_shape c = coop_shape_get(k);
  const int fm = c.wm / 16, fn = c.wn / 16, T = c.threads; /* fragments per subgroup */
  char a[16], b[16];
  snprintf(a, sizeof a, "%s", emit_buf(e, k->in_buf[0]));
  snprintf(b, sizeof b, "%s", emit_buf(e, k->in_buf[1]));
  const bool conv = k->kind == KK_CONV;
  if (conv) {
    gpu_conv_gemm_sizes(e);
    gpu_conv_k_range(e, c.bk); /* [KB, KE): with split-K, this work group's slice of whole k-steps */
  } else {
    gpu_emit_gemm_rows(e);
    emit_line(e, "const int N = %lld, K = %lld, KB = 0, KE = K;", (long long)k->mnk[1].c, (long long)k->mnk[2].c);
  }
  emit_line(e, "const int sg = int(gl_SubgroupID), lane = int(gl_SubgroupInvocationID), sm = sg / %d * %d, sn = sg %% %d * %d;", c.sg_n, c.wm,
            c.sg_n, c.wn);
  /* work groups in order of their id take the tiles of 8 tile rows column by column, so that the
   * A and B panels a wave of work groups reads stay in L2 */
  emit_line(e, "const int gx = int(gl_NumWorkGroups.x), gy = int(gl_NumWorkGroups.y), pid = int(gl_WorkGroupID.y) * gx + int(gl_WorkGroupID.x);");
  emit_line(e, "const int first = pid / (8 * gx) * 8, rows = min(gy - first, 8), ty = first + pid %% (8 * gx) %% rows;");
  emit_line(e, "const int n0 = pid %% (8 * gx) / rows * %d;", c.bn);
  /* invocation tid moves words tid + T h of each stage: A's rows of BK / 8 words, B's of BN / 8 */
  emit_line(e, "const int tid = int(gl_LocalInvocationID.x), ar0 = tid / %d, ac = tid %% %d * 8, br0 = tid / %d, bw = tid %% %d;", c.bk / 8,
            c.bk / 8, c.bn / 8, c.bn / 8);
  emit_line(e, "uvec4 wa[%d], wb[%d];", c.ha, c.hb);
  emit_line(e, "#define PC_FETCH(k0) { \\");
  if (conv) coop_gather(e, &c, a);
  else {
    emit_line(e, "  [[unroll]] for (int h = 0; h < %d; h++) { const int r = m0 + ar0 + %d * h, c = (k0) + ac; \\", c.ha, T / (c.bk / 8));
    emit_line(e, "    wa[h] = r < M && c < K ? %sv[(uint(r) * uint(K) + uint(c)) >> 3] : uvec4(0u); } \\", a);
  }
  emit_line(e, "  [[unroll]] for (int h = 0; h < %d; h++) { const int r = (k0) + br0 + %d * h, c = n0 + 8 * bw; \\", c.hb, T / (c.bn / 8));
  emit_line(e, "    wb[h] = r < K && c < N ? %sv[(uint(r) * uint(N) + uint(c)) >> 3] : uvec4(0u); } }", b);
  emit_line(e, "#define PC_STAGE(s) { [[unroll]] for (int h = 0; h < %d; h++) pc_As[(s) * PC_AS + (ar0 + %d * h) * %d + (ac >> 3)] = wa[h]; \\", c.ha,
            T / (c.bk / 8), c.arow);
  emit_line(e, "  [[unroll]] for (int h = 0; h < %d; h++) pc_Bs[(s) * PC_BS + (br0 + %d * h) * %d + bw] = wb[h]; }", c.hb, T / (c.bn / 8), c.brow);
  emit_line(e, "for (int m0 = ty * %d; m0 < M; m0 += gy * %d) {", c.bm, c.bm);
  e->indent++;
  emit_line(e, "PC_FETCH(KB);");
  emit_line(e, "PC_STAGE(0);");
  emit_line(e, "barrier();");
  emit_line(e, "fcoopmatNV<32, 3, 16, PC_CM_N> c[%d][%d]; /* scope 3: the subgroup */", fm, fn);
  emit_line(e, "[[unroll]] for (int i = 0; i < %d; i++) [[unroll]] for (int j = 0; j < %d; j++) c[i][j] = fcoopmatNV<32, 3, 16, PC_CM_N>(0.0);",
            fm, fn);
  emit_line(e, "for (int kk = KB; kk < KE; kk += %d) {", c.bk);
  e->indent++;
  emit_line(e, "const int cur = ((kk - KB) / %d) & 1; /* the k-step's half of the double buffer */", c.bk);
  emit_line(e, "const bool more = kk + %d < KE;", c.bk);
  emit_line(e, "if (more) PC_FETCH(kk + %d);", c.bk);
  emit_line(e, "[[unroll]] for (int ks = 0; ks < %d; ks += 16) {", c.bk);
  e->indent++;
  emit_line(e, "fcoopmatNV<16, 3, 16, PC_CM_K> fa[%d];", fm);
  emit_line(e, "fcoopmatNV<16, 3, PC_CM_K, PC_CM_N> fb;");
  emit_line(e, "[[unroll]] for (int i = 0; i < %d; i++) coopMatLoadNV(fa[i], pc_As, uint(cur * PC_AS + (sm + 16 * i) * %d + (ks >> 3)), %du, false);", fm,
            c.arow, c.arow);
  emit_line(e, "[[unroll]] for (int j = 0; j < %d; j++) {", fn);
  emit_line(e, "  coopMatLoadNV(fb, pc_Bs, uint(cur * PC_BS + ks * %d + ((sn + 16 * j) >> 3)), %du, false);", c.brow, c.brow);
  emit_line(e, "  [[unroll]] for (int i = 0; i < %d; i++) c[i][j] = coopMatMulAddNV(fa[i], fb, c[i][j]);", fm);
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "if (more) PC_STAGE(cur ^ 1);");
  emit_line(e, "barrier();");
  e->indent--;
  emit_line(e, "}");
  /* the epilogue, a fragment at a time: the fragment is picked by constant indices, so that
   * the accumulators stay in registers (indexed by a loop's counter, NVIDIA's driver, leaving
   * the loop rolled, moved them all to memory: the matmul ran 5x slower) */
  emit_line(e, "for (int f = 0; f < %d; f++) {", fm * fn);
  e->indent++;
  emit_line(e, "const int i = f / %d, j = f %% %d;", fn, fn);
  for (int f = 0; f < fm * fn; f++)
    emit_line(e, "%sif (f == %d) coopMatStoreNV(c[%d][%d], pc_C, uint(sg * 256), 16u, false);", f ? "else " : "", f, f / fn, f % fn);
  emit_line(e, "subgroupMemoryBarrierShared();");
  emit_line(e, "subgroupBarrier();");
  emit_line(e, "for (int q = lane; q < 256; q += 32) {");
  e->indent++;
  emit_line(e, "const int m = m0 + sm + 16 * i + (q >> 4), n = n0 + sn + 16 * j + (q & 15);");
  emit_line(e, "if (m >= M || n >= N) continue;");
  if (conv) {
    emit_line(e, "const float sum = pc_C[sg * 256 + q];");
    gpu_conv_element(e, "sum");
  } else {
    emit_line(e, "const float acc0 = pc_C[sg * 256 + q];");
    gpu_gemm_store(e);
  }
  gpu_loop_end(e);
  emit_line(e, "subgroupBarrier(); /* every lane has read the fragment before the next is stored */");
  gpu_loop_end(e);
  gpu_loop_end(e);
}

bool vk_matmul_own(const kir_kernel *k) {
  const bool words = k->sched.variant == KS_TILED && k->sched.vector == 4;
  return (k->kind == KK_MATMUL || k->kind == KK_CONV) && (k->sched.variant == KS_MMA || words);
}

void vk_matmul(emitter *e, int index) {
  const bool coop = e->k->sched.variant == KS_MMA, wg = coop && e->k->sched.wg_matrices, conv = e->k->kind == KK_CONV;
  if (wg) vk_coop_wg_declare(e, index); /* the work group's matrices (matmul_wg.c) */
  else if (coop) coop_declare(e, index);
  else words_declare(e, index);
  emit_line(e, "void main() {");
  e->indent++;
  if (wg) vk_coop_wg(e);
  else if (coop && vk_split(e->k) > 1) vk_split_phases(e, matmul_coop, gpu_conv_split_sum); /* convolutions split */
  else if (coop) matmul_coop(e);
  else if (conv && vk_split(e->k) > 1) vk_split_phases(e, conv_words, gpu_conv_split_sum);
  else if (conv) conv_words(e);
  else if (vk_split(e->k) > 1) vk_split_phases(e, matmul_words, matmul_split_sum);
  else matmul_words(e);
  e->indent--;
  emit_line(e, "}");
}
