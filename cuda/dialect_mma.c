/*
 * dialect_mma.c: the tensor-core matmul of the CUDA dialect, for f16/bf16 operands read as they
 * lie (row-major A[M x K] and B[K x N], rows of whole 16-byte chunks), with f32 sums. A block of
 * 8 warps computes a 128x128 tile: the operands' 128x64 and 64x128 panels stream through
 * CU_MMA_STAGES shared-memory stages with cp.async (zeros past the edges), warps load their
 * fragments with ldmatrix (padded rows: no bank conflicts) and each computes 64x32 of the tile
 * with mma.sync.m16n8k16 (a channels-last convolution of 64 output channels or fewer: a 128x64
 * tile, 4 x 2 warps of 32x32); the sums then go through shared memory to the epilogue. Tiles
 * are visited in groups of 8 tile rows so that the panels a wave of blocks reads stay in L2.
 * Convolutions (groups 1, f16/bf16) run the same kernel as their implicit GEMM: the weights are A,
 * and B's panels are gathered from the input, each thread one output pixel's column. Where its
 * tiles leave SMs idle the convolution splits its reduction (schedule.c: grid z is the slice, whole
 * k-steps each), writes partial sums, and its kN_epi adds them and applies the epilogue.
 * (128x256 tiles, with warps of 64x64 and so one block per SM, measured slower on H100.)
 */
#include <stdio.h>

#include "../ir/dtype.h"
#include "../codegen/gpu_kernels.h"
#include "cu.h"
#include "dialect_mma.h"

/* a convolution's B panel: rows k0.. of its implicit GEMM's [K x N] matrix, gathered from the
 * input (each thread one column, the pixel it decoded once per tile; zeros past the edges and
 * in the padding). `fetch` loads a panel into registers, every load in flight at once, before
 * the MMAs of the current stage; `put` stores it as T into a stage's padded rows after them, so
 * the MMAs hide the gather's latency. (Loaded and stored in one step, 4 loads at a time, the
 * gather was most of the time: ResNet-18 under --autocast f16 took 4.85 ms on the H200, 3.71 ms
 * since.) A row k of the panel is the same input channel and window offset for every pixel, so
 * 64 threads decode the panel's rows once, a step ahead, into a table in shared memory (`decode`:
 * the offset in the image, and the row and column in the window); the gather reads a row's entry
 * (one address for the whole warp) instead of dividing k by the window in every thread. */
enum { CONV_GATHER = CU_MMA_BK * CU_MMA_BN / CU_MMA_THREADS }; /* B elements per thread per panel */

static void conv_gather(emitter *e, int BS) {
  const node *n = &e->m->g->nodes[e->k->node];
  emit_line(e, "int2 *const tab = (int2 *)(Bs + %d); /* per stage, row r of the panel: {offset, row << 16 | column} */",
            CU_MMA_STAGES * CU_MMA_BK * BS);
  emit_line(e, "auto decode = [&](int slot, int k0) { /* threads 0..%d: the table of the panel at k0 */", CU_MMA_BK - 1);
  emit_line(e, "  const int kk = k0 + tid, dh = kk / KW %% KH * %lld, dw = kk %% KW * %lld;", (long long)attr_or_one(n, "dilation", 0),
            (long long)attr_or_one(n, "dilation", 1));
  emit_line(e, "  if (tid < %d) tab[slot * %d + tid] = kk < K ? make_int2(kk / (KH * KW) * H * W + dh * W + dw, dh << 16 | dw) : make_int2(0, 0x7fff << 16);",
            CU_MMA_BK, CU_MMA_BK);
  emit_line(e, "};");
  emit_line(e, "T rv[%d];", CONV_GATHER);
  emit_line(e, "auto fetch = [&](int slot) {");
  emit_line(e, "  _Pragma(\"unroll\") for (int q = 0; q < %d; q++) {", CONV_GATHER);
  emit_line(e, "    const int2 t = tab[slot * %d + (tid >> 7) + 2 * q];", CU_MMA_BK);
  emit_line(e, "    const int ih = ih0 + (t.y >> 16), iw = iw0 + (t.y & 0xffff);");
  emit_line(e, "    rv[q] = cn < N && (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W ? xb[corner + t.x] : zero;");
  emit_line(e, "  }");
  emit_line(e, "};");
  emit_line(e, "auto put = [&](int slot) {");
  emit_line(e, "  T *bs = Bs + slot * %d;", CU_MMA_BK * BS);
  emit_line(e, "  _Pragma(\"unroll\") for (int q = 0; q < %d; q++) bs[((tid >> 7) + 2 * q) * %d + (tid & 127)] = rv[q];", CONV_GATHER, BS);
  emit_line(e, "};");
}

