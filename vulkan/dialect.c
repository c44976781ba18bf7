/*
 * dialect.c: how the Vulkan target spells kernels: GLSL 4.50 compute shaders, one per kernel,
 * buffers as std430 storage buffers (binding b is buffer b), symbol values as push constants.
 * Every kernel loops in strides over its work so that a capped dispatch covers any size
 * (launch.c); the work-group size of 1-D kernels is the specialization constant PC_WG.
 * Pointwise, conv and opaque kernels give each invocation one output element; row kernels give
 * each work group one row, keep the row's loads in registers when its length is known, and
 * reduce with subgroup operations and shared memory; matmul computes 64x64 tiles from
 * shared-memory panels with a 4x4 register block per invocation, or, for f16 operands in whole
 * tiles on a device with cooperative matrices, on those; both apply the epilogue as they store.
 *
 * Each kernel's text starts with "//@kernel N needs LIST": the runtime cuts the module there,
 * puts the prelude in front of each piece, and checks LIST against the device's features.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"
#include "../targets/emit.h"
#include "prelude.h"
#include "vk.h"

static const char *const idxnames[] = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"};
static const char *const rownames[] = {"o0", "o1", "o2", "o3", "o4", "o5", "o6", "o7"};
static const char *const rednames[] = {"j0", "j1", "j2", "j3", "j4", "j5", "j6", "j7"};
static const char *const batchnames[] = {"bt0", "bt1", "bt2", "bt3", "bt4", "bt5"};

static bool coop_eligible(const emitter *e);

/* what the kernel needs beyond core Vulkan 1.1 ("coopmat": it has a variant for devices with
 * cooperative matrices) */
static void needs(emitter *e, int index, char *out, size_t len) {
  const kir_kernel *k = e->k;
  bool i64 = false, s16 = false, s8 = false;
  int bufs[VK_MAX_BIND];
  int nb = vk_kernel_buffers(e->m, index, bufs, VK_MAX_BIND); /* the runtime refuses more */
  for (int i = 0; i < nb && i < VK_MAX_BIND; i++) {
    portc_dtype t = e->m->buf[bufs[i]].dt;
    bool written = vk_kernel_writes(k, bufs[i]); /* narrow elements are read through 32-bit words, written as they are */
    s16 = s16 || (written && (t == PORTC_F16 || t == PORTC_BF16));
    s8 = s8 || (written && t == PORTC_BOOL);
    i64 = i64 || !dtype_is_float(t);
  }
  for (int v = 0; v < k->nval; v++) i64 = i64 || !dtype_is_float(k->val[v].dt);
  snprintf(out, len, "%s%s%s%s%s", i64 ? " int64" : "", s16 ? " storage16" : "", s8 ? " storage8" : "", k->kind == KK_ROW ? " row" : "",
           k->kind == KK_MATMUL && coop_eligible(e) ? " coopmat" : "");
}

/* f16 = the operands of a cooperative-matrix matmul, declared as float16_t for its loads */
static void declare_buffers(emitter *e, int index, bool f16) {
  int bufs[VK_MAX_BIND];
  int nb = vk_kernel_buffers(e->m, index, bufs, VK_MAX_BIND);
  for (int i = 0; i < nb && i < VK_MAX_BIND; i++) {
    int b = bufs[i];
    bool written = vk_kernel_writes(e->k, b);
    portc_dtype t = e->m->buf[b].dt;
    bool narrow = t == PORTC_F16 || t == PORTC_BF16 || t == PORTC_BOOL;
    bool operand = f16 && (b == e->k->in_buf[0] || b == e->k->in_buf[1]);
    emit_line(e, "layout(std430, binding = %d) restrict %sbuffer B%d { %s b%d[]; };", b, written ? "" : "readonly ", b,
              operand ? "float16_t" : narrow && !written ? "uint" : e->d->storage[t], b);
  }
  if (vk_kernel_checks_indices(e->m, index))
    emit_line(e, "layout(std430, binding = %d) restrict buffer Status { uint pc_bad; };", e->m->nbuf);
  int nsym = e->m->g->nsyms;
  emit_line(e, "layout(push_constant) uniform Symbols { int S[%d]; };", nsym > 0 ? nsym : 1);
}

/* "for (int t = first invocation; t < count; t += all invocations) {" over the output elements */
static void element_loop(emitter *e, const shape *s) {
  char count[256];
  emit_count(e, s, 0, s->rank, count, sizeof count);
  emit_line(e, "const int NT = %s;", count);
  emit_line(e, "for (int t = int(gl_GlobalInvocationID.x); t < NT; t += int(gl_NumWorkGroups.x * PC_WG)) {");
  e->indent++;
}

static void loop_end(emitter *e) {
  e->indent--;
  emit_line(e, "}");
}

static void pointwise(emitter *e) {
  const kir_kernel *k = e->k;
  element_loop(e, &k->dom);
  emit_unravel(e, &k->dom, 0, k->dom.rank, "t", idxnames);
  emit_scope_push(e);
  emit_store_at(e, &k->store[0], &k->dom, idxnames);
  emit_scope_pop(e);
  loop_end(e);
}

/* ---- row kernels: a work group per row ---- */

/* Row values kept in registers: loads of the row that more than one loop over it needs
 * (softmax reads x in all three). When the row length is a known constant, each invocation
 * keeps its share, PC_RV = L / PC_WG elements, in an array that the first loop fills, so the
 * row is read from memory once. */
