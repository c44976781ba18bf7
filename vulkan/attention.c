/*
 * attention.c: the Vulkan dialect's attention on cooperative matrices, for f16 queries, keys and
 * values whose head sizes are multiples of 16 (up to what the device's shared memory takes: 64 on
 * 48 KiB). It computes what codegen/attention.c's SIMT kernel does (the same inputs, mask, causal
 * rule and grid-stride loop over query tiles; the scores never reach memory), with both products
 * on the matrix units, as cuda/dialect_flash.c does with mma.sync:
 *
 *   a work group of 4 subgroups takes 64 query rows (16 per subgroup), their Q fragments loaded
 *   once (through shared memory: rows past the queries are zeros);
 *   for each tile of 64 keys:  K and V tiles into shared memory (16-byte words, zeros past the keys)
 *                              S = Q K^T on cooperative matrices (f32 sums; K^T read column-major)
 *                              S through shared memory to the lanes, scaled (base 2), masked
 *                              m' = max(m, rowmax S);  P = exp2(S - m');  l = l a + rowsum P
 *                              O = O a + P V: P (f16) through shared memory, P V on cooperative
 *                              matrices, its sums through shared memory to the lanes
 *   y = O / l
 *
 * A cooperative matrix's elements lie in the lanes as the driver chooses, so a row's maximum and
 * its rescaling cannot be done in them: each lane holds half of one of its subgroup's 16 rows
 * (row lane / 2, 32 of the step's scores, half of the output row) in registers, and the two
 * halves meet by one shuffle. The cooperative-matrix types are the matmul's (A 16 x PC_CM_K, B
 * PC_CM_K x PC_CM_N, f32 sums 16 x PC_CM_N), so the KHR rewrite (spirv_coop.c) maps them as it
 * maps the matmul's; both are compiled and validated in CI (tests/vulkan_variants.c), and the
 * kernel is opted out of with PORTC_VULKAN_KERNELS (vk_own_kernels: "coopattention").
 */
#include <math.h>
#include <stdio.h>

#include "../ir/dtype.h"
#include "../codegen/gpu_kernels.h"
#include "vk.h"

enum { BQ = 64, BK = 64, THREADS = 128 }; /* BQ = BK: the query tile passes through pa_K */

/* the padded rows of the kernel's shared arrays: K's and V's in 16-byte words (a word more than
 * the row, so that a column-major fragment load reads no bank twice), the scores' and the output
 * sums' in floats, P's in halves */
typedef struct {
  int64_t d, dv, kp, vp, wp, pp;
} att_shape;

static att_shape shape_of(const kir_module *m, const kir_kernel *k) {
  const shape *q = &m->buf[k->in_buf[0]].sh;
  att_shape a = {.d = q->d[q->rank - 1].c, .dv = k->dom.d[k->dom.rank - 1].c};
  a.kp = a.d / 8 + 1, a.vp = a.dv / 8 + 1;
  a.wp = (a.dv > BK ? a.dv : BK) + 4; /* 16-byte rows, 4 banks apart */
  a.pp = BK + 8;
  return a;
}

static int64_t shared_bytes(const att_shape *a) { return BK * (a->kp + a->vp) * 16 + THREADS / 32 * 16 * (a->wp * 4 + a->pp * 2); }

bool vk_attention_coop_fits(const kir_module *m, int i, size_t shared_max, char *why, size_t len) {
  const kir_kernel *k = &m->k[i];
  if (!gpu_is_attention(m, i) || k->nin < 3)
    return snprintf(why, len, "the cooperative-matrix attention takes attention nodes of queries, keys and values"), false;
  for (int j = 0; j < 3; j++)
    if (m->buf[k->in_buf[j]].dt != PORTC_F16) return snprintf(why, len, "the cooperative-matrix attention takes f16 queries, keys and values"), false;
  const shape *q = &m->buf[k->in_buf[0]].sh;
  const dim d = q->d[q->rank - 1], dv = k->dom.d[k->dom.rank - 1];
  if (d.sym >= 0 || dv.sym >= 0 || d.c % 16 || dv.c % 16 || d.c < 16 || dv.c < 16)
    return snprintf(why, len, "the cooperative-matrix attention takes head sizes that are known multiples of 16"), false;
  if (k->dom.rank - 2 > 8) return snprintf(why, len, "the cooperative-matrix attention takes at most 8 batch axes"), false;
  const att_shape a = shape_of(m, k);
  if (shared_bytes(&a) > (int64_t)shared_max)
    return snprintf(why, len, "attention on cooperative matrices with heads of %lld and %lld takes %lld bytes of shared memory, the device allows %zu",
                    (long long)a.d, (long long)a.dv, (long long)shared_bytes(&a), shared_max),
           false;
  return true;
}

