/*
 * gpu_kernels.c: the kernel skeletons that every GPU dialect shares, written once over a few
 * spellings (gpu_spelling in dialect.h: thread and group indices, the barrier, the unroll hint),
 * since GLSL, CUDA C and HIP C++ agree on the rest of the C-like syntax these use. The row
 * kernels serve WGSL too: their declarations, loops, arrays and ifs go through the dialect's
 * declarations and gpu_spelling's few statement spellings. Pointwise,
 * conv and opaque kernels give each thread one output element in a grid-stride loop; row kernels
 * give each work group one row, keep the row's loads in registers when its length is known, and
 * reduce with the prelude's pc_wg_* functions; the SIMT matmul and the tiled convolution compute
 * square tiles (of a size the schedule picks) from shared-memory panels (pc_As, pc_Bs, declared
 * by gpu_declare_tiles) with a register block of (tile / 16)^2 per thread, fetching the next
 * panels into registers while they multiply the current ones; every kernel applies its epilogue
 * as it stores.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"
#include "emit.h"
#include "gpu_kernels.h"

static const gpu_spelling *G(const emitter *e) { return e->d->gpu; }

static const char *const idxnames[] = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"};
static const char *const rownames[] = {"o0", "o1", "o2", "o3", "o4", "o5", "o6", "o7"};
static const char *const rednames[] = {"j0", "j1", "j2", "j3", "j4", "j5", "j6", "j7"};
static const char *const batchnames[] = {"bt0", "bt1", "bt2", "bt3", "bt4", "bt5"};

/* "for (int t = first invocation; t < count; t += all invocations) {" over the output elements */
static void element_loop(emitter *e, const shape *s) {
  char count[256];
  emit_count(e, s, 0, s->rank, count, sizeof count);
  emit_line(e, "const int NT = %s;", count);
  emit_line(e, "for (int t = %s; t < NT; t += %s) {", G(e)->global_id, G(e)->global_threads);
  e->indent++;
}

void gpu_loop_end(emitter *e) {
  e->indent--;
  emit_line(e, "}");
}

/* a pointwise kernel's loads and store that read and write their buffers as they lie (float
 * buffers of the kernel's own shape, no view between): the ones it moves PC_VEC elements at a time */
static bool pointwise_vector_access(const kir_module *m, const kir_kernel *k, int buf, int path) {
  return dtype_is_float(m->buf[buf].dt) && path_is_identity(k, path) && m->buf[buf].sh.rank == k->dom.rank;
}

int gpu_pointwise_vector(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind != KK_POINTWISE || k->nstore != 1 || !k->dom.rank || k->dom.d[k->dom.rank - 1].sym >= 0 ||
      !pointwise_vector_access(m, k, k->store[0].buf, k->store[0].path))
    return 0;
  int vec = portc_dtype_size(m->buf[k->store[0].buf].dt) == 2 ? 8 : 4;
  for (int v = 0; v < k->nval; v++) {
    const kir_val *x = &k->val[v];
    if (x->kind == KV_LOAD && pointwise_vector_access(m, k, x->buf, x->path) && portc_dtype_size(x->dt) == 2) vec = 8;
  }
  return k->dom.d[k->dom.rank - 1].c % vec == 0 ? vec : 0;
}

/* PC_VEC consecutive elements of the last dim per invocation: the loads of buffers that lie as
 * the output does are one vector load each, the values are computed element by element in an
 * unrolled loop, and the results leave in one vector store */
static void pointwise_vector(emitter *e) {
  const kir_kernel *k = e->k;
  static const char *const gnames[] = {"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"};
  const char *first[PORTC_MAX_RANK]; /* the group's first element */
  int r = k->dom.rank, vec = k->sched.vector;
  shape gs = k->dom;
  gs.d[r - 1].c /= vec;
  element_loop(e, &gs);
  emit_unravel(e, &gs, 0, r, "t", gnames);
  emit_line(e, "const int gv = %s * PC_VEC;", gnames[r - 1]);
  for (int d = 0; d < r; d++) first[d] = d == r - 1 ? "gv" : gnames[d];
  emit_scope_push(e);
  bool *vl = calloc((size_t)k->nval + 1, sizeof *vl);
  char off[128], buf[16], arr[16];
  for (int v = 0; v < k->nval && vl; v++) {
    const kir_val *x = &k->val[v];
    if (x->kind != KV_LOAD || !dtype_is_float(x->dt) || !pointwise_vector_access(e->m, k, x->buf, x->path)) continue;
    vl[v] = true;
    emit_line(e, "float lv%d[PC_VEC];", v);
    emit_offset(e, x->path, &k->dom, first, off, sizeof off);
    snprintf(buf, sizeof buf, "%s", emit_buf(e, x->buf));
    snprintf(arr, sizeof arr, "lv%d", v);
    emit_line(e, G(e)->vload, buf, off, arr, "0");
  }
  emit_line(e, "float sv[PC_VEC];");
  emit_line(e, "%sfor (int c = 0; c < PC_VEC; c++) {", G(e)->unroll);
  e->indent++;
  emit_scope_push(e);
  for (int d = 0; d < r; d++) emit_line(e, "const int %s = %s%s;", idxnames[d], first[d], d == r - 1 ? " + c" : "");
  for (int v = 0; v < k->nval && vl; v++)
    if (vl[v]) emit_line(e, "const float v%d = lv%d[c];", v, v), e->done[v] = e->scope;
  emit_line(e, "sv[c] = %s;", emit_value(e, k->store[0].val, idxnames));
  emit_scope_pop(e);
  gpu_loop_end(e);
  free(vl);
  emit_offset(e, k->store[0].path, &k->dom, first, off, sizeof off);
  snprintf(buf, sizeof buf, "%s", emit_buf(e, k->store[0].buf));
  emit_line(e, G(e)->vstore, buf, off, "sv");
  emit_scope_pop(e);
  gpu_loop_end(e);
}

int gpu_concat_vector(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind != KK_OPAQUE || m->g->nodes[k->node].op != OP_concat || k->nstore != 1) return 0;
  const portc_dtype t = m->buf[k->store[0].buf].dt;
  const int vec = portc_dtype_size(t) == 2 ? 8 : 4;
  const int64_t axis = norm_axis(attr_i(&m->g->nodes[k->node], "axis"), k->dom.rank);
  int64_t inner = 1;
  for (int d = (int)axis; d < k->dom.rank; d++) {
    if (k->dom.d[d].sym >= 0) return 0;
    if (d > axis) inner *= k->dom.d[d].c;
  }
  if (!dtype_is_float(t) || portc_dtype_size(t) > 4) return 0;
  for (int j = 0; j < k->nin; j++)
    if (m->buf[k->in_buf[j]].dt != t || (m->buf[k->in_buf[j]].sh.d[axis].c * inner) % vec) return 0;
  return vec;
}

void gpu_pointwise(emitter *e) {
  const kir_kernel *k = e->k;
  if (k->sched.vector && G(e)->vload) {
    pointwise_vector(e);
    return;
  }
  element_loop(e, &k->dom);
  emit_unravel(e, &k->dom, 0, k->dom.rank, "t", idxnames);
  emit_scope_push(e);
  emit_store_at(e, &k->store[0], &k->dom, idxnames);
  emit_scope_pop(e);
  gpu_loop_end(e);
}

/* ---- row kernels: a work group per row ---- */

/* The row kernels' statements, spelled as the dialect writes them (C's, or gpu_spelling's and the
 * dialect's declarations): "UNROLLfor (int NAME = FIRST; REST) {", the counter declared as the
 * dialect declares a variable; the body indented */
static void loop_head(emitter *e, const char *unroll, const char *name, const char *first, const char *rest) {
  char decl[256];
  snprintf(decl, sizeof decl, e->d->decl_var ? e->d->decl_var : "%1$s %2$s = %3$s;", e->d->index_type, name, first);
  decl[strcspn(decl, ";")] = 0;
  emit_line(e, "%sfor (%s; %s) {", unroll, decl, rest);
  e->indent++;
}

/* "const int A = a, B = b;" */
static void index_consts(emitter *e, const char *A, const char *a, const char *B, const char *b) {
  if (!e->d->decl_const) {
    emit_line(e, "const %s %s = %s, %s = %s;", e->d->index_type, A, a, B, b);
    return;
  }
  emit_const(e, e->d->index_type, A, a);
  emit_const(e, e->d->index_type, B, b);
}

