/*
 * dialect_wgmma.c: the CUDA dialect's matmul for Hopper (sm_90a), for f16/bf16 operands read as
 * they lie (row-major A[M x K] and B[K x N], rows of whole 16-byte chunks), with f32 sums. A
 * block of three warpgroups computes a 128x256 tile:
 *  - warpgroup 0 produces: one of its threads has the tensor memory accelerator (TMA) copy the
 *    operands' 128x64 and 64x256 panels into CU_WG_STAGES shared-memory stages, in 128-byte rows
 *    swizzled as wgmma reads them, zeros past the matrix edges. A "full" mbarrier per stage counts
 *    the bytes in; the producer refills a stage once its "empty" mbarrier says both consumers are
 *    done with it. setmaxnreg hands most of the producer's registers to the consumers.
 *  - warpgroups 1 and 2 consume: each multiplies its 64 rows of the A panel by the whole B panel,
 *    four wgmma.m64n256k16 per stage, A read K-major and B N-major straight from shared memory
 *    through their descriptors, into 128 f32 sums per thread. One step's MMAs run while the next
 *    step's are issued; a stage is given back once the MMAs that read it are done.
 * The sums then go through shared memory (the stages' space, free once both consumers are past
 * their last stage), so that the epilogue runs as a loop over the tile's rows whose stores are
 * coalesced, as in the other matmul kernels (without bounds checks where the tile lies inside the
 * matrix: cu_epilogue_rows). The tensor maps of A and B are the kernel's last two
 * parameters; the runtime encodes them at each launch (runtime.c).
 *
 * The f32 form (tf32x3 in PORTC_CUDA_KERNELS) computes each product a b as three TF32 products
 * with f32 sums, a_hi b_hi + a_hi b_lo + a_lo b_hi, where x = x_hi + x_lo splits an f32 value
 * into two TF32 ones (pc_tf32_split); the dropped a_lo b_lo is below f32's rounding. wgmma reads
 * TF32 operands K-major only, so B's two parts are first written transposed, [N x K] each, by a
 * kernel of their own (kN_split, into the module's scratch, or kept where B is a parameter:
 * runtime.c); A's parts are made in registers, from A's panel as the TMA copied it, and given to
 * wgmma from there. A stage is A's 128x32 panel and B's two BNx32 ones: with 128x256 tiles (80 KB)
 * two stages fit, with 128x192 three, with 128x128 four (the schedule's choice):
 *
 *   kN_split:  B[K x N]  ->  B_hi^T [N x K], B_lo^T [N x K]
 *   kN:        per k-step of 32: TMA A, B_hi^T, B_lo^T -> consumers split A's rows in registers,
 *              12 wgmma.m64nBNk8 (4 k-steps of 8, three products each)
 *
 * Written from the PTX ISA's descriptions (the shared-memory matrix layouts of wgmma, the
 * tensor-copy and mbarrier instructions); compiled by compile_all for sm_90a, run in
 * tests/cuda_emulate, and on an H200 (f16/bf16) and an H100 (f32) through the conformance suite,
 * memcheck and racecheck (taken by default on compute capability 9.0; PORTC_CUDA_KERNELS,
 * schedule.c). The f16/bf16 form with 128x128 tiles is the ping-pong one of dialect_pingpong.c
 * (persistent, a consumer a tile).
 *
 * In clusters of two (the f16/bf16 form with the schedule's cluster = 2), the cluster's blocks
 * take the row tiles 2u and 2u + 1 of one "unit" u, whose B panel is the same: each block's
 * producer loads half of B's boxes (rank r: boxes 2r and 2r + 1) into both blocks' stages at once
 * (TMA multicast), its bytes completing on both blocks' "full" barriers, so that a block reads a
 * third fewer bytes from L2 a k-step (cuBLASLt's own 8192^3 kernel runs so, in clusters of 2). A
 * stage is loaded again only when the consumers of both blocks are done with it: its "empty"
 * barrier counts four arrivals, each consumer arriving on both blocks'. A cluster barrier follows
 * the barriers' making, and another comes before exit. The epilogue may reuse the stages' space:
 * a block's consumers pass their last "full" wait only once every copy into its stages is done.
 * Where the rows end in a unit's first tile, its second block computes zeros it does not store.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../ir/dtype.h"
#include "../codegen/gpu_kernels.h"
#include "cu.h"
#include "dialect_mma.h"

/* the schedule's tile: BN columns (256 for f16/bf16; 256, 192 or 128 in f32) and its stages; ACC
 * f32 sums per consumer thread (64 x BN over 128 threads) */
