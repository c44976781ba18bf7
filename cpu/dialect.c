/*
 * dialect.c: how the CPU target spells kernels: C11 with OpenMP. Pointwise kernels split the
 * last dimension into chunks so that every work item is a contiguous `omp simd` loop; row kernels
 * give each thread whole rows and run the reductions as simd loops over the row; matmul is
 * cache-blocked with packed panels and a register-tiled micro-kernel; the epilogue is applied
 * while the tile is stored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"
#include "../codegen/emit.h"
#include "dialect_prelude.h"
#include "cpu.h"

static const char *const idxnames[] = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"};

/* B holds the kernel's own buffers, in kernel_buffers order */
static void declare_buffers(emitter *e) {
  for (int b = 0; b < e->m->nbuf; b++)
    if (e->slot[b] >= 0) {
      const char *t = dialect_spelling(e->d, DT_STORAGE, e->m->buf[b].dt);
      emit_line(e, "%s *restrict b%d = (%s *)B[%d];", t, e->slot[b], t, e->slot[b]);
    }
}

static void pointwise(emitter *e) {
  const kir_kernel *k = e->k;
  const shape *s = &k->dom;
  if (s->rank == 0) {
    emit_store_at(e, &k->store[0], s, idxnames);
    return;
  }
  char rows[256], cols[32];
  emit_count(e, s, 0, s->rank - 1, rows, sizeof rows);
  emit_dim(e, s->d[s->rank - 1], cols, sizeof cols);
  emit_line(e, "const int64_t R = %s, C = %s, CH = %lld, NCH = (C + CH - 1) / CH;", rows, cols, (long long)k->sched.chunk);
  emit_line(e, "#pragma omp parallel for schedule(static)");
  emit_line(e, "for (int64_t t = 0; t < R * NCH; t++) {");
  e->indent++;
  emit_line(e, "const int64_t c0 = (t %% NCH) * CH, c1 = pc_min64(c0 + CH, C);");
  emit_line(e, "const int64_t o = t / NCH;");
  emit_unravel(e, s, 0, s->rank - 1, "o", idxnames);
  emit_line(e, "#pragma omp simd");
  emit_line(e, "for (int64_t %s = c0; %s < c1; %s++) {", idxnames[s->rank - 1], idxnames[s->rank - 1], idxnames[s->rank - 1]);
  e->indent++;
  emit_scope_push(e);
  emit_store_at(e, &k->store[0], s, idxnames);
  emit_scope_pop(e);
  e->indent--;
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
}

/* ---- row kernels ---- */

static const char *const rownames[] = {"o0", "o1", "o2", "o3", "o4", "o5", "o6", "o7"};

static void row_loop_begin(emitter *e, const char *const *full) {
  const kir_kernel *k = e->k;
  emit_line(e, "for (int64_t j = 0; j < L; j++) {");
  e->indent++;
  emit_scope_push(e);
  shape r = k->red;
  const char *const *jn = full + k->dom.rank;
  if (r.rank == 1) emit_line(e, "const int64_t %s = j;", jn[0]);
  else {
    /* unravel j over the reduced dims */
    shape full_s = {.rank = k->dom.rank + r.rank};
    for (int d = 0; d < r.rank; d++) full_s.d[k->dom.rank + d] = r.d[d];
    emit_unravel(e, &full_s, k->dom.rank, full_s.rank, "j", full);
  }
}

static void row_loop_end(emitter *e) {
  emit_scope_pop(e);
  e->indent--;
  emit_line(e, "}");
}

/* Row values worth keeping: computed by one loop over the row and needed by a later one, and
 * costly (a transcendental function inside). The first loop stores them in a per-thread row
 * buffer and later loops read them back, instead of computing them again (softmax's exp). */
typedef struct row_cache {
  unsigned *used; /* per value: the loops that need it */
  int *slot;      /* per value: its row buffer, or -1 */
  int n;
} row_cache;