/* "if (COND) STATEMENT" */
static void emit_if(emitter *e, const char *cond, const char *statement) {
  emit_line(e, G(e)->braces ? "if (%s) { %s }" : "if (%s) %s", cond, statement);
}

/* "float NAME[LENGTH];" */
static void float_array(emitter *e, const char *name, const char *length) {
  emit_line(e, G(e)->float_array ? G(e)->float_array : "float %1$s[%2$s];", name, length);
}

/* Row values kept in registers: loads of the row that more than one loop over it needs (softmax
 * reads x in all three), and costly values (softmax's exp) that a later loop needs again. When
 * the row length is a known constant, each thread keeps its share, PC_RV elements, in an array
 * that the first loop fills, so the row is read from memory once.
 *
 * Where the dialect has vector accesses (gpu_spelling.vload), the row is one dim and the
 * kernel's row loads and stores read and write their buffers as they lie, each thread takes
 * PC_VEC consecutive elements at a time: the first loop fills them with one vector load, and the
 * store loop collects them and writes one vector store. Operands of the row's length that every
 * row shares (layer_norm's scale and shift) come the same way, a vector load in each loop that
 * reads them: one load of 16 bytes where f16 elements took a load each. */
typedef struct row_regs {
  unsigned *used; /* per value: the loops that need it (bit p: phase p; bit nphase: the stores) */
  int *slot;      /* per value: its array, or -1 */
  int n;
  int vec;        /* elements per vector access, 0: none */
  bool *vload;    /* per value: filled by a vector load */
  bool *shared;   /* per value: a row operand every row shares, vector-loaded where it is used */
  bool vstore[KIR_MAX_STORES];
} row_regs;

/* the row length when it is a constant that row_regs keeps in registers, else 0 */
int64_t gpu_row_length(const kir_kernel *k) {
  int64_t len = 1;
  for (int d = 0; d < k->red.rank; d++) {
    if (k->red.d[d].sym >= 0) return -1;
    len *= k->red.d[d].c;
  }
  return len;
}

int64_t gpu_row_regs_length(const kir_kernel *k) {
  int64_t len = gpu_row_length(k);
  return len >= 0 && len <= GPU_ROW_REGS_MAX_L ? len : 0;
}

/* a row load or store that can be vectorized: a float buffer read as it lies */
static bool vector_access(const kir_module *m, const kir_kernel *k, int buf, int path) {
  return dtype_is_float(m->buf[buf].dt) && path_is_identity(k, path) && m->buf[buf].sh.rank == k->dom.rank + k->red.rank;
}

/* a float buffer of the row's length that every row reads at the row index alone (numpy
 * broadcasting of a 1-D operand over the rows), in elements a vector of vec can hold */
static bool shared_operand_access(const kir_module *m, const kir_kernel *k, int buf, int path, int vec) {
  const shape *bs = &m->buf[buf].sh;
  if (!dtype_is_float(m->buf[buf].dt) || path < 0 || k->red.rank != 1 || bs->rank != 1 || bs->d[0].sym >= 0) return false;
  if (portc_dtype_size(m->buf[buf].dt) == 2 && vec != 8) return false; /* 16-bit words hold 8 */
  const kir_path *p = &k->path[path];
  if (p->n != 1) return false;
  const kir_step *st = &p->s[0];
  return st->kind == ST_BCAST && st->from.rank == k->dom.rank + 1 && st->to.rank == 1 && bs->d[0].c == k->red.d[0].c &&
         st->from.d[k->dom.rank].sym < 0 && st->from.d[k->dom.rank].c == bs->d[0].c;
}

int gpu_row_vector(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  int64_t L = gpu_row_regs_length(k);
  if (k->kind != KK_ROW || k->red.rank != 1 || !L) return 0;
  int vec = 0;
  for (int v = 0; v < k->nval; v++) {
    const kir_val *x = &k->val[v];
    if (x->kind == KV_LOAD && x->row && vector_access(m, k, x->buf, x->path))
      vec = portc_dtype_size(x->dt) == 2 || vec == 8 ? 8 : 4;
  }
  for (int s = 0; s < k->nstore; s++)
    if (k->store[s].row && vector_access(m, k, k->store[s].buf, k->store[s].path))
      vec = portc_dtype_size(m->buf[k->store[s].buf].dt) == 2 || vec == 8 ? 8 : 4;
  return vec && L % vec == 0 ? vec : 0;
}

static void free_row_regs(row_regs *rr) {
  free(rr->used);
  free(rr->slot);
  free(rr->vload);
  free(rr->shared);
}

/* vec: the elements per vector access (0: none) */
static void plan_row_regs(const kir_module *m, const kir_kernel *k, int vec, row_regs *rr) {
  memset(rr, 0, sizeof *rr);
  rr->used = calloc((size_t)k->nval + 1, sizeof *rr->used);
  rr->slot = malloc(sizeof *rr->slot * (size_t)(k->nval + 1));
  rr->vload = calloc((size_t)k->nval + 1, sizeof *rr->vload);
  rr->shared = calloc((size_t)k->nval + 1, sizeof *rr->shared);
  if (!gpu_row_regs_length(k) || !rr->used || !rr->slot || !rr->vload || !rr->shared) return;
  rr->vec = vec;
  for (int p = 0; p < k->nphase; p++) row_mark_loop(k, k->phase[p].val, p, rr->used);
  for (int s = 0; s < k->nstore; s++)
    if (k->store[s].row) row_mark_loop(k, k->store[s].val, k->nphase, rr->used);
  for (int v = 0; v < k->nval; v++) {
    const kir_val *x = &k->val[v];
    bool load = x->kind == KV_LOAD && x->row && dtype_is_float(x->dt);
    rr->vload[v] = load && rr->vec && rr->used[v] && vector_access(m, k, x->buf, x->path);
    rr->shared[v] = load && rr->vec && rr->used[v] && !rr->vload[v] && shared_operand_access(m, k, x->buf, x->path, rr->vec);
    bool costly = x->kind == KV_OP && x->row && dtype_is_float(x->dt) && op_is_costly(x->op);
    rr->slot[v] = (((load && !rr->shared[v]) || costly) && __builtin_popcount(rr->used[v]) > 1) || rr->vload[v] ? rr->n++ : -1;
  }
  for (int s = 0; s < k->nstore; s++) rr->vstore[s] = rr->vec && k->store[s].row && vector_access(m, k, k->store[s].buf, k->store[s].path);
}

int gpu_row_vector_buffer(const kir_module *m, int i, int vec, int buf) {
  const kir_kernel *k = &m->k[i];
  row_regs rr;
  plan_row_regs(m, k, vec, &rr);
  bool vector = false, scalar = false;
  for (int v = 0; v < k->nval && rr.used; v++)
    if (k->val[v].kind == KV_LOAD && k->val[v].buf == buf && rr.used[v]) *(rr.vload[v] || rr.shared[v] ? &vector : &scalar) = true;
  for (int s = 0; s < k->nstore; s++)
    if (k->store[s].buf == buf) *(rr.vstore[s] ? &vector : &scalar) = true;
  free_row_regs(&rr);
  return vector ? (scalar ? -1 : 1) : 0;
}

static bool first_loop(const row_regs *rr, int v, int loop) { return (rr->used[v] & ((1u << loop) - 1)) == 0; }

/* the names of the full index space with the row index replaced by the vector group's first */
static void group_names(const emitter *e, const char *const *full, const char **out) {
  for (int d = 0; d < e->k->dom.rank; d++) out[d] = full[d];
  out[e->k->dom.rank] = "jg";
}

/* whether kernel k reads its row from a buffer */
static bool row_loads(const kir_kernel *k) {
  for (int v = 0; v < k->nval; v++)
    if (k->val[v].kind == KV_LOAD && k->val[v].row) return true;
  return false;
}

