/*
 * matmul_wg.c: the Vulkan target's f16 matmul on cooperative matrices of a whole work group
 * (VK_NV_cooperative_matrix2's workgroup scope, flexible sizes). The subgroup kernel of matmul.c
 * stops near half of the H100's tensor rate: a subgroup's 16x16x16 matrices are the mma.sync
 * class of instruction. A work group's matrices let the driver stage the operands through shared
 * memory itself and pick the instruction the GPU is fastest with (Hopper's wgmma).
 *
 * One 2-D GEMM (matmul_gemm_view) of static sizes, 256 invocations per BM x BN tile (128 where a
 * tune table says threads=128 and the device offers matrices of that size: two work groups then
 * share a multiprocessor's registers; on the H100 every such shape was slower, 3.70 ms at best on
 * the plain 8192^3 product against the rule's 3.42, bench/gpu/NOTES.md):
 *  - per k-step of BK, A's BM x BK panel and B's BK x BN one are loaded straight from the storage
 *    buffers (row-major, as they lie) and multiplied into NA accumulators of BM x BN/NA f32 sums;
 *    with stages = 2 the next step's panels are loaded before this step's products are issued;
 *    with unroll = U (a tune table's), U k-steps are written out in each pass of the k-loop, so the
 *    driver may issue one step's loads while another's products run, as llama.cpp's coopmat2
 *    kernel unrolls its loop (on the H100, 4 steps of 64 ran matmul_8192_f16 in 3.35 ms, the
 *    fastest of the shapes timed in that run; the margin over no unrolling was not kept);
 *  - loads have no bounds: a tile that would cross the matrix's last row or column is moved back
 *    inside it (M >= BM, N >= BN), and stores only the elements no earlier tile owns; K is a
 *    multiple of BK;
 *  - a plain output of f16 or f32 (the sums, rounded) is stored from the matrices themselves;
 *  - with wg_elements = 1 (PORTC_VULKAN_KERNELS' coopwgelements), so is one whose epilogue is
 *    elementwise on the sums, with at most a row vector (a bias) added first: the sums start from
 *    that vector (loaded as a matrix whose rows are 0 elements apart), and the rest runs on the
 *    accumulator's elements, each in turn, before the store (on the H100 the f16 MLP took 0.565 ms
 *    so, 0.552 with the second dispatch below; by arithmetic, the tensor cores wait meanwhile);
 *  - any other epilogue where the output lies as the product does (f16 or f32): the sums are stored there
 *    from the one accumulator, rounded to the output's dtype (as cuBLASLt's library 3 path and
 *    torch.compile's addmm do), and a second dispatch of the shader (PC_PHASE 1, made by the
 *    runtime as a split-K kernel's sum is) reads the output back in 16-byte words, finishes their
 *    elements and stores them again, with every invocation of the device's groups at work;
 *  - any other epilogue reads one accumulator at a time from shared memory, an element per
 *    invocation, as the subgroup kernel's does (NA keeps that tile within what the driver leaves
 *    of shared memory).
 * On the H100 (driver 580) the rule's 128x256 tiles in k-steps of 64 ran the plain f16 matmul
 * 8192^3 in 3.36-3.45 ms against the subgroup kernel's 3.83-3.86 (bench/gpu/NOTES.md), but
 * 128x128 tiles took 5.4-8.9 ms, and an epilogue through shared memory (four accumulators of
 * 128x64) more than doubled the time. With the sums read back from the output by the tile's own
 * work group after a barrier, matmul+bias+GELU 8192 took 3.57 ms against 4.05 and the f16 MLP
 * 0.602 against 0.676; but a work group of 255 registers is alone on its multiprocessor, and the
 * tensor cores idled while it stored, read back and finished a tile (about 17 us a tile, half of
 * the MLP's first GEMM). The second dispatch reads and writes the output once at the device's
 * bandwidth instead: 3.50 ms against 3.55 in place, and the MLP 0.551 against 0.602, in one run.
 * The rule takes the outputs stored from the matrices, plain, finished after or (where asked) on the elements
 * (by default; PORTC_VULKAN_KERNELS without coopwg: never).
 * The matrices are declared in GL_NV_cooperative_matrix's spelling with scope 2 (the work group)
 * and rewritten to the KHR extension as the subgroup kernel is (spirv_coop.c); B's rows are the
 * specialization constant PC_WG_K and the f16 sums' rows PC_WG_M, which is how the rewrite tells
 * their uses (B; accumulator) from A's.
 */
