/*
 * attention.c: the GPU kernel of an attention node computed whole (lower/decompose.c keeps it one
 * node where the target asks and kir_attention_fits), written once over the GPU spellings like the
 * skeletons of gpu_kernels.c. The online softmax of FlashAttention: the score matrix never reaches
 * memory. A work group of 2 BQ invocations takes BQ query rows of one batch (the schedule's
 * tile_m: 64, or 32 where the target's shared memory or the queries are fewer) and walks the keys
 * in steps of BK (tile_n: 32 or 16), through shared memory:
 *
 *   Qs = the query tile times the scale                    (once per query tile)
 *   for each key step:  Ks, Vs = the keys and values, loaded into registers a step ahead
 *                       S = Qs Ks^T (+ mask; -inf past the keys, or a causal query's position)
 *                       m' = max(m, rowmax S);  P = exp(S - m');  a = exp(m - m')
 *                       l = l a + rowsum P;  O = O a + P Vs;  m = m'
 *   y = O / l
 *
 * Invocation (ty, tx) of a BQ/4 x 8 grid holds in registers a 4 x BK/8 block of S (rows 4 ty..,
 * keys tx + 8c: a row's eight holders are neighbours, and their key rows fall in eight banks),
 * its rows' running maxima and partial sums, and the output rows 4 ty.. at columns 4 tx + 32u..
 * The scores' products read 4 floats a time where the dialect has such loads (panel_ld4): rows
 * of q and k are padded to an odd count of 4-float words. A row's maximum is reduced by
 * shuffles among its eight holders where the dialect has them (shfl_xor: CUDA, HIP), else
 * through shared memory (one barrier more); its sum only once, at the end. A row whose keys are
 * all hidden ends with l = 0: 0/0, as the softmax over them gives.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../ir/dtype.h"
#include "emit.h"
#include "gpu_kernels.h"

/* the kernel's layout for tiles of bq rows and bk keys (kir_attention_shared counts the same) */
typedef struct {
  int bq, bk, threads, nk, nu; /* keys per invocation (bk / 8), 32-column runs of the output */
  int64_t d, dv, dp, dvp, pp;  /* the head sizes; the pitches of the rows of q and k, v, P */
  int64_t nrk, nrv;            /* the registers of a key step's keys and values per invocation */
} att_layout;

static att_layout layout_of(const kir_module *m, const kir_kernel *k) {
  const shape *qs = &m->buf[k->in_buf[0]].sh;
  att_layout a = {.bq = k->sched.tile_m > 0 ? k->sched.tile_m : KIR_ATTENTION_MIN_BQ,
                  .bk = k->sched.tile_n > 0 ? k->sched.tile_n : KIR_ATTENTION_MIN_BK,
                  .d = qs->d[qs->rank - 1].c,
                  .dv = k->dom.d[k->dom.rank - 1].c};
  a.threads = 2 * a.bq, a.nk = a.bk / 8, a.nu = (int)((a.dv + 31) / 32);
  kir_attention_pitches(a.d, a.dv, a.bk, &a.dp, &a.dvp, &a.pp);
  a.nrk = (a.bk * a.dp + a.threads - 1) / a.threads, a.nrv = (a.bk * a.dvp + a.threads - 1) / a.threads;
  return a;
}

const char *const gpu_attention_batchnames[8] = {"ab0", "ab1", "ab2", "ab3", "ab4", "ab5", "ab6", "ab7"};

static const gpu_spelling *G(const emitter *e) { return e->d->gpu; }

bool gpu_is_attention(const kir_module *m, int i) { return m->k[i].kind == KK_OPAQUE && m->g->nodes[m->k[i].node].op == OP_attention; }

int64_t gpu_attention_groups(const kir_module *m, int i, const int64_t *S) {
  const kir_kernel *k = &m->k[i];
  int64_t rows = dim_value(k->dom.d[k->dom.rank - 2], S), nb = 1, bq = layout_of(m, k).bq; /* or the target's own kernel's tile_m */
  for (int d = 0; d + 2 < k->dom.rank; d++) nb *= dim_value(k->dom.d[d], S);
  return nb * ((rows + bq - 1) / bq);
}

/* the tiles, from the largest, that the target's shared memory takes */
static const int att_tiles[][2] = {{64, 32}, {32, 32}, {KIR_ATTENTION_MIN_BQ, KIR_ATTENTION_MIN_BK}};