static void row_loop_begin(emitter *e, const row_regs *rr, int loop, const char *const *full) {
  const kir_kernel *k = e->k;
  const char *I = e->d->index_type;
  char rest[128], jg[256], j[256];
  snprintf(rest, sizeof rest, "it < %s(PC_RV); it++", I);
  if (rr->vec) { /* PC_VEC consecutive elements per thread at a time */
    loop_head(e, G(e)->unroll, "it", "0", rest);
    snprintf(jg, sizeof jg, "((it / PC_VEC) * %s(PC_WG) + %s) * PC_VEC", I, G(e)->local[0]);
    index_consts(e, "jg", jg, "j", "jg + it % PC_VEC");
    emit_if(e, "jg >= L", "break;");
  } else if (gpu_row_regs_length(k)) { /* a counted loop the compiler unrolls: many loads in flight */
    /* (not without a load of the row: nothing to overlap, and Mesa 22.3's lavapipe ran such a
     * loop, forced to unroll, at most 79 times: a sum of 8192 ones was 5056) */
    loop_head(e, row_loads(k) ? G(e)->unroll : "", "it", "0", rest);
    snprintf(j, sizeof j, "%s + it * %s(PC_WG)", G(e)->local[0], I);
    emit_const(e, I, "j", j);
    emit_if(e, "j >= L", "break;");
  } else {
    snprintf(rest, sizeof rest, "j < L; j += %s(PC_WG)", I);
    loop_head(e, "", "j", G(e)->local[0], rest);
  }
  emit_scope_push(e);
  shape fs = {.rank = k->dom.rank + k->red.rank}; /* the full index space: outer dims, then the row's */
  for (int d = 0; d < k->dom.rank; d++) fs.d[d] = k->dom.d[d];
  for (int d = 0; d < k->red.rank; d++) fs.d[k->dom.rank + d] = k->red.d[d];
  emit_unravel(e, &fs, k->dom.rank, fs.rank, "j", full);
  for (int v = 0; v < k->nval && rr->n; v++) {
    if (rr->slot[v] < 0 || !(rr->used[v] & (1u << loop))) continue;
    if (first_loop(rr, v, loop) && !rr->vload[v]) continue; /* computed here, kept at the end */
    if (first_loop(rr, v, loop)) {
      const char *g[2 * PORTC_MAX_RANK];
      char off[128];
      group_names(e, full, g);
      emit_line(e, "if (it %% PC_VEC == 0) {");
      e->indent++;
      emit_offset(e, k->val[v].path, &fs, g, off, sizeof off);
      char buf[16];
      snprintf(buf, sizeof buf, "%s", emit_buf(e, k->val[v].buf));
      char arr[16], idx[] = "it";
      snprintf(arr, sizeof arr, "rr%d", rr->slot[v]);
      emit_line(e, G(e)->vload, buf, off, arr, idx);
      gpu_loop_end(e);
    }
    char name[16], value[32];
    snprintf(name, sizeof name, "v%d", v);
    snprintf(value, sizeof value, "rr%d[it]", rr->slot[v]);
    emit_const(e, emit_type(e, PORTC_F32), name, value);
    e->done[v] = e->scope;
  }
  for (int v = 0; v < k->nval && rr->vec; v++) {
    if (!rr->shared[v] || !(rr->used[v] & (1u << loop))) continue;
    const char *g[2 * PORTC_MAX_RANK];
    char off[128], buf[16], arr[16];
    group_names(e, full, g);
    emit_offset(e, k->val[v].path, &fs, g, off, sizeof off);
    snprintf(buf, sizeof buf, "%s", emit_buf(e, k->val[v].buf));
    snprintf(arr, sizeof arr, "sh%d", v);
    emit_line(e, "if (it %% PC_VEC == 0) {");
    e->indent++;
    emit_line(e, G(e)->vload, buf, off, arr, "0");
    gpu_loop_end(e);
    char name[16], value[32];
    snprintf(name, sizeof name, "v%d", v);
    snprintf(value, sizeof value, "sh%d[it %% PC_VEC]", v);
    emit_const(e, emit_type(e, PORTC_F32), name, value);
    e->done[v] = e->scope;
  }
}

static void row_loop_end(emitter *e, const row_regs *rr, int loop, const char *const *full) {
  for (int v = 0; v < e->k->nval && rr->n; v++)
    if (rr->slot[v] >= 0 && !rr->vload[v] && (rr->used[v] & (1u << loop)) && first_loop(rr, v, loop))
      emit_line(e, "rr%d[it] = %s;", rr->slot[v], emit_value(e, v, full));
  emit_scope_pop(e);
  gpu_loop_end(e);
}

/* the row stores in the store loop: vector stores collect PC_VEC values, then write them */
static void row_stores(emitter *e, const row_regs *rr, const shape *xs, const char *const *full) {
  const kir_kernel *k = e->k;
  for (int s = 0; s < k->nstore; s++) {
    if (!k->store[s].row) continue;
    if (!rr->vstore[s]) {
      emit_store_at(e, &k->store[s], xs, full);
      continue;
    }
    emit_line(e, "sv%d[it %% PC_VEC] = %s;", s, emit_value(e, k->store[s].val, full));
    emit_line(e, "if (it %% PC_VEC == PC_VEC - 1) {");
    e->indent++;
    const char *g[2 * PORTC_MAX_RANK];
    char off[128], buf[16], arr[16];
    group_names(e, full, g);
    emit_offset(e, k->store[s].path, xs, g, off, sizeof off);
    snprintf(buf, sizeof buf, "%s", emit_buf(e, k->store[s].buf));
    snprintf(arr, sizeof arr, "sv%d", s);
    emit_line(e, G(e)->vstore, buf, off, arr);
    gpu_loop_end(e);
  }
}

static void row_phase(emitter *e, const row_regs *rr, int p, const char *const *full) {
  const kir_phase *ph = &e->k->phase[p];
  portc_dtype t = row_phase_type(e->m, e->k, p);
  bool f = dtype_is_float(t), minmax = ph->op == OP_max || ph->op == OP_min;
  const char *name = ph->op == OP_prod ? "prod" : ph->op == OP_max ? "max" : ph->op == OP_min ? "min" : "sum";
  bool flag = f && minmax && !G(e)->nan_minmax; /* a NaN seen, beside the accumulator */
  const char *F = emit_type(e, PORTC_F32);
  char acc[16], nan[16];
  snprintf(acc, sizeof acc, "acc%d", p);
  snprintf(nan, sizeof nan, "nan%d", p);
  emit_hoisted(e, ph->val, full);
  emit_var(e, emit_type(e, t), acc, reduce_init(ph->op, t));
  if (flag) emit_var(e, F, nan, "0.0");
  row_loop_begin(e, rr, p, full);
  char v[16];
  snprintf(v, sizeof v, "%s", emit_value(e, ph->val, full));
  const char *pick = ph->op == OP_max ? (f ? "pc_maxf" : "max") : (f ? "pc_minf" : "min");
  switch (ph->op) {
  case OP_prod: emit_line(e, "acc%d *= %s;", p, v); break;
  case OP_max:
  case OP_min:
    if (G(e)->nan_minmax) emit_line(e, "acc%d = %s(acc%d, %s);", p, pick, p, v);
    else emit_line(e, "acc%d = %s %c acc%d ? %s : acc%d;", p, v, ph->op == OP_max ? '>' : '<', p, v, p);
    break;
  default: emit_line(e, "acc%d += %s;", p, v); break;
  }
  if (flag) emit_line(e, "if (isnan(%s)) nan%d = 1.0;", v, p);
  row_loop_end(e, rr, p, full);
  /* a NaN reads as the infinity that wins, so one reduction does; only where that infinity
   * wins (every thread sees the same result) does a second reduction ask whether it was a NaN */
  const char *inf = ph->op == OP_max ? "INFINITY" : "(-INFINITY)";
  if (flag) emit_line(e, "if (nan%d != 0.0) acc%d = %s;", p, p, inf);
  emit_line(e, "acc%d = pc_wg_%s%s(acc%d);", p, name, f ? "" : "i", p);
  if (flag) emit_line(e, "if (acc%d == %s && pc_wg_max(nan%d) != 0.0) acc%d = NAN;", p, inf, p, p);
  if (ph->op == OP_mean) emit_line(e, "acc%d /= %s(L);", p, F);
}

