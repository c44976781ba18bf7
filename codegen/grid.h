/*
 * grid.h: the launch geometry of every GPU target, from data. A kernel's schedule says its
 * work-group shape, variant and tiles; a target says only its limits. Row kernels take one work
 * group per row; tiled and matrix-instruction kernels one per output tile (and batch); the rest
 * loop in strides over their elements, so their grid is capped at a few waves of work groups.
 */
#ifndef PORTC_CODEGEN_GRID_H
#define PORTC_CODEGEN_GRID_H

#include "../lower/kir.h"

typedef struct gpu_limits {
  int64_t max_groups[3]; /* work groups per grid dimension */
  int64_t stride_groups; /* grid-stride kernels: at most this many work groups (0: max_groups[0]) */
} gpu_limits;

/* work groups of kernel i for symbol values S (threads per group: k->sched.threads) */
void gpu_grid(const kir_module *m, int i, const int64_t *S, const gpu_limits *lim, unsigned groups[3]);
/* rows of the 2-D GEMM a fold_batch matmul computes: the product of every output dim but the last */
int64_t gpu_gemm_rows(const kir_module *m, int i, const int64_t *S);
/* threads per work group of kernel i */
int gpu_group_threads(const kir_kernel *k);

#endif
