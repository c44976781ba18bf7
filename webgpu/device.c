/*
 * device.c: a WebGPU device and what the runtime does with it: storage buffers written by the
 * queue and read back through a mappable copy, compute pipelines compiled from WGSL with the
 * compiler's messages by line and column, and dispatches over bound buffers. WebGPU reports
 * most mistakes asynchronously, as uncaptured errors of the device: they are collected and
 * checked after each step that can cause one, so that a failure says what went wrong where.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wg.h"

static const wgpu_api *api(char *why, size_t len) { return wg_load(NULL, why, len); }

static WGPUStringView view(const char *s) { return (WGPUStringView){s, s ? strlen(s) : 0}; }


static void on_error(const WGPUDevice *device, WGPUErrorType type, WGPUStringView message, void *userdata1, void *userdata2) {
  (void)device, (void)userdata2;
  wg_device *d = userdata1;
  static const char *const kinds[] = {"", "", "validation", "out of memory", "internal", "unknown"};
  size_t at = strlen(d->errors);
  if (at + 2 < sizeof d->errors)
    snprintf(d->errors + at, sizeof d->errors - at, "%s%s error: %.*s", at ? "; " : "", type >= 2 && type <= 5 ? kinds[type] : "device",
             (int)wg_view_len(message), message.data ? message.data : "");
}

typedef struct device_request {
  bool done;
  WGPURequestDeviceStatus status;
  WGPUDevice device;
  char message[512];
} device_request;

static void on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void *userdata1, void *userdata2) {
  (void)userdata2;
  device_request *r = userdata1;
  r->status = status, r->device = device, r->done = true;
  snprintf(r->message, sizeof r->message, "%.*s", (int)wg_view_len(message), message.data ? message.data : "");
}

bool wg_device_error(wg_device *d, char *why, size_t len) {
  if (!d->errors[0]) return false;
  snprintf(why, len, "%s", d->errors);
  d->errors[0] = 0;
  return true;
}

bool wg_device_open(WGPUBackendType backend, wg_device *d, char *why, size_t len) {
  memset(d, 0, sizeof *d);
  const wgpu_api *w = api(why, len);
  if (!w || !(d->adapter = wg_request_adapter(backend, why, len))) return false;
  if (!wg_adapter_describe(d->adapter, &d->info, why, len)) return wg_device_close(d), false;
  WGPUFeatureName features[3];
  size_t nf = 0;
  if (d->info.f16) features[nf++] = WGPUFeatureName_ShaderF16;
  if (d->info.subgroups) features[nf++] = WGPUFeatureName_Subgroups;
  if (d->info.timestamps) features[nf++] = WGPUFeatureName_TimestampQuery;
  WGPULimits limits = d->info.limits; /* the adapter's, not WebGPU's defaults */
  limits.nextInChain = NULL;
  device_request r = {0};
  /* timestamps at full resolution: Dawn rounds them to 65.5 us steps unless told not to */
  static const char *const off[] = {"timestamp_quantization"};
  /* $PORTC_WEBGPU_TOGGLES: Dawn toggles to turn on besides, comma-separated (disable_robustness:
   * no bounds clamps on buffer accesses, which portc's kernels keep in bounds themselves) */
  char names[512] = "";
  const char *on[16];
  size_t non = 0;
  str_cut(names, sizeof names, "%s", getenv("PORTC_WEBGPU_TOGGLES") ? getenv("PORTC_WEBGPU_TOGGLES") : "");
  char *save = NULL;
  for (char *t = strtok_r(names, ", ", &save); t && non < 16; t = strtok_r(NULL, ", ", &save)) on[non++] = t;
  WGPUDawnTogglesDescriptor toggles = {.chain = {.sType = WGPUSType_DawnTogglesDescriptor}, .enabledToggleCount = non, .enabledToggles = on,
                                       .disabledToggleCount = 1, .disabledToggles = off};
  WGPUDeviceDescriptor desc = {.nextInChain = &toggles.chain, .label = view("portc"), .requiredFeatureCount = nf, .requiredFeatures = features, .requiredLimits = &limits,
                               .uncapturedErrorCallbackInfo = {.callback = on_error, .userdata1 = d}};
  w->AdapterRequestDevice(d->adapter, &desc, (WGPURequestDeviceCallbackInfo){.mode = WGPUCallbackMode_AllowProcessEvents, .callback = on_device, .userdata1 = &r});
  if (!wg_wait(&r.done, WG_WAIT_REQUEST, "a request for a device", why, len)) return wg_device_close(d), false;
  if (r.status != WGPURequestDeviceStatus_Success || !r.device) {
    snprintf(why, len, "%s gives no device: %s", d->info.name, r.message[0] ? r.message : "the library gave no reason");
    return wg_device_close(d), false;
  }
  d->device = r.device;
  d->queue = w->DeviceGetQueue(d->device);
  return true;
}