static bool plan_row_cache(const kir_kernel *k, row_cache *rc) {
  rc->used = calloc((size_t)k->nval + 1, sizeof *rc->used);
  rc->slot = malloc(sizeof *rc->slot * (size_t)(k->nval + 1));
  bool *costly = calloc((size_t)k->nval + 1, sizeof *costly);
  if (!rc->used || !rc->slot || !costly) {
    free(costly);
    return false;
  }
  for (int p = 0; p < k->nphase; p++) row_mark_loop(k, k->phase[p].val, p, rc->used);
  for (int s = 0; s < k->nstore; s++)
    if (k->store[s].row) row_mark_loop(k, k->store[s].val, k->nphase, rc->used);
  rc->n = 0;
  for (int v = 0; v < k->nval; v++) { /* values come after their operands */
    const kir_val *x = &k->val[v];
    costly[v] = x->kind == KV_OP && (op_is_costly(x->op) || (x->arg[0] >= 0 && costly[x->arg[0]]) ||
                                     (x->arg[1] >= 0 && costly[x->arg[1]]) || (x->arg[2] >= 0 && costly[x->arg[2]]));
    bool shared = __builtin_popcount(rc->used[v]) > 1;
    rc->slot[v] = costly[v] && shared && dtype_is_float(x->dt) && x->row ? rc->n++ : -1;
  }
  free(costly);
  return true;
}

static void row_loop_cached(emitter *e, const row_cache *rc, int loop, bool after) {
  const kir_kernel *k = e->k;
  for (int v = 0; v < k->nval; v++) {
    if (rc->slot[v] < 0 || !(rc->used[v] & (1u << loop))) continue;
    bool first = (rc->used[v] & ((1u << loop) - 1)) == 0;
    if (first && after) {
      emit_line(e, "sc%d[j] = v%d;", rc->slot[v], v);
    } else if (!first && !after) {
      emit_line(e, "const float v%d = sc%d[j];", v, rc->slot[v]);
      e->done[v] = e->scope;
    }
  }
}

