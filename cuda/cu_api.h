/*
 * cu_api.h: the parts of the CUDA driver API, NVRTC and cuBLASLt that portc calls, declared
 * here from their documented, stable ABI so that portc builds without the CUDA toolkit and
 * runs, saying what is missing, without the driver. loader.c opens the libraries at run time
 * and fills the tables below; each list is an X-macro, so a new function is one line. Names
 * are the exported symbols (the _v2 entry points that cuda.h's macros select).
 */
#ifndef PORTC_CUDA_CU_API_H
#define PORTC_CUDA_CU_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- driver API (libcuda.so.1) ---- */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NO_DEVICE = 100,
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
  CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
  CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_STREAM_NON_BLOCKING = 1,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_EVENT_DEFAULT = 0,
};

typedef CUresult (*PFN_cuInit)(unsigned flags);
typedef CUresult (*PFN_cuDriverGetVersion)(int *version);
typedef CUresult (*PFN_cuDeviceGetCount)(int *count);
typedef CUresult (*PFN_cuDeviceGet)(CUdevice *dev, int ordinal);
typedef CUresult (*PFN_cuDeviceGetName)(char *name, int len, CUdevice dev);
typedef CUresult (*PFN_cuDeviceGetAttribute)(int *value, int attrib, CUdevice dev);
typedef CUresult (*PFN_cuDeviceTotalMem_v2)(size_t *bytes, CUdevice dev);
typedef CUresult (*PFN_cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
typedef CUresult (*PFN_cuCtxSetCurrent)(CUcontext ctx);
typedef CUresult (*PFN_cuModuleLoadData)(CUmodule *mod, const void *image);
typedef CUresult (*PFN_cuModuleUnload)(CUmodule mod);
typedef CUresult (*PFN_cuModuleGetFunction)(CUfunction *f, CUmodule mod, const char *name);
typedef CUresult (*PFN_cuFuncSetAttribute)(CUfunction f, int attrib, int value);
typedef CUresult (*PFN_cuLaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                       unsigned shared, CUstream s, void **params, void **extra);
typedef CUresult (*PFN_cuMemAlloc_v2)(CUdeviceptr *p, size_t bytes);
typedef CUresult (*PFN_cuMemFree_v2)(CUdeviceptr p);
typedef CUresult (*PFN_cuMemGetInfo_v2)(size_t *free_bytes, size_t *total);
typedef CUresult (*PFN_cuMemcpyHtoD_v2)(CUdeviceptr dst, const void *src, size_t bytes);
typedef CUresult (*PFN_cuMemcpyDtoH_v2)(void *dst, CUdeviceptr src, size_t bytes);
typedef CUresult (*PFN_cuMemsetD8_v2)(CUdeviceptr p, unsigned char v, size_t n);
typedef CUresult (*PFN_cuMemcpyHtoDAsync_v2)(CUdeviceptr dst, const void *src, size_t bytes, CUstream s);
typedef CUresult (*PFN_cuMemcpyDtoHAsync_v2)(void *dst, CUdeviceptr src, size_t bytes, CUstream s);
typedef CUresult (*PFN_cuMemsetD32Async)(CUdeviceptr p, unsigned v, size_t n, CUstream s);
typedef CUresult (*PFN_cuStreamCreate)(CUstream *s, unsigned flags);
typedef CUresult (*PFN_cuStreamDestroy_v2)(CUstream s);
typedef CUresult (*PFN_cuStreamSynchronize)(CUstream s);
typedef CUresult (*PFN_cuEventCreate)(CUevent *e, unsigned flags);
typedef CUresult (*PFN_cuEventDestroy_v2)(CUevent e);
typedef CUresult (*PFN_cuEventRecord)(CUevent e, CUstream s);
typedef CUresult (*PFN_cuEventSynchronize)(CUevent e);
typedef CUresult (*PFN_cuEventElapsedTime)(float *ms, CUevent a, CUevent b);
typedef CUresult (*PFN_cuStreamBeginCapture_v2)(CUstream s, int mode);
typedef CUresult (*PFN_cuStreamEndCapture)(CUstream s, CUgraph *g);
typedef CUresult (*PFN_cuGraphInstantiateWithFlags)(CUgraphExec *x, CUgraph g, unsigned long long flags);
typedef CUresult (*PFN_cuGraphLaunch)(CUgraphExec x, CUstream s);
typedef CUresult (*PFN_cuGraphExecDestroy)(CUgraphExec x);
typedef CUresult (*PFN_cuGraphDestroy)(CUgraph g);
typedef CUresult (*PFN_cuGetErrorName)(CUresult r, const char **name);
typedef CUresult (*PFN_cuGetErrorString)(CUresult r, const char **text);

/* Hopper's tensor maps (CUDA 12.0 and newer drivers): a 2-D box of a row-major matrix that the
 * tensor memory accelerator copies into shared memory, 64-byte aligned, opaque */
typedef struct __attribute__((aligned(64))) {
  uint64_t opaque[16];
} cu_tmap;
enum {
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
  CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
  CU_TENSOR_MAP_SWIZZLE_128B = 3,
  CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3,
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0, /* zeros past the edges */
};
typedef CUresult (*PFN_cuTensorMapEncodeTiled)(cu_tmap *map, int dtype, unsigned rank, void *address, const uint64_t *dims,
                                               const uint64_t *strides, const unsigned *box, const unsigned *element_strides,
                                               int interleave, int swizzle, int l2_promotion, int oob_fill);
/* a launch's geometry, as cuOccupancyMaxActiveClusters takes it (cuda.h's CUlaunchConfig; no
 * attributes: the kernel's cluster is compiled in) */
typedef struct cu_launch_config {
  unsigned grid[3], block[3], shared;
  CUstream stream;
  void *attrs;
  unsigned nattrs;
} cu_launch_config;
typedef CUresult (*PFN_cuOccupancyMaxActiveClusters)(int *clusters, CUfunction f, const cu_launch_config *config);

#define CU_DRIVER_FUNCS(X)                                                                          \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)            \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem_v2) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent)   \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute)              \
  X(cuLaunchKernel) X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemGetInfo_v2) X(cuMemcpyHtoD_v2)         \
  X(cuMemcpyDtoH_v2) X(cuMemsetD8_v2) X(cuMemcpyHtoDAsync_v2) X(cuMemcpyDtoHAsync_v2) X(cuMemsetD32Async) X(cuStreamCreate) X(cuStreamDestroy_v2) \
  X(cuStreamSynchronize) X(cuEventCreate) X(cuEventDestroy_v2) X(cuEventRecord)                    \
  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuStreamBeginCapture_v2) X(cuStreamEndCapture)    \
  X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)         \
  X(cuGetErrorName) X(cuGetErrorString)