void wg_device_close(wg_device *d) {
  char why[256];
  const wgpu_api *w = api(why, sizeof why);
  if (!w) return;
  if (d->fence) w->BufferDestroy(d->fence), w->BufferRelease(d->fence);
  if (d->stamps) w->QuerySetDestroy(d->stamps), w->QuerySetRelease(d->stamps);
  if (d->stamped) w->BufferDestroy(d->stamped), w->BufferRelease(d->stamped);
  if (d->small) w->BufferDestroy(d->small), w->BufferRelease(d->small);
  d->stamps = NULL, d->stamped = NULL, d->small = NULL;
  if (d->queue) w->QueueRelease(d->queue);
  if (d->device) w->DeviceDestroy(d->device), w->DeviceRelease(d->device);
  if (d->adapter) w->AdapterRelease(d->adapter);
  d->fence = NULL, d->queue = NULL, d->device = NULL, d->adapter = NULL;
}

static WGPUBuffer buffer(wg_device *d, uint64_t bytes, WGPUBufferUsage usage, char *why, size_t len) {
  const wgpu_api *w = api(why, len);
  WGPUBufferDescriptor desc = {.usage = usage, .size = (bytes + 3) & ~(uint64_t)3};
  WGPUBuffer b = w->DeviceCreateBuffer(d->device, &desc);
  if (wg_device_error(d, why, len) || !b) {
    if (b) w->BufferRelease(b);
    if (!b) snprintf(why, len, "%s made no buffer of %llu bytes", d->info.name, (unsigned long long)bytes);
    return NULL;
  }
  return b;
}

WGPUBuffer wg_buffer_new(wg_device *d, uint64_t bytes, char *why, size_t len) {
  return buffer(d, bytes, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst, why, len);
}

bool wg_buffer_write(wg_device *d, WGPUBuffer b, uint64_t offset, const void *data, size_t bytes, char *why, size_t len) {
  api(why, len)->QueueWriteBuffer(d->queue, b, offset, data, bytes);
  return !wg_device_error(d, why, len);
}

typedef struct map_request {
  bool done;
  WGPUMapAsyncStatus status;
  char message[256];
} map_request;

static void on_map(WGPUMapAsyncStatus status, WGPUStringView message, void *userdata1, void *userdata2) {
  (void)userdata2;
  map_request *r = userdata1;
  r->status = status, r->done = true;
  snprintf(r->message, sizeof r->message, "%.*s", (int)wg_view_len(message), message.data ? message.data : "");
}

/* through a buffer the host can map: a copy, submitted, then the mapping awaited. Small reads (a
 * run's timestamps and status word, every run) reuse one buffer: a mappable buffer made and
 * destroyed per run costs the device more than the read (runs slowed by a quarter after a few
 * thousand of them on the H200) */
bool wg_buffer_read(wg_device *d, WGPUBuffer b, uint64_t offset, void *out, size_t bytes, char *why, size_t len) {
  const wgpu_api *w = api(why, len);
  uint64_t whole = (bytes + 3) & ~(size_t)3;
  const WGPUBufferUsage usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst;
  bool small = whole <= WG_SMALL_READ;
  if (small && !d->small && !(d->small = buffer(d, WG_SMALL_READ, usage, why, len))) return false;
  WGPUBuffer staging = small ? d->small : buffer(d, whole, usage, why, len);
  if (!staging) return false;
  WGPUCommandEncoder enc = w->DeviceCreateCommandEncoder(d->device, &(WGPUCommandEncoderDescriptor){0});
  w->CommandEncoderCopyBufferToBuffer(enc, b, offset, staging, 0, whole);
  WGPUCommandBuffer cmd = w->CommandEncoderFinish(enc, &(WGPUCommandBufferDescriptor){0});
  w->QueueSubmit(d->queue, 1, &cmd);
  w->CommandBufferRelease(cmd);
  w->CommandEncoderRelease(enc);
  map_request r = {0};
  w->BufferMapAsync(staging, WGPUMapMode_Read, 0, (size_t)whole, (WGPUBufferMapCallbackInfo){.mode = WGPUCallbackMode_AllowProcessEvents, .callback = on_map, .userdata1 = &r});
  bool ok = wg_wait(&r.done, WG_WAIT_WORK, "reading a buffer back", why, len) && !wg_device_error(d, why, len);
  if (ok && r.status != WGPUMapAsyncStatus_Success) ok = false, snprintf(why, len, "%s could not map a buffer for reading: %s", d->info.name, r.message);
  const void *p = ok ? w->BufferGetConstMappedRange(staging, 0, (size_t)whole) : NULL;
  if (ok && !p) ok = false, snprintf(why, len, "%s gave no mapped range", d->info.name);
  if (ok) memcpy(out, p, bytes);
  if (r.done && r.status == WGPUMapAsyncStatus_Success) w->BufferUnmap(staging);
  if (!small || !ok) w->BufferDestroy(staging), w->BufferRelease(staging); /* a failed map may leave it pending: made anew next time */
  if (small && !ok) d->small = NULL;
  return ok;
}