bool vk_attention_coop_schedule(kir_module *m, int i, size_t shared_max) {
  char why[256];
  if (!vk_attention_coop_fits(m, i, shared_max, why, sizeof why)) return false;
  kir_schedule *s = &m->k[i].sched;
  s->variant = KS_MMA, s->tile_m = BQ, s->tile_n = BK, s->threads[0] = THREADS, s->threads[1] = s->threads[2] = 1, s->vector = 0;
  return true;
}

bool vk_attention_coop_check(const kir_module *m, int i, size_t shared_max, char *why, size_t len) {
  const kir_schedule *s = &m->k[i].sched;
  if (s->tile_m != BQ || s->tile_n != BK || s->threads[0] != THREADS || s->threads[1] > 1 || s->threads[2] > 1)
    return snprintf(why, len, "the cooperative-matrix attention runs %d invocations over %dx%d tiles", THREADS, BQ, BK), false;
  return vk_attention_coop_fits(m, i, shared_max, why, len);
}

/* rows [0, rows) of a [.., width] f16 matrix into shared words dst (rows of pitch words), from
 * the buffer's word view src at element offset base, row `first` + r valid below `limit` */
static void load_rows(emitter *e, const char *dst, const char *src, const char *base, const char *first, const char *limit, int rows, int64_t width,
                      int64_t pitch) {
  const int64_t words = width / 8;
  emit_line(e, "for (int x = lid; x < %lld; x += %d) {", (long long)(rows * words), THREADS);
  emit_line(e, "  const int row = x / %lld, c = x %% %lld, at = %s + row;", (long long)words, (long long)words, first);
  emit_line(e, "  %s[row * %lld + c] = at < %s ? %sv[uint((%s) / 8 + at * %lld + c)] : uvec4(0u);", dst, (long long)pitch, limit, src, base,
            (long long)words);
  emit_line(e, "}");
}

static void declare(emitter *e, int index, const att_shape *a) {
  emit_line(e, "layout(local_size_x = %d) in;", THREADS);
  vk_declare_buffers(e, index, true);
  emit_line(e, "shared uvec4 pa_K[%lld], pa_V[%lld]; /* a key tile's keys (the query tile's queries first) and values, rows padded by a word */",
            (long long)(BK * a->kp), (long long)(BK * a->vp));
  emit_line(e, "shared float pa_W[%lld]; /* per subgroup: its 16 rows of scores, then of P V */", (long long)(THREADS / 32 * 16 * a->wp));
  emit_line(e, "shared float16_t pa_P[%lld]; /* per subgroup: its 16 rows of P */", (long long)(THREADS / 32 * 16 * a->pp));
}