typedef struct cu_driver_api {
#define FIELD(f) PFN_##f f;
  CU_DRIVER_FUNCS(FIELD)
#undef FIELD
  PFN_cuTensorMapEncodeTiled cuTensorMapEncodeTiled; /* NULL where the driver predates Hopper */
  PFN_cuOccupancyMaxActiveClusters cuOccupancyMaxActiveClusters; /* likewise */
} cu_driver_api;

/* ---- NVRTC (libnvrtc.so) ---- */
typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

typedef nvrtcResult (*PFN_nvrtcVersion)(int *major, int *minor);
typedef const char *(*PFN_nvrtcGetErrorString)(nvrtcResult r);
typedef nvrtcResult (*PFN_nvrtcCreateProgram)(nvrtcProgram *p, const char *src, const char *name, int nheaders, const char *const *headers,
                                              const char *const *include_names);
typedef nvrtcResult (*PFN_nvrtcDestroyProgram)(nvrtcProgram *p);
typedef nvrtcResult (*PFN_nvrtcCompileProgram)(nvrtcProgram p, int nopts, const char *const *opts);
typedef nvrtcResult (*PFN_nvrtcGetProgramLogSize)(nvrtcProgram p, size_t *bytes);
typedef nvrtcResult (*PFN_nvrtcGetProgramLog)(nvrtcProgram p, char *log);
typedef nvrtcResult (*PFN_nvrtcGetCUBINSize)(nvrtcProgram p, size_t *bytes);
typedef nvrtcResult (*PFN_nvrtcGetCUBIN)(nvrtcProgram p, char *cubin);