static void row(emitter *e) {
  const kir_kernel *k = e->k;
  char no[256], len[256];
  emit_count(e, &k->dom, 0, k->dom.rank, no, sizeof no);
  emit_count(e, &k->red, 0, k->red.rank, len, sizeof len);
  const char *full[2 * PORTC_MAX_RANK];
  static const char *const jn[] = {"j0", "j1", "j2", "j3", "j4", "j5", "j6", "j7"};
  for (int d = 0; d < k->dom.rank; d++) full[d] = rownames[d];
  for (int d = 0; d < k->red.rank; d++) full[k->dom.rank + d] = jn[d];
  row_cache rc = {0};
  if (!plan_row_cache(k, &rc)) rc.n = 0;
  emit_line(e, "const int64_t NO = %s, L = %s;", no, len);
  emit_line(e, "int fail = 0;");
  emit_line(e, "#pragma omp parallel");
  emit_line(e, "{");
  e->indent++;
  if (rc.n) emit_line(e, "float *scratch = malloc(sizeof(float) * (size_t)(L ? L : 1) * %d);", rc.n);
  else emit_line(e, "float *scratch = NULL;");
  if (rc.n) {
    emit_line(e, "if (!scratch) {");
    emit_line(e, "  #pragma omp atomic write");
    emit_line(e, "  fail = 1;");
    emit_line(e, "}");
  }
  for (int c = 0; c < rc.n; c++) emit_line(e, "float *restrict sc%d = scratch + (size_t)%d * (size_t)L;", c, c);
  emit_line(e, "#pragma omp for schedule(static)");
  emit_line(e, "for (int64_t o = 0; o < NO; o++) {");
  e->indent++;
  if (rc.n) emit_line(e, "if (!scratch) continue;");
  emit_scope_push(e);
  emit_unravel(e, &k->dom, 0, k->dom.rank, "o", rownames);
  for (int p = 0; p < k->nphase; p++) {
    const kir_phase *ph = &k->phase[p];
    portc_dtype t = row_phase_type(e->m, k, p);
    bool f = dtype_is_float(t);
    emit_hoisted(e, ph->val, full);
    const char *red = ph->op == OP_prod ? "*" : ph->op == OP_max ? "max" : ph->op == OP_min ? "min" : "+";
    bool nanflag = f && (ph->op == OP_max || ph->op == OP_min);
    bool wrap = !f && (ph->op == OP_sum || ph->op == OP_prod);
    const char *acc = wrap ? "accu" : "acc"; /* integer sums wrap: accumulate unsigned */
    emit_line(e, "%s %s%d = %s;", wrap ? "uint64_t" : compute_type(t), acc, p, wrap ? (ph->op == OP_prod ? "1u" : "0u") : reduce_init(ph->op, t));
    if (nanflag) emit_line(e, "int nan%d = 0;", p);
    if (nanflag) emit_line(e, "#pragma omp simd reduction(%s:%s%d) reduction(|:nan%d)", red, acc, p, p);
    else emit_line(e, "#pragma omp simd reduction(%s:%s%d)", red, acc, p);
    row_loop_begin(e, full);
    if (rc.n) row_loop_cached(e, &rc, p, false);
    const char *v = emit_value(e, ph->val, full);
    char vn[16];
    snprintf(vn, sizeof vn, "%s", v);
    switch (ph->op) {
    case OP_prod: emit_line(e, wrap ? "accu%d *= (uint64_t)%s;" : "acc%d *= %s;", p, vn); break;
    case OP_max: emit_line(e, "acc%d = %s > acc%d ? %s : acc%d;", p, vn, p, vn, p); break;
    case OP_min: emit_line(e, "acc%d = %s < acc%d ? %s : acc%d;", p, vn, p, vn, p); break;
    default: emit_line(e, wrap ? "accu%d += (uint64_t)%s;" : "acc%d += %s;", p, vn); break;
    }
    if (nanflag) emit_line(e, "nan%d |= %s != %s;", p, vn, vn);
    if (rc.n) {
      for (int c = 0; c < k->nval; c++) /* values to keep must exist in this loop */
        if (rc.slot[c] >= 0 && (rc.used[c] & (1u << p)) && !(rc.used[c] & ((1u << p) - 1))) emit_value(e, c, full);
      row_loop_cached(e, &rc, p, true);
    }
    row_loop_end(e);
    if (nanflag) emit_line(e, "if (nan%d) acc%d = NAN;", p, p);
    if (ph->op == OP_mean) emit_line(e, "acc%d /= (float)L;", p);
    if (wrap) emit_line(e, "const int64_t acc%d = (int64_t)accu%d;", p, p);
  }
  for (int s = 0; s < k->nstore; s++)
    if (!k->store[s].row) emit_store_at(e, &k->store[s], &k->dom, rownames);
  bool any_row = false;
  for (int s = 0; s < k->nstore; s++) any_row = any_row || k->store[s].row;
  if (any_row) {
    for (int s = 0; s < k->nstore; s++)
      if (k->store[s].row) emit_hoisted(e, k->store[s].val, full);
    emit_line(e, "#pragma omp simd");
    row_loop_begin(e, full);
    if (rc.n) row_loop_cached(e, &rc, k->nphase, false);
    shape xs = {.rank = k->dom.rank + k->red.rank};
    for (int d = 0; d < k->dom.rank; d++) xs.d[d] = k->dom.d[d];
    for (int d = 0; d < k->red.rank; d++) xs.d[k->dom.rank + d] = k->red.d[d];
    for (int s = 0; s < k->nstore; s++)
      if (k->store[s].row) emit_store_at(e, &k->store[s], &xs, full);
    row_loop_end(e);
  }
  emit_scope_pop(e);
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "free(scratch);");
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "if (fail) return 1;");
  free(rc.used);
  free(rc.slot);
}

/* ---- matmul: packed panels, register micro-tile, epilogue on store ---- */

/* Packs the current block of one operand into panels of W rows (A) or columns (B): panel by
 * panel, row p of the contraction contiguous, zeros past the block's edge so that the micro-kernel
 * never needs a remainder case. idx names the operand's index with `var` the packed dimension. */
static void pack_panels(emitter *e, int slot, const char *const *idx, const char *dst, const char *r, const char *n,
                        const char *W, const char *var, const char *origin) {
  char ex[1200];
  emit_line(e, "for (int64_t %s = 0; %s < %s; %s += %s)", r, r, n, r, W);
  emit_line(e, "  for (int64_t p = 0; p < kc; p++) {");
  e->indent += 2;
  emit_line(e, "const int64_t kk = pc + p;");
  emit_line(e, "float *dst = %s + %s * kc + p * %s;", dst, r, W);
  emit_line(e, "for (int64_t q = 0; q < %s; q++) {", W);
  e->indent++;
  emit_line(e, "const int64_t %s = %s + %s + q;", var, origin, r);
  emit_operand(e, slot, idx, ex, sizeof ex);
  emit_line(e, "dst[q] = %s + q < %s ? (float)(%s) : 0.0f;", r, n, ex);
  e->indent--;
  emit_line(e, "}");
  e->indent -= 2;
  emit_line(e, "  }");
}