enum { ROW_REGS_MAX_L = 16384 };

typedef struct row_regs {
  unsigned *used; /* per value: the loops that need it (bit p: phase p; bit nphase: the stores) */
  int *slot;      /* per value: its array, or -1 */
  int n;
} row_regs;

/* the row length when it is a constant that row_regs keeps in registers, else 0 */
static int64_t row_regs_length(const kir_kernel *k) {
  int64_t len = 1;
  for (int d = 0; d < k->red.rank; d++) {
    if (k->red.d[d].sym >= 0) return 0;
    len *= k->red.d[d].c;
  }
  return len <= ROW_REGS_MAX_L ? len : 0;
}

static void plan_row_regs(const kir_kernel *k, row_regs *rr) {
  rr->n = 0;
  rr->used = calloc((size_t)k->nval + 1, sizeof *rr->used);
  rr->slot = malloc(sizeof *rr->slot * (size_t)(k->nval + 1));
  if (!row_regs_length(k) || !rr->used || !rr->slot) return;
  for (int p = 0; p < k->nphase; p++) row_mark_loop(k, k->phase[p].val, p, rr->used);
  for (int s = 0; s < k->nstore; s++)
    if (k->store[s].row) row_mark_loop(k, k->store[s].val, k->nphase, rr->used);
  for (int v = 0; v < k->nval; v++) {
    const kir_val *x = &k->val[v];
    bool keep = x->kind == KV_LOAD && x->row && dtype_is_float(x->dt) && __builtin_popcount(rr->used[v]) > 1;
    rr->slot[v] = keep ? rr->n++ : -1;
  }
}

static bool first_loop(const row_regs *rr, int v, int loop) { return (rr->used[v] & ((1u << loop) - 1)) == 0; }

static void row_loop_begin(emitter *e, const row_regs *rr, int loop, const char *const *full) {
  const kir_kernel *k = e->k;
  if (row_regs_length(k)) { /* a counted loop the compiler unrolls: many loads in flight */
    emit_line(e, "[[unroll]] for (int it = 0; it < int(PC_RV); it++) {");
    emit_line(e, "  const int j = int(gl_LocalInvocationID.x) + it * int(PC_WG);");
    emit_line(e, "  if (j >= L) break;");
  } else {
    emit_line(e, "for (int j = int(gl_LocalInvocationID.x); j < L; j += int(PC_WG)) {");
  }
  e->indent++;
  emit_scope_push(e);
  shape fs = {.rank = k->dom.rank + k->red.rank};
  for (int d = 0; d < k->red.rank; d++) fs.d[k->dom.rank + d] = k->red.d[d];
  emit_unravel(e, &fs, k->dom.rank, fs.rank, "j", full);
  for (int v = 0; v < k->nval && rr->n; v++)
    if (rr->slot[v] >= 0 && (rr->used[v] & (1u << loop)) && !first_loop(rr, v, loop)) {
      emit_line(e, "const float v%d = rr%d[it];", v, rr->slot[v]);
      e->done[v] = e->scope;
    }
}

static void row_loop_end(emitter *e, const row_regs *rr, int loop, const char *const *full) {
  for (int v = 0; v < e->k->nval && rr->n; v++)
    if (rr->slot[v] >= 0 && (rr->used[v] & (1u << loop)) && first_loop(rr, v, loop))
      emit_line(e, "rr%d[it] = %s;", rr->slot[v], emit_value(e, v, full));
  emit_scope_pop(e);
  loop_end(e);
}

static void row_phase(emitter *e, const row_regs *rr, int p, const char *const *full) {
  const kir_phase *ph = &e->k->phase[p];
  portc_dtype t = row_phase_type(e->m, e->k, p);
  bool f = dtype_is_float(t), minmax = ph->op == OP_max || ph->op == OP_min;
  const char *name = ph->op == OP_prod ? "prod" : ph->op == OP_max ? "max" : ph->op == OP_min ? "min" : "sum";
  emit_hoisted(e, ph->val, full);
  emit_line(e, "%s acc%d = %s;", compute_type(t), p, reduce_init(ph->op, t));
  if (f && minmax) emit_line(e, "float nan%d = 0.0;", p);
  row_loop_begin(e, rr, p, full);
  char v[16];
  snprintf(v, sizeof v, "%s", emit_value(e, ph->val, full));
  switch (ph->op) {
  case OP_prod: emit_line(e, "acc%d *= %s;", p, v); break;
  case OP_max: emit_line(e, "acc%d = %s > acc%d ? %s : acc%d;", p, v, p, v, p); break;
  case OP_min: emit_line(e, "acc%d = %s < acc%d ? %s : acc%d;", p, v, p, v, p); break;
  default: emit_line(e, "acc%d += %s;", p, v); break;
  }
  if (f && minmax) emit_line(e, "if (isnan(%s)) nan%d = 1.0;", v, p);
  row_loop_end(e, rr, p, full);
  emit_line(e, "acc%d = pc_wg_%s%s(acc%d);", p, name, f ? "" : "i", p);
  if (f && minmax) emit_line(e, "if (pc_wg_max(nan%d) != 0.0) acc%d = NAN;", p, p);
  if (ph->op == OP_mean) emit_line(e, "acc%d /= float(L);", p);
}

