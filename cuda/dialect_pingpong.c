/*
 * dialect_pingpong.c: Hopper's f16/bf16 matmul (dialect_wgmma.c) in its ping-pong form, the one
 * whose epilogue runs while the tensor cores work. The cooperative form puts both consumer
 * warpgroups on one 128x256 tile, so the tensor cores idle while they store it, and each block
 * fills its stages from empty. Here a block per SM loops over the tiles (persistent):
 *  - the producer warpgroup's thread loads the block's tiles one after another, each KT k-steps
 *    of A's 128x64 panel and B's 64x128 one, through one ring of CU_PP_STAGES stages: position p
 *    (the block's tile lt, k-step kt: p = lt KT + kt) is stage p % STAGES in round p / STAGES;
 *  - consumer c (0 or 1) takes the block's tiles lt = c, c + 2, ...: a 128x128 tile each, two
 *    wgmma.m64n128k16 a k-step of 16 (rows 0-63, 64-127) into 2 x 64 f32 sums a thread.
 * The two take turns: a consumer starts its tile's k-steps once the other has passed its last
 * stage's wait (the "turn" barriers), so one consumer's MMAs run while the other stores its tile,
 * and the producer is loading the next tile meanwhile. The turns also keep the waits on a stage's
 * "full" barrier within one phase of it: a wait asks a phase by its parity, and a consumer that
 * skipped the other's tile would otherwise wait for round r while round r - 1 is still loading.
 * A stage's "empty" barrier counts one arrival, its consumer's.
 *
 * The epilogue cannot use the stages' space, which the other consumer's tile is in, so each
 * consumer warp has 16 rows of 32 sums of its own (CU_PP_EPILOGUE_LD floats a row, so that
 * neither the float2 writes nor the column reads conflict): per 16-row half and 32 columns, the
 * warp writes its sums there and stores them a row at a time, a lane a column (64 coalesced
 * bytes a row), without bounds checks where the tile lies inside the matrix.
 *
 * Tiles go in groups of 8 row-tiles, as the cooperative form's blocks do, so that blocks running
 * at once share A's and B's panels in L2. Run in tests/cuda_emulate with few blocks, so that
 * each loops over several tiles.
 *
 * In clusters of two (the schedule's cluster = 2), a 128x128 tile reads as few bytes a FLOP from
 * L2 as the cooperative form's 128x256 one: the cluster's blocks take the two column tiles of one
 * 128x256 "unit" (n0 and n0 + 128), whose A panel is the same, and each block's producer loads
 * half of its rows (rank r: rows 64 r to 64 r + 63) into both blocks' stages at once (TMA
 * multicast), its bytes completing on both blocks' "full" barriers. A stage may then be loaded
 * again only when both blocks' consumers are done with it, so its "empty" barrier counts two
 * arrivals, each consumer arriving on both blocks' barrier. The blocks wait for each other once
 * the barriers are made (a cluster barrier), and again before they exit, so that neither block's
 * barriers go while the other may still arrive on them. Where the columns end in one tile of a
 * unit, its second block computes zeros it does not store.
 */
#include "../codegen/gpu_kernels.h"
#include "cu.h"
#include "dialect_mma.h"

enum { BN = CU_PP_BN, BK = CU_WG_BK, STAGES = CU_PP_STAGES, A_STAGE = CU_WG_BM * BK, B_STAGE = BK * BN, B_BOX = BK * 64,
       LD = CU_PP_EPILOGUE_LD, SUMS = BN / 2 };

/* the producer: position p's stage s, once its last use is given back, gets A's box at
 * (kt BK, m0) (in clusters: this block's half of it, into both blocks) and B's 64-column boxes at
 * (n0 + 64 j, kt BK) */
static void producer(emitter *e, int cl) {
  emit_line(e, "if (wg == 0) {");
  e->indent++;
  emit_line(e, "pc_regs_dec<40>();");
  emit_line(e, "if (tid == 0)");
  emit_line(e, "  for (int tile = cluster, p = 0; tile < tiles; tile += clusters) {");
  emit_line(e, "    int m0, n0;");
  emit_line(e, "    place(tile, m0, n0);");
  emit_line(e, "    for (int kt = 0; kt < KT; kt++, p++) {");
  emit_line(e, "      const int s = p %% %d;", STAGES);
  emit_line(e, "      if (p >= %d) pc_mbar_wait(&empty[s], (p / %d - 1) & 1); /* %s done with its last use */", STAGES, STAGES,
            cl > 1 ? "both blocks' consumers are" : "its consumer is");
  emit_line(e, "      pc_mbar_expect(&full[s], %d);", (A_STAGE + B_STAGE) * 2);
  if (cl > 1)
    emit_line(e, "      pc_tma_load_mc(As + s * %d + rank * %d, &pc_ta, &full[s], kt * %d, m0 + rank * %d, %d);", A_STAGE, A_STAGE / cl, BK,
              CU_WG_BM / cl, (1 << cl) - 1);
  else
    emit_line(e, "      pc_tma_load(As + s * %d, &pc_ta, &full[s], kt * %d, m0);", A_STAGE, BK);
  emit_line(e, "      _Pragma(\"unroll\") for (int j = 0; j < %d; j++) pc_tma_load(Bs + s * %d + j * %d, &pc_tb, &full[s], n0 + j * 64, kt * %d);",
            BN / 64, B_STAGE, B_BOX, BK);
  emit_line(e, "    }");
  emit_line(e, "  }");
  e->indent--;
  emit_line(e, "} else { /* one if/else of the two roles: setmaxnreg takes effect so */");
}

