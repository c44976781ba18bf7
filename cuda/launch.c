/*
 * launch.c: what the CUDA dialect and the runtime must agree on: block and grid sizes, dynamic
 * shared memory, and which matmul variant a kernel is. Pointwise-like kernels loop in strides
 * over their elements, so the grid is capped at a few waves of blocks per SM; row kernels take
 * one block per row, sized by the row's length.
 */
#include "../ir/dtype.h"
#include "../targets/gpu_kernels.h"
#include "cu.h"

static unsigned capped(int64_t n, int64_t cap) { return n < 1 ? 1 : n > cap ? (unsigned)cap : (unsigned)n; }

/* the row length when it is a constant, else 0 */
static int64_t row_length(const kir_kernel *k) {
  int64_t len = 1;
  for (int d = 0; d < k->red.rank; d++) {
    if (k->red.d[d].sym >= 0) return 0;
    len *= k->red.d[d].c;
  }
  return len;
}

int cu_block_threads(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  switch (k->kind) {
  case KK_ROW: {
    int64_t L = row_length(k);
    return L == 0 ? 256 : L <= 32 ? 32 : L <= 1024 ? 128 : 256;
  }
  case KK_MATMUL: return cu_matmul_variant(m, i) == CU_MM_MMA ? CU_MMA_THREADS : 256;
  case KK_CONV: return gpu_conv_tiled(m, i) ? 256 : CU_PW_THREADS;
  default: return CU_PW_THREADS;
  }
}

void cu_grid(const kir_module *m, int i, const int64_t *S, int sms, unsigned g[3], unsigned b[3]) {
  const kir_kernel *k = &m->k[i];
  g[0] = g[1] = g[2] = 1;
  b[0] = (unsigned)cu_block_threads(m, i), b[1] = b[2] = 1;
  switch (k->kind) {
  case KK_ROW: g[0] = capped(shape_count(&k->dom, S), INT32_MAX); break;
  case KK_MATMUL: {
    int64_t batch = 1;
    for (int d = 0; d < k->dom.rank - 2; d++) batch *= dim_value(k->dom.d[d], S);
    int tm = cu_mm_tile(m, i), tn = tm;
    if (cu_matmul_variant(m, i) == CU_MM_MMA) tm = CU_MMA_BM, tn = CU_MMA_BN;
    else b[0] = 16, b[1] = 16;
    g[0] = capped((dim_value(k->mnk[1], S) + tn - 1) / tn, INT32_MAX);
    if (cu_matmul_variant(m, i) == CU_MM_MMA) batch = 1, g[1] = capped((cu_gemm_rows(m, i, S) + tm - 1) / tm, 65535);
    else g[1] = capped((dim_value(k->mnk[0], S) + tm - 1) / tm, 65535);
    g[2] = capped(batch, 65535);
    break;
  }
  case KK_CONV:
    if (gpu_conv_tiled(m, i)) {
      int64_t n[2];
      gpu_conv_groups(m, i, S, CU_CONV_TILE, n);
      b[0] = 16, b[1] = 16;
      g[0] = capped(n[0], INT32_MAX), g[1] = capped(n[1], 65535);
      break;
    }
    /* fall through */
  default: g[0] = capped((shape_count(&k->dom, S) + b[0] - 1) / b[0], (int64_t)(sms > 0 ? sms : 1) * 32); break;
  }
}

int cu_shared_bytes(const kir_module *m, int i) {
  if (m->k[i].kind != KK_MATMUL || cu_matmul_variant(m, i) != CU_MM_MMA) return 0;
  return CU_MMA_STAGES * (CU_MMA_BM * (CU_MMA_BK + 8) + CU_MMA_BK * (CU_MMA_BN + 8)) * 2;
}

int cu_mm_tile(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  const int64_t big = INT64_C(1) << 20; /* a symbolic extent: assume a large one */
  int64_t ext[3];
  for (int d = 0; d < 3; d++) ext[d] = k->mnk[d].sym >= 0 ? big : k->mnk[d].c;
  int64_t tiles = ((ext[0] + 127) / 128) * ((ext[1] + 127) / 128);
  for (int d = 0; d + 2 < k->dom.rank; d++) tiles *= k->dom.d[d].sym >= 0 ? big : k->dom.d[d].c;
  bool room = ext[0] >= 128 && ext[1] >= 128 && tiles >= 256; /* two blocks for each of 128 SMs */
  return room && dtype_is_float(m->buf[k->in_buf[0]].dt) ? 128 : 64;
}

