/*
 * hip.h: the HIP target's parts and what they share: the per-device context (context.c), HIP C++
 * to a code object with hiprtc (compile.c), the launch geometry that the dialect and the runtimes
 * agree on (launch.c), and the dialect itself (dialect.c). The same dialect also runs on NVIDIA
 * GPUs through the CUDA runtime (the hip-on-cuda target, cuda/hip_on_cuda.c).
 */
#ifndef PORTC_HIP_HIP_H
#define PORTC_HIP_HIP_H

#include "../targets/emit.h"
#include "../targets/target.h"

/* ---- what the dialect and the runtimes agree on (launch.c) ---- */
enum {
  HIP_MAX_SYMS = 32,
  HIP_MAX_ARGS = 64,   /* buffers one kernel may take */
  HIP_PW_THREADS = 256,
  HIP_MM_TILE = 64,    /* SIMT matmul: 64x64 tiles, 16x16 threads of 4x4 */
};
/* threads per work group of kernel k (row kernels: by row length; at least one wavefront of 64) */
int hip_block_threads(const kir_module *m, int k);
/* work groups (capped: kernels loop over their work) and their shape; cus: compute units */
void hip_grid(const kir_module *m, int k, const int64_t *S, int cus, unsigned grid[3], unsigned block[3]);
/* the wavefront size of a gfx architecture: 32 on RDNA (gfx10, gfx11, gfx12), else 64 */
int hip_wave_size(const char *gfx_arch);

/* HIP C++ to a code object for `arch` ("gfx90a") with wavefronts of `wave` lanes, through hiprtc
 * (*code: free with free()); a compile failure is an internal error with the log and the source */
portc_status hip_compile(const char *src, const char *arch, int wave, const char *name, void **code, size_t *bytes);
/* hiprtc's identity for cache keys, or NULL with why when the HIP runtime is missing */
const char *hip_compiler_id(char *why, size_t len);

extern const dialect hip_dialect;

#endif
