/*
 * dialect_flash.c: the CUDA dialect's attention on tensor cores, for f16/bf16 queries, keys and
 * values whose head sizes are multiples of 16 up to 128: FlashAttention-2's forward pass with
 * mma.sync (sm_80 and newer). The kernel computes what codegen/attention.c's does (the same
 * inputs, mask, causal rule and grid-stride loop over query tiles), with the score matrix in
 * registers instead of shared memory:
 *
 *   a block of 4 warps takes 64 query rows (16 per warp), their Q fragments loaded once (with
 *   causal masking the tiles of the most keys first, so that short ones fill the last wave);
 *   for each tile of 64 keys:  K and V tiles into shared memory (cp.async, zeros past the keys),
 *                              two stages: the next tile's copy runs during this one's MMAs
 *                              S = Q K^T on the tensor cores (f32 sums), scaled, masked
 *                              m' = max(m, rowmax S);  P = exp(S - m');  l = l a + rowsum P
 *                              O = O a + P V, P rounded to the operands' type in registers
 *                              (an accumulator fragment of S is an operand fragment of P V)
 *   y = O / l
 *
 * Each thread holds rows g and g + 8 of its warp's 16 (g = lane / 4): a row's maximum and sum
 * are reduced over the 4 threads of a quad. Shared-memory rows are padded by 16 bytes, so that
 * ldmatrix reads no bank twice. Written from the PTX ISA's fragment layouts of mma.m16n8k16 and
 * ldmatrix, as dialect_mma.c is; compiled by compile_all, run in tests/cuda_emulate, and on an
 * H200 through the conformance suite, memcheck and racecheck (taken by default;
 * PORTC_CUDA_KERNELS, schedule.c).
 */
#include <math.h>
#include <stdio.h>

#include "../ir/dtype.h"
#include "../codegen/gpu_kernels.h"
#include "cu.h"
#include "dialect_mma.h"


bool cu_flash_fits(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (!gpu_is_attention(m, i) || k->nin < 3) return false;
  portc_dtype t = m->buf[k->in_buf[0]].dt;
  if ((t != PORTC_F16 && t != PORTC_BF16) || m->buf[k->in_buf[1]].dt != t || m->buf[k->in_buf[2]].dt != t) return false;
  const shape *q = &m->buf[k->in_buf[0]].sh;
  dim d = q->d[q->rank - 1], dv = k->dom.d[k->dom.rank - 1];
  return d.sym < 0 && dv.sym < 0 && d.c % 16 == 0 && d.c <= CU_FA_MAX_HEAD && dv.c % 16 == 0 && dv.c <= CU_FA_MAX_HEAD && k->dom.rank - 2 <= 8;
}

int cu_flash_shared_bytes(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  const shape *q = &m->buf[k->in_buf[0]].sh;
  int64_t D = q->d[q->rank - 1].c, DV = k->dom.d[k->dom.rank - 1].c;
  return (int)(CU_FA_BQ * (D + 8) + 2 * CU_FA_BK * (D + 8 + DV + 8)) * 2; /* Q, and two stages of K and V */
}

/* rows [0, rows) of a [.., D] matrix from `src` (offset `base`, row index `first` + r, valid below
 * `limit`) into shared memory `dst` with padded rows; zeros past the limit */
static void load_tile(emitter *e, const char *dst, const char *src, const char *base, const char *first, const char *limit, int rows,
                      int64_t D) {
  emit_line(e, "for (int x = threadIdx.x; x < %lld; x += %d) {", (long long)(rows * D / 8), CU_FA_THREADS);
  emit_line(e, "  const int r = x / %lld, c = x %% %lld * 8, i = %s + r;", (long long)(D / 8), (long long)(D / 8), first);
  emit_line(e, "  pc_cp16(%s + r * %lld + c, i < %s ? %s + %s + (int64_t)i * %lld + c : %s, i < %s);", dst, (long long)(D + 8), limit, src, base,
            (long long)D, src, limit);
  emit_line(e, "}");
}