static void body(emitter *e) {
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  const att_shape a = shape_of(e->m, k);
  const int qb = k->in_buf[0], kb = k->in_buf[1], vb = k->in_buf[2], mb = k->nin > 3 ? k->in_buf[3] : -1, ob = k->store[0].buf;
  const shape *ks = &e->m->buf[kb].sh;
  const int orank = k->dom.rank - 2, KD = (int)(a.d / 16), NV = (int)(a.dv / 16), HV = (int)(a.dv / 2);
  const bool causal = attr_i(n, "causal");
  const attr *sc = attr_get(n, "scale");
  char sq[64], sk[64], nb[256], ld[1200], scale[64], Q[16], K[16], V[16];
  emit_dim(e, k->dom.d[orank], sq, sizeof sq);
  emit_dim(e, ks->d[ks->rank - 2], sk, sizeof sk);
  emit_count(e, &k->dom, 0, orank, nb, sizeof nb);
  snprintf(Q, sizeof Q, "%s", emit_buf(e, qb));
  snprintf(K, sizeof K, "%s", emit_buf(e, kb));
  snprintf(V, sizeof V, "%s", emit_buf(e, vb));
  /* scores in base 2: exp(x) = exp2(x log2 e), and the scale takes the factor */
  emit_float(e->d, (sc->set ? sc->f : 1.0 / sqrt((double)a.d)) * M_LOG2E, scale, sizeof scale);
  emit_line(e, "const int SQ = %s, SK = %s, QT = (SQ + %d) / %d;", sq, sk, BQ - 1, BQ);
  emit_line(e, "const int lid = int(gl_LocalInvocationID.x), sg = int(gl_SubgroupID), lane = int(gl_SubgroupInvocationID);");
  emit_line(e, "const int r = lane >> 1, h = lane & 1; /* this lane's row of its subgroup's 16, and its half of the row */");
  emit_line(e, "const int W0 = sg * %lld, P0 = sg * %lld; /* the subgroup's rows of pa_W and pa_P */", (long long)(16 * a.wp), (long long)(16 * a.pp));
  emit_line(e, "for (int tile = int(gl_WorkGroupID.x); tile < (%s) * QT; tile += int(gl_NumWorkGroups.x)) {", nb);
  e->indent++;
  emit_line(e, "const int bt = tile / QT;");
  gpu_attention_first_query(e, "tile % QT", BQ, causal);
  bool mrow, mcol; /* does the mask vary along the queries, the keys */
  gpu_attention_offsets(e, "int", &mrow, &mcol);
  gpu_attention_key_end(e, "int", BQ, causal);
  /* the query tile through pa_K into the subgroups' fragments */
  emit_line(e, "barrier(); /* the last tile's readers of pa_K are done */");
  load_rows(e, "pa_K", Q, "qo", "q0", "SQ", BQ, a.d, a.kp);
  emit_line(e, "barrier();");
  emit_line(e, "fcoopmatNV<16, 3, 16, PC_CM_K> qf[%d];", KD);
  emit_line(e, "[[unroll]] for (int kk = 0; kk < %d; kk++) coopMatLoadNV(qf[kk], pa_K, uint(sg * %lld + kk * 2), %lldu, false);", KD,
            (long long)(16 * a.kp), (long long)a.kp);
  emit_line(e, "float o[%d], m = -INFINITY, l = 0.0;", HV);
  emit_line(e, "[[unroll]] for (int u = 0; u < %d; u++) o[u] = 0.0;", HV);
  emit_line(e, "const int i = q0 + sg * 16 + r;");
  emit_line(e, "for (int j0 = 0; j0 < JE; j0 += %d) {", BK);
  e->indent++;
  emit_line(e, "barrier(); /* the query fragments, or the last step's keys and values, are read */");
  load_rows(e, "pa_K", K, "ko", "j0", "SK", BK, a.d, a.kp);
  load_rows(e, "pa_V", V, "vo", "j0", "SK", BK, a.dv, a.vp);
  emit_line(e, "barrier();");
  /* S = Q K^T: K's rows are the columns of K^T, so a column-major load of K's tile gives its fragments */
  emit_line(e, "[[unroll]] for (int nt = 0; nt < %d; nt++) {", BK / 16);
  emit_line(e, "  fcoopmatNV<32, 3, 16, PC_CM_N> s = fcoopmatNV<32, 3, 16, PC_CM_N>(0.0);");
  emit_line(e, "  [[unroll]] for (int kk = 0; kk < %d; kk++) {", KD);
  emit_line(e, "    fcoopmatNV<16, 3, PC_CM_K, PC_CM_N> kf;");
  emit_line(e, "    coopMatLoadNV(kf, pa_K, uint(nt * %lld + kk * 2), %lldu, true);", (long long)(16 * a.kp), (long long)a.kp);
  emit_line(e, "    s = coopMatMulAddNV(qf[kk], kf, s);");
  emit_line(e, "  }");
  emit_line(e, "  coopMatStoreNV(s, pa_W, uint(W0 + nt * 16), %lldu, false);", (long long)a.wp);
  emit_line(e, "}");
  emit_line(e, "subgroupMemoryBarrierShared();");
  emit_line(e, "subgroupBarrier();");
  /* this lane's 32 scores: row r, keys h * 32 + t of the step */
  emit_line(e, "float s[32], mx = -INFINITY;");
  emit_line(e, "[[unroll]] for (int t = 0; t < 32; t++) {");
  emit_line(e, "  const int j = j0 + h * 32 + t;");
  emit_line(e, "  float x = pa_W[W0 + r * %lld + h * 32 + t] * %s;", (long long)a.wp, scale);
  if (mb >= 0) {
    emit_load(e, mb, mrow ? (mcol ? "mo + i * SK + j" : "mo + i") : (mcol ? "mo + j" : "mo"), ld, sizeof ld);
    emit_line(e, "  if (i < SQ && j < SK) x += 1.44269504088896341 * %s;", ld);
  }
  emit_line(e, "  if (j >= JE%s) x = -INFINITY;", causal ? " || j > i" : "");
  emit_line(e, "  s[t] = x;");
  emit_line(e, "  mx = max(mx, x);");
  emit_line(e, "}");
  emit_line(e, "mx = max(mx, subgroupShuffleXor(mx, 1u));");
  emit_line(e, "const float mn = max(m, mx), al = m == -INFINITY ? 0.0 : exp2(m - mn);");
  emit_line(e, "float ls = 0.0;");
  emit_line(e, "[[unroll]] for (int t = 0; t < 32; t++) {");
  emit_line(e, "  const float p = mn == -INFINITY ? 0.0 : exp2(s[t] - mn);");
  emit_line(e, "  pa_P[P0 + r * %lld + h * 32 + t] = float16_t(p);", (long long)a.pp);
  emit_line(e, "  ls += p;");
  emit_line(e, "}");
  emit_line(e, "ls += subgroupShuffleXor(ls, 1u);");
  emit_line(e, "l = l * al + ls;");
  emit_line(e, "m = mn;");
  emit_line(e, "subgroupMemoryBarrierShared();");
  emit_line(e, "subgroupBarrier(); /* P is written, and every lane has read its scores */");
  /* P V: P's fragments from pa_P, V's rows are B's rows */
  emit_line(e, "fcoopmatNV<32, 3, 16, PC_CM_N> pv[%d];", NV);
  emit_line(e, "[[unroll]] for (int nt = 0; nt < %d; nt++) pv[nt] = fcoopmatNV<32, 3, 16, PC_CM_N>(0.0);", NV);
  emit_line(e, "[[unroll]] for (int kk = 0; kk < %d; kk++) {", BK / 16);
  emit_line(e, "  fcoopmatNV<16, 3, 16, PC_CM_K> pf;");
  emit_line(e, "  coopMatLoadNV(pf, pa_P, uint(P0 + kk * 16), %lldu, false);", (long long)a.pp);
  emit_line(e, "  [[unroll]] for (int nt = 0; nt < %d; nt++) {", NV);
  emit_line(e, "    fcoopmatNV<16, 3, PC_CM_K, PC_CM_N> vf;");
  emit_line(e, "    coopMatLoadNV(vf, pa_V, uint(kk * %lld + nt * 2), %lldu, false);", (long long)(16 * a.vp), (long long)a.vp);
  emit_line(e, "    pv[nt] = coopMatMulAddNV(pf, vf, pv[nt]);");
  emit_line(e, "  }");
  emit_line(e, "}");
  emit_line(e, "[[unroll]] for (int nt = 0; nt < %d; nt++) coopMatStoreNV(pv[nt], pa_W, uint(W0 + nt * 16), %lldu, false);", NV, (long long)a.wp);
  emit_line(e, "subgroupMemoryBarrierShared();");
  emit_line(e, "subgroupBarrier();");
  emit_line(e, "[[unroll]] for (int u = 0; u < %d; u++) o[u] = o[u] * al + pa_W[W0 + r * %lld + h * %d + u];", HV, (long long)a.wp, HV);
  emit_line(e, "subgroupBarrier(); /* every lane has read its sums before the next step's scores are stored */");
  e->indent--;
  emit_line(e, "}");
  /* y = O / l; a row whose keys are all hidden ends with l = 0: 0/0, as the softmax over them gives */
  emit_line(e, "const float rl = 1.0 / l;");
  emit_line(e, "if (i < SQ)");
  emit_line(e, "  [[unroll]] for (int u = 0; u < %d; u++) {", HV);
  emit_line(e, "    const int cc = h * %d + u;", HV);
  emit_line(e, "    const float val = o[u] * rl;");
  char at[96];
  snprintf(at, sizeof at, "(bt * SQ + i) * %lld + cc", (long long)a.dv);
  e->indent += 2;
  emit_store(e, ob, at, "val");
  e->indent -= 2;
  emit_line(e, "  }");
  e->indent--;
  emit_line(e, "}");
}

void vk_attention_coop(emitter *e, int index) {
  const att_shape a = shape_of(e->m, e->k);
  declare(e, index, &a);
  emit_line(e, "void main() {");
  e->indent++;
  body(e);
  e->indent--;
  emit_line(e, "}");
}