static void matmul_float(emitter *e) {
  const kir_kernel *k = e->k;
  const kir_schedule *sc = &k->sched;
  int nb = k->dom.rank - 2;
  char batch[256], M[32], N[32], K[32];
  emit_count(e, &k->dom, 0, nb, batch, sizeof batch);
  emit_dim(e, k->mnk[0], M, sizeof M);
  emit_dim(e, k->mnk[1], N, sizeof N);
  emit_dim(e, k->mnk[2], K, sizeof K);
  emit_line(e, "enum { MR = %d, NR = %d, MC = %d, NC = %d, KC = %d };", sc->mr, sc->nr, sc->mc, sc->nc, sc->kc);
  emit_line(e, "const int64_t NB = %s, M = %s, N = %s, K = %s;", batch, M, N, K);
  emit_line(e, "const int64_t MT = (M + MC - 1) / MC, NT = (N + NC - 1) / NC;");
  emit_line(e, "int fail = 0;");
  emit_line(e, "#pragma omp parallel");
  emit_line(e, "{");
  e->indent++;
  emit_line(e, "float *Ap = aligned_alloc(64, sizeof(float) * MC * KC), *Bp = aligned_alloc(64, sizeof(float) * KC * NC);");
  emit_line(e, "float *Cb = aligned_alloc(64, sizeof(float) * MC * NC);");
  emit_line(e, "if (!Ap || !Bp || !Cb) {");
  emit_line(e, "  free(Ap); free(Bp); free(Cb);");
  emit_line(e, "  #pragma omp atomic write");
  emit_line(e, "  fail = 1;");
  emit_line(e, "} else {");
  e->indent++;
  emit_line(e, "#pragma omp for schedule(dynamic, 1)");
  emit_line(e, "for (int64_t t = 0; t < NB * MT * NT; t++) {");
  e->indent++;
  emit_line(e, "const int64_t bt = t / (MT * NT), ic = (t / NT %% MT) * MC, jc = (t %% NT) * NC;");
  emit_line(e, "const int64_t mc = pc_min64(MC, M - ic), nc = pc_min64(NC, N - jc);");
  static const char *const bn[] = {"bt0", "bt1", "bt2", "bt3", "bt4", "bt5"};
  emit_unravel(e, &k->dom, 0, nb, "bt", bn);
  emit_line(e, "memset(Cb, 0, sizeof(float) * MC * NC);");
  emit_line(e, "for (int64_t pc = 0; pc < K; pc += KC) {");
  e->indent++;
  emit_line(e, "const int64_t kc = pc_min64(KC, K - pc);");
  /* pack B: panels of NR columns, row p of a panel contiguous */
  const char *bidx[PORTC_MAX_RANK + 2], *aidx[PORTC_MAX_RANK + 2];
  for (int d = 0; d < nb; d++) bidx[d] = aidx[d] = bn[d];
  bidx[nb] = "kk", bidx[nb + 1] = "nn";
  aidx[nb] = "mm", aidx[nb + 1] = "kk";
  pack_panels(e, 1, bidx, "Bp", "jr", "nc", "NR", "nn", "jc");
  pack_panels(e, 0, aidx, "Ap", "ir", "mc", "MR", "mm", "ic");
  emit_line(e, "for (int64_t jr = 0; jr < nc; jr += NR)");
  emit_line(e, "  for (int64_t ir = 0; ir < mc; ir += MR)");
  emit_line(e, "    pc_micro_%d_%d(kc, Ap + ir * kc, Bp + jr * kc, Cb + ir * NC + jr, NC);", sc->mr, sc->nr);
  e->indent--;
  emit_line(e, "}");
  /* epilogue and store */
  emit_line(e, "for (int64_t i = 0; i < mc; i++)");
  emit_line(e, "  for (int64_t j = 0; j < nc; j++) {");
  e->indent += 2;
  const char *oidx[PORTC_MAX_RANK + 2];
  for (int d = 0; d < nb; d++) oidx[d] = bn[d];
  oidx[nb] = "m", oidx[nb + 1] = "n";
  emit_line(e, "const int64_t m = ic + i, n = jc + j;");
  emit_line(e, "const float acc0 = Cb[i * NC + j];");
  emit_scope_push(e);
  emit_store_at(e, &k->store[0], &k->dom, oidx);
  emit_scope_pop(e);
  e->indent -= 2;
  emit_line(e, "  }");
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "free(Ap); free(Bp); free(Cb);");
  e->indent--;
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "if (fail) return 1;");
}

