/*
 * launch.c: what the GLSL dialect and the runtime must agree on: how many work groups a kernel
 * is dispatched with, and which buffers it binds. Kernels loop in strides over their work, so
 * a dispatch is capped at VK_MAX_GROUPS per dimension (the least any device offers) and any
 * size still runs.
 */
#include "../targets/gpu_kernels.h"
#include "vk.h"

static uint32_t capped(int64_t n) { return n < 1 ? 1 : n > VK_MAX_GROUPS ? VK_MAX_GROUPS : (uint32_t)n; }

void vk_grid(const kir_module *m, int i, const int64_t *S, uint32_t wg, uint32_t g[3]) {
  const kir_kernel *k = &m->k[i];
  g[0] = g[1] = g[2] = 1;
  switch (k->kind) {
  case KK_ROW: g[0] = capped(shape_count(&k->dom, S)); break;
  case KK_MATMUL: {
    int nb = k->dom.rank - 2;
    int64_t batch = 1;
    for (int d = 0; d < nb; d++) batch *= dim_value(k->dom.d[d], S);
    g[0] = capped((dim_value(k->mnk[1], S) + VK_MM_TILE - 1) / VK_MM_TILE);
    g[1] = capped((dim_value(k->mnk[0], S) + VK_MM_TILE - 1) / VK_MM_TILE);
    g[2] = capped(batch);
    break;
  }
  case KK_CONV:
    if (gpu_conv_tiled(m, i)) {
      int64_t n[2];
      gpu_conv_groups(m, i, S, VK_MM_TILE, n);
      g[0] = capped(n[0]), g[1] = capped(n[1]);
      break;
    }
    /* fall through */
  default: g[0] = capped((shape_count(&k->dom, S) + wg - 1) / wg); break;
  }
}