#define BN (e->k->sched.tile_n)
#define STAGES (e->k->sched.stages)
#define ACC (BN / 2)

/* the consumer's wgmma, a lambda of the kernel's own (its bn / 2 sums are as many operands; the
 * kernel's array d, or with sums_arg the lambda's first argument, float (&d)[bn / 2]):
 *  - f16/bf16: d[64xBN] += a[64x16] b[16xBN], a K-major, b N-major (imm-trans-b 1), both in
 *    shared memory;
 *  - f32: d[64xBN] += a[64x8] b[8xBN], a a TF32 fragment in registers (a0..a3: row g, k t; row
 *    g + 8, k t; row g, k t + 4; row g + 8, k t + 4 of the warp's 16 rows, g the lane / 4, t the
 *    lane % 4), b K-major in shared memory */
void cu_wgmma_lambda(emitter *e, int bn, bool f32, bool sums_arg) {
  const kir_kernel *k = e->k;
  const char *t = e->m->buf[k->in_buf[0]].dt == PORTC_BF16 ? "bf16" : "f16";
  const int acc = bn / 2;
  strbuf regs = {0}, ops = {0};
  for (int i = 0; i < acc; i++) {
    sb_printf(&regs, "%s%%%d", i ? ", " : "", i);
    sb_printf(&ops, "%s\"+f\"(d[%d])", i ? ", " : "", i);
  }
  char *r = emit_take(e, &regs), *o = emit_take(e, &ops), sums[32] = "";
  if (sums_arg) snprintf(sums, sizeof sums, "float (&d)[%d], ", acc);
  if (f32) {
    emit_line(e, "auto mma = [&](%sconst unsigned *a, uint64_t b) {", sums);
    emit_line(e, "  asm volatile(\"wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32 {%s}, {%%%d, %%%d, %%%d, %%%d}, %%%d, 1, 1, 1;\\n\"", bn,
              r ? r : "", acc, acc + 1, acc + 2, acc + 3, acc + 4);
  } else {
    emit_line(e, "auto mma = [&](%suint64_t a, uint64_t b) {", sums);
    emit_line(e, "  asm volatile(\"wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, %%%d, %%%d, 1, 1, 1, 0, 1;\\n\"", bn, t, t,
              r ? r : "", acc, acc + 1);
  }
  emit_line(e, "               : %s", o ? o : "");
  emit_line(e, f32 ? "               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(b));" : "               : \"l\"(a), \"l\"(b));");
  emit_line(e, "};");
  free(r);
  free(o);
}

/* the producer: stage s of k-step kt is A's box at (kt * BK, m0) and B's: f16/bf16, its 64-column
 * boxes at (n0 + 64 j, kt * BK); f32, the BNx32 boxes of its two parts at (kt * 32, n0) */