void gpu_row(emitter *e) {
  const kir_kernel *k = e->k;
  char no[256], len[256];
  emit_count(e, &k->dom, 0, k->dom.rank, no, sizeof no);
  emit_count(e, &k->red, 0, k->red.rank, len, sizeof len);
  const char *full[2 * PORTC_MAX_RANK];
  for (int d = 0; d < k->dom.rank; d++) full[d] = rownames[d];
  for (int d = 0; d < k->red.rank; d++) full[k->dom.rank + d] = rednames[d];
  index_consts(e, "NO", no, "L", len);
  row_regs rr;
  plan_row_regs(e->m, k, G(e)->vload ? k->sched.vector : 0, &rr); /* the schedule's vectors, where the dialect has vector accesses */
  char name[16], rest[128];
  for (int c = 0; c < rr.n; c++) snprintf(name, sizeof name, "rr%d", c), float_array(e, name, "PC_RV");
  for (int s = 0; s < k->nstore; s++)
    if (rr.vstore[s]) snprintf(name, sizeof name, "sv%d", s), float_array(e, name, "PC_VEC");
  for (int v = 0; v < k->nval && rr.shared; v++)
    if (rr.shared[v]) snprintf(name, sizeof name, "sh%d", v), float_array(e, name, "PC_VEC");
  snprintf(rest, sizeof rest, "o < NO; o += %s", G(e)->ngroups[0]);
  loop_head(e, "", "o", G(e)->group[0], rest);
  emit_scope_push(e);
  emit_unravel(e, &k->dom, 0, k->dom.rank, "o", rownames);
  for (int p = 0; p < k->nphase; p++) row_phase(e, &rr, p, full);
  bool outer = false, any_row = false;
  for (int s = 0; s < k->nstore; s++) outer = outer || !k->store[s].row, any_row = any_row || k->store[s].row;
  if (outer) {
    emit_line(e, "if (%s == 0) {", G(e)->local[0]);
    e->indent++;
    emit_scope_push(e);
    for (int s = 0; s < k->nstore; s++)
      if (!k->store[s].row) emit_store_at(e, &k->store[s], &k->dom, rownames);
    emit_scope_pop(e);
    gpu_loop_end(e);
  }
  if (any_row) {
    for (int s = 0; s < k->nstore; s++)
      if (k->store[s].row) emit_hoisted(e, k->store[s].val, full);
    row_loop_begin(e, &rr, k->nphase, full);
    shape xs = {.rank = k->dom.rank + k->red.rank};
    for (int d = 0; d < k->dom.rank; d++) xs.d[d] = k->dom.d[d];
    for (int d = 0; d < k->red.rank; d++) xs.d[k->dom.rank + d] = k->red.d[d];
    row_stores(e, &rr, &xs, full);
    row_loop_end(e, &rr, k->nphase, full);
  }
  emit_scope_pop(e);
  gpu_loop_end(e);
  free_row_regs(&rr);
}


/* ---- matmul ---- */

/* loops over batches and 64-row bands of this work group's 64 columns; fills oidx */
void gpu_matmul_begin(emitter *e, int T, const char **aidx, const char **bidx, const char **oidx) {
  const kir_kernel *k = e->k;
  int nb = k->dom.rank - 2;
  char batch[256], M[32], N[32], K[32];
  emit_count(e, &k->dom, 0, nb, batch, sizeof batch);
  emit_line(e, "const int NB = %s, M = %s, N = %s, K = %s;", batch, emit_dim(e, k->mnk[0], M, sizeof M), emit_dim(e, k->mnk[1], N, sizeof N),
            emit_dim(e, k->mnk[2], K, sizeof K));
  emit_line(e, "const int tx = %s, ty = %s, tid = ty * 16 + tx;", G(e)->local[0], G(e)->local[1]);
  emit_line(e, "const int n0 = %s * %d;", G(e)->group[0], T);
  emit_line(e, "for (int bt = %s; bt < NB; bt += %s) {", G(e)->group[2], G(e)->ngroups[2]);
  e->indent++;
  emit_unravel(e, &k->dom, 0, nb, "bt", batchnames);
  emit_line(e, "for (int m0 = %s * %d; m0 < M; m0 += %s * %d) {", G(e)->group[1], T, G(e)->ngroups[1], T);
  e->indent++;
  for (int d = 0; d < nb; d++) aidx[d] = bidx[d] = oidx[d] = batchnames[d];
  aidx[nb] = "mm", aidx[nb + 1] = "kk", bidx[nb] = "kk", bidx[nb + 1] = "nn", oidx[nb] = "m", oidx[nb + 1] = "n";
}

/* Thread (tx, ty) of the 16x16 holds RB = tile / 16 rows and as many columns of the tile. Where
 * the dialect reads shared memory 4 floats at a time (panel_ld4) and RB is a multiple of 4, they
 * come in runs of 4: rows 64 g + 4 ty + v (g < RB / 4, v < 4), each run one aligned vector read
 * (the A panel's rows then pad by 4 to keep that alignment); else rows ty + 16 i. */
static int panel_run(const emitter *e, int RB) { return G(e)->panel_ld4 && RB % 4 == 0 ? 4 : 1; }

/* the tile row (t = "ty") or column (t = "tx") of the thread's register row or column i */
static void run_place(char *out, size_t len, int VW, const char *t, const char *i) {
  if (VW == 1) snprintf(out, len, "(%s + 16 * %s)", t, i);
  else snprintf(out, len, "(%s / %d * %d + %s * %d + %s %% %d)", i, VW, 16 * VW, t, VW, i, VW);
}

/* the guarded store of register block c[RB][RB], column by column, with the epilogue: acc0 is the
 * expression acc (of c[i][jj]); `column` (may be NULL) is written once per column, after n.
 * Without oidx, acc is this slice's partial sum, written to slice `slice` of pc_acc [S][M][N]. */
static void matmul_store(emitter *e, int RB, int VW, const char *acc, const char *const *oidx, const char *column, const char *slice) {
  char row[96], col[96];
  run_place(row, sizeof row, VW, "ty", "i");
  run_place(col, sizeof col, VW, "tx", "jj");
  emit_line(e, "%sfor (int jj = 0; jj < %d; jj++) {", G(e)->unroll, RB);
  e->indent++;
  emit_line(e, "const int n = n0 + %s;", col);
  emit_line(e, "if (n >= N) continue;");
  if (column) emit_line(e, "%s", column);
  emit_line(e, "%sfor (int i = 0; i < %d; i++) {", G(e)->unroll, RB);
  e->indent++;
  emit_line(e, "const int m = m0 + %s;", row);
  emit_line(e, "if (m >= M) continue;");
  if (!oidx) {
    emit_line(e, "pc_acc[(%s * M + m) * N + n] = %s;", slice, acc);
  } else {
    emit_line(e, "const %s acc0 = %s;", compute_type(e->m->buf[e->k->in_buf[0]].dt), acc);
    emit_scope_push(e);
    emit_stores_at(e, &e->k->dom, oidx);
    emit_scope_pop(e);
  }
  gpu_loop_end(e);
  gpu_loop_end(e);
}

/* the products of one panel of GPU_MM_BK from shared memory into the register block c[RB][RB] */
static void matmul_panel(emitter *e, int RB, int VW) {
  const char *u = G(e)->unroll;
  emit_line(e, "%sfor (int p = 0; p < %d; p++) {", u, GPU_MM_BK);
  e->indent++;
  emit_line(e, "float av[%d], bv[%d];", RB, RB);
  if (VW == 4) {
    emit_line(e, "%sfor (int g = 0; g < %d; g++) {", u, RB / 4);
    e->indent++;
    emit_line(e, G(e)->panel_ld4, "pc_As[p][64 * g + 4 * ty]", "av[4 * g]");
    emit_line(e, G(e)->panel_ld4, "pc_Bs[p][64 * g + 4 * tx]", "bv[4 * g]");
    gpu_loop_end(e);
  } else {
    emit_line(e, "%sfor (int i = 0; i < %d; i++) av[i] = pc_As[p][ty + 16 * i];", u, RB);
    emit_line(e, "%sfor (int jj = 0; jj < %d; jj++) bv[jj] = pc_Bs[p][tx + 16 * jj];", u, RB);
  }
  emit_line(e, "%sfor (int i = 0; i < %d; i++) %sfor (int jj = 0; jj < %d; jj++) c[i][jj] = fma(av[i], bv[jj], c[i][jj]);", u, RB, u, RB);
  gpu_loop_end(e);
}

/* The k loop of the SIMT matmul and convolution over [KB, KE) (which the caller declares),
 * pipelined through registers: each thread fetches its LOADS elements of the next panels (ra, rb;
 * `fetch` emits that for k1 = k0 + GPU_MM_BK, zeros at and past KE) while the block multiplies
 * the panels in shared memory, then stores them there. ra[q] goes to pc_As[ea % BK][ea / BK] and
 * rb[q] to pc_Bs[ea / T][ea % T] (ea = tid + 256 q). */