static void row(emitter *e) {
  const kir_kernel *k = e->k;
  char no[256], len[256];
  emit_count(e, &k->dom, 0, k->dom.rank, no, sizeof no);
  emit_count(e, &k->red, 0, k->red.rank, len, sizeof len);
  const char *full[2 * PORTC_MAX_RANK];
  for (int d = 0; d < k->dom.rank; d++) full[d] = rownames[d];
  for (int d = 0; d < k->red.rank; d++) full[k->dom.rank + d] = rednames[d];
  emit_line(e, "const int NO = %s, L = %s;", no, len);
  row_regs rr;
  plan_row_regs(k, &rr);
  for (int c = 0; c < rr.n; c++) emit_line(e, "float rr%d[PC_RV];", c);
  emit_line(e, "for (int o = int(gl_WorkGroupID.x); o < NO; o += int(gl_NumWorkGroups.x)) {");
  e->indent++;
  emit_scope_push(e);
  emit_unravel(e, &k->dom, 0, k->dom.rank, "o", rownames);
  for (int p = 0; p < k->nphase; p++) row_phase(e, &rr, p, full);
  bool outer = false, any_row = false;
  for (int s = 0; s < k->nstore; s++) outer = outer || !k->store[s].row, any_row = any_row || k->store[s].row;
  if (outer) {
    emit_line(e, "if (gl_LocalInvocationID.x == 0u) {");
    e->indent++;
    emit_scope_push(e);
    for (int s = 0; s < k->nstore; s++)
      if (!k->store[s].row) emit_store_at(e, &k->store[s], &k->dom, rownames);
    emit_scope_pop(e);
    loop_end(e);
  }
  if (any_row) {
    for (int s = 0; s < k->nstore; s++)
      if (k->store[s].row) emit_hoisted(e, k->store[s].val, full);
    row_loop_begin(e, &rr, k->nphase, full);
    shape xs = {.rank = k->dom.rank + k->red.rank};
    for (int d = 0; d < k->dom.rank; d++) xs.d[d] = k->dom.d[d];
    for (int d = 0; d < k->red.rank; d++) xs.d[k->dom.rank + d] = k->red.d[d];
    for (int s = 0; s < k->nstore; s++)
      if (k->store[s].row) emit_store_at(e, &k->store[s], &xs, full);
    row_loop_end(e, &rr, k->nphase, full);
  }
  emit_scope_pop(e);
  loop_end(e);
  free(rr.used);
  free(rr.slot);
}


/* ---- matmul ---- */

/* loops over batches and 64-row bands of this work group's 64 columns; fills oidx */
static void matmul_begin(emitter *e, const char **aidx, const char **bidx, const char **oidx) {
  const kir_kernel *k = e->k;
  int nb = k->dom.rank - 2;
  char batch[256], M[32], N[32], K[32];
  emit_count(e, &k->dom, 0, nb, batch, sizeof batch);
  emit_line(e, "const int NB = %s, M = %s, N = %s, K = %s;", batch, emit_dim(e, k->mnk[0], M, sizeof M), emit_dim(e, k->mnk[1], N, sizeof N),
            emit_dim(e, k->mnk[2], K, sizeof K));
  emit_line(e, "const int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y), tid = ty * 16 + tx;");
  emit_line(e, "const int n0 = int(gl_WorkGroupID.x) * %d;", VK_MM_TILE);
  emit_line(e, "for (int bt = int(gl_WorkGroupID.z); bt < NB; bt += int(gl_NumWorkGroups.z)) {");
  e->indent++;
  emit_unravel(e, &k->dom, 0, nb, "bt", batchnames);
  emit_line(e, "for (int m0 = int(gl_WorkGroupID.y) * %d; m0 < M; m0 += int(gl_NumWorkGroups.y) * %d) {", VK_MM_TILE, VK_MM_TILE);
  e->indent++;
  for (int d = 0; d < nb; d++) aidx[d] = bidx[d] = oidx[d] = batchnames[d];
  aidx[nb] = "mm", aidx[nb + 1] = "kk", bidx[nb] = "kk", bidx[nb + 1] = "nn", oidx[nb] = "m", oidx[nb + 1] = "n";
}

static void matmul_store(emitter *e, const char *acc, const char *const *oidx) {
  emit_line(e, "for (int i = 0; i < 4; i++)");
  emit_line(e, "  for (int jj = 0; jj < 4; jj++) {");
  e->indent += 2;
  emit_line(e, "const int m = m0 + ty + 16 * i, n = n0 + tx + 16 * jj;");
  emit_line(e, "if (m >= M || n >= N) continue;");
  emit_line(e, "const %s acc0 = %s[i][jj];", compute_type(e->m->buf[e->k->in_buf[0]].dt), acc);
  emit_scope_push(e);
  emit_store_at(e, &e->k->store[0], &e->k->dom, oidx);
  emit_scope_pop(e);
  e->indent -= 2;
  emit_line(e, "  }");
}

