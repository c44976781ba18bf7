/*
 * compile.c: HIP C++ to a code object with hiprtc, for the device's gfx architecture and its
 * wavefront size (PC_WAVE), so nothing is left to a JIT at launch. hiprtc comes with the HIP
 * runtime and needs no device: the tests compile every conformance kernel for AMD
 * architectures on a machine without one. Generated code that does not compile is a portc bug:
 * the error carries hiprtc's log and the numbered source.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip.h"
#include "hip_api.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static hip_rtc_api R;
static bool tried, ok;
static char why_missing[512], id[64];

const char *hip_compiler_id(char *why, size_t len) {
  pthread_mutex_lock(&lock);
  if (!tried) {
    tried = true;
    ok = hip_load_rtc(&R, why_missing, sizeof why_missing);
    int major = 0, minor = 0;
    if (ok) R.hiprtcVersion(&major, &minor);
    snprintf(id, sizeof id, "hiprtc %d.%d", major, minor);
  }
  pthread_mutex_unlock(&lock);
  if (!ok) snprintf(why, len, "%s", why_missing);
  return ok ? id : NULL;
}


void hip_compile_options(const char *arch, int wave, build_args *a) {
  build_args_add(a, "--gpu-architecture=%s", arch);
  /* the compiler's own wavefront size for the architecture (RDNA: 32, CDNA: 64) is the one
   * hip_wave_size() gives, so PC_WAVE only tells the source */
  build_args_add(a, "-DPC_WAVE=%d", wave);
  build_args_add(a, "-O3");
}

portc_status hip_compile(const char *src, const char *arch, int wave, const char *name, void **code, size_t *bytes) {
  char why[512];
  if (!hip_compiler_id(why, sizeof why)) return err_set(PORTC_ERR_DEVICE, "hip: %s", why);
  build_args opts = {0};
  hip_compile_options(arch, wave, &opts);
  hiprtcProgram p = NULL;
  hiprtcResult r = R.hiprtcCreateProgram(&p, src, name, 0, NULL, NULL);
  if (r) return err_set(PORTC_ERR_NOMEM, "hip: hiprtcCreateProgram: %s", R.hiprtcGetErrorString(r));
  r = R.hiprtcCompileProgram(p, opts.n, opts.v);
  size_t n = 0;
  if (!r) R.hiprtcGetCodeSize(p, &n);
  if (r || n == 0) {
    size_t ln = 0;
    R.hiprtcGetProgramLogSize(p, &ln);
    char *log = calloc(ln + 1, 1), *text = emit_numbered(src);
    if (log && ln) R.hiprtcGetProgramLog(p, log);
    portc_status st = err_set(PORTC_ERR_INTERNAL, "hip: hiprtc could not compile %s for %s (a portc bug): %s\n%s\n%s", name, arch,
                              R.hiprtcGetErrorString(r), log ? log : "", text ? text : "");
    free(log);
    free(text);
    R.hiprtcDestroyProgram(&p);
    return st;
  }
  if (!(*code = malloc(n))) {
    R.hiprtcDestroyProgram(&p);
    return err_set(PORTC_ERR_NOMEM, "hip: out of memory for a %zu-byte code object", n);
  }
  R.hiprtcGetCode(p, *code);
  *bytes = n;
  R.hiprtcDestroyProgram(&p);
  return PORTC_OK;
}