static void matmul_int(emitter *e) {
  const kir_kernel *k = e->k;
  int nb = k->dom.rank - 2;
  char all[256], N[32], M[32], K[32];
  emit_count(e, &k->dom, 0, nb + 1, all, sizeof all);
  emit_dim(e, k->mnk[0], M, sizeof M);
  emit_dim(e, k->mnk[1], N, sizeof N);
  emit_dim(e, k->mnk[2], K, sizeof K);
  emit_line(e, "const int64_t RM = %s, M = %s, N = %s, K = %s;", all, M, N, K);
  emit_line(e, "#pragma omp parallel for schedule(static)");
  emit_line(e, "for (int64_t r = 0; r < RM; r++) {");
  e->indent++;
  emit_line(e, "const int64_t bt = r / M, m = r %% M;");
  static const char *const bn[] = {"bt0", "bt1", "bt2", "bt3", "bt4", "bt5"};
  emit_unravel(e, &k->dom, 0, nb, "bt", bn);
  const char *aidx[PORTC_MAX_RANK + 2], *bidx[PORTC_MAX_RANK + 2], *oidx[PORTC_MAX_RANK + 2];
  for (int d = 0; d < nb; d++) aidx[d] = bidx[d] = oidx[d] = bn[d];
  aidx[nb] = "m", aidx[nb + 1] = "kk", bidx[nb] = "kk", bidx[nb + 1] = "n", oidx[nb] = "m", oidx[nb + 1] = "n";
  emit_line(e, "for (int64_t n = 0; n < N; n++) {");
  e->indent++;
  emit_line(e, "uint64_t s = 0;");
  char ae[1200], be[1200];
  emit_line(e, "for (int64_t kk = 0; kk < K; kk++) {");
  e->indent++;
  emit_operand(e, 0, aidx, ae, sizeof ae);
  emit_operand(e, 1, bidx, be, sizeof be);
  emit_line(e, "s += (uint64_t)(%s) * (uint64_t)(%s);", ae, be);
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "const int64_t acc0 = (int64_t)s;");
  emit_scope_push(e);
  emit_store_at(e, &k->store[0], &k->dom, oidx);
  emit_scope_pop(e);
  e->indent--;
  emit_line(e, "}");
  e->indent--;
  emit_line(e, "}");
}

/* ---- conv2d: direct loops over each output plane, epilogue on store ---- */