static void matmul_float(emitter *e) {
  const char *aidx[PORTC_MAX_RANK + 2], *bidx[PORTC_MAX_RANK + 2], *oidx[PORTC_MAX_RANK + 2];
  char ex[1200];
  matmul_begin(e, aidx, bidx, oidx);
  emit_line(e, "float c[4][4];");
  emit_line(e, "for (int i = 0; i < 4; i++) for (int jj = 0; jj < 4; jj++) c[i][jj] = 0.0;");
  emit_line(e, "for (int k0 = 0; k0 < K; k0 += %d) {", VK_MM_BK);
  e->indent++;
  emit_line(e, "for (int q = 0; q < 4; q++) {");
  e->indent++;
  emit_line(e, "const int ea = tid + 256 * q, mm = m0 + ea / 16, kk = k0 + ea %% 16;");
  emit_line(e, "float a = 0.0;");
  emit_line(e, "if (mm < M && kk < K) {");
  e->indent++;
  emit_operand(e, 0, aidx, ex, sizeof ex);
  emit_line(e, "a = %s;", ex);
  loop_end(e);
  emit_line(e, "pc_As[ea %% 16][ea / 16] = a;");
  loop_end(e);
  emit_line(e, "for (int q = 0; q < 4; q++) {");
  e->indent++;
  emit_line(e, "const int eb = tid + 256 * q, kk = k0 + eb / 64, nn = n0 + eb %% 64;");
  emit_line(e, "float b = 0.0;");
  emit_line(e, "if (kk < K && nn < N) {");
  e->indent++;
  emit_operand(e, 1, bidx, ex, sizeof ex);
  emit_line(e, "b = %s;", ex);
  loop_end(e);
  emit_line(e, "pc_Bs[eb / 64][eb %% 64] = b;");
  loop_end(e);
  emit_line(e, "barrier();");
  emit_line(e, "for (int p = 0; p < %d; p++) {", VK_MM_BK);
  emit_line(e, "  float av[4], bv[4];");
  emit_line(e, "  for (int i = 0; i < 4; i++) av[i] = pc_As[p][ty + 16 * i];");
  emit_line(e, "  for (int jj = 0; jj < 4; jj++) bv[jj] = pc_Bs[p][tx + 16 * jj];");
  emit_line(e, "  for (int i = 0; i < 4; i++) for (int jj = 0; jj < 4; jj++) c[i][jj] = fma(av[i], bv[jj], c[i][jj]);");
  emit_line(e, "}");
  emit_line(e, "barrier();");
  loop_end(e);
  matmul_store(e, "c", oidx);
  loop_end(e);
  loop_end(e);
}

/* ---- matmul on cooperative matrices (GL_NV_cooperative_matrix): f16 operands, f32 sums ---- */

static bool same_dims(const shape *a, const shape *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->d[d].sym != b->d[d].sym || a->d[d].c != b->d[d].c) return false;
  return true;
}

/* operand `slot` is its buffer read as it lies: every step of its path maps an index to itself */
static bool plain_operand(const emitter *e, int slot) {
  const kir_kernel *k = e->k;
  const kir_buf *b = &e->m->buf[k->in_buf[slot]];
  if (b->dt != PORTC_F16 || b->sh.rank != 2) return false;
  const kir_path *p = k->in_path[slot] >= 0 ? &k->path[k->in_path[slot]] : NULL;
  for (int s = 0; p && s < p->n; s++) {
    const kir_step *st = &p->s[s];
    bool ident = same_dims(&st->from, &st->to) && (st->kind == ST_BCAST || st->kind == ST_RESHAPE);
    if (st->kind == ST_PERMUTE) {
      ident = same_dims(&st->from, &st->to);
      for (int j = 0; j < st->from.rank; j++) ident = ident && st->a[j] == j;
    }
    if (!ident) return false;
  }
  return true;
}

/* a 2-D f16 matmul whose sizes are known multiples of the tiles, with operands as they lie */
static bool coop_eligible(const emitter *e) {
  const kir_kernel *k = e->k;
  const dim *d = k->mnk;
  if (k->dom.rank != 2 || d[0].sym >= 0 || d[1].sym >= 0 || d[2].sym >= 0) return false;
  if (d[0].c % VK_MM_TILE || d[1].c % VK_MM_TILE || d[2].c % 16) return false;
  return plain_operand(e, 0) && plain_operand(e, 1);
}

/* Four subgroups of 32 share a 64x64 tile, each computing 32x32 as 2x2 fragments of 16x16 from
 * operands loaded straight from the buffers; the sums go through shared memory so that the
 * epilogue runs per element as in the other variant. */