/* Row k of a 1x1 convolution's B panel (stride 1, no padding) is input channel k at the panel's
 * pixels: where an image's pixels (H x W) are a multiple of 8, every aligned run of 8 columns is
 * 16 contiguous bytes of one image, which cp.async copies as it copies a matmul's B. */
bool cu_conv_direct(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  const node *n = &m->g->nodes[k->node];
  const shape *xs = &m->buf[k->in_buf[0]].sh, *ws = &m->buf[k->in_buf[1]].sh;
  const attr *pad = attr_get(n, "padding");
  if (k->kind != KK_CONV || gpu_conv_last(m, k) || ws->d[2].c != 1 || ws->d[3].c != 1 || attr_or_one(n, "stride", 0) != 1 || attr_or_one(n, "stride", 1) != 1)
    return false;
  for (int d = 0; pad && d < pad->n; d++)
    if (pad->v[d]) return false;
  return xs->d[2].sym < 0 && xs->d[3].sym < 0 && xs->d[2].c * xs->d[3].c % 8 == 0;
}

/* A channels-last convolution's A panel: rows m0.. of its implicit GEMM's [pixels x KH*KW*C]
 * matrix. With C a multiple of 8, a run of 8 columns is 8 channels of one input pixel, 16
 * contiguous bytes, which cp.async copies as it copies a matmul's A (zeros past the image and in
 * the padding). Each thread copies the same 8 columns of 4 rows in every panel: it decodes its
 * rows' pixels once, and its columns' window position once a panel. */
enum { LAST_ROWS = CU_MMA_BM * CU_MMA_BK / 8 / CU_MMA_THREADS }; /* A rows per thread per panel */

static void conv_last_rows(emitter *e) {
  const node *n = &e->m->g->nodes[e->k->node];
  emit_line(e, "/* channels last: this thread's rows (output pixels) of every A panel, and their windows' corners */");
  emit_line(e, "const T *xr[%d];", LAST_ROWS);
  emit_line(e, "int xh[%d], xw[%d];", LAST_ROWS, LAST_ROWS);
  emit_line(e, "_Pragma(\"unroll\") for (int q = 0; q < %d; q++) {", LAST_ROWS);
  emit_line(e, "  const int gm = m0 + (tid + q * %d) / %d, img = gm / (OH * OW);", CU_MMA_THREADS, CU_MMA_BK / 8);
  emit_line(e, "  xr[q] = A + (int64_t)(gm < M ? img : 0) * H * W * C;");
  emit_line(e, "  xh[q] = gm < M ? gm / OW %% OH * %lld - %lld : -(1 << 30); /* a row past M: outside every image */",
            (long long)attr_or_one(n, "stride", 0), (long long)attr_get(n, "padding")->v[0]);
  emit_line(e, "  xw[q] = gm %% OW * %lld - %lld;", (long long)attr_or_one(n, "stride", 1), (long long)attr_get(n, "padding")->v[1]);
  emit_line(e, "}");
}

static void conv_last_load(emitter *e) {
  const node *n = &e->m->g->nodes[e->k->node];
  emit_line(e, "  const int cc = tid %% %d * 8, kk = k0 + cc, ci = kk %% C, win = kk / C;", CU_MMA_BK / 8);
  emit_line(e, "  const int dh = win / KW * %lld, dw = win %% KW * %lld;", (long long)attr_or_one(n, "dilation", 0),
            (long long)attr_or_one(n, "dilation", 1));
  emit_line(e, "  _Pragma(\"unroll\") for (int q = 0; q < %d; q++) {", LAST_ROWS);
  emit_line(e, "    const int r = (tid + q * %d) / %d, ih = xh[q] + dh, iw = xw[q] + dw;", CU_MMA_THREADS, CU_MMA_BK / 8);
  emit_line(e, "    const bool ok = kk < K && (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W;");
  emit_line(e, "    pc_cp16(as + r * %d + cc, ok ? xr[q] + ((int64_t)ih * W + iw) * C + ci : A, ok);", CU_MMA_BK + 8);
  emit_line(e, "  }");
}

/* The epilogue: the sums go through shared memory (the stages' space, every copy into it done and
 * every warp past its last read at the barrier), so that each thread then takes one column of the
 * tile and the warp's stores (and the residual's or bias's loads) of a row are 32 neighbouring
 * elements. Stored from the fragments as they lie, a warp's store touched 8 rows of 4 neighbouring
 * pairs: a quarter of each sector it wrote, which kept ResNet-50's 1x1 convolutions with a residual
 * (memory-bound: one or a few k-steps) at 500-770 GB/s on the H100. A tile inside the matrix takes
 * a loop without bounds checks. */