/* a consumer's MMAs of stage s: four k-steps of 16, each the two halves of A's panel (64 rows of
 * 128 bytes, 8-row groups 1024 bytes apart) times B's panel (two boxes of 64 columns, 8192 bytes
 * apart) */
static void tile_mmas(emitter *e) {
  emit_line(e, "_Pragma(\"unroll\") for (int kk = 0; kk < %d; kk++) {", BK / 16);
  emit_line(e, "  const uint64_t b = pc_wg_desc(Bs + s * %d + kk * %d, %d, 1024);", B_STAGE, 16 * 64, B_BOX * 2);
  emit_line(e, "  mma(acc[0], pc_wg_desc(As + s * %d + kk * 16, 16, 1024), b);", A_STAGE);
  emit_line(e, "  mma(acc[1], pc_wg_desc(As + s * %d + %d + kk * 16, 16, 1024), b);", A_STAGE, 64 * BK);
  emit_line(e, "}");
}

/* a consumer's mainloop over its tile's KT k-steps, from ring position p0; `release` gives a
 * stage back */
static void mainloop(emitter *e, const char *release) {
  emit_line(e, "_Pragma(\"unroll\") for (int i = 0; i < %d; i++) acc[0][i] = acc[1][i] = 0.0f;", SUMS);
  emit_line(e, "if (lt > 0) pc_mbar_wait(&turn[c], (lt - 1) / 2 & 1); /* the other consumer has passed its last stage */");
  emit_line(e, "const int p0 = lt * KT;");
  emit_line(e, "for (int kt = 0; kt < KT; kt++) {");
  e->indent++;
  emit_line(e, "const int p = p0 + kt;");
  cu_wgmma_kstep(e, "p", STAGES, release, tile_mmas);
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "if (tid == 0) pc_mbar_arrive(&turn[1 - c]); /* the other's turn */");
  emit_line(e, "pc_wg_wait<0>();");
  emit_line(e, "pin();");
  emit_line(e, "if (KT > 0 && tid == 0) %s(&empty[(p0 + KT - 1) %% %d]); /* the last stage too */", release, STAGES);
}

/* the stores of a warp's 16 rows of the half h, 32 columns from column q * 32, from its rows in E:
 * lane = column; bounds checked where `edge` */
static void store_rows(emitter *e, bool edge) {
  e->indent++;
  emit_line(e, "_Pragma(\"unroll 8\") for (int rr = 0; rr < 16; rr++) {");
  e->indent++;
  emit_line(e, "const int m = m0 + h * 64 + warp * 16 + rr;");
  if (edge) emit_line(e, "if (m >= M || n >= N) continue;");
  emit_line(e, "const float acc0 = E[rr * %d + lane];", LD);
  gpu_gemm_store(e);
  e->indent--;
  emit_line(e, "}");
  e->indent--;
}

/* the epilogue: sum i of half h is at row 16 warp + lane / 4 (+8 for i % 4 >= 2), column
 * 8 (i / 4) + 2 (lane % 4) + i % 2 */