void gpu_attention_schedule(const kir_module *m, int i, size_t shared_max, kir_schedule *s) {
  const kir_kernel *k = &m->k[i];
  const dim rows = k->dom.d[k->dom.rank - 2];
  const att_layout a = layout_of(m, k);
  int t = 0;
  if (rows.sym < 0 && rows.c <= 32) t = 1; /* few queries: half the invocations idle otherwise */
  while (t + 1 < (int)(sizeof att_tiles / sizeof *att_tiles) && kir_attention_shared(a.d, a.dv, att_tiles[t][0], att_tiles[t][1]) > (int64_t)shared_max) t++;
  s->tile_m = att_tiles[t][0], s->tile_n = att_tiles[t][1], s->threads[0] = 2 * att_tiles[t][0];
}

bool gpu_attention_fits(const kir_module *m, int i, size_t shared_max, char *why, size_t len) {
  if (!gpu_is_attention(m, i)) return true;
  const kir_schedule *s = &m->k[i].sched;
  const att_layout a = layout_of(m, &m->k[i]);
  bool known = false;
  for (size_t t = 0; t < sizeof att_tiles / sizeof *att_tiles; t++) known |= s->tile_m == att_tiles[t][0] && s->tile_n == att_tiles[t][1];
  if (!known || s->threads[0] != 2 * s->tile_m)
    return snprintf(why, len, "the attention kernel takes 64 or 32 query rows over 32 keys, or 32 over 16, with two invocations a row"), false;
  const int64_t bytes = kir_attention_shared(a.d, a.dv, s->tile_m, s->tile_n);
  if (bytes > (int64_t)shared_max)
    return snprintf(why, len, "attention tiles of %dx%d take %lld bytes of shared memory, the device allows %zu", s->tile_m, s->tile_n,
                    (long long)bytes, shared_max),
           false;
  return true;
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

void gpu_attention_key_end(emitter *e, const char *type, int bq, bool causal) {
  if (causal) emit_line(e, "const %s JE = q0 + %d < SK ? q0 + %d : SK; /* no key past the tile's last query */", type, bq, bq);
  else emit_line(e, "const %s JE = SK;", type);
}

void gpu_attention_first_query(emitter *e, const char *tile, int bq, bool causal) {
  if (causal) emit_line(e, "const int q0 = (QT - 1 - %s) * %d;", tile, bq);
  else emit_line(e, "const int q0 = %s * %d;", tile, bq);
}

void gpu_attention_offsets(emitter *e, const char *type, bool *mrow, bool *mcol) {
  const kir_kernel *k = e->k;
  const int orank = k->dom.rank - 2, mb = k->nin > 3 ? k->in_buf[3] : -1;
  static const char *const names[4] = {"qo", "ko", "vo", "mo"};
  char off[1024];
  if (orank) emit_unravel(e, &k->dom, 0, orank, "bt", gpu_attention_batchnames);
  for (int j = 0; j < (mb >= 0 ? 4 : 3); j++) {
    gpu_attention_batch_offset(e, k->in_buf[j], orank, off, sizeof off);
    emit_line(e, "const %s %s = %s;", type, names[j], off);
  }
  *mrow = *mcol = false;
  if (mb >= 0) {
    const shape *ms = &e->m->buf[mb].sh;
    *mrow = !(ms->d[ms->rank - 2].sym < 0 && ms->d[ms->rank - 2].c == 1);
    *mcol = !(ms->d[ms->rank - 1].sym < 0 && ms->d[ms->rank - 1].c == 1);
  }
}

/* `for` over a constant count, unrolled so that the arrays it indexes stay in registers */
static void unrolled(emitter *e, const char *var, int64_t count) {
  emit_line(e, "%sfor (int %s = 0; %s < %lld; %s++)", G(e)->unroll, var, var, (long long)count, var);
}

void gpu_declare_attention(emitter *e, const char *qualifier) {
  const att_layout a = layout_of(e->m, e->k);
  const char *align = G(e)->panel_ld4 ? " __attribute__((aligned(16)))" : "";
  emit_line(e, "%s%s float pa_Q[%lld];", qualifier, align, (long long)(a.bq * a.dp));
  emit_line(e, "%s%s float pa_K[%lld];", qualifier, align, (long long)(a.bk * a.dp));
  emit_line(e, "%s%s float pa_V[%lld];", qualifier, align, (long long)(a.bk * a.dvp));
  emit_line(e, "%s%s float pa_P[%lld];", qualifier, align, (long long)(a.bq * a.pp));
  emit_line(e, "%s%s float pa_R[%d];", qualifier, align, 8 * a.bq); /* per row: its eight holders' maxima, then sums */
}

/* dst[di..di+3] = the 4 floats of shared array src from index si (16-byte aligned), as one load
 * where the dialect can */
static void load4(emitter *e, const char *src, const char *si, const char *dst, int di) {
  char s[256], d[64];
  if (G(e)->panel_ld4) {
    snprintf(s, sizeof s, "%s[%s]", src, si);
    snprintf(d, sizeof d, "%s[%d]", dst, di);
    emit_line(e, G(e)->panel_ld4, s, d);
    return;
  }
  for (int i = 0; i < 4; i++) emit_line(e, "%s[%d] = %s[%s + %d];", dst, di + i, src, si, i);
}

/* registers rk, rv = the key and value elements of the step at keys j (an expression) that this
 * invocation stores (rows padded, zero past the keys and the head sizes): as loaded, of the
 * buffer's storage type, where the dialect has raw_registers (converted when stored to shared
 * memory, so that the loads stay in flight through the step's arithmetic), else as floats */
static void prefetch(emitter *e, const att_layout *a, int kb, int vb, const char *j) {
  const char *it = e->d->index_type;
  char ld[1200], off[256], zero[64];
  emit_float(e->d, 0.0, zero, sizeof zero);
  const struct { int buf; const char *reg, *base; int64_t pitch, width, per; } kv[2] = {{kb, "rk", "ko", a->dp, a->d, a->nrk},
                                                                                     {vb, "rv", "vo", a->dvp, a->dv, a->nrv}};
  for (int t = 0; t < 2; t++) {
    const int64_t n = a->bk * kv[t].pitch;
    unrolled(e, "u", kv[t].per);
    emit_line(e, "{");
    emit_line(e, "  const %s x = lid + %d * u, c = x / %lld, d = x %% %lld, j = %s + c;", it, a->threads, (long long)kv[t].pitch,
              (long long)kv[t].pitch, j);
    snprintf(off, sizeof off, "%s + j * %lld + d", kv[t].base, (long long)kv[t].width);
    if (G(e)->raw_registers) { /* the element as stored, and a zero of its type */
      snprintf(ld, sizeof ld, "%s[%s]", emit_buf(e, kv[t].buf), off);
      snprintf(zero, sizeof zero, "(%s)0.0f", dialect_spelling(e->d, DT_STORAGE, e->m->buf[kv[t].buf].dt));
    } else {
      emit_load(e, kv[t].buf, off, ld, sizeof ld);
    }
    emit_line(e, "  %s[u] = x < %lld && d < %lld && j < SK ? %s : %s;", kv[t].reg, (long long)n, (long long)kv[t].width, ld, zero);
    emit_line(e, "}");
  }
}

/* S = Qs Ks^T for the current key step into s[a * nk + c], masked */
static void scores(emitter *e, const att_layout *a, int mb, bool mrow, bool mcol, bool causal) {
  const char *it = e->d->index_type;
  const int nk = a->nk;
  char ld[1200], ninf[64], zero[64], at[128];
  emit_float(e->d, -INFINITY, ninf, sizeof ninf);
  emit_float(e->d, 0.0, zero, sizeof zero);
  emit_line(e, "float s[%d];", 4 * nk);
  unrolled(e, "x", 4 * nk);
  emit_line(e, "  s[x] = %s;", zero);
  emit_line(e, "for (int d = 0; d < %lld; d += 4) {", (long long)(a->d + 3) / 4 * 4);
  e->indent++;
  emit_line(e, "float qa[16], kb[%d];", 4 * nk);
  for (int r = 0; r < 4; r++) {
    snprintf(at, sizeof at, "(ty * 4 + %d) * %lld + d", r, (long long)a->dp);
    load4(e, "pa_Q", at, "qa", 4 * r);
  }
  for (int c = 0; c < nk; c++) {
    snprintf(at, sizeof at, "(tx + %d) * %lld + d", 8 * c, (long long)a->dp);
    load4(e, "pa_K", at, "kb", 4 * c);
  }
  unrolled(e, "r", 4);
  emit_line(e, "  %sfor (int c = 0; c < %d; c++)", G(e)->unroll, nk);
  emit_line(e, "    %sfor (int w = 0; w < 4; w++) s[r * %d + c] += qa[r * 4 + w] * kb[c * 4 + w];", G(e)->unroll, nk);
  e->indent--;
  emit_line(e, "}");
  unrolled(e, "r", 4);
  emit_line(e, "  %sfor (int c = 0; c < %d; c++) {", G(e)->unroll, nk);
  emit_line(e, "    const %s i = q0 + ty * 4 + r, j = j0 + tx + 8 * c;", it);
  if (mb >= 0) {
    emit_load(e, mb, mrow ? (mcol ? "mo + i * SK + j" : "mo + i") : (mcol ? "mo + j" : "mo"), ld, sizeof ld);
    emit_line(e, "    if (i < SQ && j < SK) s[r * %d + c] += %s;", nk, ld);
  }
  emit_line(e, "    if (j >= JE%s) s[r * %d + c] = %s;", causal ? " || j > i" : "", nk, ninf);
  emit_line(e, "  }");
}

/* v (an lvalue) = op over the eight holders of this invocation's row (lanes tx = 0..7 of one
 * subgroup), by shuffles */
static void row_shuffle(emitter *e, enum op op, const char *v) {
  char lane[128], tmp[512];
  for (int o = 1; o < 8; o *= 2) {
    char mask[4];
    snprintf(mask, sizeof mask, "%d", o);
    snprintf(lane, sizeof lane, G(e)->shfl_xor, v, mask);
    emit_float_op(e, op, v, lane, tmp, sizeof tmp);
    emit_line(e, "%s = %s;", v, tmp);
  }
}

/* the rows' maxima (through shuffles, or pa_R and a barrier), P = exp(S - m') into s and pa_P,
 * the sums and the output rescaled */
static void online_softmax(emitter *e, const att_layout *a) {
  const int nk = a->nk;
  const bool shfl = G(e)->shfl_xor != NULL;
  char ninf[64], zero[64], tmp[512], tmp2[512];
  emit_float(e->d, -INFINITY, ninf, sizeof ninf);
  emit_float(e->d, 0.0, zero, sizeof zero);
  unrolled(e, "r", 4);
  emit_line(e, "{");
  e->indent++;
  emit_line(e, "float mt = s[r * %d];", nk);
  snprintf(tmp2, sizeof tmp2, "s[r * %d + c]", nk);
  emit_float_op(e, OP_maximum, "mt", tmp2, tmp, sizeof tmp);
  emit_line(e, "%sfor (int c = 1; c < %d; c++) mt = %s;", G(e)->unroll, nk, tmp);
  if (shfl) row_shuffle(e, OP_maximum, "mt");
  else emit_line(e, "pa_R[(ty * 4 + r) * 8 + tx] = mt;");
  if (!shfl) {
    e->indent--;
    emit_line(e, "}");
    emit_line(e, "%s", G(e)->barrier);
    unrolled(e, "r", 4);
    emit_line(e, "{");
    e->indent++;
  }
  emit_line(e, "float mn = m[r];");
  if (shfl) {
    emit_float_op(e, OP_maximum, "mn", "mt", tmp, sizeof tmp);
    emit_line(e, "mn = %s;", tmp);
  } else {
    emit_float_op(e, OP_maximum, "mn", "pa_R[(ty * 4 + r) * 8 + h]", tmp, sizeof tmp);
    emit_line(e, "%sfor (int h = 0; h < 8; h++) mn = %s;", G(e)->unroll, tmp);
  }
  emit_float_op(e, OP_sub, "m[r]", "mn", tmp2, sizeof tmp2);
  emit_float_op(e, OP_exp, tmp2, NULL, tmp, sizeof tmp);
  emit_line(e, "const float al = m[r] == %s ? %s : %s;", ninf, zero, tmp);
  emit_line(e, "float ls = %s;", zero);
  snprintf(tmp2, sizeof tmp2, "s[r * %d + c] - mn", nk);
  emit_float_op(e, OP_exp, tmp2, NULL, tmp, sizeof tmp);
  emit_line(e, "%sfor (int c = 0; c < %d; c++) {", G(e)->unroll, nk);
  emit_line(e, "  const float p = mn == %s ? %s : %s;", ninf, zero, tmp);
  emit_line(e, "  pa_P[(ty * 4 + r) * %lld + tx + 8 * c] = p;", (long long)a->pp);
  emit_line(e, "  ls += p;");
  emit_line(e, "}");
  emit_line(e, "l[r] = l[r] * al + ls;");
  emit_line(e, "m[r] = mn;");
  emit_line(e, "%sfor (int u = 0; u < %d; u++) o[r * %d + u] *= al;", G(e)->unroll, 4 * a->nu, 4 * a->nu);
  e->indent--;
  emit_line(e, "}");
}

/* O += P Vs over the step's keys */
static void values(emitter *e, const att_layout *a) {
  char at[128];
  emit_line(e, "for (int c = 0; c < %d; c += 4) {", a->bk);
  e->indent++;
  emit_line(e, "float pr[16], vv[%d];", 4 * a->nu);
  for (int r = 0; r < 4; r++) {
    snprintf(at, sizeof at, "(ty * 4 + %d) * %lld + c", r, (long long)a->pp);
    load4(e, "pa_P", at, "pr", 4 * r);
  }
  for (int cc = 0; cc < 4; cc++) {
    for (int u = 0; u < a->nu; u++) {
      snprintf(at, sizeof at, "(c + %d) * %lld + tx * 4 + %d", cc, (long long)a->dvp, 32 * u);
      load4(e, "pa_V", at, "vv", 4 * u);
    }
    unrolled(e, "r", 4);
    emit_line(e, "  %sfor (int u = 0; u < %d; u++) o[r * %d + u] += pr[r * 4 + %d] * vv[u];", G(e)->unroll, 4 * a->nu, 4 * a->nu, cc);
  }
  e->indent--;
  emit_line(e, "}");
}

void emit_attention(emitter *e) {
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  const att_layout a = layout_of(e->m, k);
  const int qb = k->in_buf[0], kb = k->in_buf[1], vb = k->in_buf[2], mb = k->nin > 3 ? k->in_buf[3] : -1, ob = k->store[0].buf;
  const shape *ks = &e->m->buf[kb].sh;
  const int orank = k->dom.rank - 2, T = a.threads;
  const bool causal = attr_i(n, "causal");
  const char *it = e->d->index_type;
  const attr *sc = attr_get(n, "scale");
  char sq[64], sk[64], nb[256], off[1024], ld[1200], scale[64], ninf[64], zero[64], one[64];
  emit_dim(e, k->dom.d[orank], sq, sizeof sq);
  emit_dim(e, ks->d[ks->rank - 2], sk, sizeof sk);
  emit_count(e, &k->dom, 0, orank, nb, sizeof nb);
  emit_float(e->d, sc->set ? sc->f : 1.0 / sqrt((double)a.d), scale, sizeof scale);
  emit_float(e->d, -INFINITY, ninf, sizeof ninf);
  emit_float(e->d, 0.0, zero, sizeof zero);
  emit_float(e->d, 1.0, one, sizeof one);
  emit_line(e, "const %s SQ = %s, SK = %s, QT = (SQ + %d) / %d;", it, sq, sk, a.bq - 1, a.bq);
  emit_line(e, "const int lid = %s, tx = lid %% 8, ty = lid / 8;", G(e)->local[0]);
  emit_line(e, "for (%s tile = %s; tile < (%s) * QT; tile += %s) {", it, G(e)->group[0], nb, G(e)->ngroups[0]);
  e->indent++;
  emit_line(e, "const %s bt = tile / QT, q0 = (tile %% QT) * %d;", it, a.bq);
  bool mrow, mcol; /* does the mask vary along the queries, the keys */
  gpu_attention_offsets(e, it, &mrow, &mcol);
  /* the scaled query tile (the last tile's readers passed two barriers since), the rows' state */
  emit_line(e, "for (int x = lid; x < %lld; x += %d) {", (long long)(a.bq * a.dp), T);
  emit_line(e, "  const %s r = x / %lld, d = x %% %lld, i = q0 + r;", it, (long long)a.dp, (long long)a.dp);
  snprintf(off, sizeof off, "qo + i * %lld + d", (long long)a.d);
  emit_load(e, qb, off, ld, sizeof ld);
  emit_line(e, "  pa_Q[x] = i < SQ && d < %lld ? %s * %s : %s;", (long long)a.d, ld, scale, zero);
  emit_line(e, "}");
  emit_line(e, "float o[%d], m[4], l[4];", 16 * a.nu);
  const bool raw = G(e)->raw_registers;
  emit_line(e, "%s rk[%lld];", raw ? dialect_spelling(e->d, DT_STORAGE, e->m->buf[kb].dt) : "float", (long long)a.nrk);
  emit_line(e, "%s rv[%lld];", raw ? dialect_spelling(e->d, DT_STORAGE, e->m->buf[vb].dt) : "float", (long long)a.nrv);
  unrolled(e, "x", 16 * a.nu);
  emit_line(e, "  o[x] = %s;", zero);
  unrolled(e, "r", 4);
  emit_line(e, "{ m[r] = %s; l[r] = %s; }", ninf, zero);
  gpu_attention_key_end(e, it, a.bq, causal);
  prefetch(e, &a, kb, vb, "0");
  emit_line(e, "for (%s j0 = 0; j0 < JE; j0 += %d) {", it, a.bk);
  e->indent++;
  emit_line(e, "%s", G(e)->barrier); /* the last step's readers of pa_K, pa_V, pa_P and pa_R are done */
  char kval[128] = "rk[u]", vval[128] = "rv[u]";
  if (raw) { /* the registers read as the buffers would be, converted to float */
    snprintf(kval, sizeof kval, dialect_spelling(e->d, DT_LOAD, e->m->buf[kb].dt), "rk", "u");
    snprintf(vval, sizeof vval, dialect_spelling(e->d, DT_LOAD, e->m->buf[vb].dt), "rv", "u");
  }
  unrolled(e, "u", a.nrk);
  emit_line(e, "  if (lid + %d * u < %lld) pa_K[lid + %d * u] = %s;", T, (long long)(a.bk * a.dp), T, kval);
  unrolled(e, "u", a.nrv);
  emit_line(e, "  if (lid + %d * u < %lld) pa_V[lid + %d * u] = %s;", T, (long long)(a.bk * a.dvp), T, vval);
  emit_line(e, "%s", G(e)->barrier);
  emit_line(e, "if (j0 + %d < JE) {", a.bk); /* the next step's loads in flight through this one */
  e->indent++;
  char next[64];
  snprintf(next, sizeof next, "(j0 + %d)", a.bk);
  prefetch(e, &a, kb, vb, next);
  e->indent--;
  emit_line(e, "}");
  scores(e, &a, mb, mrow, mcol, causal);
  online_softmax(e, &a);
  emit_line(e, "%s", G(e)->barrier); /* P is in shared memory */
  values(e, &a);
  e->indent--;
  emit_line(e, "}");
  /* each row's sum, of its eight holders' */
  const bool shfl = G(e)->shfl_xor != NULL;
  if (!shfl) {
    emit_line(e, "%s", G(e)->barrier);
    unrolled(e, "r", 4);
    emit_line(e, "  pa_R[(ty * 4 + r) * 8 + tx] = l[r];");
    emit_line(e, "%s", G(e)->barrier);
  }
  unrolled(e, "r", 4);
  emit_line(e, "{");
  e->indent++;
  emit_line(e, "const %s i = q0 + ty * 4 + r;", it);
  if (shfl) {
    emit_line(e, "float ls = l[r];");
    row_shuffle(e, OP_add, "ls");
  } else {
    emit_line(e, "float ls = %s;", zero);
    emit_line(e, "%sfor (int h = 0; h < 8; h++) ls += pa_R[(ty * 4 + r) * 8 + h];", G(e)->unroll);
  }
  emit_line(e, "const float rl = %s / ls;", one);
  unrolled(e, "u", 4 * a.nu);
  emit_line(e, "{");
  emit_line(e, "  const %s cc = tx * 4 + (u / 4) * 32 + u %% 4;", it);
  emit_line(e, "  if (i < SQ && cc < %lld) {", (long long)a.dv);
  char at[64], val[64];
  snprintf(at, sizeof at, "(bt * SQ + i) * %lld + cc", (long long)a.dv);
  snprintf(val, sizeof val, "o[r * %d + u] * rl", 4 * a.nu);
  emit_store(e, ob, at, val);
  emit_line(e, "  }");
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
}
