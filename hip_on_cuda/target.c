/*
 * target.c: the hip-on-cuda target: the HIP dialect run on an NVIDIA GPU by the CUDA runtime.
 * The HIP source goes behind a small prelude that maps HIP's device builtins to CUDA's, with
 * wavefronts of 32 (an NVIDIA warp); the schedule is the HIP target's. It is how the HIP
 * dialect's kernels are checked, and benchmarked, where there is no AMD GPU: every kernel runs
 * as HIP renders it; only the names of a few builtins differ. This folder alone joins two
 * targets: it includes the CUDA runtime's and the HIP dialect's headers.
 */
#include "../cuda/cu.h"
#include "../hip/hip.h"
#include "../hip/prelude.h"

static const cu_flavor hip_flavor = {
    .name = "hip-on-cuda",
    .source_prefix = "#define PC_WAVE 32\n" HIP_ON_CUDA_PRELUDE, /* a wavefront is a warp */
};

static bool available(char *why, size_t len) { return cu_available(why, len); }
static const char *device(void) { return cu_default_device_name(); }
static void device_key(int device, tune_device *d) { cu_device_key(device, "hip", d); }
static portc_status load(const load_request *req, void **handle, bool *hit) { return cu_load_flavor(&hip_flavor, req, handle, hit); }

const target hip_on_cuda_target = {
    .name = "hip-on-cuda",
    .summary = "the HIP dialect (wavefronts of 32) compiled by NVRTC and run through the CUDA driver API, to check it on NVIDIA GPUs",
    .dialect = &hip_dialect,
    .available = available,
    .device = device,
    .schedule = hip_schedule,
    .device_key = device_key,
    .schedule_check = hip_schedule_check,
    .tune_space = hip_tune_space,
    .load = load,
    .launch = cu_launch,
    .unload = cu_unload,
    .artifacts = true,
    .runs_prebuilt = cu_driver_available,
    .gpu = &cu_gpu,
    .attention_kernel = TARGET_ATTENTION_FLOATS,
};
