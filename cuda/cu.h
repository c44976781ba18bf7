/*
 * cu.h: the CUDA target's parts and what they share: the per-device context (context.c), CUDA C
 * to cubin (compile.c), the launch geometry and matmul variant that the dialect and the runtime
 * agree on (launch.c), cuBLASLt (blaslt.c), and the dialect itself (dialect.c, dialect_mma.c).
 */
#ifndef PORTC_CUDA_CU_H
#define PORTC_CUDA_CU_H

#include <pthread.h>

#include "../codegen/emit.h"
#include "../targets/cache.h"
#include "../targets/target.h"
#include "cu_api.h"

typedef struct cu_context {
  CUdevice dev;
  CUcontext ctx;
  int index;
  int cc_major, cc_minor, sms, warp, max_threads, smem_block, smem_optin, l2_bytes, mem_clock_khz, bus_bits, clock_khz;
  size_t mem_bytes;
  char arch[16];      /* "sm_90" */
  char model[256];    /* "NVIDIA H100 80GB HBM3" */
  int driver;         /* the driver's CUDA version, 13000 for 13.0 */
  char name[512];     /* "NVIDIA H100 80GB HBM3 (cuda:0, sm_90, driver 13.0)" */
  char cache_id[320]; /* device and driver, for cache keys */
  pthread_mutex_t lock; /* cuBLASLt's handle and workspace */
  struct cu_blaslt *blas; /* made on first use; NULL with blas_why when cuBLASLt is missing */
  char blas_why[400];
} cu_context;

extern cu_driver_api CU;

/* the context of device `index` (-1: $PORTC_CUDA_DEVICE, else 0), made once, current on this thread */
cu_context *cu_context_get(int index, char *why, size_t len);
bool cu_available(char *why, size_t len);
/* the driver alone, without NVRTC: enough to run a module file's cubins */
bool cu_driver_available(char *why, size_t len);
const char *cu_default_device_name(void);
void cu_describe(FILE *out);
/* a driver error as a portc status naming what failed */
portc_status cu_fail(CUresult r, const char *what);

/* NVRTC's options for `arch`, exactly as cu_compile passes them (the cache key covers them) */
void cu_compile_options(const char *arch, build_args *a);
/* CUDA C to a cubin for `arch` ("sm_90") with NVRTC (*cubin: free with free()); a compile
 * failure is an internal error carrying the log and the numbered source */
portc_status cu_compile(const char *src, const char *arch, const char *name, void **cubin, size_t *bytes);
/* NVRTC's identity for cache keys ("nvrtc 13.0"), or NULL with why when NVRTC is missing */
const char *cu_compiler_id(char *why, size_t len);