typedef void panel_fetch(emitter *e, int LOADS, const void *ctx);
static void panel_loop(emitter *e, int T, int RB, int VW, panel_fetch *fetch, const void *ctx) {
  const int LOADS = T * GPU_MM_BK / 256;
  emit_line(e, "float c[%d][%d], ra[%d], rb[%d];", RB, RB, LOADS, LOADS);
  emit_line(e, "for (int i = 0; i < %d; i++) for (int jj = 0; jj < %d; jj++) c[i][jj] = 0.0;", RB, RB);
  emit_line(e, "for (int k0 = KB - %d; k0 < KE; k0 += %d) {", GPU_MM_BK, GPU_MM_BK);
  e->indent++;
  emit_line(e, "if (k0 >= KB) {");
  emit_line(e, "  %sfor (int q = 0; q < %d; q++) {", G(e)->unroll, LOADS);
  emit_line(e, "    const int ea = tid + 256 * q;");
  emit_line(e, "    pc_As[ea %% %d][ea / %d] = ra[q];", GPU_MM_BK, GPU_MM_BK);
  emit_line(e, "    pc_Bs[ea / %d][ea %% %d] = rb[q];", T, T);
  emit_line(e, "  }");
  emit_line(e, "  %s", G(e)->barrier);
  emit_line(e, "}");
  emit_line(e, "if (k0 + %d < KE) {", GPU_MM_BK);
  e->indent++;
  emit_line(e, "const int k1 = k0 + %d;", GPU_MM_BK);
  fetch(e, LOADS, ctx);
  gpu_loop_end(e);
  emit_line(e, "if (k0 >= KB) {");
  e->indent++;
  matmul_panel(e, RB, VW);
  emit_line(e, "%s", G(e)->barrier);
  gpu_loop_end(e);
  gpu_loop_end(e);
}

typedef struct { const char **aidx, **bidx; } matmul_operands; /* their index names */

static void matmul_fetch(emitter *e, int LOADS, const void *ctx) {
  const matmul_operands *o = ctx;
  char ex[1200];
  emit_line(e, "%sfor (int q = 0; q < %d; q++) {", G(e)->unroll, LOADS);
  e->indent++;
  emit_line(e, "const int ea = tid + 256 * q, mm = m0 + ea / %d, kk = k1 + ea %% %d;", GPU_MM_BK, GPU_MM_BK);
  emit_line(e, "ra[q] = 0.0;");
  emit_line(e, "if (mm < M && kk < KE) {");
  e->indent++;
  emit_operand(e, 0, o->aidx, ex, sizeof ex);
  emit_line(e, "ra[q] = %s;", ex);
  gpu_loop_end(e);
  gpu_loop_end(e);
  emit_line(e, "%sfor (int q = 0; q < %d; q++) {", G(e)->unroll, LOADS);
  e->indent++;
  emit_line(e, "const int eb = tid + 256 * q, kk = k1 + eb / %d, nn = n0 + eb %% %d;", e->k->sched.tile_m, e->k->sched.tile_m);
  emit_line(e, "rb[q] = 0.0;");
  emit_line(e, "if (kk < KE && nn < N) {");
  e->indent++;
  emit_operand(e, 1, o->bidx, ex, sizeof ex);
  emit_line(e, "rb[q] = %s;", ex);
  gpu_loop_end(e);
  gpu_loop_end(e);
}

void gpu_matmul_float(emitter *e, int T) {
  const char *aidx[PORTC_MAX_RANK + 2], *bidx[PORTC_MAX_RANK + 2], *oidx[PORTC_MAX_RANK + 2];
  const int RB = T / 16, VW = panel_run(e, RB);
  gpu_matmul_begin(e, T, aidx, bidx, oidx);
  emit_line(e, "const int KB = 0, KE = K;");
  panel_loop(e, T, RB, VW, matmul_fetch, &(matmul_operands){aidx, bidx});
  matmul_store(e, RB, VW, "c[i][jj]", oidx, NULL, NULL);
  gpu_loop_end(e);
  gpu_loop_end(e);
}

void gpu_matmul_int(emitter *e, int T) {
  const char *aidx[PORTC_MAX_RANK + 2], *bidx[PORTC_MAX_RANK + 2], *oidx[PORTC_MAX_RANK + 2];
  char ae[1200], be[1200];
  const int RB = T / 16;
  gpu_matmul_begin(e, T, aidx, bidx, oidx);
  emit_line(e, "int64_t c[%d][%d];", RB, RB);
  emit_line(e, "for (int i = 0; i < %d; i++)", RB);
  emit_line(e, "  for (int jj = 0; jj < %d; jj++) {", RB);
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
  matmul_store(e, RB, 1, "c[i][jj]", oidx, NULL, NULL);
  gpu_loop_end(e);
  gpu_loop_end(e);
}

/* ---- conv2d: an invocation per output element, or per run of a row's outputs ---- */

static void conv_runs(emitter *e, int run);

void gpu_conv(emitter *e) {
  const kir_kernel *k = e->k;
  if (gpu_conv_run(k) > 1) {
    conv_runs(e, gpu_conv_run(k));
    return;
  }
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
  emit_stores_at(e, &k->dom, idxnames);
  emit_scope_pop(e);
  gpu_loop_end(e);
}

int gpu_conv_run_rule(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind != KK_CONV || gpu_conv_tiled(m, i) || k->dom.d[3].sym >= 0 || k->dom.d[3].c < 2) return 0;
  return attr_or_one(&m->g->nodes[k->node], "stride", 1) > 1 ? 2 : 4;
}

bool gpu_conv_takes_runs(const kir_kernel *k) { return k->kind == KK_CONV && k->sched.variant == KS_PLAIN && k->dom.d[3].sym < 0; }

int gpu_conv_run(const kir_kernel *k) { return gpu_conv_takes_runs(k) && k->sched.run > 1 ? k->sched.run : 1; }

/* RUN consecutive outputs of one output row per invocation: each input row of the window is
 * read once for all of them, as SPAN values (the run's columns at its stride, plus the kernel's
 * width), and each weight once: a 3x3 depthwise convolution reads 9 input values per output one
 * output per invocation, 4.5 in runs of 4 at stride 1. The window's columns, the run's sums and their
 * products are unrolled here, into named scalars: arrays indexed in loops that a driver leaves
 * rolled go to memory. Columns outside the input read a clamped column and are then zeroed, so
 * no load is out of bounds or behind a branch. */
static void conv_runs(emitter *e, int run) {
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  const shape *xs = &e->m->buf[k->in_buf[0]].sh, *ws = &e->m->buf[k->in_buf[1]].sh;
  const int64_t sh = attr_or_one(n, "stride", 0), sw = attr_or_one(n, "stride", 1), dh = attr_or_one(n, "dilation", 0),
                dw = attr_or_one(n, "dilation", 1), ph = attr_get(n, "padding")->v[0], pw = attr_get(n, "padding")->v[1];
  const int64_t kw = ws->d[3].c, span = (run - 1) * sw + (kw - 1) * dw + 1, ow = k->dom.d[3].c;
  char rows[256], ld[512], zero[64], at[64];
  emit_float(e->d, 0.0, zero, sizeof zero);
  emit_line(e, "const int C = %lld, H = %lld, W = %lld, O = %lld, CG = %lld, KH = %lld, OG = O / %lld;", (long long)xs->d[1].c,
            (long long)xs->d[2].c, (long long)xs->d[3].c, (long long)k->dom.d[1].c, (long long)ws->d[1].c, (long long)ws->d[2].c,
            (long long)attr_i(n, "groups"));
  emit_count(e, &k->dom, 0, 3, rows, sizeof rows);
  emit_line(e, "const int OH = %lld, OW = %lld, RUNS = %lld; /* runs of %d outputs per row */", (long long)k->dom.d[2].c, (long long)ow,
            (long long)((ow + run - 1) / run), run);
  emit_line(e, "const int NT = (%s) * RUNS;", rows);
  emit_line(e, "for (int t = %s; t < NT; t += %s) {", G(e)->global_id, G(e)->global_threads);
  e->indent++;
  emit_line(e, "const int q = t %% RUNS, i2 = t / RUNS %% OH, i1 = t / (RUNS * OH) %% O, i0 = t / (RUNS * OH * O);");
  emit_line(e, "const int g = i1 / OG, iw0 = q * %lld - %lld;", (long long)(run * sw), (long long)pw);
  if (k->nin > 2) emit_load(e, k->in_buf[2], "i1", ld, sizeof ld);
  for (int j = 0; j < run; j++) emit_line(e, "float s%d = %s;", j, k->nin > 2 ? ld : zero);
  emit_line(e, "for (int c = 0; c < CG; c++)");
  emit_line(e, "  for (int kh = 0; kh < KH; kh++) {");
  e->indent += 2;
  emit_line(e, "const int ih = i2 * %lld - %lld + kh * %lld;", (long long)sh, (long long)ph, (long long)dh);
  emit_line(e, "if (ih < 0 || ih >= H) continue;");
  emit_line(e, "const int xrow = ((i0 * C + g * CG + c) * H + ih) * W, wrow = ((i1 * CG + c) * KH + kh) * %lld;", (long long)kw);
  for (int64_t u = 0; u < span; u++) {
    snprintf(at, sizeof at, "xrow + min(max(iw0 + %lld, 0), W - 1)", (long long)u);
    emit_load(e, k->in_buf[0], at, ld, sizeof ld);
    emit_line(e, "const float ld%lld = %s;", (long long)u, ld);
    emit_line(e, "const float in%lld = iw0 + %lld >= 0 && iw0 + %lld < W ? ld%lld : %s;", (long long)u, (long long)u, (long long)u, (long long)u, zero);
  }
  for (int64_t x = 0; x < kw; x++) {
    snprintf(at, sizeof at, "wrow + %lld", (long long)x);
    emit_load(e, k->in_buf[1], at, ld, sizeof ld);
    emit_line(e, "const float wt%lld = %s;", (long long)x, ld);
  }
  for (int64_t x = 0; x < kw; x++)
    for (int j = 0; j < run; j++) emit_line(e, "s%d = fma(in%lld, wt%lld, s%d);", j, (long long)(j * sw + x * dw), (long long)x, j);
  e->indent -= 2;
  emit_line(e, "  }");
  for (int j = 0; j < run; j++) {
    emit_line(e, "{");
    e->indent++;
    emit_line(e, "const int i3 = q * %d + %d;", run, j);
    if (ow % run && j) emit_line(e, "if (i3 < OW) {"), e->indent++; /* the last run of a row may stop short */
    emit_line(e, "const float acc0 = s%d;", j);
    emit_scope_push(e);
    emit_stores_at(e, &k->dom, idxnames);
    emit_scope_pop(e);
    if (ow % run && j) gpu_loop_end(e);
    gpu_loop_end(e);
  }
  gpu_loop_end(e);
}

