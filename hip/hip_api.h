/*
 * hip_api.h: the parts of the HIP runtime and hiprtc that portc calls, declared here from their
 * ABI so that portc builds without ROCm and runs, saying what is missing, without it. loader.c
 * opens libamdhip64 (which holds hiprtc too) at run time and fills the tables; each list is an
 * X-macro. Attribute numbers and the hipDeviceProp_t offsets are those of HIP 5 (the layout
 * the unversioned hipGetDeviceProperties keeps in later releases).
 */
#ifndef PORTC_HIP_HIP_API_H
#define PORTC_HIP_HIP_API_H

#include <stdbool.h>
#include <stddef.h>

typedef int hipError_t;
typedef int hipDevice_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef void *hipDeviceptr_t;

enum {
  hipSuccess = 0,
  hipErrorOutOfMemory = 2,
  hipErrorNoDevice = 100,
  hipDeviceAttributeL2CacheSize = 19,
  hipDeviceAttributeMaxThreadsPerBlock = 56,
  hipDeviceAttributeMultiprocessorCount = 63,
  hipDeviceAttributeMaxSharedMemoryPerBlock = 74,
  hipDeviceAttributeWarpSize = 87,
  HIP_PROP_BYTES = 792,     /* sizeof(hipDeviceProp_t), HIP 5 */
  HIP_PROP_NAME = 0,        /* char name[256] */
  HIP_PROP_GCN_ARCH = 396,  /* char gcnArchName[256] */
};

typedef hipError_t (*PFN_hipInit)(unsigned flags);
typedef hipError_t (*PFN_hipGetDeviceCount)(int *n);
typedef hipError_t (*PFN_hipSetDevice)(int d);
typedef hipError_t (*PFN_hipGetDeviceProperties)(void *props, int d);
typedef hipError_t (*PFN_hipDeviceGetAttribute)(int *v, int attr, int d);
typedef hipError_t (*PFN_hipDeviceTotalMem)(size_t *bytes, hipDevice_t d);
typedef hipError_t (*PFN_hipRuntimeGetVersion)(int *v);
typedef const char *(*PFN_hipGetErrorString)(hipError_t e);
typedef hipError_t (*PFN_hipModuleLoadData)(hipModule_t *m, const void *image);
typedef hipError_t (*PFN_hipModuleUnload)(hipModule_t m);
typedef hipError_t (*PFN_hipModuleGetFunction)(hipFunction_t *f, hipModule_t m, const char *name);
typedef hipError_t (*PFN_hipModuleLaunchKernel)(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                               unsigned bz, unsigned shared, hipStream_t s, void **params, void **extra);
typedef hipError_t (*PFN_hipMalloc)(void **p, size_t bytes);
typedef hipError_t (*PFN_hipFree)(void *p);
typedef hipError_t (*PFN_hipMemcpyHtoDAsync)(hipDeviceptr_t dst, void *src, size_t bytes, hipStream_t s);
typedef hipError_t (*PFN_hipMemcpyDtoHAsync)(void *dst, hipDeviceptr_t src, size_t bytes, hipStream_t s);
typedef hipError_t (*PFN_hipMemsetD32Async)(hipDeviceptr_t p, int v, size_t n, hipStream_t s);
typedef hipError_t (*PFN_hipStreamCreate)(hipStream_t *s);
typedef hipError_t (*PFN_hipStreamDestroy)(hipStream_t s);
typedef hipError_t (*PFN_hipStreamSynchronize)(hipStream_t s);
typedef hipError_t (*PFN_hipEventCreate)(hipEvent_t *e);
typedef hipError_t (*PFN_hipEventDestroy)(hipEvent_t e);
typedef hipError_t (*PFN_hipEventRecord)(hipEvent_t e, hipStream_t s);
typedef hipError_t (*PFN_hipEventSynchronize)(hipEvent_t e);
typedef hipError_t (*PFN_hipEventElapsedTime)(float *ms, hipEvent_t a, hipEvent_t b);

#define HIP_RUNTIME_FUNCS(X)                                                                             \
  X(hipInit) X(hipGetDeviceCount) X(hipSetDevice) X(hipGetDeviceProperties) X(hipDeviceGetAttribute)    \
  X(hipDeviceTotalMem) X(hipRuntimeGetVersion) X(hipGetErrorString) X(hipModuleLoadData)               \
  X(hipModuleUnload) X(hipModuleGetFunction) X(hipModuleLaunchKernel) X(hipMalloc) X(hipFree)          \
  X(hipMemcpyHtoDAsync) X(hipMemcpyDtoHAsync) X(hipMemsetD32Async) X(hipStreamCreate)                  \
  X(hipStreamDestroy) X(hipStreamSynchronize) X(hipEventCreate) X(hipEventDestroy) X(hipEventRecord)   \
  X(hipEventSynchronize) X(hipEventElapsedTime)

typedef struct hip_runtime_api {
#define FIELD(f) PFN_##f f;
  HIP_RUNTIME_FUNCS(FIELD)
#undef FIELD
} hip_runtime_api;

typedef int hiprtcResult;
typedef struct _hiprtcProgram *hiprtcProgram;
typedef hiprtcResult (*PFN_hiprtcVersion)(int *major, int *minor);
typedef const char *(*PFN_hiprtcGetErrorString)(hiprtcResult r);
typedef hiprtcResult (*PFN_hiprtcCreateProgram)(hiprtcProgram *p, const char *src, const char *name, int nheaders, const char **headers,
                                                const char **include_names);
typedef hiprtcResult (*PFN_hiprtcDestroyProgram)(hiprtcProgram *p);
typedef hiprtcResult (*PFN_hiprtcCompileProgram)(hiprtcProgram p, int nopts, const char **opts);
typedef hiprtcResult (*PFN_hiprtcGetProgramLogSize)(hiprtcProgram p, size_t *bytes);
typedef hiprtcResult (*PFN_hiprtcGetProgramLog)(hiprtcProgram p, char *log);
typedef hiprtcResult (*PFN_hiprtcGetCodeSize)(hiprtcProgram p, size_t *bytes);
typedef hiprtcResult (*PFN_hiprtcGetCode)(hiprtcProgram p, char *code);

#define HIP_RTC_FUNCS(X)                                                                                  \
  X(hiprtcVersion) X(hiprtcGetErrorString) X(hiprtcCreateProgram) X(hiprtcDestroyProgram) X(hiprtcCompileProgram) \
  X(hiprtcGetProgramLogSize) X(hiprtcGetProgramLog) X(hiprtcGetCodeSize) X(hiprtcGetCode)

typedef struct hip_rtc_api {
#define FIELD(f) PFN_##f f;
  HIP_RTC_FUNCS(FIELD)
#undef FIELD
} hip_rtc_api;

/* loader.c: opens libamdhip64 once per process (PORTC_HIP_RUNTIME names another file) and fills
 * the table; false with the reason in why */
bool hip_load_runtime(hip_runtime_api *api, char *why, size_t len);
bool hip_load_rtc(hip_rtc_api *api, char *why, size_t len);

#endif
