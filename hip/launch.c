/*
 * launch.c: what the HIP dialect and the runtimes that run it must agree on: work-group and grid
 * sizes. Work groups are whole wavefronts of 64 (so also of 32); pointwise-like kernels loop in
 * strides over their elements, so the grid is capped at a few groups per compute unit; row
 * kernels take one group per row, sized by the row's length.
 */
#include <string.h>

#include "../ir/dtype.h"
#include "../targets/gpu_kernels.h"
#include "hip.h"

static unsigned capped(int64_t n, int64_t cap) { return n < 1 ? 1 : n > cap ? (unsigned)cap : (unsigned)n; }

int hip_wave_size(const char *arch) {
  const hip_family *f = hip_family_of(arch);
  if (f) return f->wave;
  return strncmp(arch, "gfx1", 4) == 0 && strlen(arch) >= 7 ? 32 : 64;
}

int hip_block_threads(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind != KK_ROW) return 256;
  int64_t L = 1;
  for (int d = 0; d < k->red.rank; d++) {
    if (k->red.d[d].sym >= 0) return 256;
    L *= k->red.d[d].c;
  }
  return L <= 64 ? 64 : L <= 1024 ? 128 : 256;
}

int hip_lds_bytes(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind == KK_MATMUL || gpu_conv_tiled(m, i)) return 16 * (2 * HIP_MM_TILE + 1) * (dtype_is_float(m->buf[k->in_buf[0]].dt) ? 4 : 0);
  return k->kind == KK_ROW ? 8 * 1024 / 32 : 0;
}

void hip_grid(const kir_module *m, int i, const int64_t *S, int cus, unsigned g[3], unsigned b[3]) {
  const kir_kernel *k = &m->k[i];
  g[0] = g[1] = g[2] = 1;
  b[0] = (unsigned)hip_block_threads(m, i), b[1] = b[2] = 1;
  switch (k->kind) {
  case KK_ROW: g[0] = capped(shape_count(&k->dom, S), INT32_MAX); break;
  case KK_MATMUL: {
    int64_t batch = 1;
    for (int d = 0; d < k->dom.rank - 2; d++) batch *= dim_value(k->dom.d[d], S);
    b[0] = 16, b[1] = 16;
    g[0] = capped((dim_value(k->mnk[1], S) + HIP_MM_TILE - 1) / HIP_MM_TILE, INT32_MAX);
    g[1] = capped((dim_value(k->mnk[0], S) + HIP_MM_TILE - 1) / HIP_MM_TILE, 65535);
    g[2] = capped(batch, 65535);
    break;
  }
  case KK_CONV:
    if (gpu_conv_tiled(m, i)) {
      int64_t n[2];
      gpu_conv_groups(m, i, S, HIP_MM_TILE, n);
      b[0] = 16, b[1] = 16;
      g[0] = capped(n[0], INT32_MAX), g[1] = capped(n[1], 65535);
      break;
    }
    /* fall through */
  default: g[0] = capped((shape_count(&k->dom, S) + b[0] - 1) / b[0], (int64_t)(cus > 0 ? cus : 1) * 32); break;
  }
}
