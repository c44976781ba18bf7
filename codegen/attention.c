/*
 * attention.c: the GPU kernel of an attention node computed whole (lower/decompose.c keeps it one
 * node where the target asks and kir_attention_fits), written once over the GPU spellings like the
 * skeletons of gpu_kernels.c. The online softmax of FlashAttention: the score matrix never reaches
 * memory. A work group of 64 invocations takes ATT_BQ (32) query rows of one batch and walks the
 * keys in tiles of ATT_BK (32), through shared memory:
 *
 *   Qs = the query tile times the scale            (once per query tile)
 *   for each key tile:  Ks = keys;  S = Qs Ks^T (+ mask; -inf past the keys, or a causal query)
 *                       m' = max(m, rowmax S);  P = exp(S - m');  a = exp(m - m')
 *                       l = l a + rowsum P;  O = O a + P Vs;  m = m'       (Vs = values, in Ks's place)
 *   y = O / l
 *
 * Invocation (ty, tx) of an 8 x 8 grid holds a 4 x 4 block of S (rows 4ty.., keys tx + 8u) and
 * the output rows 4ty.. at columns tx + 8u; two invocations per row reduce the row's maximum and
 * sum. Rows are padded in shared memory (D + 1, 33) so that no two invocations of a subgroup read
 * one bank. A row whose keys are all hidden ends with l = 0: 0/0, as the softmax over them gives.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../ir/dtype.h"
#include "emit.h"
#include "gpu_kernels.h"

enum { ATT_BQ = 32, ATT_BK = 32 };

const char *const gpu_attention_batchnames[8] = {"ab0", "ab1", "ab2", "ab3", "ab4", "ab5", "ab6", "ab7"};

static const gpu_spelling *G(const emitter *e) { return e->d->gpu; }

bool gpu_is_attention(const kir_module *m, int i) { return m->k[i].kind == KK_OPAQUE && m->g->nodes[m->k[i].node].op == OP_attention; }

int64_t gpu_attention_groups(const kir_module *m, int i, const int64_t *S) {
  const kir_kernel *k = &m->k[i];
  int64_t rows = dim_value(k->dom.d[k->dom.rank - 2], S), nb = 1, bq = k->sched.tile_m > 0 ? k->sched.tile_m : ATT_BQ;
  for (int d = 0; d + 2 < k->dom.rank; d++) nb *= dim_value(k->dom.d[d], S);
  return nb * ((rows + bq - 1) / bq);
}

bool gpu_attention_fits(const kir_module *m, int i, char *why, size_t len) {
  if (!gpu_is_attention(m, i) || m->k[i].sched.threads[0] == GPU_ATT_THREADS) return true;
  snprintf(why, len, "the attention kernel runs %d invocations per work group", GPU_ATT_THREADS);
  return false;
}

void gpu_attention_batch_offset(emitter *e, int b, int orank, char *out, size_t len) {
  const shape *s = &e->m->buf[b].sh;
  int brank = s->rank - 2;
  size_t at = (size_t)snprintf(out, len, "0");
  for (int d = 0; d < brank && at < len; d++) {
    if (s->d[d].sym < 0 && s->d[d].c == 1) continue; /* broadcast: index 0 */
    char stride[256];
    emit_count(e, s, d + 1, s->rank, stride, sizeof stride);
    at += (size_t)snprintf(out + at, len - at, " + %s * (%s)", gpu_attention_batchnames[orank - brank + d], stride);
  }
}

/* `for` over a constant count, unrolled so that the arrays it indexes stay in registers */
static void unrolled(emitter *e, const char *var, int64_t count) {
  emit_line(e, "%sfor (int %s = 0; %s < %lld; %s++)", G(e)->unroll, var, var, (long long)count, var);
}

void gpu_declare_attention(emitter *e, const char *qualifier) {
  const kir_kernel *k = e->k;
  const shape *qs = &e->m->buf[k->in_buf[0]].sh;
  const int64_t D = qs->d[qs->rank - 1].c, DV = k->dom.d[k->dom.rank - 1].c;
  emit_line(e, "%s float pa_Q[%lld];", qualifier, (long long)(ATT_BQ * (D + 1)));
  emit_line(e, "%s float pa_KV[%lld];", qualifier, (long long)(ATT_BK * (D + 1 > DV ? D + 1 : DV)));
  emit_line(e, "%s float pa_P[%d];", qualifier, ATT_BQ * (ATT_BK + 1));
  emit_line(e, "%s float pa_M[%d];", qualifier, ATT_BQ); /* per row: the running maximum, sum, rescale */
  emit_line(e, "%s float pa_L[%d];", qualifier, ATT_BQ);
  emit_line(e, "%s float pa_A[%d];", qualifier, ATT_BQ);
  emit_line(e, "%s float pa_R[%d];", qualifier, 4 * ATT_BQ); /* the two halves' maxima, then sums */
}