typedef struct compile_messages {
  bool done;
  int errors;
  char text[2048];
} compile_messages;

static void on_compiled(WGPUCompilationInfoRequestStatus status, const WGPUCompilationInfo *info, void *userdata1, void *userdata2) {
  (void)status, (void)userdata2;
  compile_messages *c = userdata1;
  c->done = true;
  for (size_t i = 0; info && i < info->messageCount; i++) {
    const WGPUCompilationMessage *m = &info->messages[i];
    if (m->type != WGPUCompilationMessageType_Error) continue;
    size_t at = strlen(c->text);
    if (at + 2 < sizeof c->text)
      snprintf(c->text + at, sizeof c->text - at, "%sline %llu, column %llu: %.*s", c->errors ? "; " : "", (unsigned long long)m->lineNum,
               (unsigned long long)m->linePos, (int)wg_view_len(m->message), m->message.data ? m->message.data : "");
    c->errors++;
  }
}

WGPUComputePipeline wg_pipeline_new(wg_device *d, const char *wgsl, const char *entry, char *why, size_t len) {
  const wgpu_api *w = api(why, len);
  WGPUShaderSourceWGSL src = {.chain = {.sType = WGPUSType_ShaderSourceWGSL}, .code = view(wgsl)};
  WGPUShaderModuleDescriptor sd = {.nextInChain = &src.chain};
  WGPUShaderModule m = w->DeviceCreateShaderModule(d->device, &sd);
  compile_messages c = {0};
  w->ShaderModuleGetCompilationInfo(m, (WGPUCompilationInfoCallbackInfo){.mode = WGPUCallbackMode_AllowProcessEvents, .callback = on_compiled, .userdata1 = &c});
  if (!wg_wait(&c.done, WG_WAIT_WORK, "compiling a shader", why, len)) return w->ShaderModuleRelease(m), NULL;
  if (c.errors) {
    d->errors[0] = 0; /* the same errors again, as the device's */
    snprintf(why, len, "the WGSL of %s does not compile: %s", entry, c.text);
    return w->ShaderModuleRelease(m), NULL;
  }
  WGPUComputePipelineDescriptor pd = {.compute = {.module = m, .entryPoint = view(entry)}};
  WGPUComputePipeline p = w->DeviceCreateComputePipeline(d->device, &pd);
  w->ShaderModuleRelease(m);
  if (wg_device_error(d, why, len) || !p) {
    if (p) w->ComputePipelineRelease(p);
    else snprintf(why, len, "%s made no pipeline of %s", d->info.name, entry);
    return NULL;
  }
  return p;
}

void wg_pipeline_free(WGPUComputePipeline p) {
  char why[256];
  const wgpu_api *w = api(why, sizeof why);
  if (w && p) w->ComputePipelineRelease(p);
}

/* a read of a word is a copy submitted after everything before it, then awaited */
bool wg_queue_finish(wg_device *d, char *why, size_t len) {
  uint32_t word;
  if (!d->fence && !(d->fence = wg_buffer_new(d, 4, why, len))) return false;
  return wg_buffer_read(d, d->fence, 0, &word, 4, why, len);
}

void wg_buffer_free(WGPUBuffer b) {
  char why[256];
  const wgpu_api *w = api(why, sizeof why);
  if (w && b) w->BufferDestroy(b), w->BufferRelease(b);
}

/* the query set of two timestamps and the buffer they resolve to, made on first use */
static bool stamps_ready(wg_device *d, char *why, size_t len) {
  const wgpu_api *w = api(why, len);
  if (!d->stamps) {
    d->stamps = w->DeviceCreateQuerySet(d->device, &(WGPUQuerySetDescriptor){.type = WGPUQueryType_Timestamp, .count = 2});
    if (wg_device_error(d, why, len) || !d->stamps) {
      if (!d->stamps) snprintf(why, len, "%s made no timestamp query set", d->info.name);
      return false;
    }
  }
  if (!d->stamped && !(d->stamped = buffer(d, 16, WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc, why, len))) return false;
  return true;
}

bool wg_pass_begin(wg_device *d, wg_pass *r, bool timed, char *why, size_t len) {
  const wgpu_api *w = api(why, len);
  r->timed = timed && d->info.timestamps && stamps_ready(d, why, len);
  if (timed && !r->timed) return false;
  WGPUPassTimestampWrites stamps = {.querySet = d->stamps, .beginningOfPassWriteIndex = 0, .endOfPassWriteIndex = 1};
  r->enc = w->DeviceCreateCommandEncoder(d->device, &(WGPUCommandEncoderDescriptor){0});
  r->pass = w->CommandEncoderBeginComputePass(r->enc, &(WGPUComputePassDescriptor){.timestampWrites = r->timed ? &stamps : NULL});
  return !wg_device_error(d, why, len);
}

