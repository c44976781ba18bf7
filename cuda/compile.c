/*
 * compile.c: CUDA C to a cubin with NVRTC, for the exact architecture of the device (sm_90 on
 * Hopper), so nothing is left to the driver's JIT. NVRTC is opened at run time; cuda_fp16.h and
 * cuda_bf16.h come from the toolkit's include folder. Default precision flags: IEEE division and
 * square root, denormals kept (no -use_fast_math), which TOLERANCES.md's CUDA table assumes.
 * Generated code that does not compile is a portc bug: the error carries NVRTC's log and the
 * numbered source.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cu_nvrtc_api N;
static bool tried, ok;
static char why_missing[512], id[64];

const char *cu_compiler_id(char *why, size_t len) {
  pthread_mutex_lock(&lock);
  if (!tried) {
    tried = true;
    ok = cu_load_nvrtc(&N, why_missing, sizeof why_missing);
    int major = 0, minor = 0;
    if (ok) N.nvrtcVersion(&major, &minor);
    if (ok && !cu_include_dir()) {
      ok = false;
      snprintf(why_missing, sizeof why_missing, "NVRTC %d.%d is here, but not the toolkit's cuda_fp16.h: set PORTC_CUDA_HOME", major, minor);
    }
    snprintf(id, sizeof id, "nvrtc %d.%d", major, minor);
  }
  pthread_mutex_unlock(&lock);
  if (!ok) snprintf(why, len, "%s", why_missing);
  return ok ? id : NULL;
}


void cu_compile_options(const char *arch, build_args *a) {
  build_args_add(a, "--gpu-architecture=%s", arch);
  build_args_add(a, "-I%s", cu_include_dir() ? cu_include_dir() : "");
  build_args_add(a, "--std=c++17");
  build_args_add(a, "-default-device");
  build_args_add(a, "--disable-warnings");
  build_args_add(a, "%s", getenv("PORTC_CUDA_LINEINFO") ? "-lineinfo" : "-DPC_NOLINEINFO");
}

portc_status cu_compile(const char *src, const char *arch, const char *name, void **cubin, size_t *bytes) {
  char why[512];
  if (!cu_compiler_id(why, sizeof why)) return err_set(PORTC_ERR_DEVICE, "cuda: %s", why);
  build_args opts = {0};
  cu_compile_options(arch, &opts);
  nvrtcProgram p = NULL;
  nvrtcResult r = N.nvrtcCreateProgram(&p, src, name, 0, NULL, NULL);
  if (r) return err_set(PORTC_ERR_NOMEM, "cuda: nvrtcCreateProgram: %s", N.nvrtcGetErrorString(r));
  r = N.nvrtcCompileProgram(p, opts.n, opts.v);
  if (r) {
    size_t n = 0;
    N.nvrtcGetProgramLogSize(p, &n);
    char *log = calloc(n + 1, 1), *text = emit_numbered(src);
    if (log) N.nvrtcGetProgramLog(p, log);
    portc_status st = err_set(PORTC_ERR_INTERNAL, "cuda: NVRTC could not compile %s for %s (a portc bug): %s\n%s\n%s", name, arch,
                              N.nvrtcGetErrorString(r), log ? log : "", text ? text : "");
    free(log);
    free(text);
    N.nvrtcDestroyProgram(&p);
    return st;
  }
  size_t n = 0;
  N.nvrtcGetCUBINSize(p, &n);
  *cubin = malloc(n ? n : 1);
  if (!*cubin) {
    N.nvrtcDestroyProgram(&p);
    return err_set(PORTC_ERR_NOMEM, "cuda: out of memory for a %zu-byte cubin", n);
  }
  N.nvrtcGetCUBIN(p, *cubin);
  *bytes = n;
  N.nvrtcDestroyProgram(&p);
  return PORTC_OK;
}