/* S = Qs Ks^T for the current key tile, masked, into pa_P */
static void scores(emitter *e, int64_t D, int mb, bool mrow, bool mcol, bool causal) {
  const char *it = e->d->index_type;
  char ld[1200], ninf[64], zero[64];
  emit_float(e->d, -INFINITY, ninf, sizeof ninf);
  emit_float(e->d, 0.0, zero, sizeof zero);
  emit_line(e, "float s[16];");
  unrolled(e, "x", 16);
  emit_line(e, "  s[x] = %s;", zero);
  emit_line(e, "for (int d = 0; d < %lld; d++) {", (long long)D);
  emit_line(e, "  float qa[4], kb[4];");
  emit_line(e, "  %sfor (int a = 0; a < 4; a++) qa[a] = pa_Q[(ty * 4 + a) * %lld + d];", G(e)->unroll, (long long)(D + 1));
  emit_line(e, "  %sfor (int b = 0; b < 4; b++) kb[b] = pa_KV[(tx + 8 * b) * %lld + d];", G(e)->unroll, (long long)(D + 1));
  emit_line(e, "  %sfor (int a = 0; a < 4; a++)", G(e)->unroll);
  emit_line(e, "    %sfor (int b = 0; b < 4; b++) s[a * 4 + b] += qa[a] * kb[b];", G(e)->unroll);
  emit_line(e, "}");
  unrolled(e, "a", 4);
  emit_line(e, "  %sfor (int b = 0; b < 4; b++) {", G(e)->unroll);
  emit_line(e, "    const %s r = ty * 4 + a, c = tx + 8 * b, i = q0 + r, j = j0 + c;", it);
  emit_line(e, "    float x = s[a * 4 + b];");
  if (mb >= 0) {
    emit_load(e, mb, mrow ? (mcol ? "mo + i * SK + j" : "mo + i") : (mcol ? "mo + j" : "mo"), ld, sizeof ld);
    emit_line(e, "    if (i < SQ && j < SK) x += %s;", ld);
  }
  emit_line(e, "    if (j >= JE%s) x = %s;", causal ? " || j > i" : "", ninf);
  emit_line(e, "    pa_P[r * %d + c] = x;", ATT_BK + 1);
  emit_line(e, "  }");
}

/* the row maxima and sums (two invocations per row, 16 keys each), P = exp(S - m') in place */
static void online_softmax(emitter *e) {
  char ninf[64], zero[64], tmp[512], tmp2[512];
  emit_float(e->d, -INFINITY, ninf, sizeof ninf);
  emit_float(e->d, 0.0, zero, sizeof zero);
  emit_line(e, "{");
  e->indent++;
  emit_line(e, "const int r = lid / 2, h = lid %% 2;");
  emit_line(e, "float mt = %s;", ninf);
  emit_float_op(e, OP_maximum, "mt", "pa_P[r * 33 + h * 16 + u]", tmp, sizeof tmp);
  emit_line(e, "%sfor (int u = 0; u < 16; u++) mt = %s;", G(e)->unroll, tmp);
  emit_line(e, "pa_R[r * 2 + h] = mt;");
  emit_line(e, "%s", G(e)->barrier);
  emit_float_op(e, OP_maximum, "pa_R[r * 2]", "pa_R[r * 2 + 1]", tmp, sizeof tmp);
  emit_line(e, "mt = %s;", tmp);
  emit_line(e, "const float mo_ = pa_M[r];");
  emit_float_op(e, OP_maximum, "mo_", "mt", tmp, sizeof tmp);
  emit_line(e, "const float mn = %s;", tmp);
  emit_line(e, "float ls = %s;", zero);
  emit_float_op(e, OP_sub, "pa_P[r * 33 + h * 16 + u]", "mn", tmp2, sizeof tmp2);
  emit_float_op(e, OP_exp, tmp2, NULL, tmp, sizeof tmp);
  emit_line(e, "%sfor (int u = 0; u < 16; u++) {", G(e)->unroll);
  emit_line(e, "  const float p = mn == %s ? %s : %s;", ninf, zero, tmp);
  emit_line(e, "  pa_P[r * 33 + h * 16 + u] = p;");
  emit_line(e, "  ls += p;");
  emit_line(e, "}");
  emit_line(e, "pa_R[64 + r * 2 + h] = ls;");
  emit_line(e, "%s", G(e)->barrier);
  emit_float_op(e, OP_sub, "mo_", "mn", tmp2, sizeof tmp2);
  emit_float_op(e, OP_exp, tmp2, NULL, tmp, sizeof tmp);
  emit_line(e, "if (h == 0) {");
  emit_line(e, "  const float al = mo_ == %s ? %s : %s;", ninf, zero, tmp);
  emit_line(e, "  pa_L[r] = pa_L[r] * al + pa_R[64 + r * 2] + pa_R[64 + r * 2 + 1];");
  emit_line(e, "  pa_M[r] = mn;");
  emit_line(e, "  pa_A[r] = al;");
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
}