_Static_assert(CU_MMA_BM * (CU_MMA_BN + 8) * 4 <= CU_MMA_STAGES * (CU_MMA_BM * (CU_MMA_BK + 8) + CU_MMA_BK * (CU_MMA_BN + 8)) * 2,
               "the tile's sums fit in the stages' shared memory");

/* Cs's rows are bn + 8 floats apart: a half-warp's float2 stores of 4 rows then hit 32 banks */
void cu_epilogue_rows(emitter *e, int rows, int rows_a_pass, int bn, bool conv, bool edge) {
  char sum[48];
  snprintf(sum, sizeof sum, "Cs[r * %d + j %% %d]", bn + 8, bn);
  e->indent++;
  emit_line(e, "_Pragma(\"unroll 8\") for (int i = 0; i < %d; i++) {", rows / rows_a_pass);
  e->indent++;
  emit_line(e, "const int r = i * %d + j / %d, m = m0 + r;", rows_a_pass, bn);
  if (edge) emit_line(e, "if (m >= M || n >= N) continue;");
  if (conv) {
    gpu_conv_element(e, sum);
  } else {
    emit_line(e, "const float acc0 = %s;", sum);
    gpu_gemm_store(e);
  }
  e->indent--;
  emit_line(e, "}");
  e->indent--;
}

static void epilogue(emitter *e, int BN, int MI, int WM, int NJ, int WN, bool conv) {
  const int CS = BN + 8;
  emit_line(e, "__syncthreads(); /* every warp is done with the stages: the sums go through their space */");
  emit_line(e, "float *const Cs = (float *)pc_smem;");
  /* accumulator h of tile (i, j): row lane/4 (+8 for h >= 2), column 2 (lane % 4) + h % 2 */
  emit_line(e, "_Pragma(\"unroll\") for (int i = 0; i < %d; i++)", MI);
  emit_line(e, "_Pragma(\"unroll\") for (int j = 0; j < %d; j++) {", NJ);
  emit_line(e, "  const int r = wm * %d + i * 16 + (lane >> 2), c = wn * %d + j * 8 + (lane & 3) * 2;", WM, WN);
  emit_line(e, "  *(float2 *)&Cs[r * %d + c] = make_float2(acc[i][j][0], acc[i][j][1]);", CS);
  emit_line(e, "  *(float2 *)&Cs[(r + 8) * %d + c] = make_float2(acc[i][j][2], acc[i][j][3]);", CS);
  emit_line(e, "}");
  emit_line(e, "__syncthreads();");
  emit_line(e, "const int j = tid, n = n0 + j %% %d;", BN);
  emit_line(e, "if (m0 + %d <= M && n0 + %d <= N) {", CU_MMA_BM, BN);
  cu_epilogue_rows(e, CU_MMA_BM, CU_MMA_THREADS / BN, BN, conv, false);
  emit_line(e, "} else {");
  cu_epilogue_rows(e, CU_MMA_BM, CU_MMA_THREADS / BN, BN, conv, true);
  emit_line(e, "}");
}

/* matmul: A[M x K] and B[K x N] as they lie; conv2d (groups 1): A the weights [O x C*KH*KW] as
 * they lie, B the input gathered as its implicit GEMM's columns (one per output pixel), or copied
 * as it lies (cu_conv_direct); channels last, A the input's pixels (conv_last_rows) and B the
 * weights [KH*KW*C x O] as they lie */