static bool static_multiple(dim d, int64_t of) { return d.sym < 0 && d.c % of == 0; }

/* B's path reads one matrix for every batch: identity steps, or a broadcast that drops the
 * leading (batch) dims and keeps the last two as they are */
static bool same_matrix_per_batch(const kir_kernel *k, int path) {
  if (path < 0) return true;
  const kir_path *p = &k->path[path];
  for (int s = 0; s < p->n; s++) {
    const kir_step *st = &p->s[s];
    kir_path one = {.n = 1, .s = {*st}};
    bool drop = st->kind == ST_BCAST && st->to.rank == 2 && st->from.rank >= 2;
    for (int d = 0; drop && d < 2; d++) {
      dim f = st->from.d[st->from.rank - 2 + d], t = st->to.d[d];
      drop = f.sym == t.sym && f.c == t.c;
    }
    kir_kernel probe = {.path = &one, .npath = 1};
    if (!drop && !path_is_identity(&probe, 0)) return false;
  }
  return true;
}

bool cu_gemm_view(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind != KK_MATMUL || k->dom.rank < 2) return false;
  const kir_buf *a = &m->buf[k->in_buf[0]], *b = &m->buf[k->in_buf[1]];
  return a->sh.rank == k->dom.rank && path_is_identity(k, k->in_path[0]) && b->sh.rank == 2 && same_matrix_per_batch(k, k->in_path[1]);
}

int64_t cu_gemm_rows(const kir_module *m, int i, const int64_t *S) {
  const kir_kernel *k = &m->k[i];
  int64_t rows = 1;
  for (int d = 0; d + 1 < k->dom.rank; d++) rows *= dim_value(k->dom.d[d], S);
  return rows;
}

cu_mm_variant cu_matmul_variant(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (!cu_gemm_view(m, i)) return CU_MM_SIMT;
  portc_dtype a = m->buf[k->in_buf[0]].dt, b = m->buf[k->in_buf[1]].dt;
  if (a != b || (a != PORTC_F16 && a != PORTC_BF16)) return CU_MM_SIMT;
  return static_multiple(k->mnk[1], 8) && static_multiple(k->mnk[2], 8) ? CU_MM_MMA : CU_MM_SIMT;
}

/* value v is a load of a vector of n elements that every row of the output reads whole (a bias) */
static bool bias_load(const kir_module *m, const kir_kernel *k, const kir_val *v, portc_dtype dt) {
  if (v->kind != KV_LOAD || m->buf[v->buf].dt != dt || m->buf[v->buf].sh.rank != 1 || v->path < 0) return false;
  const kir_path *p = &k->path[v->path];
  dim n = k->dom.d[k->dom.rank - 1], b = m->buf[v->buf].sh.d[0];
  return p->n == 1 && p->s[0].kind == ST_BCAST && n.sym == b.sym && n.c == b.c;
}

bool cu_blaslt_eligible(const kir_module *m, int i, bool *direct, int *bias) {
  const kir_kernel *k = &m->k[i];
  *direct = false, *bias = -1;
  if (!cu_gemm_view(m, i) || k->nstore != 1) return false;
  portc_dtype a = m->buf[k->in_buf[0]].dt, b = m->buf[k->in_buf[1]].dt, o = m->buf[k->store[0].buf].dt;
  if (a != b || !dtype_is_float(a)) return false;
  const kir_val *v = &k->val[k->store[0].val];
  if (v->kind == KV_OP && v->op == OP_cast && v->dt == o) v = &k->val[v->arg[0]];
  if (v->kind == KV_OP && v->op == OP_add) { /* acc + bias, either way round */
    const kir_val *x = &k->val[v->arg[0]], *y = &k->val[v->arg[1]];
    if (y->kind == KV_ACC) x = y, y = &k->val[v->arg[0]];
    if (x->kind == KV_ACC && bias_load(m, k, y, o)) *bias = y->buf, v = x;
  }
  *direct = v->kind == KV_ACC && (o == a || o == PORTC_F32) && m->buf[k->store[0].buf].sh.rank == k->dom.rank &&
            path_is_identity(k, k->store[0].path);
  if (!*direct) *bias = -1;
  return true;
}