/* ---- limits, and the tensor-core kernel's tiles (schedule.c, dialect_mma.c) ---- */
enum {
  CU_PW_THREADS = 256,
  CU_MMA_BM = 128,    /* tensor-core matmul: 128x128x64 tiles, 8 warps of 64x32 (128x64: 32x32), 3 stages */
  CU_MMA_BN = 128,
  CU_MMA_BK = 64,
  CU_MMA_STAGES = 3,
  CU_MMA_THREADS = 256,
  CU_MMA_GATHER_TABLES = CU_MMA_STAGES * CU_MMA_BK * 8, /* a convolution's gather: an int2 per panel row and stage */
  CU_WG_BM = 128,     /* Hopper's matmul (dialect_wgmma.c): 128x256x64 tiles in 4 stages, a producer */
  CU_WG_BN = 256,     /* warpgroup and two consumer warpgroups of 64x256 */
  CU_WG_BK = 64,
  CU_WG_STAGES = 4,
  CU_WG_THREADS = 384,
  CU_PP_BN = 128,     /* its ping-pong form (dialect_pingpong.c): 128x128x64 tiles in 6 stages, each */
  CU_PP_STAGES = 6,   /* consumer warpgroup a tile of its own, a block per SM looping over the tiles */
  CU_PP_EPILOGUE_LD = 40, /* a consumer warp's epilogue: 16 rows of 32 f32 sums, rows 40 floats apart */
  CU_WT_BK = 32,      /* its f32 form (three TF32 products): k-steps of 32 through stages of A and B's two
                       * parts (transposed, split by the kN_split kernel before it); tiles schedule.c's */
  CU_FA_BQ = 64,      /* attention on tensor cores (dialect_flash.c): 64 queries per block of 4 warps, */
  CU_FA_BK = 64,      /* keys in tiles of 64, head sizes of up to 128 */
  CU_FA_THREADS = 128,
  CU_FA_MAX_HEAD = 128,
  /* the stages' operands, their two barriers each, and 1024 bytes to align the swizzled stages */
  CU_WG_SHARED = CU_WG_STAGES * (CU_WG_BM * CU_WG_BK + CU_WG_BK * CU_WG_BN) * 2 + CU_WG_STAGES * 16 + 1024,
  /* the ping-pong form's: its stages, their barriers and the two turns, the 8 consumer warps' epilogue
   * rows, the alignment */
  CU_PP_SHARED = CU_PP_STAGES * (CU_WG_BM * CU_WG_BK + CU_WG_BK * CU_PP_BN) * 2 + CU_PP_STAGES * 16 + 16 + 8 * 16 * CU_PP_EPILOGUE_LD * 4 + 1024,
  CU_WT_SPLIT_TILE = 32, /* kN_split: 32x32 tiles of B through shared memory, blocks of 32 x 8 threads */
  CU_CONV_TILE = 64,  /* convolution as an implicit GEMM: 64x64 tiles of 4x4 per thread (schedule.c) */
  CU_STATIC_SHARED = 48 << 10, /* a block's static shared memory (the SIMT attention's tiles) */
  CU_MAX_SPLIT = 64,  /* the most slices of a convolution's reduction (split-K) */
  CU_BLASLT_ALGOS = 8, /* cuBLASLt's heuristic is asked for this many algorithms, best first */
  CU_BLASLT_WORKSPACE = 32 << 20, /* cuBLASLt's workspace: one per module (its stream) */
};
/* the schedule hook (schedule.c): every launch decision of a kernel, in k->sched; and what a
 * tune entry may change of it, and the candidates the tuner times */
void cu_schedule(kir_module *m, int i, int device);
/* the tensor-core kernels of portc's own (CU_OWN_*): cu_schedule_as gives a kernel one of them
 * where it qualifies and the set allows (compile_all schedules through it for devices it does not
 * have) */
enum { CU_OWN_WGMMA = 1, CU_OWN_FLASH = 2, CU_OWN_CONV = 4, CU_OWN_TF32X3 = 8 };
/* those taken where PORTC_CUDA_KERNELS is not set: the ones that have passed the conformance
 * suite, compute-sanitizer and a timing on a GPU (bench/gpu/NOTES.md) */
#define CU_OWN_DEFAULT (CU_OWN_WGMMA | CU_OWN_FLASH | CU_OWN_CONV | CU_OWN_TF32X3)
/* the CU_OWN_* bits of a comma-separated list of their names (wgmma, flash, conv, tf32x3), as
 * PORTC_CUDA_KERNELS gives it (none: no name); unknown names are ignored here and refused by
 * cu_own_kernels_known, which says which one it is (a device opens only where all are known) */
unsigned cu_own_kernels(const char *list);
bool cu_own_kernels_known(const char *list, char *why, size_t len);
void cu_schedule_as(kir_module *m, int i, int device, unsigned own);
/* kernel k (of m) is Hopper's matmul in its f32 form: three TF32 products (dialect_wgmma.c) */
bool cu_wgmma_tf32(const kir_module *m, const kir_kernel *k);
/* kernel k is Hopper's matmul in its ping-pong form (f16/bf16, CU_PP_BN columns a tile: a block per
 * SM whose consumers take turns, dialect_pingpong.c) */
bool cu_wgmma_pingpong(const kir_module *m, const kir_kernel *k);
/* ...and its grid, g[0] blocks, from gpu_grid's tiles (g[0] columns by g[1] rows): a block per
 * multiprocessor (of sms), or per tile where there are fewer tiles; in clusters (the schedule's
 * cluster), whose blocks take neighbouring column tiles, a multiple of the cluster */
void cu_pingpong_grid(unsigned g[3], int sms, int cluster);
/* Hopper's f16/bf16 matmul's forms: both consumers on one 128x256 tile (the rules' choice), the
 * ping-pong form, the ping-pong form in clusters of two blocks on neighbouring column tiles, each
 * loading half of the A panel they share into both, and the 128x256 form in clusters of two blocks
 * on neighbouring row tiles, each loading half of the B panel they share into both; set in s
 * (tile, stages, cluster), and read from it */