#include <stdio.h>

#include "../codegen/emit.h"
#include "../codegen/gpu_kernels.h"
#include "../codegen/grid.h"
#include "../ir/dtype.h"
#include "vk.h"

/* the ways a tile's sums leave the matrices: stored from them (a plain output); finished on their
 * elements and stored from them (an epilogue elementwise on the sums, or on the sums plus a row
 * vector); stored from them and finished by the shader's second dispatch, in 16-byte words (an
 * output of f16 or f32 that lies as the product); or an accumulator at a time through shared memory */
typedef enum { WG_PLAIN, WG_ELEMENTS, WG_AFTER, WG_SHARED } wg_epilogue;

/* whether kernel k's one store is to an output of f16 or f32 that lies as the product does */
static bool output_as_product(const kir_module *m, const kir_kernel *k) {
  if (k->nstore != 1) return false;
  const kir_buf *o = &m->buf[k->store[0].buf];
  return (o->dt == PORTC_F16 || o->dt == PORTC_F32) && o->sh.rank == k->dom.rank && path_is_identity(k, k->store[0].path);
}

/* whether that store is the sums themselves, rounded to the output's dtype */
static bool plain_store(const kir_module *m, const kir_kernel *k) {
  const kir_val *v = &k->val[k->store[0].val];
  if (v->kind == KV_OP && v->op == OP_cast) v = &k->val[v->arg[0]];
  return output_as_product(m, k) && v->kind == KV_ACC;
}

/* whether value v is a load of a row vector: an f16 or f32 buffer of N elements read at the
 * output's column (the path a broadcast of the output's index onto it), as a bias is */
static bool row_vector(const kir_module *m, const kir_kernel *k, int v) {
  const kir_val *x = &k->val[v];
  if (x->kind != KV_LOAD || (m->buf[x->buf].dt != PORTC_F16 && m->buf[x->buf].dt != PORTC_F32)) return false;
  const kir_path *p = &k->path[x->path];
  return p->n == 1 && p->s[0].kind == ST_BCAST && p->s[0].to.rank == 1 && p->s[0].to.d[0].sym < 0 && p->s[0].to.d[0].c == k->mnk[1].c &&
         m->buf[x->buf].sh.rank == 1;
}

/* whether value v is computed from value from and constants alone, by elementwise ops */
static bool only_from(const kir_kernel *k, int v, int from) {
  const kir_val *x = &k->val[v];
  if (v == from || x->kind == KV_CONST) return true;
  if (x->kind != KV_OP) return false;
  for (int a = 0; a < 3; a++)
    if (x->arg[a] >= 0 && !only_from(k, x->arg[a], from)) return false;
  return true;
}

/* where kernel k's epilogue is elementwise on its sums, with at most a row vector added to them
 * first (matmul + bias, then GELU, say): the value the matrices' elements then hold (the sums,
 * KV_ACC, or their add of the vector), and the vector's load (-1: none) */
typedef struct {
  int elements, bias;
} wg_elementwise;

static bool elementwise(const kir_kernel *k, const kir_module *m, wg_elementwise *out) {
  int acc = -1;
  for (int v = 0; v < k->nval; v++)
    if (k->val[v].kind == KV_ACC) acc = v;
  for (int v = 0; acc >= 0 && v < k->nval; v++) { /* the sums (or the sums as f32, which they are) plus a row vector */
    const kir_val *x = &k->val[v];
    if (x->kind != KV_OP || x->op != OP_add || !dtype_is_float(x->dt)) continue;
    for (int side = 0; side < 2; side++) {
      const kir_val *sums = &k->val[x->arg[side]];
      const bool as_f32 = sums->kind == KV_OP && sums->op == OP_cast && sums->dt == PORTC_F32 && sums->arg[0] == acc;
      if ((x->arg[side] == acc || as_f32) && row_vector(m, k, x->arg[1 - side]) && only_from(k, k->store[0].val, v))
        return *out = (wg_elementwise){v, x->arg[1 - side]}, true;
    }
  }
  return acc >= 0 && only_from(k, k->store[0].val, acc) && (*out = (wg_elementwise){acc, -1}, true);
}