static void epilogue(emitter *e) {
  emit_line(e, "const bool inside = m0 + %d <= M && n0 + %d <= N;", CU_WG_BM, BN);
  emit_line(e, "_Pragma(\"unroll\") for (int h = 0; h < 2; h++)");
  emit_line(e, "_Pragma(\"unroll\") for (int q = 0; q < %d; q++) {", BN / 32);
  e->indent++;
  emit_line(e, "_Pragma(\"unroll\") for (int i = 0; i < 16; i += 4) {");
  emit_line(e, "  *(float2 *)&E[(lane >> 2) * %d + i * 2 + (lane & 3) * 2] = make_float2(acc[h][q * 16 + i], acc[h][q * 16 + i + 1]);", LD);
  emit_line(e, "  *(float2 *)&E[((lane >> 2) + 8) * %d + i * 2 + (lane & 3) * 2] = make_float2(acc[h][q * 16 + i + 2], acc[h][q * 16 + i + 3]);",
            LD);
  emit_line(e, "}");
  emit_line(e, "__syncwarp();");
  emit_line(e, "const int n = n0 + q * 32 + lane;");
  emit_line(e, "if (inside) {");
  store_rows(e, false);
  emit_line(e, "} else {");
  store_rows(e, true);
  emit_line(e, "}");
  emit_line(e, "__syncwarp(); /* E is written again */");
  e->indent--;
  emit_line(e, "}");
}

void cu_emit_wgmma_pingpong(emitter *e) {
  const int cl = e->k->sched.cluster > 1 ? e->k->sched.cluster : 1;
  char release[48];
  cu_wgmma_release(cl, release, sizeof release);
  cu_wgmma_begin(e);
  emit_line(e, "T *const As = (T *)base, *const Bs = As + %d;", STAGES * A_STAGE);
  emit_line(e, "float *const Es = (float *)(Bs + %d); /* the 8 consumer warps' epilogue rows */", STAGES * B_STAGE);
  emit_line(e, "uint64_t *const full = (uint64_t *)(Es + %d), *const empty = full + %d, *const turn = empty + %d;", 8 * 16 * LD, STAGES, STAGES);
  emit_line(e, "const int wg = threadIdx.x >> 7, tid = threadIdx.x & 127;");
  /* a tile is a cluster's unit of cl column tiles (a block alone: cl = 1), the block's the rank-th of them */
  emit_line(e, "const int rank = blockIdx.x %% %d, cluster = blockIdx.x / %d, clusters = gridDim.x / %d;", cl, cl, cl);
  emit_line(e, "const int TM = (M + %d) / %d, TN = (N + %d) / %d, tiles = TM * TN, KT = (K + %d) / %d;", CU_WG_BM - 1, CU_WG_BM, cl * BN - 1,
            cl * BN, BK - 1, BK);
  emit_line(e, "auto place = [&](int tile, int &m0, int &n0) { /* groups of 8 row-tiles, column by column */");
  emit_line(e, "  const int width = 8 * TN, first = tile / width * 8, gsz = min(TM - first, 8);");
  emit_line(e, "  m0 = (first + tile %% width %% gsz) * %d, n0 = tile %% width / gsz * %d + rank * %d;", CU_WG_BM, cl * BN, BN);
  emit_line(e, "};");
  emit_line(e, "if (threadIdx.x == 0) {");
  emit_line(e, "  _Pragma(\"unroll\") for (int s = 0; s < %d; s++) pc_mbar_init(&full[s], 1), pc_mbar_init(&empty[s], %d);", STAGES, cl);
  emit_line(e, "  pc_mbar_init(&turn[0], 1), pc_mbar_init(&turn[1], 1);");
  emit_line(e, "  pc_mbar_init_fence();");
  emit_line(e, "}");
  if (cl > 1) emit_line(e, "pc_cluster_sync(); /* the cluster's barriers are made before either block's copies and arrivals */");
  else emit_line(e, "__syncthreads();");
  producer(e, cl);
  e->indent++;
  emit_line(e, "pc_regs_inc<232>();");
  emit_line(e, "const int c = wg - 1, warp = tid >> 5, lane = tid & 31;");
  emit_line(e, "float *const E = Es + (c * 4 + warp) * %d;", 16 * LD);
  emit_line(e, "float acc[2][%d];", SUMS);
  cu_wgmma_lambda(e, BN, false, true);
  /* the sums stay in their registers across the asynchronous MMAs: nothing may move them between
   * the fence before the MMAs and the wait after them */
  emit_line(e, "auto pin1 = [&](float (&d)[%d]) { _Pragma(\"unroll\") for (int i = 0; i < %d; i++) asm volatile(\"\" : \"+f\"(d[i])::\"memory\"); };",
            SUMS, SUMS);
  emit_line(e, "auto pin = [&]() { pin1(acc[0]), pin1(acc[1]); };");
  emit_line(e, "for (int tile = cluster + c * clusters, lt = c; tile < tiles; tile += 2 * clusters, lt += 2) {");
  e->indent++;
  emit_line(e, "int m0, n0;");
  emit_line(e, "place(tile, m0, n0);");
  mainloop(e, release);
  epilogue(e);
  e->indent--;
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
  if (cl > 1) emit_line(e, "pc_cluster_sync(); /* the other block arrives on this one's barriers no more */");
  cu_wgmma_end(e);
}
