/*
 * loader.c: opens the CUDA driver, NVRTC and cuBLASLt at run time and fills the tables of
 * cu_api.h. The driver comes with the NVIDIA kernel driver (libcuda.so.1); NVRTC and cuBLASLt
 * come with the toolkit, which is often not on the library path, so its lib64 folder is tried
 * too. PORTC_CUDA_DRIVER, PORTC_NVRTC and PORTC_CUBLASLT name other files; PORTC_CUDA_HOME (else
 * CUDA_HOME, CUDA_PATH, /usr/local/cuda) names the toolkit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../targets/dl.h"
#include "cu_api.h"

static const char *toolkit(void) {
  const char *vars[] = {"PORTC_CUDA_HOME", "CUDA_HOME", "CUDA_PATH"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return v;
  }
  return "/usr/local/cuda";
}

const char *cu_include_dir(void) {
  static _Thread_local char dir[1024]; /* per thread: compiles run on many threads at once */
  snprintf(dir, sizeof dir, "%s/include", toolkit());
  char probe[1100];
  snprintf(probe, sizeof probe, "%s/cuda_fp16.h", dir);
  return access(probe, R_OK) == 0 ? dir : NULL;
}

/* the first of names[] that opens (a bare name through the library path, then in the toolkit's
 * lib64); env overrides them all */
static void *open_first(const char *env, const char *const *names, char *why, size_t len) {
  const char *o = getenv(env);
  char msg[400] = "";
  if (o && *o) {
    void *h = dl_open(o, msg, sizeof msg);
    if (!h) snprintf(why, len, "%s=%s cannot be opened: %s", env, o, msg);
    return h;
  }
  for (int i = 0; names[i]; i++) {
    void *h = dl_open(names[i], msg, sizeof msg);
    if (h) return h;
    char path[1200];
    snprintf(path, sizeof path, "%s/lib64/%s", toolkit(), names[i]);
    if ((h = dl_open(path, msg, sizeof msg))) return h;
  }
  snprintf(why, len, "%s cannot be opened (also looked in %s/lib64): %s", names[0], toolkit(), msg);
  return NULL;
}

/* fills every function of an X-macro list from lib; false naming the first that is missing */
#define LOAD_ALL(LIST, lib, api, what)                                  \
  do {                                                                  \
    char msg_[400];                                                     \
    const char *what_ = what;                                           \
    LIST(LOAD_ONE)                                                      \
  } while (0)
#define LOAD_ONE(f)                                                     \
  if (!(api->f = (PFN_##f)dl_sym(lib, #f, msg_, sizeof msg_))) {        \
    snprintf(why, len, "%s lacks %s (too old?)", what_, #f);            \
    return false;                                                       \
  }

bool cu_load_driver(cu_driver_api *api, char *why, size_t len) {
  static void *lib;
  const char *names[] = {"libcuda.so.1", NULL};
  if (!lib && !(lib = open_first("PORTC_CUDA_DRIVER", names, why, len))) {
    snprintf(why + strlen(why), len - strlen(why), "; the NVIDIA driver is not installed");
    return false;
  }
  LOAD_ALL(CU_DRIVER_FUNCS, lib, api, "the CUDA driver");
  char msg[400];
  api->cuTensorMapEncodeTiled = (PFN_cuTensorMapEncodeTiled)dl_sym(lib, "cuTensorMapEncodeTiled", msg, sizeof msg);
  api->cuOccupancyMaxActiveClusters = (PFN_cuOccupancyMaxActiveClusters)dl_sym(lib, "cuOccupancyMaxActiveClusters", msg, sizeof msg);
  return true;
}

bool cu_load_nvrtc(cu_nvrtc_api *api, char *why, size_t len) {
  static void *lib;
  const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};
  if (!lib && !(lib = open_first("PORTC_NVRTC", names, why, len))) {
    snprintf(why + strlen(why), len - strlen(why), "; install the CUDA toolkit or set PORTC_CUDA_HOME");
    return false;
  }
  LOAD_ALL(CU_NVRTC_FUNCS, lib, api, "NVRTC");
  return true;
}

bool cu_load_blaslt(cu_blaslt_api *api, char *why, size_t len) {
  static void *lib;
  const char *names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so", NULL};
  if (!lib && !(lib = open_first("PORTC_CUBLASLT", names, why, len))) return false;
  LOAD_ALL(CU_BLASLT_FUNCS, lib, api, "cuBLASLt");
  return true;
}