/* how kernel i's tiles leave the matrices. A tile moved back inside the matrix stores the same
 * sums over its neighbour's again, all before the second dispatch finishes any; N is a multiple
 * of 8 (vk_coop_wg_eligible), so the output's rows are whole 16-byte words. */
static wg_epilogue epilogue_of(const kir_module *m, int i, wg_elementwise *ew) {
  const kir_kernel *k = &m->k[i];
  *ew = (wg_elementwise){-1, -1};
  return plain_store(m, k)                                                       ? WG_PLAIN
         : output_as_product(m, k) && k->sched.wg_elements && elementwise(k, m, ew) ? WG_ELEMENTS
         : output_as_product(m, k)                                               ? WG_AFTER
                                                                                 : WG_SHARED;
}

/* the same, where what the elements hold does not matter */
static wg_epilogue epilogue(const kir_module *m, int i) {
  wg_elementwise ew;
  return epilogue_of(m, i, &ew);
}

/* the accumulators of schedule s's tile: one where the sums leave from the matrices, else as few
 * as keep one of them (BM x BN / NA f32 sums) within VK_WG_EPILOGUE bytes */
static int accumulators(const kir_schedule *s, wg_epilogue how) {
  int na = 1;
  while (how == WG_SHARED && na < 8 && (size_t)s->tile_m * (size_t)(s->tile_n / na) * 4 > VK_WG_EPILOGUE) na *= 2;
  return na;
}

/* the k-steps one pass of the k-loop issues */
static int unrolled(const kir_schedule *s) { return s->unroll > 1 ? s->unroll : 1; }

bool vk_coop_wg_stores_matrices(const kir_module *m, const kir_kernel *k) {
  return k->sched.variant == KS_MMA && k->sched.wg_matrices && epilogue(m, (int)(k - m->k)) != WG_SHARED;
}

bool vk_coop_wg_on_elements(const kir_module *m, const kir_kernel *k) {
  return k->kind == KK_MATMUL && k->sched.variant == KS_MMA && k->sched.wg_matrices && epilogue(m, (int)(k - m->k)) == WG_ELEMENTS;
}

int vk_coop_wg_row_vector(const kir_module *m, const kir_kernel *k) {
  wg_elementwise ew;
  const bool wg = k->kind == KK_MATMUL && k->sched.variant == KS_MMA && k->sched.wg_matrices;
  return wg && epilogue_of(m, (int)(k - m->k), &ew) == WG_ELEMENTS && ew.bias >= 0 ? k->val[ew.bias].buf : -1;
}

int64_t vk_coop_wg_after(const kir_module *m, const kir_kernel *k) {
  if (!(k->kind == KK_MATMUL && k->sched.variant == KS_MMA && k->sched.wg_matrices && epilogue(m, (int)(k - m->k)) == WG_AFTER)) return 0;
  const int per = m->buf[k->store[0].buf].dt == PORTC_F16 ? 8 : 4; /* elements a word */
  return gpu_gemm_rows(m, (int)(k - m->k), NULL) * (k->mnk[1].c / per);
}

bool vk_coop_wg_eligible(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind != KK_MATMUL || !matmul_gemm_view(m, i) || m->buf[k->in_buf[0]].dt != PORTC_F16 || m->buf[k->in_buf[1]].dt != PORTC_F16)
    return false;
  for (int d = 0; d < k->dom.rank - 1; d++)
    if (k->dom.d[d].sym >= 0) return false; /* the rows too: a tile moved back inside needs M >= BM */
  return k->mnk[1].sym < 0 && k->mnk[2].sym < 0 && k->mnk[1].c % 8 == 0;
}

const vk_wg_steps *vk_coop_wg_default_steps(void) {
  static const vk_wg_steps h100 = {{{VK_WG_STEP_MN, VK_WG_STEP_N128, VK_WG_STEP_K}, {VK_WG_STEP_MN, VK_WG_STEP_MN, VK_WG_STEP_K}}};
  return &h100;
}