void emit_attention(emitter *e) {
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  const int qb = k->in_buf[0], kb = k->in_buf[1], vb = k->in_buf[2], mb = k->nin > 3 ? k->in_buf[3] : -1, ob = k->store[0].buf;
  const shape *qs = &e->m->buf[qb].sh, *ks = &e->m->buf[kb].sh, *ms = mb >= 0 ? &e->m->buf[mb].sh : NULL;
  const int orank = k->dom.rank - 2;
  const int64_t D = qs->d[qs->rank - 1].c, DV = k->dom.d[k->dom.rank - 1].c, NU = (DV + 7) / 8;
  const bool causal = attr_i(n, "causal");
  const char *it = e->d->index_type;
  const attr *sc = attr_get(n, "scale");
  char sq[64], sk[64], nb[256], off[1024], ld[1200], scale[64], ninf[64], zero[64], one[64];
  emit_dim(e, k->dom.d[orank], sq, sizeof sq);
  emit_dim(e, ks->d[ks->rank - 2], sk, sizeof sk);
  emit_count(e, &k->dom, 0, orank, nb, sizeof nb);
  emit_float(e->d, sc->set ? sc->f : 1.0 / sqrt((double)D), scale, sizeof scale);
  emit_float(e->d, -INFINITY, ninf, sizeof ninf);
  emit_float(e->d, 0.0, zero, sizeof zero);
  emit_float(e->d, 1.0, one, sizeof one);
  emit_line(e, "const %s SQ = %s, SK = %s, QT = (SQ + %d) / %d;", it, sq, sk, ATT_BQ - 1, ATT_BQ);
  emit_line(e, "const int lid = %s, tx = lid %% 8, ty = lid / 8;", G(e)->local[0]);
  emit_line(e, "for (%s tile = %s; tile < (%s) * QT; tile += %s) {", it, G(e)->group[0], nb, G(e)->ngroups[0]);
  e->indent++;
  emit_line(e, "const %s bt = tile / QT, q0 = (tile %% QT) * %d;", it, ATT_BQ);
  if (orank) emit_unravel(e, &k->dom, 0, orank, "bt", gpu_attention_batchnames);
  gpu_attention_batch_offset(e, qb, orank, off, sizeof off);
  emit_line(e, "const %s qo = %s;", it, off);
  gpu_attention_batch_offset(e, kb, orank, off, sizeof off);
  emit_line(e, "const %s ko = %s;", it, off);
  gpu_attention_batch_offset(e, vb, orank, off, sizeof off);
  emit_line(e, "const %s vo = %s;", it, off);
  bool mrow = false, mcol = false; /* does the mask vary along the queries, the keys */
  if (ms) {
    mrow = !(ms->d[ms->rank - 2].sym < 0 && ms->d[ms->rank - 2].c == 1);
    mcol = !(ms->d[ms->rank - 1].sym < 0 && ms->d[ms->rank - 1].c == 1);
    gpu_attention_batch_offset(e, mb, orank, off, sizeof off);
    emit_line(e, "const %s mo = %s;", it, off);
  }
  /* the scaled query tile, and the rows' state */
  emit_line(e, "for (int x = lid; x < %lld; x += %d) {", (long long)(ATT_BQ * D), GPU_ATT_THREADS);
  emit_line(e, "  const %s r = x / %lld, d = x %% %lld, i = q0 + r;", it, (long long)D, (long long)D);
  snprintf(off, sizeof off, "qo + i * %lld + d", (long long)D);
  emit_load(e, qb, off, ld, sizeof ld);
  emit_line(e, "  pa_Q[r * %lld + d] = i < SQ ? %s * %s : %s;", (long long)(D + 1), ld, scale, zero);
  emit_line(e, "}");
  emit_line(e, "if (lid < %d) { pa_M[lid] = %s; pa_L[lid] = %s; }", ATT_BQ, ninf, zero);
  emit_line(e, "float o[%lld];", (long long)(4 * NU));
  unrolled(e, "x", 4 * NU);
  emit_line(e, "  o[x] = %s;", zero);
  if (causal) emit_line(e, "const %s JE = q0 + %d < SK ? q0 + %d : SK; /* no key past the tile's last query */", it, ATT_BQ, ATT_BQ);
  else emit_line(e, "const %s JE = SK;", it);
  emit_line(e, "for (%s j0 = 0; j0 < JE; j0 += %d) {", it, ATT_BK);
  e->indent++;
  emit_line(e, "%s", G(e)->barrier); /* the last tile's readers of pa_KV and pa_P are done; pa_Q is written */
  emit_line(e, "for (int x = lid; x < %lld; x += %d) {", (long long)(ATT_BK * D), GPU_ATT_THREADS);
  emit_line(e, "  const %s c = x / %lld, d = x %% %lld, j = j0 + c;", it, (long long)D, (long long)D);
  snprintf(off, sizeof off, "ko + j * %lld + d", (long long)D);
  emit_load(e, kb, off, ld, sizeof ld);
  emit_line(e, "  pa_KV[c * %lld + d] = j < SK ? %s : %s;", (long long)(D + 1), ld, zero);
  emit_line(e, "}");
  emit_line(e, "%s", G(e)->barrier);
  scores(e, D, mb, mrow, mcol, causal);
  emit_line(e, "%s", G(e)->barrier); /* S is in pa_P; the keys are read */
  emit_line(e, "for (int x = lid; x < %lld; x += %d) {", (long long)(ATT_BK * DV), GPU_ATT_THREADS);
  emit_line(e, "  const %s c = x / %lld, cc = x %% %lld, j = j0 + c;", it, (long long)DV, (long long)DV);
  snprintf(off, sizeof off, "vo + j * %lld + cc", (long long)DV);
  emit_load(e, vb, off, ld, sizeof ld);
  emit_line(e, "  pa_KV[x] = j < SK ? %s : %s;", ld, zero);
  emit_line(e, "}");
  online_softmax(e);
  emit_line(e, "%s", G(e)->barrier); /* P, the rescales and the values are in shared memory */
  unrolled(e, "a", 4);
  emit_line(e, "{");
  emit_line(e, "  const float al = pa_A[ty * 4 + a];");
  emit_line(e, "  %sfor (int u = 0; u < %lld; u++) o[a * %lld + u] *= al;", G(e)->unroll, (long long)NU, (long long)NU);
  emit_line(e, "}");
  emit_line(e, "for (int c = 0; c < %d; c++) {", ATT_BK);
  emit_line(e, "  float pr[4], vv[%lld];", (long long)NU);
  emit_line(e, "  %sfor (int a = 0; a < 4; a++) pr[a] = pa_P[(ty * 4 + a) * %d + c];", G(e)->unroll, ATT_BK + 1);
  emit_line(e, "  %sfor (int u = 0; u < %lld; u++) vv[u] = tx + 8 * u < %lld ? pa_KV[c * %lld + tx + 8 * u] : %s;", G(e)->unroll, (long long)NU,
            (long long)DV, (long long)DV, zero);
  emit_line(e, "  %sfor (int a = 0; a < 4; a++)", G(e)->unroll);
  emit_line(e, "    %sfor (int u = 0; u < %lld; u++) o[a * %lld + u] += pr[a] * vv[u];", G(e)->unroll, (long long)NU, (long long)NU);
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "%s", G(e)->barrier); /* every row's l is in pa_L */
  unrolled(e, "a", 4);
  emit_line(e, "{");
  e->indent++;
  emit_line(e, "const %s r = ty * 4 + a, i = q0 + r;", it);
  emit_line(e, "const float rl = %s / pa_L[r];", one);
  unrolled(e, "u", NU);
  emit_line(e, "{");
  emit_line(e, "  const %s cc = tx + 8 * u;", it);
  emit_line(e, "  if (i < SQ && cc < %lld) {", (long long)DV);
  char at[64], val[64];
  snprintf(at, sizeof at, "(bt * SQ + i) * %lld + cc", (long long)DV);
  snprintf(val, sizeof val, "o[a * %lld + u] * rl", (long long)NU);
  emit_store(e, ob, at, val);
  emit_line(e, "  }");
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "%s", G(e)->barrier); /* the next tile rewrites pa_Q and the rows' state */
  e->indent--;
  emit_line(e, "}");
}