/* ---- conv2d as an implicit GEMM: out[o, pixel] = sum over (c, kh, kw) of w[o, c, kh, kw] * x at
 * the pixel's window, in the tiles of the SIMT matmul. The input window (im2col) is gathered into
 * shared memory as it is needed, never written out; padding reads as zeros. ---- */

bool gpu_conv_tiled(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind != KK_CONV || !dtype_is_float(m->buf[k->in_buf[0]].dt)) return false;
  const node *n = &m->g->nodes[k->node];
  const shape *ws = &m->buf[k->in_buf[1]].sh;
  const conv_axes a = conv_axes_of(n);
  int64_t K = ws->d[a.wc].c * ws->d[a.wh].c * ws->d[a.ww].c;
  /* grouped and depthwise convolutions read little per output: the direct kernel */
  return attr_i(n, "groups") == 1 && K >= GPU_MM_BK && ws->d[a.wo].c >= 16;
}

bool gpu_knobs_fit(const kir_kernel *k, int max_split, char *why, size_t len) {
  const kir_schedule *s = &k->sched;
  if (s->library_algo && !s->library) return snprintf(why, len, "algo=%d: this kernel never runs on a vendor library", s->library_algo), false;
  if (s->run > 1 && !gpu_conv_takes_runs(k))
    return snprintf(why, len, "run=%d: only the direct convolution of a known output width takes runs", s->run), false;
  if (s->run > GPU_MAX_RUN) return snprintf(why, len, "run=%d: at most %d", s->run, GPU_MAX_RUN), false;
  if (s->wg_elements) return snprintf(why, len, "wg_elements=1: only Vulkan's matmul on a work group's matrices finishes its epilogue so"), false;
  if (s->unroll > 1) return snprintf(why, len, "unroll=%d: only Vulkan's matmul on a work group's matrices unrolls its k-loop", s->unroll), false;
  if (s->cluster > 1 && (k->kind != KK_MATMUL || s->variant != KS_WGMMA))
    return snprintf(why, len, "cluster=%d: only Hopper's matmul runs in clusters", s->cluster), false;
  if (s->split_k <= 1) return true;
  if (k->kind != KK_CONV || (s->variant != KS_TILED && s->variant != KS_MMA) || max_split <= 1)
    return snprintf(why, len, "split_k=%d: only the tiled or tensor-core convolution of a target that has split-K splits", s->split_k), false;
  return s->split_k <= max_split || (snprintf(why, len, "split_k=%d: at most %d", s->split_k, max_split), false);
}

bool gpu_tiles_fit(const kir_kernel *k, int max_split, char *why, size_t len) {
  const kir_schedule *s = &k->sched;
  if (!gpu_knobs_fit(k, max_split, why, len)) return false;
  if (s->threads[0] != 16 || s->threads[1] != 16) return snprintf(why, len, "tiled kernels run 16x16 threads"), false;
  if (s->tile_m != s->tile_n || s->tile_m < 16 || s->tile_m > 128 || s->tile_m % 16)
    return snprintf(why, len, "tile %dx%d: square, 16 to 128", s->tile_m, s->tile_n), false;
  return true;
}

bool gpu_tile_useful(const kir_module *m, int i, int tile) {
  const kir_kernel *k = &m->k[i];
  int64_t rows, cols;
  if (k->kind == KK_CONV) {
    int64_t n = 1;
    for (int d = 0; d < 4; d++)
      if (d != 1) n = k->dom.d[d].sym >= 0 || n < 0 ? -1 : n * k->dom.d[d].c;
    rows = k->dom.d[1].sym >= 0 ? -1 : k->dom.d[1].c, cols = n;
  } else {
    rows = k->mnk[0].sym >= 0 ? -1 : k->mnk[0].c, cols = k->mnk[1].sym >= 0 ? -1 : k->mnk[1].c;
  }
  if (rows < 0 || cols < 0) return true; /* symbolic: assume large */
  return tile <= 32 || 2 * (rows > cols ? rows : cols) > tile; /* else half the tile covers the output */
}

bool gpu_group_fits(const kir_kernel *k, int unit, int max, bool pow2, char *why, size_t len) {
  int t = k->sched.threads[0];
  if (!gpu_knobs_fit(k, 1, why, len)) return false;
  pow2 = pow2 || k->kind == KK_ROW;
  if (k->sched.threads[1] > 1 || k->sched.threads[2] > 1 || t < unit || t > max || t % unit || (pow2 && (t & (t - 1))))
    return snprintf(why, len, "threads=%d: whole groups of %d up to %d%s", t, unit, max, pow2 ? ", a power of two" : ""), false;
  return true;
}

bool gpu_conv_last(const kir_module *m, const kir_kernel *k) { return k->kind == KK_CONV && attr_i(&m->g->nodes[k->node], "channels_last"); }

void gpu_conv_mn(const kir_module *m, int i, const int64_t *S, int64_t mn[2]) {
  const kir_kernel *k = &m->k[i];
  const int o = conv_axes_of(&m->g->nodes[k->node]).c; /* the output channels: the columns channels last, else the rows */
  int64_t pixels = 1;
  for (int d = 0; d < 4; d++)
    if (d != o) pixels *= dim_value(k->dom.d[d], S);
  mn[o == 1 ? 0 : 1] = dim_value(k->dom.d[o], S), mn[o == 1 ? 1 : 0] = pixels;
}

bool gpu_conv_static_mnk(const kir_module *m, int i, int64_t *M, int64_t *N, int64_t *K) {
  const kir_kernel *k = &m->k[i];
  const shape *ws = &m->buf[k->in_buf[1]].sh;
  for (int d = 0; d < 4; d++)
    if (k->dom.d[d].sym >= 0) return false;
  int64_t mn[2];
  gpu_conv_mn(m, i, NULL, mn);
  const conv_axes a = conv_axes_of(&m->g->nodes[k->node]);
  *M = mn[0], *N = mn[1], *K = ws->d[a.wc].c * ws->d[a.wh].c * ws->d[a.ww].c;
  return true;
}

bool gpu_conv_split_useful(const kir_module *m, int i, int tile, int split, int units) {
  int64_t M, N, K;
  if (!gpu_conv_static_mnk(m, i, &M, &N, &K)) return false;
  int64_t groups = ((M + tile - 1) / tile) * ((N + tile - 1) / tile);
  return K / split >= 16 * GPU_MM_BK && groups * (split / 2) < 4 * (int64_t)units;
}