void cu_emit_flash(emitter *e) {
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  const int qb = k->in_buf[0], kb = k->in_buf[1], vb = k->in_buf[2], mb = k->nin > 3 ? k->in_buf[3] : -1, ob = k->store[0].buf;
  const shape *qs = &e->m->buf[qb].sh, *ks = &e->m->buf[kb].sh;
  const int orank = k->dom.rank - 2;
  const int64_t D = qs->d[qs->rank - 1].c, DV = k->dom.d[k->dom.rank - 1].c;
  const int KD = (int)(D / 16), NV = (int)(DV / 8); /* k-steps of S = Q K^T; 8-column tiles of O */
  const bool causal = attr_i(n, "causal");
  const attr *sc = attr_get(n, "scale");
  const char *T = dialect_spelling(e->d, DT_STORAGE, e->m->buf[qb].dt);
  char sq[64], sk[64], nb[256], off[1024], ld[1200], scale[64];
  emit_dim(e, k->dom.d[orank], sq, sizeof sq);
  emit_dim(e, ks->d[ks->rank - 2], sk, sizeof sk);
  emit_count(e, &k->dom, 0, orank, nb, sizeof nb);
  /* scores in base 2: exp(x) = exp2(x log2 e), and the scale takes the factor */
  emit_float(e->d, (sc->set ? sc->f : 1.0 / sqrt((double)D)) * M_LOG2E, scale, sizeof scale);
  emit_line(e, "typedef %s T;", T);
  emit_line(e, "extern __shared__ __align__(16) unsigned char pc_fa_smem[];");
  const long long KS = CU_FA_BK * (D + 8), KV = KS + CU_FA_BK * (DV + 8); /* a stage: K's tile, then V's */
  emit_line(e, "T *const Qs = (T *)pc_fa_smem, *const KVs = Qs + %lld;", (long long)(CU_FA_BQ * (D + 8)));
  emit_line(e, "const T *const Q = %s, *const K = %s, *const V = %s;", emit_buf(e, qb), emit_buf(e, kb), emit_buf(e, vb));
  emit_line(e, "const int SQ = %s, SK = %s, QT = (SQ + %d) / %d;", sq, sk, CU_FA_BQ - 1, CU_FA_BQ);
  emit_line(e, "const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t4 = lane & 3;");
  emit_line(e, "for (int64_t tile = blockIdx.x; tile < (int64_t)(%s) * QT; tile += gridDim.x) {", nb);
  e->indent++;
  emit_line(e, "const int64_t bt = tile / QT;");
  gpu_attention_first_query(e, "(int)(tile % QT)", CU_FA_BQ, causal);
  bool mrow, mcol; /* does the mask vary along the queries, the keys */
  gpu_attention_offsets(e, "int64_t", &mrow, &mcol);
  emit_line(e, "__syncthreads(); /* the last tile's readers of shared memory are done */");
  gpu_attention_key_end(e, "int", CU_FA_BQ, causal);
  load_tile(e, "Qs", "Q", "qo", "q0", "SQ", CU_FA_BQ, D);
  load_tile(e, "KVs", "K", "ko", "0", "SK", CU_FA_BK, D);
  snprintf(off, sizeof off, "KVs + %lld", KS);
  load_tile(e, off, "V", "vo", "0", "SK", CU_FA_BK, DV);
  emit_line(e, "pc_cp_commit();");
  emit_line(e, "pc_cp_wait<0>();");
  emit_line(e, "__syncthreads();");
  emit_line(e, "unsigned qf[%d][4];", KD);
  emit_line(e, "_Pragma(\"unroll\") for (int kk = 0; kk < %d; kk++) pc_ldsm_x4(qf[kk], Qs + (warp * 16 + (lane & 15)) * %lld + kk * 16 + (lane >> 4) * 8);",
            KD, (long long)(D + 8));
  emit_line(e, "float o[%d][4], mr[2] = {-INFINITY, -INFINITY}, lr[2] = {0.0f, 0.0f};", NV);
  emit_line(e, "_Pragma(\"unroll\") for (int x = 0; x < %d; x++) (&o[0][0])[x] = 0.0f;", NV * 4);
  /* two stages of K and V: the next key tile's copy runs while this one's MMAs do */
  emit_line(e, "for (int j0 = 0, st = 0; j0 < JE; j0 += %d, st ^= 1) {", CU_FA_BK);
  e->indent++;
  emit_line(e, "if (j0 > 0) {");
  emit_line(e, "  pc_cp_wait<0>();");
  emit_line(e, "  __syncthreads(); /* this tile is in, and the last one's readers are done with the other stage */");
  emit_line(e, "}");
  emit_line(e, "if (j0 + %d < JE) {", CU_FA_BK);
  e->indent++;
  emit_line(e, "T *const Kn = KVs + (st ^ 1) * %lld, *const Vn = Kn + %lld;", KV, KS);
  emit_line(e, "const int jx = j0 + %d;", CU_FA_BK);
  load_tile(e, "Kn", "K", "ko", "jx", "SK", CU_FA_BK, D);
  load_tile(e, "Vn", "V", "vo", "jx", "SK", CU_FA_BK, DV);
  emit_line(e, "pc_cp_commit();");
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "const T *const Ks = KVs + st * %lld, *const Vs = Ks + %lld;", KV, KS);
  /* S = Q K^T: K's rows are B's columns, so plain ldmatrix gives B's fragments, two key tiles at once */
  emit_line(e, "float s[8][4];");
  emit_line(e, "_Pragma(\"unroll\") for (int x = 0; x < 32; x++) (&s[0][0])[x] = 0.0f;");
  emit_line(e, "_Pragma(\"unroll\") for (int kk = 0; kk < %d; kk++)", KD);
  emit_line(e, "  _Pragma(\"unroll\") for (int jj = 0; jj < 4; jj++) {");
  emit_line(e, "    unsigned r[4];");
  emit_line(e, "    pc_ldsm_x4(r, Ks + (jj * 16 + (lane & 7) + (lane >> 4) * 8) * %lld + kk * 16 + (lane >> 3 & 1) * 8);", (long long)(D + 8));
  emit_line(e, "    const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};");
  emit_line(e, "    pc_mma(s[2 * jj], qf[kk], b0, T());");
  emit_line(e, "    pc_mma(s[2 * jj + 1], qf[kk], b1, T());");
  emit_line(e, "  }");
  /* scale and mask: element h of key tile nt is row g (+8 for h >= 2), key nt * 8 + 2 t4 + h % 2 */
  /* only a tile that reaches past the keys (or, causal, past a query's own position) masks */
  if (causal) emit_line(e, "const bool edge = j0 + %d > JE || j0 + %d > q0; /* a key of the tile after its first query */", CU_FA_BK, CU_FA_BK - 1);
  else emit_line(e, "const bool edge = j0 + %d > JE;", CU_FA_BK);
  emit_line(e, "_Pragma(\"unroll\") for (int nt = 0; nt < 8; nt++)");
  emit_line(e, "  _Pragma(\"unroll\") for (int h = 0; h < 4; h++) {");
  emit_line(e, "    const int i = q0 + warp * 16 + g + (h >> 1) * 8, j = j0 + nt * 8 + t4 * 2 + (h & 1);");
  emit_line(e, "    float x = s[nt][h] * %s;", scale);
  if (mb >= 0) {
    emit_load(e, mb, mrow ? (mcol ? "mo + (int64_t)i * SK + j" : "mo + i") : (mcol ? "mo + j" : "mo"), ld, sizeof ld);
    emit_line(e, "    if (i < SQ && j < SK) x += 1.44269504088896341f * %s;", ld);
  }
  emit_line(e, "    if (edge && (j >= JE%s)) x = -INFINITY;", causal ? " || j > i" : "");
  emit_line(e, "    s[nt][h] = x;");
  emit_line(e, "  }");
  /* the online softmax of rows g (r2 = 0) and g + 8 (r2 = 1), over the quad's 4 threads */
  emit_line(e, "_Pragma(\"unroll\") for (int r2 = 0; r2 < 2; r2++) {");
  e->indent++;
  emit_line(e, "float mx = -INFINITY;");
  emit_line(e, "_Pragma(\"unroll\") for (int nt = 0; nt < 8; nt++) mx = pc_maxf(mx, pc_maxf(s[nt][2 * r2], s[nt][2 * r2 + 1]));");
  emit_line(e, "mx = pc_maxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));");
  emit_line(e, "mx = pc_maxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));");
  emit_line(e, "const float mn = pc_maxf(mr[r2], mx), al = mr[r2] == -INFINITY ? 0.0f : pc_ex2(mr[r2] - mn);");
  emit_line(e, "float ls = 0.0f;");
  emit_line(e, "_Pragma(\"unroll\") for (int nt = 0; nt < 8; nt++)");
  emit_line(e, "  _Pragma(\"unroll\") for (int h = 2 * r2; h < 2 * r2 + 2; h++) {");
  emit_line(e, "    const float p = mn == -INFINITY ? 0.0f : pc_ex2(s[nt][h] - mn);");
  emit_line(e, "    s[nt][h] = p;");
  emit_line(e, "    ls += p;");
  emit_line(e, "  }");
  emit_line(e, "ls += __shfl_xor_sync(0xffffffffu, ls, 1);");
  emit_line(e, "ls += __shfl_xor_sync(0xffffffffu, ls, 2);");
  emit_line(e, "lr[r2] = lr[r2] * al + ls;");
  emit_line(e, "mr[r2] = mn;");
  emit_line(e, "_Pragma(\"unroll\") for (int u = 0; u < %d; u++) o[u][2 * r2] *= al, o[u][2 * r2 + 1] *= al;", NV);
  e->indent--;
  emit_line(e, "}");
  /* O += P V: P's accumulator fragments of key tiles 2kk and 2kk + 1 are the A fragment of k-step
   * kk; V's rows are B's rows, so transposing ldmatrix gives its fragments (dialect_mma.c's B) */
  emit_line(e, "_Pragma(\"unroll\") for (int kk = 0; kk < 4; kk++) {");
  emit_line(e, "  const unsigned pa[4] = {pc_pack2(s[2 * kk][0], s[2 * kk][1], T()), pc_pack2(s[2 * kk][2], s[2 * kk][3], T()),");
  emit_line(e, "                          pc_pack2(s[2 * kk + 1][0], s[2 * kk + 1][1], T()), pc_pack2(s[2 * kk + 1][2], s[2 * kk + 1][3], T())};");
  emit_line(e, "  _Pragma(\"unroll\") for (int jn = 0; jn < %d; jn++) {", NV / 2);
  emit_line(e, "    unsigned r[4];");
  emit_line(e, "    pc_ldsm_x4_t(r, Vs + (kk * 16 + (lane & 7) + (lane >> 3 & 1) * 8) * %lld + jn * 16 + (lane >> 4) * 8);", (long long)(DV + 8));
  emit_line(e, "    const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};");
  emit_line(e, "    pc_mma(o[2 * jn], pa, b0, T());");
  emit_line(e, "    pc_mma(o[2 * jn + 1], pa, b1, T());");
  emit_line(e, "  }");
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
  /* y = O / l: element h of column tile u is row g (+8 for h >= 2), column u * 8 + 2 t4 + h % 2 */
  emit_line(e, "_Pragma(\"unroll\") for (int r2 = 0; r2 < 2; r2++) {");
  e->indent++;
  emit_line(e, "const int i = q0 + warp * 16 + g + r2 * 8;");
  emit_line(e, "const float rl = 1.0f / lr[r2];");
  emit_line(e, "if (i < SQ)");
  emit_line(e, "  _Pragma(\"unroll\") for (int u = 0; u < %d; u++)", NV);
  emit_line(e, "    _Pragma(\"unroll\") for (int hh = 0; hh < 2; hh++) {");
  emit_line(e, "      const int cc = u * 8 + t4 * 2 + hh;");
  emit_line(e, "      const float val = o[u][2 * r2 + hh] * rl;");
  char at[96];
  snprintf(at, sizeof at, "(bt * SQ + i) * %lld + cc", (long long)DV);
  e->indent += 3;
  emit_store(e, ob, at, "val");
  e->indent -= 3;
  emit_line(e, "    }");
  e->indent--;
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
}