bool vk_coop_wg_fit(const kir_module *m, int i, const kir_schedule *s, const vk_wg_steps *steps, size_t shared, char *why, size_t len) {
  const kir_kernel *k = &m->k[i];
  const int64_t M = gpu_gemm_rows(m, i, NULL), N = k->mnk[1].c, K = k->mnk[2].c;
  if (!vk_coop_wg_eligible(m, i))
    return snprintf(why, len, "wg_matrices=1 takes one f16 GEMM of static sizes whose N is a multiple of 8"), false;
  if ((s->threads[0] != 128 && s->threads[0] != 256) || s->threads[1] > 1 || s->threads[2] > 1)
    return snprintf(why, len, "threads=%d: the work group's matrices are written for 128 or 256 invocations", s->threads[0]), false;
  const uint32_t *step = steps->of[s->threads[0] == 256];
  if (!step[0] || !step[1] || !step[2])
    return snprintf(why, len, "threads=%d: the device offers no cooperative matrices of a work group of that size", s->threads[0]), false;
  if (s->tile_m % (int)step[0] || s->tile_n % (int)step[1] || s->tile_k % (int)step[2] || s->tile_m > 256 || s->tile_n > 256 || s->tile_k > 128 ||
      s->tile_k <= 0)
    return snprintf(why, len, "tile %dx%d, k-step %d: the device takes work-group matrices in steps of %ux%ux%u (here at most 256x256, k 128)",
                    s->tile_m, s->tile_n, s->tile_k, step[0], step[1], step[2]), false;
  if (M < s->tile_m || N < s->tile_n || K % s->tile_k)
    return snprintf(why, len, "tile %dx%d, k-step %d: the matmul's %lldx%lldx%lld needs at least a tile each way and k-steps that divide K",
                    s->tile_m, s->tile_n, s->tile_k, (long long)M, (long long)N, (long long)K), false;
  if (s->stages != 1 && s->stages != 2) return snprintf(why, len, "stages=%d: the work group's matrices load 1 or 2 k-steps at once", s->stages), false;
  const int unroll = unrolled(s);
  if (unroll > 1 && (s->stages != 1 || K % ((int64_t)s->tile_k * unroll)))
    return snprintf(why, len, "unroll=%d: the k-loop unrolls with stages=1 only, into passes of %d k-steps of %d that divide K (%lld)", unroll, unroll,
                    s->tile_k, (long long)K), false;
  const int na = accumulators(s, epilogue(m, i)), cols = s->tile_n / na;
  if (cols % (int)step[1]) return snprintf(why, len, "tile %dx%d: its sums in %d matrices of %d columns, not in steps of %u", s->tile_m, s->tile_n, na, cols, step[1]), false;
  if (na > 1 && (size_t)s->tile_m * (size_t)cols * 4 > shared)
    return snprintf(why, len, "tile %dx%d: the epilogue's %d bytes of sums exceed the %zu bytes of shared memory the driver leaves", s->tile_m, s->tile_n,
                    s->tile_m * cols * 4, shared), false;
  return true;
}

bool vk_coop_wg_rule(const kir_module *m, int i) { return vk_coop_wg_eligible(m, i) && epilogue(m, i) != WG_SHARED; }

void vk_coop_wg_schedule(kir_schedule *s) {
  s->variant = KS_MMA, s->wg_matrices = 1, s->fold_batch = true, s->split_k = 1, s->vector = 0;
  s->tile_m = VK_WG_TILE_M, s->tile_n = VK_WG_TILE_N, s->tile_k = VK_WG_K, s->stages = 1;
  s->threads[0] = VK_WG_THREADS, s->threads[1] = s->threads[2] = 1;
}