static void producer(emitter *e, bool f32, int cl) {
  const int bk = f32 ? CU_WT_BK : CU_WG_BK, A_STAGE = CU_WG_BM * bk, B_STAGE = bk * BN, B_BOX = bk * 64, share = BN / 64 / cl;
  emit_line(e, "if (wg == 0) {");
  e->indent++;
  emit_line(e, "pc_regs_dec<40>();");
  emit_line(e, "if (tid == 0)");
  emit_line(e, "  for (int kt = 0; kt < KT; kt++) {");
  emit_line(e, "    const int s = kt %% %d;", STAGES);
  emit_line(e, "    if (kt >= %d) pc_mbar_wait(&empty[s], (kt / %d - 1) & 1); /* %s are done with its last use */", STAGES, STAGES,
            cl > 1 ? "both blocks' consumers" : "both consumers");
  emit_line(e, "    pc_mbar_expect(&full[s], %d);", f32 ? (A_STAGE + 2 * B_STAGE) * 4 : (A_STAGE + B_STAGE) * 2);
  emit_line(e, "    pc_tma_load(As + s * %d, &pc_ta, &full[s], kt * %d, m0);", A_STAGE, bk);
  if (f32) {
    emit_line(e, "    pc_tma_load(Bh + s * %d, &pc_tb, &full[s], kt * %d, n0);", B_STAGE, bk);
    emit_line(e, "    pc_tma_load(Bl + s * %d, &pc_tc, &full[s], kt * %d, n0);", B_STAGE, bk);
  } else if (cl > 1) { /* this block's share of B's boxes, into both blocks */
    emit_line(e, "    _Pragma(\"unroll\") for (int j = rank * %d; j < rank * %d + %d; j++)", share, share, share);
    emit_line(e, "      pc_tma_load_mc(Bs + s * %d + j * %d, &pc_tb, &full[s], n0 + j * 64, kt * %d, %d);", B_STAGE, B_BOX, bk, (1 << cl) - 1);
  } else {
    emit_line(e, "    _Pragma(\"unroll\") for (int j = 0; j < %d; j++) pc_tma_load(Bs + s * %d + j * %d, &pc_tb, &full[s], n0 + j * 64, kt * %d);",
              BN / 64, B_STAGE, B_BOX, bk);
  }
  emit_line(e, "  }");
  e->indent--;
  emit_line(e, "} else { /* one if/else of the two roles: setmaxnreg takes effect so */");
}

void cu_wgmma_release(int cl, char *out, size_t len) {
  if (cl > 1) snprintf(out, len, "pc_mbar_arrive_cluster<%d>", cl);
  else snprintf(out, len, "pc_mbar_arrive");
}

void cu_wgmma_kstep(emitter *e, const char *pos, int stages, const char *release, void (*mmas)(emitter *e)) {
  emit_line(e, "const int s = %s %% %d;", pos, stages);
  emit_line(e, "pc_mbar_wait(&full[s], (%s / %d) & 1);", pos, stages);
  emit_line(e, "pin();");
  emit_line(e, "pc_wg_fence();");
  mmas(e);
  emit_line(e, "pc_wg_commit();");
  emit_line(e, "pc_wg_wait<1>(); /* the previous step's MMAs are done: its stage is free */");
  emit_line(e, "pin();");
  emit_line(e, "if (kt > 0 && tid == 0) %s(&empty[(%s - 1) %% %d]);", release, pos, stages);
}

/* a consumer's MMAs of stage s: its 64 rows of A's panel (c) times B's, four k-steps of 16 */
static void consumer_mmas(emitter *e) {
  const int A_STAGE = CU_WG_BM * CU_WG_BK, B_STAGE = CU_WG_BK * BN, B_BOX = CU_WG_BK * 64;
  emit_line(e, "_Pragma(\"unroll\") for (int kk = 0; kk < %d; kk++)", CU_WG_BK / 16);
  emit_line(e, "  mma(pc_wg_desc(As + s * %d + c * %d + kk * 16, 16, 1024), pc_wg_desc(Bs + s * %d + kk * %d, %d, 1024));", A_STAGE, 64 * CU_WG_BK, B_STAGE, 16 * 64, B_BOX * 2);
}

/* a consumer: its 64 rows of each stage's A panel (64 rows of 128 bytes, 8-row groups 1024
 * bytes apart; a k-step of 16 is 32 bytes along the swizzled row) times the B panel (four boxes
 * of 64 columns, BK rows of 128 bytes each, 8192 bytes apart; a k-step of 16 is 16 rows) */
