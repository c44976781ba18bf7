/*
 * grid.c: one grid function for every GPU target (grid.h). tinygrad's gpudims works the same
 * way: launch dimensions from per-target maxima, not a function per target.
 */
#include "grid.h"
#include "gpu_kernels.h"

static unsigned capped(int64_t n, int64_t cap) { return n < 1 ? 1 : n > cap ? (unsigned)cap : (unsigned)n; }

int gpu_group_threads(const kir_kernel *k) {
  const int *t = k->sched.threads;
  return (t[0] ? t[0] : 1) * (t[1] ? t[1] : 1) * (t[2] ? t[2] : 1);
}

int64_t gpu_gemm_rows(const kir_module *m, int i, const int64_t *S) {
  const kir_kernel *k = &m->k[i];
  int64_t rows = 1;
  for (int d = 0; d + 1 < k->dom.rank; d++) rows *= dim_value(k->dom.d[d], S);
  return rows;
}

void gpu_grid(const kir_module *m, int i, const int64_t *S, const gpu_limits *lim, unsigned g[3]) {
  const kir_kernel *k = &m->k[i];
  const kir_schedule *s = &k->sched;
  const int64_t *max = lim->max_groups;
  g[0] = g[1] = g[2] = 1;
  if (k->kind == KK_ROW) {
    g[0] = capped(shape_count(&k->dom, S), max[0]);
  } else if (k->kind == KK_MATMUL && s->variant != KS_PLAIN) {
    int64_t batch = 1;
    for (int d = 0; d < k->dom.rank - 2; d++) batch *= dim_value(k->dom.d[d], S);
    int64_t rows = s->fold_batch ? gpu_gemm_rows(m, i, S) : dim_value(k->mnk[0], S);
    if (s->fold_batch) batch = 1;
    g[0] = capped((dim_value(k->mnk[1], S) + s->tile_n - 1) / s->tile_n, max[0]);
    g[1] = capped((rows + s->tile_m - 1) / s->tile_m, max[1]);
    g[2] = s->fold_batch && s->split_k > 1 ? (unsigned)s->split_k : capped(batch, max[2]); /* a split GEMM: a group per slice */
  } else if (k->kind == KK_CONV && (s->variant == KS_TILED || s->variant == KS_MMA)) {
    int64_t n[2];
    gpu_conv_groups(m, i, S, s->tile_m, s->tile_n, n);
    g[0] = capped(n[0], max[0]), g[1] = capped(n[1], max[1]), g[2] = (unsigned)gpu_conv_split(k); /* each slice: a group */
  } else {
    int64_t cap = lim->stride_groups > 0 && lim->stride_groups < max[0] ? lim->stride_groups : max[0];
    int threads = gpu_group_threads(k);
    int64_t items = shape_count(&k->dom, S), run = gpu_conv_run(k);
    if (run > 1) items = items / k->dom.d[3].c * ((k->dom.d[3].c + run - 1) / run); /* an invocation per run of a row */
    g[0] = gpu_is_attention(m, i) ? capped(gpu_attention_groups(m, i, S), cap) : capped((items + threads - 1) / threads, cap);
  }
}