/* A weight gradient (a few thousand outputs, each a sum over the batch's every pixel: 3 tiles and
 * a reduction of 401,408 for ResNet's stem) takes the most slices. */
int gpu_conv_split_rule(const kir_module *m, int i, int tile, int units, int max_split) {
  int64_t M, N, K;
  if (units <= 0 || !gpu_conv_static_mnk(m, i, &M, &N, &K)) return 1;
  int64_t groups = ((M + tile - 1) / tile) * ((N + tile - 1) / tile);
  if (groups >= 2 * (int64_t)units) return 1;
  int split = 2;
  while (split < max_split && groups * split < 4 * (int64_t)units && K / (2 * split) >= 16 * GPU_MM_BK) split *= 2;
  return K / split >= 16 * GPU_MM_BK ? split : 1;
}

int gpu_conv_split_fill(const kir_module *m, int i, int tile, int slots, int64_t min_k, int max_split) {
  int64_t M, N, K;
  if (slots <= 0 || min_k <= 0 || !gpu_conv_static_mnk(m, i, &M, &N, &K)) return 1;
  int64_t groups = ((M + tile - 1) / tile) * ((N + tile - 1) / tile), split = slots / groups;
  if (split > K / min_k) split = K / min_k;
  if (split > max_split) split = max_split;
  return split >= 2 ? (int)split : 1;
}

void gpu_conv_groups(const kir_module *m, int i, const int64_t *S, int tile_m, int tile_n, int64_t groups[2]) {
  int64_t mn[2];
  gpu_conv_mn(m, i, S, mn);
  groups[0] = (mn[1] + tile_n - 1) / tile_n, groups[1] = (mn[0] + tile_m - 1) / tile_m;
}

/* the pixel (image, row, column) of output column `nn` and the top left of its input window */
static void conv_pixel(emitter *e, const char *nn) {
  const node *n = &e->m->g->nodes[e->k->node];
  emit_line(e, "const int bn = %s, bimg = bn / (OH * OW), boh = bn / OW %% OH, bow = bn %% OW;", nn);
  emit_line(e, "const int bh0 = boh * %lld - %lld, bw0 = bow * %lld - %lld, bx = bimg * C * H * W;", (long long)attr_or_one(n, "stride", 0),
            (long long)attr_get(n, "padding")->v[0], (long long)attr_or_one(n, "stride", 1), (long long)attr_get(n, "padding")->v[1]);
}

/* the next panels of a convolution: weights [O, C*KH*KW] as they lie, and the input window of
 * each pixel (where 256 is a multiple of the tile, the pixel is the same in every panel and
 * conv_pixel ran before the k loop) */
static void conv_fetch(emitter *e, int LOADS, const void *ctx) {
  (void)ctx;
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  const int T = k->sched.tile_m;
  char ld[512];
  emit_line(e, "%sfor (int q = 0; q < %d; q++) {", G(e)->unroll, LOADS);
  emit_line(e, "  const int ea = tid + 256 * q, mm = m0 + ea / %d, kk = k1 + ea %% %d;", GPU_MM_BK, GPU_MM_BK);
  emit_load(e, k->in_buf[1], "mm * K + kk", ld, sizeof ld);
  emit_line(e, "  ra[q] = mm < M && kk < KE ? %s : 0.0;", ld);
  emit_line(e, "}");
  emit_line(e, "%sfor (int q = 0; q < %d; q++) {", G(e)->unroll, LOADS);
  e->indent++;
  emit_line(e, "const int kk = k1 + (tid + 256 * q) / %d;", T);
  if (256 % T) {
    char nn[64];
    snprintf(nn, sizeof nn, "n0 + (tid + 256 * q) %% %d", T);
    conv_pixel(e, nn);
  }
  emit_line(e, "rb[q] = 0.0;");
  emit_line(e, "if (kk < KE && bn < N) {");
  e->indent++;
  emit_line(e, "const int ci = kk / (KH * KW), kh = kk / KW %% KH, kw = kk %% KW;");
  emit_line(e, "const int ih = bh0 + kh * %lld, iw = bw0 + kw * %lld;", (long long)attr_or_one(n, "dilation", 0), (long long)attr_or_one(n, "dilation", 1));
  emit_load(e, k->in_buf[0], "bx + (ci * H + ih) * W + iw", ld, sizeof ld);
  emit_line(e, "if (ih >= 0 && ih < H && iw >= 0 && iw < W) rb[q] = %s;", ld);
  gpu_loop_end(e);
  gpu_loop_end(e);
}

void gpu_conv_gemm_sizes(emitter *e) {
  const kir_kernel *k = e->k;
  const shape *xs = &e->m->buf[k->in_buf[0]].sh, *ws = &e->m->buf[k->in_buf[1]].sh;
  const conv_axes a = conv_axes_of(&e->m->g->nodes[k->node]);
  char nb[32];
  emit_line(e, "const int C = %lld, H = %lld, W = %lld, KH = %lld, KW = %lld, OH = %lld, OW = %lld;", (long long)xs->d[a.c].c,
            (long long)xs->d[a.h].c, (long long)xs->d[a.w].c, (long long)ws->d[a.wh].c, (long long)ws->d[a.ww].c, (long long)k->dom.d[a.h].c,
            (long long)k->dom.d[a.w].c);
  if (gpu_conv_last(e->m, k)) { /* rows the pixels, columns the channels */
    emit_line(e, "const int M = %s * OH * OW, N = %lld, K = KH * KW * C;", emit_dim(e, k->dom.d[0], nb, sizeof nb), (long long)k->dom.d[3].c);
    return;
  }
  emit_line(e, "const int M = %lld, N = %s * OH * OW, K = C * KH * KW;", (long long)k->dom.d[1].c, emit_dim(e, k->dom.d[0], nb, sizeof nb));
}

/* the epilogue per output element m, n: bias, then what fused after the convolution */
static const char *const conv_oidx[4] = {"cimg", "m", "coh", "cow"};
static const char conv_column[] = "const int cimg = n / (OH * OW), coh = n / OW % OH, cow = n % OW;";
/* channels last: the row m is the pixel, the column n the channel */
static const char *const conv_last_oidx[4] = {"cimg", "coh", "cow", "n"};
static const char conv_last_row[] = "const int cimg = m / (OH * OW), coh = m / OW % OH, cow = m % OW;";

static void conv_acc(emitter *e, const char *sum, char *acc, size_t len) {
  const kir_kernel *k = e->k;
  snprintf(acc, len, "%s", sum);
  if (k->nin > 2) {
    char bias[256];
    emit_load(e, k->in_buf[2], gpu_conv_last(e->m, k) ? "n" : "m", bias, sizeof bias);
    snprintf(acc, len, "%s + %s", sum, bias);
  }
}

int gpu_conv_split(const kir_kernel *k) {
  const kir_schedule *s = &k->sched;
  return k->kind == KK_CONV && (s->variant == KS_TILED || s->variant == KS_MMA) && s->split_k > 1 ? s->split_k : 1;
}

void gpu_conv_k_range(emitter *e, int panel) {
  const int S = gpu_conv_split(e->k);
  if (S > 1) { /* this work group's slice of the reduction: whole panels */
    emit_line(e, "const int KS = (K + %d) / %d * %d, KB = %s * KS, KE = min(K, KB + KS);", S * panel - 1, S * panel, panel, G(e)->group[2]);
  } else {
    emit_line(e, "const int KB = 0, KE = K;");
  }
}

void gpu_conv_element(emitter *e, const char *sum) {
  if (gpu_conv_split(e->k) > 1) {
    emit_line(e, "pc_acc[(%s * M + m) * N + n] = %s;", G(e)->group[2], sum);
    return;
  }
  char acc[300];
  const bool last = gpu_conv_last(e->m, e->k);
  conv_acc(e, sum, acc, sizeof acc);
  emit_line(e, "%s", last ? conv_last_row : conv_column);
  emit_line(e, "const float acc0 = %s;", acc);
  emit_scope_push(e);
  emit_stores_at(e, &e->k->dom, last ? conv_last_oidx : conv_oidx);
  emit_scope_pop(e);
}

