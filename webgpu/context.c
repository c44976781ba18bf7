/*
 * context.c: the WebGPU library's adapters, as `portc devices` and the target will list them:
 * one instance per process, and the adapter the library picks for a backend with its name,
 * limits (WebGPU's own: 16 KiB of workgroup memory, 65,535 workgroups a dimension, storage
 * bindings of 128 MiB by default unless the device asks for the adapter's) and the features a
 * tensor compiler needs (shader-f16, subgroups, timestamp queries).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "wg.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static WGPUInstance instance;

const char *wg_backend_name(WGPUBackendType b) {
  static const char *const names[] = {"undefined", "Null", "WebGPU", "D3D11", "D3D12", "Metal", "Vulkan", "OpenGL", "OpenGLES"};
  return b >= 0 && b <= WGPUBackendType_OpenGLES ? names[b] : "unknown";
}

size_t wg_view_len(WGPUStringView v) { return !v.data ? 0 : v.length == WGPU_STRLEN ? strlen(v.data) : v.length; }

/* a string view's text, cut to fit */
static void text(char *out, size_t len, WGPUStringView v) {
  size_t n = wg_view_len(v);
  snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), v.data ? v.data : "");
}

typedef struct request {
  bool done;
  WGPURequestAdapterStatus status;
  WGPUAdapter adapter;
  char message[512];
} request;

static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message, void *userdata1, void *userdata2) {
  (void)userdata2;
  request *r = userdata1;
  r->status = status, r->adapter = adapter, r->done = true;
  text(r->message, sizeof r->message, message);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

WGPUInstance wg_instance(char *why, size_t len) {
  const wgpu_api *w = wg_load(NULL, why, len);
  if (!w) return NULL;
  pthread_mutex_lock(&lock);
  if (!instance && !(instance = w->CreateInstance(NULL))) snprintf(why, len, "the WebGPU library made no instance");
  else target_driver_started();
  WGPUInstance i = instance;
  pthread_mutex_unlock(&lock);
  return i;
}

bool wg_wait(const bool *done, double seconds, const char *what, char *why, size_t len) {
  const wgpu_api *w = wg_load(NULL, why, len);
  WGPUInstance i = w ? wg_instance(why, len) : NULL;
  if (!i) return false;
  for (double until = now() + seconds; !*done && now() < until;) w->InstanceProcessEvents(i);
  if (!*done) snprintf(why, len, "the WebGPU library did not finish %s in %.0f s", what, seconds);
  return *done;
}

WGPUAdapter wg_request_adapter(WGPUBackendType backend, char *why, size_t len) {
  const wgpu_api *w = wg_load(NULL, why, len);
  WGPUInstance i = w ? wg_instance(why, len) : NULL;
  if (!i) return NULL;
  request r = {0};
  WGPURequestAdapterOptions o = {.featureLevel = WGPUFeatureLevel_Core, .powerPreference = WGPUPowerPreference_HighPerformance, .backendType = backend};
  WGPURequestAdapterCallbackInfo cb = {.mode = WGPUCallbackMode_AllowProcessEvents, .callback = on_adapter, .userdata1 = &r};
  w->InstanceRequestAdapter(i, &o, cb);
  char what[64];
  snprintf(what, sizeof what, "a request for a %s adapter", wg_backend_name(backend));
  if (!wg_wait(&r.done, WG_WAIT_REQUEST, what, why, len)) return NULL;
  if (r.status == WGPURequestAdapterStatus_Success && r.adapter) return r.adapter;
  snprintf(why, len, "no %s adapter: %s", wg_backend_name(backend), r.message[0] ? r.message : "the library gave no reason");
  return NULL;
}

bool wg_adapter_describe(WGPUAdapter adapter, wg_adapter *out, char *why, size_t len) {
  const wgpu_api *w = wg_load(NULL, why, len);
  if (!w) return false;
  memset(out, 0, sizeof *out);
  bool ok = true;
  {
    WGPUAdapterInfo info = {0};
    if (w->AdapterGetInfo(adapter, &info) == WGPUStatus_Success) {
      text(out->name, sizeof out->name, info.device);
      text(out->vendor, sizeof out->vendor, info.vendor);
      text(out->architecture, sizeof out->architecture, info.architecture);
      text(out->driver, sizeof out->driver, info.description);
      out->backend = info.backendType, out->type = info.adapterType;
      out->vendor_id = info.vendorID, out->device_id = info.deviceID;
      out->subgroup_min = info.subgroupMinSize, out->subgroup_max = info.subgroupMaxSize;
      w->AdapterInfoFreeMembers(info);
    }
    if (w->AdapterGetLimits(adapter, &out->limits) != WGPUStatus_Success) {
      ok = false;
      snprintf(why, len, "the %s adapter %s reports no limits", wg_backend_name(out->backend), out->name);
    }
    WGPUSupportedFeatures f = {0};
    w->AdapterGetFeatures(adapter, &f);
    for (size_t i = 0; i < f.featureCount; i++) {
      out->f16 = out->f16 || f.features[i] == WGPUFeatureName_ShaderF16;
      out->subgroups = out->subgroups || f.features[i] == WGPUFeatureName_Subgroups;
      out->timestamps = out->timestamps || f.features[i] == WGPUFeatureName_TimestampQuery;
    }
    w->SupportedFeaturesFreeMembers(f);
  }
  return ok;
}

bool wg_adapter_get(WGPUBackendType backend, wg_adapter *out, char *why, size_t len) {
  WGPUAdapter a = wg_request_adapter(backend, why, len);
  if (!a) return false;
  bool ok = wg_adapter_describe(a, out, why, len);
  wg_load(NULL, why, len)->AdapterRelease(a);
  return ok;
}