static void consumer(emitter *e, const char *release) {
  emit_line(e, "pc_regs_inc<232>();");
  emit_line(e, "float d[%d];", ACC);
  emit_line(e, "_Pragma(\"unroll\") for (int i = 0; i < %d; i++) d[i] = 0.0f;", ACC);
  cu_wgmma_lambda(e, BN, false, false);
  /* the sums stay in their registers across the asynchronous MMAs: nothing may move them between
   * the fence before the MMAs and the wait after them */
  emit_line(e, "auto pin = [&]() { _Pragma(\"unroll\") for (int i = 0; i < %d; i++) asm volatile(\"\" : \"+f\"(d[i])::\"memory\"); };", ACC);
  emit_line(e, "const int c = wg - 1;");
  emit_line(e, "for (int kt = 0; kt < KT; kt++) {");
  e->indent++;
  cu_wgmma_kstep(e, "kt", STAGES, release, consumer_mmas);
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "pc_wg_wait<0>();");
  emit_line(e, "pin();");
}

/* the f32 form's consumer: per stage, its 16 elements of A's fragments for the 4 k-steps, read
 * from the swizzled panel (row r's 16-byte chunk j at chunk j ^ (r % 8); rows of 32 floats) and
 * split; then per k-step the three products, the small ones first. The stage's MMAs are waited
 * for before the next stage's fragments are made: the fragments' registers are the MMAs'
 * operands until then (pinned), and the other consumer's MMAs keep the tensor cores busy. */
static void consumer_tf32(emitter *e) {
  const int A_STAGE = CU_WG_BM * CU_WT_BK, B_STAGE = BN * CU_WT_BK, FR = CU_WT_BK / 8 * 4;
  emit_line(e, "pc_regs_inc<232>();");
  emit_line(e, "float d[%d];", ACC);
  emit_line(e, "_Pragma(\"unroll\") for (int i = 0; i < %d; i++) d[i] = 0.0f;", ACC);
  cu_wgmma_lambda(e, BN, true, false);
  emit_line(e, "unsigned hi[%d], lo[%d]; /* a k-step's fragment at 4 kk: a0..a3 */", FR, FR);
  emit_line(e, "auto pin = [&]() {");
  emit_line(e, "  _Pragma(\"unroll\") for (int i = 0; i < %d; i++) asm volatile(\"\" : \"+f\"(d[i])::\"memory\");", ACC);
  emit_line(e, "  _Pragma(\"unroll\") for (int i = 0; i < %d; i++) asm volatile(\"\" : \"+r\"(hi[i]), \"+r\"(lo[i])::\"memory\");", FR);
  emit_line(e, "};");
  emit_line(e, "const int c = wg - 1;");
  emit_line(e, "const int r0 = c * 64 + (tid >> 5) * 16 + (tid & 31) / 4, t = tid & 3; /* rows r0 and r0 + 8, the same %% 8 */");
  emit_line(e, "for (int kt = 0; kt < KT; kt++) {");
  e->indent++;
  emit_line(e, "const int s = kt %% %d;", STAGES);
  emit_line(e, "pc_mbar_wait(&full[s], (kt / %d) & 1);", STAGES);
  emit_line(e, "const float *const a = As + s * %d;", A_STAGE);
  emit_line(e, "_Pragma(\"unroll\") for (int f = 0; f < %d; f++) {", FR);
  emit_line(e, "  const int r = r0 + (f & 1) * 8, chunk = (f / 4 * 2 + (f >> 1 & 1)) ^ (r0 & 7);");
  emit_line(e, "  pc_tf32_split(a[r * %d + chunk * 4 + t], hi[f], lo[f]);", CU_WT_BK);
  emit_line(e, "}");
  emit_line(e, "pin();");
  emit_line(e, "pc_wg_fence();");
  emit_line(e, "_Pragma(\"unroll\") for (int kk = 0; kk < %d; kk++) {", CU_WT_BK / 8);
  emit_line(e, "  const uint64_t bh = pc_wg_desc(Bh + s * %d + kk * 8, 16, 1024), bl = pc_wg_desc(Bl + s * %d + kk * 8, 16, 1024);", B_STAGE,
            B_STAGE);
  emit_line(e, "  mma(lo + kk * 4, bh);");
  emit_line(e, "  mma(hi + kk * 4, bl);");
  emit_line(e, "  mma(hi + kk * 4, bh);");
  emit_line(e, "}");
  emit_line(e, "pc_wg_commit();");
  emit_line(e, "pc_wg_wait<0>();");
  emit_line(e, "pin();");
  emit_line(e, "if (tid == 0) pc_mbar_arrive(&empty[s]);");
  e->indent--;
  emit_line(e, "}");
}