static void matmul_coop(emitter *e) {
  const kir_kernel *k = e->k;
  int a = k->in_buf[0], b = k->in_buf[1];
  const char *oidx[] = {"m", "n"};
  emit_line(e, "const int M = %lld, N = %lld, K = %lld;", (long long)k->mnk[0].c, (long long)k->mnk[1].c, (long long)k->mnk[2].c);
  emit_line(e, "const int sg = int(gl_SubgroupID), sm = (sg >> 1) * 32, sn = (sg & 1) * 32, n0 = int(gl_WorkGroupID.x) * 64;");
  emit_line(e, "for (int m0 = int(gl_WorkGroupID.y) * 64; m0 < M; m0 += int(gl_NumWorkGroups.y) * 64) {");
  e->indent++;
  emit_line(e, "fcoopmatNV<32, 3, 16, 16> c[2][2];");
  emit_line(e, "for (int i = 0; i < 2; i++) for (int jj = 0; jj < 2; jj++) c[i][jj] = fcoopmatNV<32, 3, 16, 16>(0.0);");
  emit_line(e, "for (int kk = 0; kk < K; kk += 16) {");
  emit_line(e, "  fcoopmatNV<16, 3, 16, 16> fa[2], fb[2];");
  emit_line(e, "  for (int i = 0; i < 2; i++) coopMatLoadNV(fa[i], b%d, uint((m0 + sm + 16 * i) * K + kk), uint(K), false);", a);
  emit_line(e, "  for (int jj = 0; jj < 2; jj++) coopMatLoadNV(fb[jj], b%d, uint(kk * N + n0 + sn + 16 * jj), uint(N), false);", b);
  emit_line(e, "  for (int i = 0; i < 2; i++) for (int jj = 0; jj < 2; jj++) c[i][jj] = coopMatMulAddNV(fa[i], fb[jj], c[i][jj]);");
  emit_line(e, "}");
  emit_line(e, "for (int i = 0; i < 2; i++)");
  emit_line(e, "  for (int jj = 0; jj < 2; jj++) coopMatStoreNV(c[i][jj], pc_C, uint((sm + 16 * i) * 64 + sn + 16 * jj), 64u, false);");
  emit_line(e, "barrier();");
  emit_line(e, "for (int q = int(gl_LocalInvocationID.x); q < 64 * 64; q += 128) {");
  e->indent++;
  emit_line(e, "const int m = m0 + q / 64, n = n0 + q %% 64;");
  emit_line(e, "const float acc0 = pc_C[q];");
  emit_scope_push(e);
  emit_store_at(e, &k->store[0], &k->dom, oidx);
  emit_scope_pop(e);
  loop_end(e);
  emit_line(e, "barrier();");
  loop_end(e);
}

static void matmul_int(emitter *e) {
  const char *aidx[PORTC_MAX_RANK + 2], *bidx[PORTC_MAX_RANK + 2], *oidx[PORTC_MAX_RANK + 2];
  char ae[1200], be[1200];
  matmul_begin(e, aidx, bidx, oidx);
  emit_line(e, "int64_t c[4][4];");
  emit_line(e, "for (int i = 0; i < 4; i++)");
  emit_line(e, "  for (int jj = 0; jj < 4; jj++) {");
  e->indent += 2;
  emit_line(e, "const int mm = m0 + ty + 16 * i, nn = n0 + tx + 16 * jj;");
  emit_line(e, "int64_t s = 0l;");
  emit_line(e, "if (mm < M && nn < N)");
  emit_line(e, "  for (int kk = 0; kk < K; kk++) {");
  e->indent += 2;
  emit_operand(e, 0, aidx, ae, sizeof ae);
  emit_operand(e, 1, bidx, be, sizeof be);
  emit_line(e, "s += %s * %s;", ae, be);
  e->indent -= 2;
  emit_line(e, "  }");
  emit_line(e, "c[i][jj] = s;");
  e->indent -= 2;
  emit_line(e, "  }");
  matmul_store(e, "c", oidx);
  loop_end(e);
  loop_end(e);
}

/* ---- conv2d: an invocation per output element ---- */

static void conv(emitter *e) {
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  const shape *xs = &e->m->buf[k->in_buf[0]].sh, *ws = &e->m->buf[k->in_buf[1]].sh;
  emit_line(e, "const int C = %lld, H = %lld, W = %lld, O = %lld, CG = %lld, KH = %lld, KW = %lld, OG = O / %lld;", (long long)xs->d[1].c,
            (long long)xs->d[2].c, (long long)xs->d[3].c, (long long)k->dom.d[1].c, (long long)ws->d[1].c, (long long)ws->d[2].c,
            (long long)ws->d[3].c, (long long)attr_i(n, "groups"));
  element_loop(e, &k->dom);
  emit_unravel(e, &k->dom, 0, 4, "t", idxnames);
  char bias[256], xv[512], wv[512];
  if (k->nin > 2) emit_load(e, k->in_buf[2], "i1", bias, sizeof bias);
  emit_line(e, "const int g = i1 / OG;");
  emit_line(e, "float s = %s;", k->nin > 2 ? bias : "0.0");
  emit_line(e, "for (int c = 0; c < CG; c++)");
  emit_line(e, "  for (int kh = 0; kh < KH; kh++) {");
  emit_line(e, "    const int ih = i2 * %lld - %lld + kh * %lld;", (long long)attr_or_one(n, "stride", 0), (long long)attr_get(n, "padding")->v[0],
            (long long)attr_or_one(n, "dilation", 0));
  emit_line(e, "    if (ih < 0 || ih >= H) continue;");
  emit_line(e, "    for (int kw = 0; kw < KW; kw++) {");
  emit_line(e, "      const int iw = i3 * %lld - %lld + kw * %lld;", (long long)attr_or_one(n, "stride", 1), (long long)attr_get(n, "padding")->v[1],
            (long long)attr_or_one(n, "dilation", 1));
  emit_line(e, "      if (iw < 0 || iw >= W) continue;");
  emit_load(e, k->in_buf[0], "((i0 * C + g * CG + c) * H + ih) * W + iw", xv, sizeof xv);
  emit_load(e, k->in_buf[1], "((i1 * CG + c) * KH + kh) * KW + kw", wv, sizeof wv);
  emit_line(e, "      s = fma(%s, %s, s);", xv, wv);
  emit_line(e, "    }");
  emit_line(e, "  }");
  emit_line(e, "const float acc0 = s;");
  emit_scope_push(e);
  emit_store_at(e, &k->store[0], &k->dom, idxnames);
  emit_scope_pop(e);
  loop_end(e);
}

