/*
 * loader.c: opens the HIP runtime, libamdhip64 (which also holds hiprtc), at run time and fills
 * the tables of hip_api.h. PORTC_HIP_RUNTIME names another file.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../targets/dl.h"
#include "hip_api.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *library(char *why, size_t len) {
  static void *lib;
  static char msg[500];
  pthread_mutex_lock(&lock);
  if (!lib && !msg[0]) {
    const char *o = getenv("PORTC_HIP_RUNTIME");
    const char *names[] = {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so", "/opt/rocm/lib/libamdhip64.so", NULL};
    char err[400] = "";
    if (o && *o) {
      if (!(lib = dl_open(o, err, sizeof err))) snprintf(msg, sizeof msg, "PORTC_HIP_RUNTIME=%s cannot be opened: %s", o, err);
    } else {
      for (int i = 0; names[i] && !lib; i++) lib = dl_open(names[i], err, sizeof err);
      if (!lib) snprintf(msg, sizeof msg, "the HIP runtime (libamdhip64.so) cannot be opened: %s; install ROCm", err);
    }
  }
  pthread_mutex_unlock(&lock);
  if (!lib) snprintf(why, len, "%s", msg);
  return lib;
}

#define LOAD_ONE(f)                                                  \
  if (!(api->f = (PFN_##f)dl_sym(lib, #f, msg, sizeof msg))) {       \
    snprintf(why, len, "the HIP runtime lacks %s (too old?)", #f);   \
    return false;                                                    \
  }

bool hip_load_runtime(hip_runtime_api *api, char *why, size_t len) {
  void *lib = library(why, len);
  char msg[200];
  if (!lib) return false;
  HIP_RUNTIME_FUNCS(LOAD_ONE)
  return true;
}

bool hip_load_rtc(hip_rtc_api *api, char *why, size_t len) {
  void *lib = library(why, len);
  char msg[200];
  if (!lib) return false;
  HIP_RTC_FUNCS(LOAD_ONE)
  return true;
}