void cu_wgmma_begin(emitter *e) {
  const kir_kernel *k = e->k;
  char N[32], K[32];
  gpu_emit_gemm_rows(e);
  emit_line(e, "const int N = %s, K = %s;", emit_dim(e, k->mnk[1], N, sizeof N), emit_dim(e, k->mnk[2], K, sizeof K));
  emit_line(e, "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)");
  emit_line(e, "extern __shared__ __align__(128) unsigned char pc_smem_raw[];");
  emit_line(e, "unsigned char *const base = pc_smem_raw + ((1024 - (pc_saddr(pc_smem_raw) & 1023)) & 1023); /* the swizzle's period */");
  emit_line(e, "typedef %s T;", dialect_spelling(e->d, DT_STORAGE, e->m->buf[k->in_buf[0]].dt));
}

void cu_wgmma_end(emitter *e) {
  emit_line(e, "#else");
  emit_line(e, "#error \"Hopper's matmul compiles for sm_90a alone (cu_compile_arch)\"");
  emit_line(e, "#endif");
}

void cu_emit_wgmma(emitter *e) {
  const kir_kernel *k = e->k;
  if (cu_wgmma_pingpong(e->m, k)) {
    cu_emit_wgmma_pingpong(e);
    return;
  }
  const bool f32 = e->m->buf[k->in_buf[0]].dt == PORTC_F32;
  const int bk = f32 ? CU_WT_BK : CU_WG_BK, stages = STAGES, cl = !f32 && k->sched.cluster > 1 ? k->sched.cluster : 1;
  char release[48];
  cu_wgmma_release(cl, release, sizeof release);
  const int CS = BN + 8; /* the sums' padded row in shared memory, in floats */
  cu_wgmma_begin(e);
  if (f32) {
    emit_line(e, "T *const As = (T *)base, *const Bh = As + %d, *const Bl = Bh + %d;", stages * CU_WG_BM * bk, stages * BN * bk);
    emit_line(e, "uint64_t *const full = (uint64_t *)(Bl + %d), *const empty = full + %d;", stages * BN * bk, stages);
  } else {
    emit_line(e, "T *const As = (T *)base, *const Bs = As + %d;", stages * CU_WG_BM * bk);
    emit_line(e, "uint64_t *const full = (uint64_t *)(Bs + %d), *const empty = full + %d;", stages * bk * BN, stages);
  }
  emit_line(e, "const int wg = threadIdx.x >> 7, tid = threadIdx.x & 127;");
  /* tiles in groups of 8 row tiles, column by column; a cluster's cl blocks (a block alone: 1) take
   * the row tiles cl u to cl u + cl - 1 of its unit u, the block's the rank-th of them */
  const int G = 8 / cl; /* units a group */
  emit_line(e, "const int rank = blockIdx.x %% %d, pid = blockIdx.y * (gridDim.x / %d) + blockIdx.x / %d, width = %d * (gridDim.x / %d);", cl, cl, cl,
            G, cl);
  emit_line(e, "const int first = pid / width * %d, gsz = min((int)gridDim.y - first, %d);", G, G);
  emit_line(e, "const int m0 = ((first + pid %% width %% gsz) * %d + rank) * %d, n0 = pid %% width / gsz * %d;", cl, CU_WG_BM, BN);
  emit_line(e, "const int KT = (K + %d) / %d;", bk - 1, bk);
  emit_line(e, "if (threadIdx.x == 0) {");
  emit_line(e, "  _Pragma(\"unroll\") for (int s = 0; s < %d; s++) pc_mbar_init(&full[s], 1), pc_mbar_init(&empty[s], %d);", stages, 2 * cl);
  emit_line(e, "  pc_mbar_init_fence();");
  emit_line(e, "}");
  if (cl > 1) emit_line(e, "pc_cluster_sync(); /* the cluster's barriers are made before either block's copies and arrivals */");
  else emit_line(e, "__syncthreads();");
  producer(e, f32, cl);
  e->indent++;
  if (f32) consumer_tf32(e);
  else consumer(e, release);
  /* accumulator i: row 16 w + lane/4 (+8 for i % 4 >= 2), column 8 (i / 4) + 2 (lane % 4) + i % 2 */
  emit_line(e, "float *const Cs = (float *)base;");
  emit_line(e, "pc_consumers_sync(); /* both consumers are past their last stage */");
  emit_line(e, "{");
  emit_line(e, "  const int r = c * 64 + (tid >> 5) * 16 + (tid & 31) / 4, col = (tid & 3) * 2;");
  emit_line(e, "  _Pragma(\"unroll\") for (int i = 0; i < %d; i += 4) {", ACC);
  emit_line(e, "    *(float2 *)&Cs[r * %d + i * 2 + col] = make_float2(d[i], d[i + 1]);", CS);
  emit_line(e, "    *(float2 *)&Cs[(r + 8) * %d + i * 2 + col] = make_float2(d[i + 2], d[i + 3]);", CS);
  emit_line(e, "  }");
  emit_line(e, "}");
  emit_line(e, "pc_consumers_sync();");
  /* the 256 consumer threads store 256 / BN rows a pass (BN = 192: one, 64 threads idle). A tile
   * inside the matrix takes a loop without bounds checks: unrolled and free of branches, its rows'
   * loads and activations interleave (with two warps per scheduler, a row at a time waits on
   * each load), and a load that depends on the column alone (a bias) is made once */
  const int RP = 256 / BN;
  emit_line(e, "const int j = threadIdx.x - 128, n = n0 + j %% %d;", BN);
  emit_line(e, "if (j < %d && m0 + %d <= M && n0 + %d <= N) {", RP * BN, CU_WG_BM, BN);
  cu_epilogue_rows(e, CU_WG_BM, RP, BN, false, false);
  emit_line(e, "} else if (j < %d) {", RP * BN);
  cu_epilogue_rows(e, CU_WG_BM, RP, BN, false, true);
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
  if (cl > 1) emit_line(e, "pc_cluster_sync(); /* the other block arrives on this one's barriers no more */");
  cu_wgmma_end(e);
}