void cu_emit_mma(emitter *e) {
  const kir_kernel *k = e->k;
  const bool conv = k->kind == KK_CONV, last = gpu_conv_last(e->m, k);
  const bool gather = conv && !last && !cu_conv_direct(e->m, (int)(k - e->m->k));
  int a = k->in_buf[conv && !last ? 1 : 0], b = k->in_buf[conv && !last ? 0 : 1];
  const char *T = dialect_spelling(e->d, DT_STORAGE, e->m->buf[a].dt);
  /* the tile's columns (the schedule's: 128, or 64 for a channels-last convolution of 64 output
   * channels or fewer) and the warps over it: 2 x 4 warps of 64x32, or 4 x 2 of 32x32 */
  const int BN = k->sched.tile_n, WGM = BN == 64 ? 4 : 2, WM = CU_MMA_BM / WGM, MI = WM / 16, WN = BN * WGM / 8, NJ = WN / 8;
  const int AS = CU_MMA_BK + 8, BS = BN + 8;                             /* padded row strides in elements */
  char N[32], K[32];
  if (conv) {
    gpu_conv_gemm_sizes(e);
    gpu_conv_k_range(e, CU_MMA_BK); /* [KB, KE): with split-K, this block's slice of whole k-steps */
  } else {
    gpu_emit_gemm_rows(e);
    emit_line(e, "const int N = %s, K = %s;", emit_dim(e, k->mnk[1], N, sizeof N), emit_dim(e, k->mnk[2], K, sizeof K));
    emit_line(e, "const int KB = 0, KE = K;");
  }
  emit_line(e, "extern __shared__ __align__(16) unsigned char pc_smem[];");
  emit_line(e, "typedef %s T;", T);
  emit_line(e, "T *const As = (T *)pc_smem, *const Bs = As + %d * %d;", CU_MMA_STAGES, CU_MMA_BM * AS);
  emit_line(e, "const T *const A = %s, *const B = %s;", emit_buf(e, a), emit_buf(e, b));
  emit_line(e, "const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp %% %d, wn = warp / %d;", WGM, WGM);
  emit_line(e, "const int pid = blockIdx.y * gridDim.x + blockIdx.x, width = 8 * gridDim.x, first = pid / width * 8;");
  emit_line(e, "const int gsz = min((int)gridDim.y - first, 8);");
  emit_line(e, "const int m0 = (first + pid %% width %% gsz) * %d, n0 = pid %% width / gsz * %d;", CU_MMA_BM, BN);
  if (gather) { /* this thread's column of every B panel: its output pixel and the window's corner */
    const node *n = &e->m->g->nodes[k->node];
    emit_line(e, "const T zero = (T)0.0f;");
    emit_line(e, "const int cn = n0 + (tid & 127), cimg = cn / (OH * OW), ih0 = cn / OW %% OH * %lld - %lld, iw0 = cn %% OW * %lld - %lld;",
              (long long)attr_or_one(n, "stride", 0), (long long)attr_get(n, "padding")->v[0], (long long)attr_or_one(n, "stride", 1),
              (long long)attr_get(n, "padding")->v[1]);
    emit_line(e, "const T *const xb = B + (int64_t)(cn < N ? cimg : 0) * C * H * W;");
    emit_line(e, "const int corner = ih0 * W + iw0; /* the window's top left in the image (outside it where padded) */");
  }
  emit_line(e, "float acc[%d][%d][4];", MI, NJ);
  emit_line(e, "_Pragma(\"unroll\") for (int i = 0; i < %d; i++) (&acc[0][0][0])[i] = 0.0f;", 4 * MI * NJ);
  emit_line(e, "const int KT = KE > KB ? (KE - KB + %d) / %d : 0;", CU_MMA_BK - 1, CU_MMA_BK);
  if (gather) conv_gather(e, BS);
  if (last) conv_last_rows(e);
  emit_line(e, "auto load = [&](int slot, int k0) { /* A, and B but for a gathered convolution's, by cp.async */");
  emit_line(e, "  T *as = As + slot * %d, *bs = Bs + slot * %d;", CU_MMA_BM * AS, CU_MMA_BK * BS);
  if (last) {
    conv_last_load(e);
  } else {
    emit_line(e, "  _Pragma(\"unroll\") for (int q = 0; q < %d; q++) {", CU_MMA_BM * CU_MMA_BK / 8 / CU_MMA_THREADS);
    emit_line(e, "    const int c = tid + q * %d, r = c / %d, cc = c %% %d * 8, gm = m0 + r, gk = k0 + cc;", CU_MMA_THREADS, CU_MMA_BK / 8,
              CU_MMA_BK / 8);
    emit_line(e, "    const bool ok = gm < M && gk < K;");
    emit_line(e, "    pc_cp16(as + r * %d + cc, ok ? A + (long long)gm * K + gk : A, ok);", AS);
    emit_line(e, "  }");
  }
  if (gather) {
    emit_line(e, "  (void)bs;");
  } else { /* row gk of B at columns gn..: a matmul's as it lies; a direct convolution's input channel
            * gk at the 8 pixels from gn, in image gn / (H W) */
    const char *at = conv && !last ? "((int64_t)(gn / (H * W)) * C + gk) * H * W + gn % (H * W)" : "(long long)gk * N + gn";
    emit_line(e, "  _Pragma(\"unroll\") for (int q = 0; q < %d; q++) {", CU_MMA_BK * BN / 8 / CU_MMA_THREADS);
    emit_line(e, "    const int c = tid + q * %d, r = c / %d, cc = c %% %d * 8, gk = k0 + r, gn = n0 + cc;", CU_MMA_THREADS, BN / 8,
              BN / 8);
    emit_line(e, "    const bool ok = gk < K && gn < N;");
    emit_line(e, "    pc_cp16(bs + r * %d + cc, ok ? B + %s : B, ok);", BS, at);
    emit_line(e, "  }");
  }
  emit_line(e, "};");
  if (gather) { /* the tables of the first panels, before any gather reads them */
    emit_line(e, "for (int s = 0; s < %d; s++) decode(s, KB + s * %d);", CU_MMA_STAGES, CU_MMA_BK);
    emit_line(e, "__syncthreads();");
  }
  emit_line(e, "for (int s = 0; s < %d; s++) {", CU_MMA_STAGES - 1);
  emit_line(e, "  if (s < KT) load(s, KB + s * %d);", CU_MMA_BK);
  if (gather) emit_line(e, "  if (s < KT) fetch(s), put(s);");
  emit_line(e, "  pc_cp_commit();");
  emit_line(e, "}");
  emit_line(e, "for (int kt = 0; kt < KT; kt++) {");
  e->indent++;
  emit_line(e, "pc_cp_wait<%d>(); /* stage kt has landed */", CU_MMA_STAGES - 2);
  emit_line(e, "__syncthreads(); /* and every warp is done with the stage the next load overwrites */");
  emit_line(e, "if (kt + %d < KT) load((kt + %d) %% %d, KB + (kt + %d) * %d);", CU_MMA_STAGES - 1, CU_MMA_STAGES - 1, CU_MMA_STAGES,
            CU_MMA_STAGES - 1, CU_MMA_BK);
  if (gather) emit_line(e, "if (kt + %d < KT) fetch((kt + %d) %% %d);", CU_MMA_STAGES - 1, CU_MMA_STAGES - 1, CU_MMA_STAGES);
  emit_line(e, "pc_cp_commit();");
  emit_line(e, "const T *as = As + kt %% %d * %d, *bs = Bs + kt %% %d * %d;", CU_MMA_STAGES, CU_MMA_BM * AS, CU_MMA_STAGES, CU_MMA_BK * BS);
  emit_line(e, "_Pragma(\"unroll\") for (int kk = 0; kk < %d; kk += 16) {", CU_MMA_BK);
  e->indent++;
  emit_line(e, "unsigned af[%d][4], bf[%d][2];", MI, NJ);
  emit_line(e, "_Pragma(\"unroll\") for (int i = 0; i < %d; i++)", MI);
  emit_line(e, "  pc_ldsm_x4(af[i], as + (wm * %d + i * 16 + (lane & 15)) * %d + kk + (lane >> 4) * 8);", WM, AS);
  emit_line(e, "_Pragma(\"unroll\") for (int j = 0; j < %d; j++) {", NJ / 2);
  emit_line(e, "  unsigned r[4];");
  emit_line(e, "  pc_ldsm_x4_t(r, bs + (kk + (lane & 7) + (lane >> 3 & 1) * 8) * %d + wn * %d + j * 16 + (lane >> 4) * 8);", BS, WN);
  emit_line(e, "  bf[2 * j][0] = r[0], bf[2 * j][1] = r[1], bf[2 * j + 1][0] = r[2], bf[2 * j + 1][1] = r[3];");
  emit_line(e, "}");
  emit_line(e, "_Pragma(\"unroll\") for (int i = 0; i < %d; i++)", MI);
  emit_line(e, "  _Pragma(\"unroll\") for (int j = 0; j < %d; j++) pc_mma(acc[i][j], af[i], bf[j], T());", NJ);
  e->indent--;
  emit_line(e, "}");
  /* the stage the gather fills was free since this step's barrier; the next two barriers come
   * before any warp reads it */
  if (gather) {
    emit_line(e, "if (kt + %d < KT) put((kt + %d) %% %d);", CU_MMA_STAGES - 1, CU_MMA_STAGES - 1, CU_MMA_STAGES);
    /* the table of step kt + 3 into the slot of step kt, whose gather (at step kt - 2) every
     * thread finished before this step's barrier; step kt + 1's barrier comes before its reader */
    emit_line(e, "if (kt + %d < KT) decode(kt %% %d, KB + (kt + %d) * %d);", CU_MMA_STAGES, CU_MMA_STAGES, CU_MMA_STAGES, CU_MMA_BK);
  }
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "pc_cp_wait<0>();");
  epilogue(e, BN, MI, WM, NJ, WN, conv);
}