enum { CU_FORM_COOP, CU_FORM_PINGPONG, CU_FORM_PINGPONG_PAIR, CU_FORM_COOP_PAIR, CU_FORMS };
/* the 128x256 form in clusters: its grid from gpu_grid's tiles (g[0] columns by g[1] rows), a
 * cluster of 2 blocks along x per pair of row tiles */
void cu_coop_pair_grid(unsigned g[3]);
/* the rows of A's box that one block of Hopper's f16/bf16 matmul loads (a share, where the
 * ping-pong form's cluster shares A) */
int cu_wgmma_a_rows(const kir_module *m, const kir_kernel *k);
void cu_wgmma_form(kir_schedule *s, int form);
int cu_wgmma_form_of(const kir_schedule *s);
/* the dtypes whose convolutions run channels-last (target.h): f16 and bf16 where the tensor-core
 * convolution is taken (own: CU_OWN_*), since its channels-last form copies 16-byte runs */
unsigned cu_channels_last_as(unsigned own);
unsigned cu_channels_last(int device);
/* attention kernel i can run on tensor cores (dialect_flash.c: f16/bf16, head sizes multiples of 16
 * up to CU_FA_MAX_HEAD), and the shared memory that kernel takes */
bool cu_flash_fits(const kir_module *m, int i);
int cu_flash_shared_bytes(const kir_module *m, int i);
/* the architecture NVRTC compiles module km for on c: sm_90a where a kernel needs Hopper's
 * instructions, else the device's own (c->arch) */
const char *cu_compile_arch(const cu_context *c, const kir_module *km);
bool cu_schedule_check(kir_module *m, int i, int device, char *why, size_t len);
int cu_tune_space(const kir_module *m, int i, const tune_device *d, tune_knobs *out, int max);
/* the tune key of device `index` (context.c); api names the target's kind of code (cuda, hip) */
void cu_device_key(int index, const char *api, tune_device *d);
/* matmul kernel k is one GEMM that cuBLASLt runs as it lies: matmul_gemm_view's (codegen/emit.h), or a 2-D GEMM whose operands are
 * matrices read as they lie or transposed (*ta, *tb: the backward pass's x^T gy and gy w^T) */
bool cu_blaslt_view(const kir_module *m, int k, bool *ta, bool *tb);

/* ---- cuBLASLt (blaslt.c) ---- */
typedef struct cu_blaslt cu_blaslt;
/* the context's cuBLASLt, made on first use; NULL with the reason in why */
cu_blaslt *cu_blaslt_get(cu_context *c, char *why, size_t len);
void cu_blaslt_free(cu_blaslt *b);
/* D[M x N] = A[M x K] B[K x N] (+ bias[N] when bias is not 0), row-major, A and B of dtype t
 * (ta: A is stored as its transpose [K x M]; tb: B as [N x K]),
 * D and bias of dtype dt (f32 sums), by cuBLASLt's algo-th choice of algorithm (0: its first),
 * on stream s with the workspace ws of CU_BLASLT_WORKSPACE bytes, which nothing running at the
 * same time may share (split-K and stream-K algorithms keep partial sums and counters there) */
portc_status cu_blaslt_matmul(cu_blaslt *b, CUstream s, CUdeviceptr ws, portc_dtype t, portc_dtype dt, int64_t M, int64_t N, int64_t K,
                              bool ta, bool tb, int algo, CUdeviceptr A, CUdeviceptr B, CUdeviceptr bias, CUdeviceptr D);

extern const dialect cuda_dialect;

/* The CUDA runtime (runtime.c) runs CUDA C (the cuda target) or HIP C++ behind a prelude that
 * maps HIP's device builtins to CUDA's (the hip-on-cuda target, hip_on_cuda/, which checks the
 * HIP dialect on NVIDIA GPUs). A flavor is what differs. */
typedef struct cu_flavor {
  const char *name;          /* the target's name, for messages */
  const char *source_prefix; /* goes before the module's source */
} cu_flavor;
/* the CUDA runtime's hooks, for a target that runs its kernels through it */
portc_status cu_load_flavor(const cu_flavor *f, const load_request *req, void **handle, bool *hit);
portc_status cu_launch(void *handle, int i, void *const *bufs, const int64_t *S);
void cu_unload(void *handle);
extern const target_gpu cu_gpu;

#endif