/* ---- opaque ops: an invocation per output element ---- */

static void argmax(emitter *e, const node *n, int xb, int ob) {
  const shape *xs = &e->m->buf[xb].sh;
  char outer[256], len[64], inner[256], ld[512];
  int64_t axis = norm_axis(attr_i(n, "axis"), xs->rank);
  emit_count(e, xs, 0, (int)axis, outer, sizeof outer);
  emit_dim(e, xs->d[axis], len, sizeof len);
  emit_count(e, xs, (int)axis + 1, xs->rank, inner, sizeof inner);
  emit_line(e, "const int OU = %s, LEN = %s, IN = %s;", outer, len, inner);
  emit_line(e, "for (int t = int(gl_GlobalInvocationID.x); t < OU * IN; t += int(gl_NumWorkGroups.x * PC_WG)) {");
  e->indent++;
  emit_line(e, "const int o = t / IN, i = t %% IN;");
  emit_load(e, xb, "o * LEN * IN + i", ld, sizeof ld);
  const char *ct = compute_type(e->m->buf[xb].dt);
  emit_line(e, "int best = 0; %s bv = %s;", ct, ld);
  emit_load(e, xb, "(o * LEN + q) * IN + i", ld, sizeof ld);
  emit_line(e, "for (int q = 1; q < LEN; q++) {");
  emit_line(e, "  const %s v = %s;", ct, ld);
  if (dtype_is_float(e->m->buf[xb].dt)) emit_line(e, "  if (!isnan(bv) && (isnan(v) || v > bv)) { bv = v; best = q; }");
  else emit_line(e, "  if (v > bv) { bv = v; best = q; }");
  emit_line(e, "}");
  emit_store(e, ob, "t", "int64_t(best)");
  loop_end(e);
}

static void pool(emitter *e, const node *n, int xb, int ob) {
  const shape *xs = &e->m->buf[xb].sh;
  const attr *ka = attr_get(n, "kernel"), *sa = attr_get(n, "stride"), *pa = attr_get(n, "padding");
  const int64_t *st = sa->set ? sa->v : ka->v;
  bool mx = n->op == OP_max_pool2d, f = dtype_is_float(e->m->buf[xb].dt);
  char ld[512];
  emit_line(e, "const int H = %lld, W = %lld, OH = %lld, OW = %lld;", (long long)xs->d[2].c, (long long)xs->d[3].c,
            (long long)e->k->dom.d[2].c, (long long)e->k->dom.d[3].c);
  element_loop(e, &e->k->dom);
  emit_line(e, "const int nc = t / (OH * OW), oh = t / OW %% OH, ow = t %% OW;");
  emit_line(e, "%s acc = %s;", compute_type(e->m->buf[xb].dt), mx ? (f ? "(-INFINITY)" : "INT64_MIN") : "0.0");
  emit_line(e, "for (int kh = 0; kh < %lld; kh++)", (long long)ka->v[0]);
  emit_line(e, "  for (int kw = 0; kw < %lld; kw++) {", (long long)ka->v[1]);
  emit_line(e, "    const int ih = oh * %lld - %lld + kh, iw = ow * %lld - %lld + kw;", (long long)st[0], (long long)pa->v[0], (long long)st[1],
            (long long)pa->v[1]);
  emit_line(e, "    if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;");
  emit_load(e, xb, "(nc * H + ih) * W + iw", ld, sizeof ld);
  if (!mx) emit_line(e, "    acc += %s;", ld);
  else if (f) emit_line(e, "    { const float v = %s; if (!isnan(acc) && (isnan(v) || v > acc)) acc = v; }", ld);
  else emit_line(e, "    { const int64_t v = %s; if (v > acc) acc = v; }", ld);
  emit_line(e, "  }");
  if (!mx) emit_line(e, "acc /= %lld.0;", (long long)(ka->v[0] * ka->v[1]));
  emit_store(e, ob, "t", "acc");
  loop_end(e);
}

static void concat(emitter *e, const node *n, int ob) {
  const kir_kernel *k = e->k;
  int64_t axis = norm_axis(attr_i(n, "axis"), k->dom.rank);
  char inner[256], ld[512];
  emit_count(e, &k->dom, (int)axis + 1, k->dom.rank, inner, sizeof inner);
  emit_line(e, "const int IN = %s, OL = %lld;", inner, (long long)k->dom.d[axis].c);
  element_loop(e, &k->dom);
  emit_line(e, "const int o = t / (OL * IN), a = t / IN %% OL, i = t %% IN;");
  int64_t at = 0;
  for (int j = 0; j < k->nin; j++) {
    int64_t xl = e->m->buf[k->in_buf[j]].sh.d[axis].c;
    char off[160];
    snprintf(off, sizeof off, "(o * %lld + a - %lld) * IN + i", (long long)xl, (long long)at);
    emit_load(e, k->in_buf[j], off, ld, sizeof ld);
    emit_line(e, "%sif (a < %lld) {", j ? "else " : "", (long long)(at + xl));
    e->indent++;
    emit_store(e, ob, "t", ld);
    loop_end(e);
    at += xl;
  }
  loop_end(e);
}