/* `kN_split(b, out, K, N)`: B [K x N] (f32, row-major) as its two TF32 parts, transposed: out
 * holds B_hi^T [N x K], then B_lo^T [N x K]. 32x32 tiles through shared memory, so that both the
 * reads (along n) and the writes (along k) are coalesced; blocks of 32 x 8 threads. */
void cu_emit_tf32_split(emitter *e, int index) {
  const int T = CU_WT_SPLIT_TILE;
  emit_line(e, "PC_KERNEL void __launch_bounds__(%d) k%d_split(const float *__restrict__ b, float *__restrict__ out, const int K, const int N) {",
            T * 8, index);
  e->indent++;
  emit_line(e, "__shared__ float tile[%d][%d];", T, T + 1);
  emit_line(e, "const int n0 = blockIdx.x * %d, k0 = blockIdx.y * %d;", T, T);
  emit_line(e, "for (int r = threadIdx.y; r < %d; r += 8) {", T);
  emit_line(e, "  const int k = k0 + r, n = n0 + threadIdx.x;");
  emit_line(e, "  tile[r][threadIdx.x] = k < K && n < N ? b[(size_t)k * N + n] : 0.0f;");
  emit_line(e, "}");
  emit_line(e, "__syncthreads();");
  emit_line(e, "for (int r = threadIdx.y; r < %d; r += 8) {", T);
  emit_line(e, "  const int n = n0 + r, k = k0 + threadIdx.x;");
  emit_line(e, "  if (n >= N || k >= K) continue;");
  emit_line(e, "  unsigned hi, lo;");
  emit_line(e, "  pc_tf32_split(tile[threadIdx.x][r], hi, lo);");
  emit_line(e, "  out[(size_t)n * K + k] = __uint_as_float(hi);");
  emit_line(e, "  out[((size_t)N + n) * K + k] = __uint_as_float(lo);");
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
}