static void conv(emitter *e) {
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  const shape *xs = &e->m->buf[k->in_buf[0]].sh, *ws = &e->m->buf[k->in_buf[1]].sh;
  char NN[32];
  emit_dim(e, k->dom.d[0], NN, sizeof NN);
  emit_line(e, "const int64_t NO = %s * %lld, C = %lld, H = %lld, W = %lld, O = %lld, OH = %lld, OW = %lld;", NN,
            (long long)k->dom.d[1].c, (long long)xs->d[1].c, (long long)xs->d[2].c, (long long)xs->d[3].c, (long long)k->dom.d[1].c,
            (long long)k->dom.d[2].c, (long long)k->dom.d[3].c);
  emit_line(e, "const int64_t CG = %lld, KH = %lld, KW = %lld, OG = O / %lld;", (long long)ws->d[1].c, (long long)ws->d[2].c,
            (long long)ws->d[3].c, (long long)attr_i(n, "groups"));
  emit_line(e, "#pragma omp parallel for schedule(static)");
  emit_line(e, "for (int64_t no = 0; no < NO; no++) {");
  e->indent++;
  emit_line(e, "const int64_t i0 = no / O, i1 = no %% O, g = i1 / OG;");
  emit_line(e, "for (int64_t i2 = 0; i2 < OH; i2++)");
  emit_line(e, "  for (int64_t i3 = 0; i3 < OW; i3++) {");
  e->indent += 2;
  char bias[256], xv[512], wv[512];
  if (k->nin > 2) emit_load(e, k->in_buf[2], "i1", bias, sizeof bias);
  emit_line(e, "float s = %s;", k->nin > 2 ? bias : "0.0f");
  emit_line(e, "for (int64_t c = 0; c < CG; c++)");
  emit_line(e, "  for (int64_t kh = 0; kh < KH; kh++) {");
  emit_line(e, "    const int64_t ih = i2 * %lld - %lld + kh * %lld;", (long long)attr_or_one(n, "stride", 0),
            (long long)attr_get(n, "padding")->v[0], (long long)attr_or_one(n, "dilation", 0));
  emit_line(e, "    if (ih < 0 || ih >= H) continue;");
  emit_line(e, "    for (int64_t kw = 0; kw < KW; kw++) {");
  emit_line(e, "      const int64_t iw = i3 * %lld - %lld + kw * %lld;", (long long)attr_or_one(n, "stride", 1),
            (long long)attr_get(n, "padding")->v[1], (long long)attr_or_one(n, "dilation", 1));
  emit_line(e, "      if (iw < 0 || iw >= W) continue;");
  emit_load(e, k->in_buf[0], "((i0 * C + g * CG + c) * H + ih) * W + iw", xv, sizeof xv);
  emit_load(e, k->in_buf[1], "((i1 * CG + c) * KH + kh) * KW + kw", wv, sizeof wv);
  emit_line(e, "      s += %s * %s;", xv, wv);
  emit_line(e, "    }");
  emit_line(e, "  }");
  emit_line(e, "const float acc0 = s;");
  emit_scope_push(e);
  emit_stores_at(e, &k->dom, idxnames);
  emit_scope_pop(e);
  e->indent -= 2;
  emit_line(e, "  }");
  e->indent--;
  emit_line(e, "}");
}

static void kernel(emitter *e, int index) {
  const kir_kernel *k = e->k;
  emit_line(e, "//@kernel %d", index);
  emit_line(e, "// %s", k->why);
  emit_line(e, "int portc_kernel(void *const *restrict B, const int64_t *restrict S) {");
  e->indent++;
  emit_line(e, "(void)S;");
  declare_buffers(e);
  bool status = kernel_has_status(e->m, index) || k->kind == KK_OPAQUE; /* the opaque templates' loops reduce pc_bad */
  if (status) emit_line(e, "int pc_bad = 0; /* STATUS_BAD_INDEX | STATUS_DIV_ZERO */");
  switch (k->kind) {
  case KK_POINTWISE: pointwise(e); break;
  case KK_ROW: row(e); break;
  case KK_MATMUL:
    if (dtype_is_float(e->m->buf[k->in_buf[0]].dt)) matmul_float(e);
    else matmul_int(e);
    break;
  case KK_CONV: conv(e); break;
  case KK_OPAQUE: emit_opaque(e); break;
  }
  if (status) emit_line(e, "if (pc_bad) return 1 + pc_bad;");
  emit_line(e, "return 0;");
  e->indent--;
  emit_line(e, "}\n");
}

/* each kernel is built alone (targets/regional.h): its entry point is portc_kernel */
static void module_end(emitter *e) { (void)e; }

/* %0 %1 %2: operands in compute type (float for f32/f16/bf16, int64_t otherwise) */
const dialect cpu_dialect = {
    .name = "c-openmp",
    .base = &c_dialect,
    .prelude = cpu_prelude,
    .index_type = "int64_t",
    .index_lit = "INT64_C(%lld)",
    .int_lit = "INT64_C(%lld)",
    .float_ops = {
        [OP_exp] = "pc_expf(%0)", [OP_sigmoid] = "(1.0f / (1.0f + pc_expf(-%0)))", [OP_silu] = "(%0 / (1.0f + pc_expf(-%0)))",
    },
    .parallel_for = "#pragma omp parallel for schedule(static) reduction(|:pc_bad)\nfor (int64_t t = 0; t < %s; t++) {",
    .bad_index = "pc_bad |= 1;",
    .checked_idiv = "pc_idivc(%0, %1, &pc_bad)",
    .kernel = kernel,
    .module_end = module_end,
};