static void pad(emitter *e, const node *n, int xb, int ob) {
  const kir_kernel *k = e->k;
  const attr *pads = attr_get(n, "pads");
  const shape *xs = &e->m->buf[xb].sh;
  char val[64], ld[512];
  double v = attr_f(n, "value");
  if (dtype_is_float(e->m->buf[ob].dt)) snprintf(val, sizeof val, "%.9e", v);
  else snprintf(val, sizeof val, "int64_t(%lld)", (long long)v);
  element_loop(e, &k->dom);
  emit_unravel(e, &k->dom, 0, k->dom.rank, "t", idxnames);
  strbuf off = {0}, in = {0};
  for (int d = 0; d < xs->rank; d++) {
    char ext[32], stride[256];
    emit_dim(e, xs->d[d], ext, sizeof ext);
    emit_count(e, xs, d + 1, xs->rank, stride, sizeof stride);
    emit_line(e, "const int p%d = %s - %lld;", d, idxnames[d], (long long)pads->v[2 * d]);
    sb_printf(&in, "%sp%d >= 0 && p%d < %s", d ? " && " : "", d, d, ext);
    sb_printf(&off, "%sp%d * %s", d ? " + " : "", d, stride);
  }
  char *os = sb_take(&off), *is = sb_take(&in);
  emit_load(e, xb, os && *os ? os : "0", ld, sizeof ld);
  emit_line(e, "if (%s) {", is && *is ? is : "true");
  e->indent++;
  emit_store(e, ob, "t", ld);
  e->indent--;
  emit_line(e, "} else {");
  e->indent++;
  emit_store(e, ob, "t", val);
  loop_end(e);
  free(os);
  free(is);
  loop_end(e);
}

static void gather(emitter *e, const node *n, int xb, int ob) {
  const shape *xs = &e->m->buf[xb].sh, *is = &e->m->buf[e->k->in_buf[1]].sh;
  char outer[256], len[64], inner[256], nidx[256], ld[512];
  int64_t axis = norm_axis(attr_i(n, "axis"), xs->rank);
  emit_count(e, xs, 0, (int)axis, outer, sizeof outer);
  emit_dim(e, xs->d[axis], len, sizeof len);
  emit_count(e, xs, (int)axis + 1, xs->rank, inner, sizeof inner);
  emit_count(e, is, 0, is->rank, nidx, sizeof nidx);
  emit_line(e, "const int LEN = %s, IN = %s, NI = %s;", len, inner, nidx);
  element_loop(e, &e->k->dom);
  emit_line(e, "const int o = t / (NI * IN), q = t / IN %% NI, i = t %% IN;");
  emit_load(e, e->k->in_buf[1], "q", ld, sizeof ld);
  emit_line(e, "int64_t ix = %s;", ld);
  emit_line(e, "if (ix < 0l) ix += int64_t(LEN);");
  emit_line(e, "if (ix < 0l || ix >= int64_t(LEN)) { atomicOr(pc_bad, 1u); continue; }");
  emit_load(e, xb, "(o * LEN + int(ix)) * IN + i", ld, sizeof ld);
  emit_store(e, ob, "t", ld);
  loop_end(e);
}

static void opaque(emitter *e) {
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  int ob = k->store[0].buf, xb = k->in_buf[0];
  switch (n->op) {
  case OP_argmax: argmax(e, n, xb, ob); break;
  case OP_max_pool2d:
  case OP_avg_pool2d: pool(e, n, xb, ob); break;
  case OP_concat: concat(e, n, ob); break;
  case OP_pad: pad(e, n, xb, ob); break;
  default: gather(e, n, xb, ob); break;
  }
}

static void kernel(emitter *e, int index) {
  const kir_kernel *k = e->k;
  char need[128];
  needs(e, index, need, sizeof need);
  emit_line(e, "//@kernel %d needs%s", index, need);
  emit_line(e, "// %s", k->why);
  bool mm = k->kind == KK_MATMUL;
  bool coop = mm && coop_eligible(e);
  if (coop) { /* the runtime defines PC_COOPMAT where the device has cooperative matrices */
    emit_line(e, "#if PC_COOPMAT");
    emit_line(e, "layout(local_size_x = 128) in;");
    declare_buffers(e, index, true);
    emit_line(e, "shared float pc_C[64 * 64];");
    emit_line(e, "void main() {");
    e->indent++;
    matmul_coop(e);
    e->indent--;
    emit_line(e, "}");
    emit_line(e, "#else");
    for (int v = 0; v < k->nval; v++) e->done[v] = 0; /* the other variant writes its values again */
    e->scope = e->next_scope = 1;
  }
  if (mm) emit_line(e, "layout(local_size_x = 16, local_size_y = 16) in;");
  else emit_line(e, "layout(local_size_x_id = 0) in;");
  declare_buffers(e, index, false);
  if (k->kind == KK_ROW && row_regs_length(k))
    emit_line(e, "const uint PC_RV = (%lldu + PC_WG - 1u) / PC_WG; /* row elements per invocation */", (long long)row_regs_length(k));
  if (mm && dtype_is_float(e->m->buf[k->in_buf[0]].dt)) {
    emit_line(e, "shared float pc_As[%d][%d];", VK_MM_BK, VK_MM_TILE + 1);
    emit_line(e, "shared float pc_Bs[%d][%d];", VK_MM_BK, VK_MM_TILE);
  }
  emit_line(e, "void main() {");
  e->indent++;
  switch (k->kind) {
  case KK_POINTWISE: pointwise(e); break;
  case KK_ROW: row(e); break;
  case KK_MATMUL:
    if (dtype_is_float(e->m->buf[k->in_buf[0]].dt)) matmul_float(e);
    else matmul_int(e);
    break;
  case KK_CONV: conv(e); break;
  case KK_OPAQUE: opaque(e); break;
  }
  e->indent--;
  emit_line(e, "}");
  if (coop) emit_line(e, "#endif");
  sb_printf(&e->out, "\n");
}

