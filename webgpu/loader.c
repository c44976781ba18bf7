/*
 * loader.c: opens the WebGPU library at run time, so that libportc runs, and says what is
 * missing, on a machine without it. The library (Dawn, which links Tint and its own
 * SPIRV-Tools and abseil statically and exports them) is opened deep-bound, so that its calls
 * into those reach its own copies and not libportc's or the application's (libportc exports
 * only its API; an application that links libportc.a does not); AddressSanitizer refuses
 * deep-bound libraries, so sanitized builds open it as a plain local library.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../targets/dl.h"
#include "wg.h"

/* the symbols of webgpu.h's stable release (Sept 2025) that replaced this ABI's
 * wgpuGetInstanceCapabilities; a library with them has other struct layouts and feature numbers */
const char *wg_abi_mismatch(void *(*lookup)(void *handle, const char *name), void *handle) {
  if (!lookup(handle, "wgpuCreateInstance")) return "it has no wgpuCreateInstance: it is not a webgpu.h library";
  if (lookup(handle, "wgpuGetInstanceCapabilities")) return NULL;
  if (lookup(handle, "wgpuGetInstanceFeatures") || lookup(handle, "wgpuGetInstanceLimits"))
    return "it has the ABI of webgpu.h's stable release (wgpuGetInstanceFeatures), and portc is built for Dawn's of June 2025 "
           "(wgpuGetInstanceCapabilities)";
  return "it lacks wgpuGetInstanceCapabilities, which the ABI portc is built for (Dawn's of June 2025) has";
}

static void *lookup_dl(void *handle, const char *name) {
  char why[128];
  return dl_sym(handle, name, why, sizeof why);
}

static bool fill(void *h, wgpu_api *w, char *why, size_t len) {
  struct { const char *name; void **slot; } syms[] = {
#define SYM(f) {"wgpu" #f, (void **)&w->f}
      SYM(GetInstanceCapabilities), SYM(CreateInstance), SYM(InstanceRequestAdapter), SYM(InstanceProcessEvents),
      SYM(InstanceRelease), SYM(AdapterGetInfo), SYM(AdapterGetLimits), SYM(AdapterGetFeatures), SYM(AdapterRelease),
      SYM(AdapterInfoFreeMembers), SYM(SupportedFeaturesFreeMembers), SYM(AdapterRequestDevice), SYM(DeviceGetQueue),
      SYM(DeviceCreateBuffer), SYM(DeviceCreateShaderModule), SYM(ShaderModuleGetCompilationInfo), SYM(DeviceCreateComputePipeline),
      SYM(ComputePipelineGetBindGroupLayout), SYM(DeviceCreateBindGroup), SYM(DeviceCreateCommandEncoder),
      SYM(CommandEncoderBeginComputePass), SYM(ComputePassEncoderSetPipeline), SYM(ComputePassEncoderSetBindGroup),
      SYM(ComputePassEncoderDispatchWorkgroups), SYM(ComputePassEncoderEnd), SYM(CommandEncoderCopyBufferToBuffer),
      SYM(CommandEncoderFinish), SYM(QueueSubmit), SYM(QueueWriteBuffer), SYM(BufferMapAsync), SYM(BufferGetConstMappedRange),
      SYM(BufferUnmap), SYM(BufferDestroy), SYM(BufferRelease), SYM(ShaderModuleRelease), SYM(ComputePipelineRelease),
      SYM(BindGroupLayoutRelease), SYM(BindGroupRelease), SYM(CommandEncoderRelease), SYM(ComputePassEncoderRelease),
      SYM(CommandBufferRelease), SYM(QueueRelease), SYM(DeviceDestroy), SYM(DeviceRelease),
      SYM(DeviceCreateQuerySet), SYM(CommandEncoderResolveQuerySet), SYM(QuerySetDestroy), SYM(QuerySetRelease),
#undef SYM
  };
  for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
    char msg[128];
    if (!(*syms[i].slot = dl_sym(h, syms[i].name, msg, sizeof msg))) return snprintf(why, len, "it lacks %s", syms[i].name), false;
  }
  return true;
}

const wgpu_api *wg_load(const char **path, char *why, size_t len) {
  static wgpu_api api;
  static const char *opened;
  static char failure[1536];
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&lock);
  if (!opened && !failure[0]) {
    const char *env = getenv("PORTC_WEBGPU_LIB");
    const char *const tries[] = {env && *env ? env : NULL, "libwebgpu_dawn.so", "libwebgpu_wrapper.so", WG_INSTALLED_LIB};
    char tried[1024] = "";
    size_t used = 0;
    for (size_t t = 0; t < sizeof tries / sizeof *tries && !opened && !failure[0]; t++) {
      if (!tries[t] || (env && *env && t > 0)) continue; /* a library the user names is the only one tried */
      char msg[512];
      void *h = dl_open_isolated(tries[t], msg, sizeof msg);
      if (!h) {
        used += (size_t)snprintf(tried + used, used < sizeof tried ? sizeof tried - used : 0, "%s%s", used ? "; " : "", msg);
        continue;
      }
      const char *bad = wg_abi_mismatch(lookup_dl, h);
      if (bad || !fill(h, &api, msg, sizeof msg)) {
        snprintf(failure, sizeof failure, "%s cannot be used: %s; scripts/deps.sh installs the library portc is built for as %s", tries[t],
                 bad ? bad : msg, WG_INSTALLED_LIB);
        dl_close(h);
      } else {
        opened = tries[t];
      }
    }
    if (!opened && !failure[0])
      snprintf(failure, sizeof failure, "no WebGPU library opens (%s): set PORTC_WEBGPU_LIB to one, or run scripts/deps.sh, which installs Dawn's as %s",
               tried, WG_INSTALLED_LIB);
  }
  const wgpu_api *r = opened ? &api : NULL;
  if (path) *path = opened;
  if (!r) snprintf(why, len, "%s", failure);
  pthread_mutex_unlock(&lock);
  return r;
}