#define CU_NVRTC_FUNCS(X)                                                                                 \
  X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcDestroyProgram) X(nvrtcCompileProgram) \
  X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN)

typedef struct cu_nvrtc_api {
#define FIELD(f) PFN_##f f;
  CU_NVRTC_FUNCS(FIELD)
#undef FIELD
} cu_nvrtc_api;

/* ---- cuBLASLt (libcublasLt.so) ---- */
typedef int cublasStatus_t;
typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct { uint64_t data[32]; } cublasLtMatmulDescOpaque_t, *cublasLtMatmulDesc_t;
typedef struct { uint64_t data[8]; } cublasLtMatrixLayoutOpaque_t, *cublasLtMatrixLayout_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulPreferenceOpaque_t, *cublasLtMatmulPreference_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;

enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUDA_R_32F = 0,
  CUDA_R_16F = 2,
  CUDA_R_16BF = 14,
  CUBLAS_COMPUTE_32F = 68,
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
  CUBLASLT_MATMUL_DESC_TRANSA = 3, /* int32_t cublasOperation_t */
  CUBLASLT_MATMUL_DESC_TRANSB = 4,
  CUBLAS_OP_N = 0,
  CUBLAS_OP_T = 1,
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
  CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26,
  CUBLASLT_EPILOGUE_BIAS = 4,
};

typedef cublasStatus_t (*PFN_cublasLtCreate)(cublasLtHandle_t *h);
typedef cublasStatus_t (*PFN_cublasLtDestroy)(cublasLtHandle_t h);
typedef cublasStatus_t (*PFN_cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t *d, int compute, int scale);
typedef cublasStatus_t (*PFN_cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t d);
typedef cublasStatus_t (*PFN_cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t d, int attr, const void *buf, size_t bytes);
typedef cublasStatus_t (*PFN_cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t *l, int type, uint64_t rows, uint64_t cols, int64_t ld);
typedef cublasStatus_t (*PFN_cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t l);
typedef cublasStatus_t (*PFN_cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t *p);
typedef cublasStatus_t (*PFN_cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference_t p);
typedef cublasStatus_t (*PFN_cublasLtMatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t p, int attr, const void *buf, size_t bytes);
typedef cublasStatus_t (*PFN_cublasLtMatmulAlgoGetHeuristic)(cublasLtHandle_t h, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                                                             cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                             cublasLtMatmulPreference_t pref, int requested,
                                                             cublasLtMatmulHeuristicResult_t *results, int *returned);
typedef cublasStatus_t (*PFN_cublasLtMatmul)(cublasLtHandle_t h, cublasLtMatmulDesc_t op, const void *alpha, const void *A,
                                             cublasLtMatrixLayout_t a, const void *B, cublasLtMatrixLayout_t b, const void *beta,
                                             const void *C, cublasLtMatrixLayout_t c, void *D, cublasLtMatrixLayout_t d,
                                             const cublasLtMatmulAlgo_t *algo, void *workspace, size_t ws_bytes, CUstream s);
typedef size_t (*PFN_cublasLtGetVersion)(void);

#define CU_BLASLT_FUNCS(X)                                                                                          \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy)                     \
  X(cublasLtMatmulDescSetAttribute)                                                                                  \
  X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy) X(cublasLtMatmulPreferenceCreate)                    \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic)      \
  X(cublasLtMatmul) X(cublasLtGetVersion)

typedef struct cu_blaslt_api {
#define FIELD(f) PFN_##f f;
  CU_BLASLT_FUNCS(FIELD)
#undef FIELD
} cu_blaslt_api;

/* loader.c: each opens its library once per process; false with the reason in why */
bool cu_load_driver(cu_driver_api *api, char *why, size_t len);
bool cu_load_nvrtc(cu_nvrtc_api *api, char *why, size_t len);
bool cu_load_blaslt(cu_blaslt_api *api, char *why, size_t len);
/* the CUDA toolkit's include folder (for cuda_fp16.h), or NULL when none is found */
const char *cu_include_dir(void);

#endif