static void module_end(emitter *e) { (void)e; }

/* %0 %1 %2: operands in compute type (float for f32/f16/bf16, int64_t otherwise) */
const dialect vulkan_dialect = {
    .name = "glsl450",
    .prelude = glsl_prelude,
    .index_type = "int",
    .index_lit = "%lld",
    .int_lit = "%lldl",
    .decimal_floats = true,
    .storage = {[PORTC_F32] = "float", [PORTC_F16] = "uint16_t", [PORTC_BF16] = "uint16_t",
                [PORTC_I32] = "int", [PORTC_I64] = "int64_t", [PORTC_BOOL] = "uint8_t"},
    .load = {[PORTC_F32] = "%s[%s]", [PORTC_F16] = "pc_ld_f16(PC_LD16(%s, %s))", [PORTC_BF16] = "pc_ld_bf16(PC_LD16(%s, %s))",
             [PORTC_I32] = "PC_I32(int64_t(%s[%s]))", [PORTC_I64] = "%s[%s]", [PORTC_BOOL] = "int64_t(PC_LD8(%s, %s))"},
    .store = {[PORTC_F32] = "%s[%s] = %s;", [PORTC_F16] = "%s[%s] = uint16_t(pc_st_f16(%s));",
              [PORTC_BF16] = "%s[%s] = uint16_t(pc_st_bf16(%s));", [PORTC_I32] = "%s[%s] = int(%s);",
              [PORTC_I64] = "%s[%s] = %s;", [PORTC_BOOL] = "%s[%s] = uint8_t((%s) != 0l ? 1u : 0u);"},
    .float_ops = {
        [OP_neg] = "(-%0)", [OP_abs] = "abs(%0)", [OP_exp] = "pc_expf(%0)", [OP_log] = "pc_logf(%0)",
        [OP_sqrt] = "sqrt(%0)", [OP_rsqrt] = "inversesqrt(%0)", [OP_reciprocal] = "(1.0 / %0)",
        [OP_tanh] = "pc_tanhf(%0)", [OP_sigmoid] = "(1.0 / (1.0 + pc_expf(-%0)))", [OP_relu] = "pc_relu(%0)",
        [OP_gelu] = "pc_gelu(%0)", [OP_gelu_tanh] = "pc_gelu_tanh(%0)", [OP_silu] = "(%0 / (1.0 + pc_expf(-%0)))",
        [OP_erf] = "pc_erff(%0)", [OP_sin] = "pc_sinf(%0)", [OP_cos] = "pc_cosf(%0)", [OP_floor] = "floor(%0)",
        [OP_ceil] = "ceil(%0)", [OP_sign] = "pc_signf(%0)",
        [OP_add] = "(%0 + %1)", [OP_sub] = "(%0 - %1)", [OP_mul] = "(%0 * %1)", [OP_div] = "(%0 / %1)",
        [OP_pow] = "pc_powf(%0, %1)", [OP_maximum] = "pc_maxf(%0, %1)", [OP_minimum] = "pc_minf(%0, %1)",
        [OP_eq] = "(%0 == %1)", [OP_ne] = "(%0 != %1)", [OP_lt] = "(%0 < %1)", [OP_le] = "(%0 <= %1)",
        [OP_gt] = "(%0 > %1)", [OP_ge] = "(%0 >= %1)", [OP_where] = "(%0 != 0l ? %1 : %2)",
        [OP_causal_mask] = "(%2 > %1 ? (-INFINITY) : %0)",
    },
    .int_ops = {
        [OP_neg] = "(-%0)", [OP_abs] = "abs(%0)", [OP_relu] = "(%0 > 0l ? %0 : 0l)",
        [OP_sign] = "((%0 > 0l ? 1l : 0l) - (%0 < 0l ? 1l : 0l))", [OP_not] = "(%0 == 0l)",
        [OP_add] = "(%0 + %1)", [OP_sub] = "(%0 - %1)", [OP_mul] = "(%0 * %1)", [OP_div] = "pc_idiv(%0, %1)",
        [OP_maximum] = "max(%0, %1)", [OP_minimum] = "min(%0, %1)",
        [OP_and] = "(%0 != 0l && %1 != 0l)", [OP_or] = "(%0 != 0l || %1 != 0l)",
        [OP_eq] = "(%0 == %1)", [OP_ne] = "(%0 != %1)", [OP_lt] = "(%0 < %1)", [OP_le] = "(%0 <= %1)",
        [OP_gt] = "(%0 > %1)", [OP_ge] = "(%0 >= %1)", [OP_where] = "(%0 != 0l ? %1 : %2)",
    },
    .kernel = kernel,
    .module_end = module_end,
};