void vk_coop_wg_declare(emitter *e, int index) {
  const kir_schedule *s = &e->k->sched;
  const wg_epilogue how = epilogue(e->m, index);
  emit_line(e, "layout(local_size_x = %d) in;", s->threads[0]);
  vk_declare_buffers(e, index, true);
  emit_line(e, "layout(constant_id = 4) const int PC_WG_K = %d; /* B's rows: the k-step */", s->tile_k);
  emit_line(e, "layout(constant_id = 5) const int PC_WG_M = %d; /* the sums' rows: the tile's */", s->tile_m);
  if (how == WG_SHARED) emit_line(e, "shared float pc_C[%d]; /* one accumulator's sums */", s->tile_m * s->tile_n / accumulators(s, how));
  /* id 3, as a split-K kernel's phase (vk_split is 1 here) */
  if (how == WG_AFTER) emit_line(e, "layout(constant_id = 3) const int PC_PHASE = 0; /* 0: the tiles' sums stored; 1: the epilogue over them */");
}

/* accumulator j's sums (CW columns of them) stored into the output, rounded to its dtype, in its
 * 16-byte words; a moved tile writes its overlap's same values again */
static void store_matrix(emitter *e, int j, int CW) {
  const portc_dtype dt = e->m->buf[e->k->store[0].buf].dt;
  const int shift = dt == PORTC_F16 ? 3 : 2; /* elements a word: 8 f16, 4 f32 */
  char o[16], sums[64];
  snprintf(o, sizeof o, "%sv", emit_buf(e, e->k->store[0].buf));
  if (dt == PORTC_F16) snprintf(sums, sizeof sums, "fcoopmatNV<16, 2, PC_WG_M, %d>(c[%d])", CW, j);
  else snprintf(sums, sizeof sums, "c[%d]", j);
  emit_line(e, "coopMatStoreNV(%s, %s, (uint(m0) * uint(N) + uint(c0 + %d)) >> %d, uint(N >> %d), false);", sums, o, CW * j, shift, shift);
}

/* The epilogue on the one accumulator's elements, each in turn, where it needs nothing but them
 * (and constants): the value `elements` (the sums, or the sums plus a row vector, which the
 * accumulator started from) is each element as it lies; which row and column it is does not
 * matter. */
static void finish_elements(emitter *e, int elements) {
  emit_line(e, "[[unroll]] for (int i = 0; i < c[0].length(); i++) {");
  e->indent++;
  emit_scope_push(e);
  emit_bind(e, elements, "c[0][i]");
  const char *v = emit_value(e, e->k->store[0].val, NULL);
  emit_line(e, "c[0][i] = %s;", v);
  emit_scope_pop(e);
  e->indent--;
  emit_line(e, "}");
}

/* The second dispatch (PC_PHASE 1): the epilogue over the sums in the output, a 16-byte word an
 * invocation at a time (8 f16 or 4 f32 elements): the word loaded, its elements finished (bias,
 * GELU, ...), and stored back whole. */
static void finish_words(emitter *e) {
  const kir_kernel *k = e->k;
  const bool f16 = e->m->buf[k->store[0].buf].dt == PORTC_F16;
  const int epw = f16 ? 8 : 4; /* elements a word */
  const char *oidx[PORTC_MAX_RANK];
  char o[16];
  snprintf(o, sizeof o, "%sv", emit_buf(e, k->store[0].buf));
  emit_line(e, "for (int q = int(gl_GlobalInvocationID.x); q < M * (N / %d); q += int(gl_NumWorkGroups.x) * %d) {", epw, k->sched.threads[0]);
  e->indent++;
  emit_line(e, "const int m = q / (N / %d), nw = q %% (N / %d) * %d;", epw, epw, epw);
  emit_line(e, "const uvec4 w = %s[q];", o);
  emit_line(e, "uint h[%d];", epw);
  for (int c = 0; c < epw; c++) {
    emit_line(e, "{");
    e->indent++;
    emit_scope_push(e);
    emit_line(e, "const int n = nw + %d;", c);
    if (f16) emit_line(e, "const float acc0 = pc_ld_f16(w[%d] >> %d);", c / 2, 16 * (c % 2));
    else emit_line(e, "const float acc0 = uintBitsToFloat(w[%d]);", c);
    gpu_gemm_indices(e, oidx);
    const char *v = emit_value(e, k->store[0].val, oidx);
    if (f16) emit_line(e, "h[%d] = pc_st_f16(%s) & 0xffffu;", c, v);
    else emit_line(e, "h[%d] = floatBitsToUint(%s);", c, v);
    emit_scope_pop(e);
    e->indent--;
    emit_line(e, "}");
  }
  if (f16) emit_line(e, "%s[q] = uvec4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);", o);
  else emit_line(e, "%s[q] = uvec4(h[0], h[1], h[2], h[3]);", o);
  e->indent--;
  emit_line(e, "}");
}

