/*
 * hip_on_cuda.c: what the CUDA runtime needs to run the HIP dialect on an NVIDIA GPU, the
 * hip-on-cuda target (runtime.c): the HIP source behind a small prelude that maps HIP's device
 * builtins to CUDA's, with wavefronts of 32 (an NVIDIA warp), and HIP's launch geometry. It is how
 * the HIP dialect's kernels are checked, and benchmarked, where there is no AMD GPU: every kernel
 * runs as HIP renders it; only the names of a few builtins differ.
 */
#include "../hip/hip.h"
#include "../hip/prelude.h"
#include "cu.h"

const cu_flavor cu_hip_flavor = {
    .name = "hip-on-cuda",
    .source_prefix = "#define PC_WAVE 32\n" HIP_ON_CUDA_PRELUDE, /* a wavefront is a warp */
    .grid = hip_grid,
};
