/*
 * hip.h: the HIP target's parts and what they share: the per-device context (context.c), HIP C++
 * to a code object with hiprtc (compile.c), the schedule that the dialect and the runtimes read
 * (schedule.c), the dialect itself (dialect.c), and the runtime (runtime.c). The same dialect
 * also runs on NVIDIA GPUs through the CUDA runtime (the hip-on-cuda target, hip_on_cuda/).
 */
#ifndef PORTC_HIP_HIP_H
#define PORTC_HIP_HIP_H

#include "../codegen/emit.h"
#include "../targets/cache.h"
#include "../targets/target.h"
#include "hip_api.h"

/* one AMD device as the HIP runtime describes it (context.c) */
typedef struct hip_context {
  int index;
  int cus, wave, lds, l2;
  size_t mem;
  char device_name[256];
  char gcn_arch[256];   /* "gfx90a:sramecc+:xnack-" */
  char arch[64];        /* "gfx90a": the code object's target */
  char name[400];       /* "AMD Instinct MI210 (hip:0, gfx90a, wave64)" */
  char cache_id[600];   /* device, features and wavefront size, for cache keys */
} hip_context;

extern hip_runtime_api HIP;
/* the context of device `index` (-1: $PORTC_HIP_DEVICE, else 0), made once, current on this thread */
hip_context *hip_context_get(int index, char *why, size_t len);
bool hip_available(char *why, size_t len);
const char *hip_default_device_name(void);
void hip_describe(FILE *out);
portc_status hip_fail(hipError_t r, const char *what);

/* ---- limits and rules (schedule.c) ---- */
enum {
  HIP_PW_THREADS = 256,
  HIP_MM_TILE = 64,    /* SIMT matmul: 64x64 tiles, 16x16 threads of 4x4 */
  HIP_STATIC_SHARED = 48 << 10, /* static shared memory that AMD's 64 KiB and hip-on-cuda's 48 take */
};
/* the schedule hook (schedule.c): every launch decision of a kernel, in k->sched */
void hip_schedule(kir_module *m, int i, int device);
/* what a tune entry may change of a schedule, and the candidates the tuner times (schedule.c) */
bool hip_schedule_check(kir_module *m, int i, int device, char *why, size_t len);
int hip_tune_space(const kir_module *m, int i, const tune_device *d, tune_knobs *out, int max);
/* the tune key of device `index` (context.c) */
void hip_device_key(int index, tune_device *d);
/* LDS bytes kernel k declares (the SIMT matmul's panels; a reduction's partials are at most 128) */
int hip_lds_bytes(const kir_module *m, int k);
/* the wavefront size of a gfx architecture: the tune table's, else 32 on RDNA (gfx10, gfx11,
 * gfx12) and 64 on GCN and CDNA */
int hip_wave_size(const char *gfx_arch);

/* a tune-table entry for an AMD family (families.c): AMD's published figures */
typedef struct hip_family {
  const char *arch, *family, *devices;
  int wave, lds_bytes, cus;
  const char *provenance; /* "heuristic" until measured on the hardware */
  const char *source;
} hip_family;
const hip_family *hip_family_of(const char *gfx_arch); /* NULL when not in the table */
void hip_families_print(FILE *out);                     /* the table, one JSON object a line */

/* HIP C++ to a code object for `arch` ("gfx90a") with wavefronts of `wave` lanes, through hiprtc
 * (*code: free with free()); a compile failure is an internal error with the log and the source */
portc_status hip_compile(const char *src, const char *arch, int wave, const char *name, void **code, size_t *bytes);
/* hiprtc's options, exactly as hip_compile passes them (the cache key covers them) */
void hip_compile_options(const char *arch, int wave, build_args *a);
/* hiprtc's identity for cache keys, or NULL with why when the HIP runtime is missing */
const char *hip_compiler_id(char *why, size_t len);

extern const dialect hip_dialect;

#endif