void vk_coop_wg(emitter *e) {
  const kir_kernel *k = e->k;
  const kir_schedule *s = &k->sched;
  wg_elementwise ew; /* where how is WG_ELEMENTS */
  const wg_epilogue how = epilogue_of(e->m, (int)(k - e->m->k), &ew);
  const bool ahead = s->stages == 2;
  const int BM = s->tile_m, BN = s->tile_n, BK = s->tile_k, NA = accumulators(s, how), CW = BN / NA;
  char a[16], b[16]; /* the operands' views: 16-byte words, or f16 elements for tensor loads */
  const char view = s->wg_matrices == 2 ? 'h' : 'v';
  snprintf(a, sizeof a, "%s%c", emit_buf(e, k->in_buf[0]), view);
  snprintf(b, sizeof b, "%s%c", emit_buf(e, k->in_buf[1]), view);
  gpu_emit_gemm_rows(e);
  emit_line(e, "const int N = %lld, K = %lld;", (long long)k->mnk[1].c, (long long)k->mnk[2].c);
  if (how == WG_AFTER) {
    emit_line(e, "if (PC_PHASE == 1) { /* the second dispatch, over the output's words */");
    e->indent++;
    finish_words(e);
    emit_line(e, "return;");
    e->indent--;
    emit_line(e, "}");
  }
  /* work groups in order of their id take the tiles of 8 tile rows column by column (matmul.c) */
  emit_line(e, "const int gx = int(gl_NumWorkGroups.x), gy = int(gl_NumWorkGroups.y), pid = int(gl_WorkGroupID.y) * gx + int(gl_WorkGroupID.x);");
  emit_line(e, "const int first = pid / (8 * gx) * 8, rows = min(gy - first, 8), ty = first + pid %% (8 * gx) %% rows;");
  emit_line(e, "const int n0 = pid %% (8 * gx) / rows * %d, c0 = min(n0, N - %d); /* the tile's columns, moved back inside */", BN, BN);
  emit_line(e, "const int tid = int(gl_LocalInvocationID.x);");
  emit_line(e, "for (int mt = ty * %d; mt < M; mt += gy * %d) {", BM, BM);
  e->indent++;
  emit_line(e, "const int m0 = min(mt, M - %d);", BM);
  emit_line(e, "fcoopmatNV<32, 2, PC_WG_M, %d> c[%d];", CW, NA);
  if (ew.bias >= 0) { /* the sums start from the row vector: its tile's columns, a row of stride 0 */
    const int vb = k->val[ew.bias].buf;
    if (e->m->buf[vb].dt == PORTC_F16) { /* loaded as f16 sums, then widened */
      emit_line(e, "fcoopmatNV<16, 2, PC_WG_M, %d> cv;", CW);
      emit_line(e, "coopMatLoadNV(cv, %sv, uint(c0) >> 3, 0u, false);", emit_buf(e, vb));
      emit_line(e, "c[0] = fcoopmatNV<32, 2, PC_WG_M, %d>(cv);", CW);
    } else { /* (glslang 12 miscompiles a conversion of a matrix to its own type) */
      emit_line(e, "coopMatLoadNV(c[0], %sv, uint(c0) >> 2, 0u, false);", emit_buf(e, vb));
    }
  } else {
    emit_line(e, "[[unroll]] for (int j = 0; j < %d; j++) c[j] = fcoopmatNV<32, 2, PC_WG_M, %d>(0.0);", NA, CW);
  }
  emit_line(e, "fcoopmatNV<16, 2, %d, PC_WG_K> fa;", BM);
  emit_line(e, "fcoopmatNV<16, 2, PC_WG_K, %d> fb[%d];", CW, NA);
  if (s->wg_matrices == 2) {
    /* PC_LOAD(k0): the step's panels in f16 elements, which spirv_tensor.c makes tensor loads; each
     * offset is spelled row * stride + column, which the rewrite takes apart, and the columns are
     * masked to the multiples they are (of the k-step; of 8: N is one, and so is BN), which tells
     * the driver the panels' rows start on 16-byte words */
    emit_line(e, "#define PC_LOAD(k0) { coopMatLoadNV(fa, %s, uint(m0) * uint(K) + (uint(k0) & ~%du), uint(K), false); \\", a, BK - 1);
    emit_line(e, "  [[unroll]] for (int j = 0; j < %d; j++) coopMatLoadNV(fb[j], %s, uint(k0) * uint(N) + (uint(c0 + %d * j) & ~7u), uint(N), false); }",
              NA, b, CW);
  } else { /* PC_LOAD(k0): the step's panels, in 16-byte words (8 f16) */
    emit_line(e, "#define PC_LOAD(k0) { coopMatLoadNV(fa, %s, (uint(m0) * uint(K) + uint(k0)) >> 3, uint(K >> 3), false); \\", a);
    emit_line(e, "  [[unroll]] for (int j = 0; j < %d; j++) coopMatLoadNV(fb[j], %s, (uint(k0) * uint(N) + uint(c0 + %d * j)) >> 3, uint(N >> 3), false); }",
              NA, b, CW);
  }
  if (ahead) {
    emit_line(e, "fcoopmatNV<16, 2, %d, PC_WG_K> na;", BM);
    emit_line(e, "fcoopmatNV<16, 2, PC_WG_K, %d> nb[%d];", CW, NA);
    emit_line(e, "PC_LOAD(0);");
  }
  emit_line(e, "for (int kk = 0; kk < K; kk += %d) {", BK * unrolled(s));
  e->indent++;
  if (ahead) { /* the next step's panels are in flight while this step's products are issued */
    emit_line(e, "if (kk + %d < K) {", BK);
    emit_line(e, "  na = fa;");
    emit_line(e, "  [[unroll]] for (int j = 0; j < %d; j++) nb[j] = fb[j];", NA);
    emit_line(e, "  PC_LOAD(kk + %d);", BK);
    emit_line(e, "  [[unroll]] for (int j = 0; j < %d; j++) c[j] = coopMatMulAddNV(na, nb[j], c[j]);", NA);
    emit_line(e, "} else {");
    emit_line(e, "  [[unroll]] for (int j = 0; j < %d; j++) c[j] = coopMatMulAddNV(fa, fb[j], c[j]);", NA);
    emit_line(e, "}");
  } else { /* unroll steps a pass, written out (not left to the driver's choice) */
    for (int u = 0; u < unrolled(s); u++) {
      if (u) emit_line(e, "PC_LOAD(kk + %d);", u * BK);
      else emit_line(e, "PC_LOAD(kk);");
      emit_line(e, "[[unroll]] for (int j = 0; j < %d; j++) c[j] = coopMatMulAddNV(fa, fb[j], c[j]);", NA);
    }
  }
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "#undef PC_LOAD");
  if (how == WG_ELEMENTS && k->store[0].val != ew.elements) finish_elements(e, ew.elements);
  if (how != WG_SHARED) { /* plain, finished on the matrices' elements, or finished by the second dispatch */
    for (int j = 0; j < NA; j++) store_matrix(e, j, CW);
  } else { /* an accumulator at a time through shared memory; the elements an earlier tile owns are left to it */
    emit_line(e, "[[unroll]] for (int j = 0; j < %d; j++) {", NA);
    e->indent++;
    emit_line(e, "coopMatStoreNV(c[j], pc_C, 0u, %du, false);", CW);
    emit_line(e, "barrier();");
    emit_line(e, "for (int q = tid; q < %d; q += %d) {", BM * CW, s->threads[0]);
    e->indent++;
    emit_line(e, "const int m = m0 + q / %d, n = c0 + %d * j + q %% %d;", CW, CW, CW);
    emit_line(e, "if (m < mt || n < n0) continue;");
    emit_line(e, "const float acc0 = pc_C[q];");
    gpu_gemm_store(e);
    e->indent--;
    emit_line(e, "}");
    emit_line(e, "barrier(); /* every invocation has read the sums before the next are stored */");
    e->indent--;
    emit_line(e, "}");
  }
  e->indent--;
  emit_line(e, "}");
}