void gpu_conv_gemm(emitter *e, int T) {
  const int RB = T / 16, VW = panel_run(e, RB), S = gpu_conv_split(e->k);
  gpu_conv_gemm_sizes(e);
  gpu_conv_k_range(e, GPU_MM_BK);
  emit_line(e, "const int tx = %s, ty = %s, tid = ty * 16 + tx;", G(e)->local[0], G(e)->local[1]);
  emit_line(e, "for (int n0 = %s * %d; n0 < N; n0 += %s * %d) {", G(e)->group[0], T, G(e)->ngroups[0], T);
  e->indent++;
  if (256 % T == 0) {
    char nn[64];
    snprintf(nn, sizeof nn, "n0 + tid %% %d", T);
    conv_pixel(e, nn);
  }
  emit_line(e, "for (int m0 = %s * %d; m0 < M; m0 += %s * %d) {", G(e)->group[1], T, G(e)->ngroups[1], T);
  e->indent++;
  panel_loop(e, T, RB, VW, conv_fetch, NULL);
  if (S > 1) {
    matmul_store(e, RB, VW, "c[i][jj]", NULL, NULL, G(e)->group[2]);
  } else {
    char acc[300];
    conv_acc(e, "c[i][jj]", acc, sizeof acc);
    matmul_store(e, RB, VW, acc, conv_oidx, conv_column, NULL);
  }
  gpu_loop_end(e);
  gpu_loop_end(e);
}

/* "float NAME = ...": the sum of the `slices` partial sums of output t in pc_acc[slices][M][N] */
static void slice_sum(emitter *e, const char *name, int slices) {
  emit_line(e, "float %s = pc_acc[t];", name);
  emit_line(e, "%sfor (int z = 1; z < %d; z++) %s += pc_acc[z * M * N + t];", G(e)->unroll, slices, name);
}

void gpu_conv_split_sum(emitter *e) {
  const int S = gpu_conv_split(e->k);
  gpu_conv_gemm_sizes(e);
  emit_line(e, "for (int t = %s; t < M * N; t += %s) {", G(e)->global_id, G(e)->global_threads);
  e->indent++;
  const bool last = gpu_conv_last(e->m, e->k);
  emit_line(e, "const int m = t / N, n = t %% N;");
  emit_line(e, "%s", last ? conv_last_row : conv_column);
  slice_sum(e, "s", S);
  char acc[300];
  conv_acc(e, "s", acc, sizeof acc);
  emit_line(e, "const float acc0 = %s;", acc);
  emit_scope_push(e);
  emit_stores_at(e, &e->k->dom, last ? conv_last_oidx : conv_oidx);
  emit_scope_pop(e);
  gpu_loop_end(e);
}

/* ---- a kernel's body, by its kind and schedule ---- */

static bool needs_tiles(const emitter *e) {
  const kir_kernel *k = e->k;
  return (k->kind == KK_MATMUL && dtype_is_float(e->m->buf[k->in_buf[0]].dt)) || (k->kind == KK_CONV && k->sched.variant == KS_TILED);
}

void gpu_declare_tiles(emitter *e, const char *qualifier) {
  if (gpu_is_attention(e->m, (int)(e->k - e->m->k))) gpu_declare_attention(e, qualifier);
  if (!needs_tiles(e)) return;
  const int T = e->k->sched.tile_m, VW = panel_run(e, T / 16);
  const char *align = VW > 1 ? " __attribute__((aligned(16)))" : "";
  emit_line(e, "%s%s float pc_As[%d][%d];", qualifier, align, GPU_MM_BK, T + VW); /* padded: the stores transpose */
  emit_line(e, "%s%s float pc_Bs[%d][%d];", qualifier, align, GPU_MM_BK, T);
}

void gpu_body(emitter *e) {
  const kir_kernel *k = e->k;
  int tile = k->sched.tile_m;
  switch (k->kind) {
  case KK_POINTWISE: gpu_pointwise(e); break;
  case KK_ROW: gpu_row(e); break;
  case KK_MATMUL:
    if (dtype_is_float(e->m->buf[k->in_buf[0]].dt)) gpu_matmul_float(e, tile);
    else gpu_matmul_int(e, tile);
    break;
  case KK_CONV:
    if (k->sched.variant == KS_TILED) gpu_conv_gemm(e, tile);
    else gpu_conv(e);
    break;
  case KK_OPAQUE: emit_opaque(e); break;
  }
}

/* ---- GEMM kernels (matmul_gemm_view): rows folded from the output's leading dims ---- */

static const char *const gemm_rownames[] = {"mr0", "mr1", "mr2", "mr3", "mr4", "mr5", "mr6"};

void gpu_emit_gemm_rows(emitter *e) {
  char M[256];
  emit_count(e, &e->k->dom, 0, e->k->dom.rank - 1, M, sizeof M);
  emit_line(e, "const int M = %s;", M);
}

/* The product a vendor library wrote into the output, finished in place VEC elements at a time
 * where N is a known multiple of a 16-byte vector: one vector load of the sums, the epilogue
 * element by element, one vector store. (An element a thread, cuBLASLt's epilogue kept too few
 * bytes in flight: a third of copy bandwidth on the H100.) False where it does not apply. */
static bool gemm_sum_in_place_vector(emitter *e) {
  const kir_kernel *k = e->k;
  const int o = k->store[0].buf;
  const portc_dtype t = e->m->buf[o].dt;
  if (!G(e)->vload || !dtype_is_float(t) || portc_dtype_size(t) > 4 || k->mnk[1].sym >= 0 || k->mnk[1].c % (16 / portc_dtype_size(t)))
    return false;
  const char *oidx[PORTC_MAX_RANK];
  char buf[16];
  snprintf(buf, sizeof buf, "%s", emit_buf(e, o));
  gpu_emit_gemm_rows(e);
  emit_line(e, "const int N = %lld;", (long long)k->mnk[1].c);
  emit_const(e, e->d->index_type, "PC_VEC", portc_dtype_size(t) == 2 ? "8" : "4");
  emit_line(e, "for (int tv = %s; tv < M * N / PC_VEC; tv += %s) {", G(e)->global_id, G(e)->global_threads);
  e->indent++;
  emit_line(e, "const int gv = tv * PC_VEC;");
  emit_line(e, "float sums[PC_VEC], sv[PC_VEC];");
  emit_line(e, G(e)->vload, buf, "gv", "sums", "0");
  emit_line(e, "%sfor (int c = 0; c < PC_VEC; c++) {", G(e)->unroll);
  e->indent++;
  emit_scope_push(e);
  emit_line(e, "const int m = (gv + c) / N, n = (gv + c) %% N;");
  emit_line(e, "const float acc0 = sums[c];");
  gpu_gemm_indices(e, oidx);
  emit_line(e, "sv[c] = %s;", emit_value(e, k->store[0].val, oidx));
  emit_scope_pop(e);
  gpu_loop_end(e);
  emit_line(e, G(e)->vstore, buf, "gv", "sv");
  gpu_loop_end(e);
  return true;
}

void gpu_gemm_sum(emitter *e, int slices) {
  const kir_kernel *k = e->k;
  char N[32];
  if (slices == 0 && gemm_sum_in_place_vector(e)) return;
  gpu_emit_gemm_rows(e);
  emit_line(e, "const int N = %s;", emit_dim(e, k->mnk[1], N, sizeof N));
  emit_line(e, "for (int t = %s; t < M * N; t += %s) {", G(e)->global_id, G(e)->global_threads);
  e->indent++;
  emit_line(e, "const int m = t / N, n = t %% N;");
  if (slices > 1) {
    slice_sum(e, "acc0", slices);
  } else if (slices == 1) {
    emit_line(e, "const float acc0 = pc_acc[t];");
  } else { /* the product, in the output itself */
    char load[160];
    emit_load(e, k->store[0].buf, "t", load, sizeof load);
    emit_line(e, "const float acc0 = %s;", load);
  }
  gpu_gemm_store(e);
  gpu_loop_end(e);
}

void gpu_gemm_store(emitter *e) {
  const char *oidx[PORTC_MAX_RANK];
  emit_scope_push(e);
  gpu_gemm_indices(e, oidx);
  emit_store_at(e, &e->k->store[0], &e->k->dom, oidx);
  emit_scope_pop(e);
}

void gpu_gemm_indices(emitter *e, const char **oidx) {
  int r = e->k->dom.rank;
  for (int d = 0; d + 1 < r; d++) oidx[d] = gemm_rownames[d];
  oidx[r - 1] = "n";
  if (r == 2) oidx[0] = "m";
  else emit_unravel(e, &e->k->dom, 0, r - 1, "m", oidx);
}