bool wg_pass_seconds(wg_device *d, double *seconds, char *why, size_t len) {
  uint64_t ns[2];
  if (!wg_buffer_read(d, d->stamped, 0, ns, sizeof ns, why, len)) return false;
  *seconds = ns[1] > ns[0] ? 1e-9 * (double)(ns[1] - ns[0]) : 0.0;
  return true;
}

WGPUBindGroup wg_bind_group_new(wg_device *d, WGPUComputePipeline p, const WGPUBuffer *bufs, const uint64_t *offsets, const uint64_t *sizes, int n,
                                char *why, size_t len) {
  const wgpu_api *w = api(why, len);
  WGPUBindGroupEntry entries[64];
  if (n > 64) return snprintf(why, len, "a dispatch binds %d buffers, at most 64", n), NULL;
  for (int i = 0; i < n; i++)
    entries[i] = (WGPUBindGroupEntry){.binding = (uint32_t)i, .buffer = bufs[i], .offset = offsets ? offsets[i] : 0,
                                      .size = sizes ? sizes[i] : WGPU_WHOLE_SIZE};
  WGPUBindGroupLayout layout = w->ComputePipelineGetBindGroupLayout(p, 0);
  WGPUBindGroup bind = w->DeviceCreateBindGroup(d->device, &(WGPUBindGroupDescriptor){.layout = layout, .entryCount = (size_t)n, .entries = entries});
  if (layout) w->BindGroupLayoutRelease(layout);
  if (wg_device_error(d, why, len) || !bind) {
    if (bind) w->BindGroupRelease(bind);
    else snprintf(why, len, "%s made no bind group", d->info.name);
    return NULL;
  }
  return bind;
}

void wg_bind_group_free(WGPUBindGroup bind) {
  char why[256];
  const wgpu_api *w = api(why, sizeof why);
  if (w && bind) w->BindGroupRelease(bind);
}

bool wg_pass_dispatch_bound(wg_device *d, wg_pass *r, WGPUComputePipeline p, WGPUBindGroup bind, const uint32_t groups[3], char *why, size_t len) {
  const wgpu_api *w = api(why, len);
  w->ComputePassEncoderSetPipeline(r->pass, p);
  w->ComputePassEncoderSetBindGroup(r->pass, 0, bind, 0, NULL);
  w->ComputePassEncoderDispatchWorkgroups(r->pass, groups[0], groups[1], groups[2]);
  return !wg_device_error(d, why, len);
}

/* the bind group goes as soon as it is set: the pass holds it */
bool wg_pass_dispatch(wg_device *d, wg_pass *r, WGPUComputePipeline p, const WGPUBuffer *bufs, const uint64_t *offsets, const uint64_t *sizes,
                      int n, const uint32_t groups[3], char *why, size_t len) {
  WGPUBindGroup bind = wg_bind_group_new(d, p, bufs, offsets, sizes, n, why, len);
  bool ok = bind && wg_pass_dispatch_bound(d, r, p, bind, groups, why, len);
  wg_bind_group_free(bind);
  return ok;
}

bool wg_pass_submit(wg_device *d, wg_pass *r, char *why, size_t len) {
  const wgpu_api *w = api(why, len);
  if (!r->pass) return true;
  w->ComputePassEncoderEnd(r->pass);
  if (r->timed) w->CommandEncoderResolveQuerySet(r->enc, d->stamps, 0, 2, d->stamped, 0);
  WGPUCommandBuffer cmd = w->CommandEncoderFinish(r->enc, &(WGPUCommandBufferDescriptor){0});
  w->QueueSubmit(d->queue, 1, &cmd);
  w->CommandBufferRelease(cmd);
  w->ComputePassEncoderRelease(r->pass);
  w->CommandEncoderRelease(r->enc);
  r->pass = NULL, r->enc = NULL;
  return !wg_device_error(d, why, len);
}

bool wg_dispatch(wg_device *d, WGPUComputePipeline p, const WGPUBuffer *bufs, const uint64_t *offsets, const uint64_t *sizes, int n,
                 const uint32_t groups[3], char *why, size_t len) {
  wg_pass r = {0};
  char ignored[256]; /* after a failed dispatch, its message is the one to keep */
  bool ok = wg_pass_begin(d, &r, false, why, len) && wg_pass_dispatch(d, &r, p, bufs, offsets, sizes, n, groups, why, len);
  bool sent = wg_pass_submit(d, &r, ok ? why : ignored, ok ? len : sizeof ignored);
  return ok && sent;
}
