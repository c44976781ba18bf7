/*
 * wg.h: the WebGPU target's shared declarations: the library (Dawn behind webgpu.h) opened at
 * run time and checked for the ABI portc declares (wgpu_abi.h), its adapters with their limits
 * and features, devices that run WGSL compute shaders over storage buffers (device.c), the WGSL
 * dialect (dialect.c, matmul.c, window.c, layout.c) and the target (target.c, runtime.c).
 */
#ifndef PORTC_WEBGPU_WG_H
#define PORTC_WEBGPU_WG_H

#include <stdbool.h>

#include "wgpu_abi.h"

/* the place scripts/deps.sh installs the library (the loader's last try) */
#define WG_INSTALLED_LIB "/usr/local/lib/portc-webgpu/libwebgpu_wrapper.so"

/* the library's entry points, opened once per process: $PORTC_WEBGPU_LIB, else Dawn's sonames
 * on the loader's path, else WG_INSTALLED_LIB; NULL with why (what was tried, and how to
 * install it) when none opens, or when the one that opens has another ABI. path: the file
 * that opened. */
const wgpu_api *wg_load(const char **path, char *why, size_t len);
/* why a library with these symbols is not the ABI portc declares, or NULL when it is: lookup
 * returns a symbol's address or NULL (loader.c passes dlsym; the test passes a table) */
const char *wg_abi_mismatch(void *(*lookup)(void *handle, const char *name), void *handle);

/* one adapter as the library reports it */
typedef struct wg_adapter {
  char name[256], vendor[128], architecture[128], driver[256];
  WGPUBackendType backend;
  WGPUAdapterType type;
  uint32_t vendor_id, device_id, subgroup_min, subgroup_max;
  WGPULimits limits;
  bool f16, subgroups, timestamps; /* the features shader-f16, subgroups, timestamp-query */
} wg_adapter;

/* the adapter the library picks for backend (WGPUBackendType_Vulkan: the GPU a user gets;
 * _Null: Dawn's validation-only adapter, which runs nothing); false with why (the library's
 * message) where it has none */
bool wg_adapter_get(WGPUBackendType backend, wg_adapter *out, char *why, size_t len);
/* "Vulkan", "Null", ... */
const char *wg_backend_name(WGPUBackendType b);
/* the length of a string view's text (WGPU_STRLEN: up to its terminating zero; no data: 0) */
size_t wg_view_len(WGPUStringView v);
/* the process's instance (made once), or NULL with why */
WGPUInstance wg_instance(char *why, size_t len);
/* runs the instance's events until *done (a callback set it) or `seconds` pass; false with why,
 * naming `what`, when they pass. Requests for an adapter or a device get WG_WAIT_REQUEST; the
 * device's work (a readback, which waits for the run, and a compile) WG_WAIT_WORK, since a CPU
 * driver sharing a busy machine runs a long graph for minutes. */
#define WG_WAIT_REQUEST 30.0
#define WG_WAIT_WORK 600.0
bool wg_wait(const bool *done, double seconds, const char *what, char *why, size_t len);
/* the adapter of wg_adapter_get, kept (release it with AdapterRelease), and what it says of itself */
WGPUAdapter wg_request_adapter(WGPUBackendType backend, char *why, size_t len);
bool wg_adapter_describe(WGPUAdapter adapter, wg_adapter *out, char *why, size_t len);

/* A device of an adapter, with its queue (device.c): the adapter's limits and the features
 * portc uses where the adapter has them are required of it; validation errors that arise
 * outside a call that reports them collect in `errors` (wg_device_error takes them). */
#define WG_SMALL_READ 256

typedef struct wg_device {
  WGPUAdapter adapter;
  WGPUDevice device;
  WGPUQueue queue;
  WGPUBuffer fence; /* a word wg_queue_finish reads back */
  WGPUQuerySet stamps; /* a timed pass's two timestamps (wg_pass_begin), */
  WGPUBuffer stamped;  /* resolved here */
  WGPUBuffer small;    /* a mappable buffer kept for reads of up to WG_SMALL_READ bytes (timestamps, status) */
  wg_adapter info;
  char errors[2048];
} wg_device;

bool wg_device_open(WGPUBackendType backend, wg_device *d, char *why, size_t len);
void wg_device_close(wg_device *d);
/* the errors collected since the last call, into why (false when there were none) */
bool wg_device_error(wg_device *d, char *why, size_t len);
/* a storage buffer the host can write and read back (through a staging copy) */
WGPUBuffer wg_buffer_new(wg_device *d, uint64_t bytes, char *why, size_t len);
bool wg_buffer_write(wg_device *d, WGPUBuffer b, uint64_t offset, const void *data, size_t bytes, char *why, size_t len);
bool wg_buffer_read(wg_device *d, WGPUBuffer b, uint64_t offset, void *out, size_t bytes, char *why, size_t len);
/* a compute pipeline of a WGSL module's entry point; NULL with why, where the compiler's
 * messages come as "line L, column C: message" */
WGPUComputePipeline wg_pipeline_new(wg_device *d, const char *wgsl, const char *entry, char *why, size_t len);
void wg_buffer_free(WGPUBuffer b);
void wg_pipeline_free(WGPUComputePipeline p);
/* waits until the work submitted so far is done */
bool wg_queue_finish(wg_device *d, char *why, size_t len);
/* A compute pass of several dispatches, submitted as one command buffer (WebGPU orders the
 * dispatches of a pass and makes each one's writes visible to the next): begin, a dispatch of
 * groups[3] work groups per call with bindings 0..n-1 of group 0 bound to bufs (byte ranges
 * offsets[i], sizes[i]; NULL: whole buffers), then submit (which also ends a pass a failed
 * dispatch left open). */
typedef struct wg_pass {
  WGPUCommandEncoder enc;
  WGPUComputePassEncoder pass;
  bool timed;
} wg_pass;
/* timed: the pass writes timestamps as it begins and ends (needs the adapter's timestamp-query;
 * false with why where the device cannot), which wg_pass_seconds reads back after the submission:
 * the GPU's time from the pass's start to its end, waiting for it */
bool wg_pass_begin(wg_device *d, wg_pass *r, bool timed, char *why, size_t len);
bool wg_pass_seconds(wg_device *d, double *seconds, char *why, size_t len);
bool wg_pass_dispatch(wg_device *d, wg_pass *r, WGPUComputePipeline p, const WGPUBuffer *bufs, const uint64_t *offsets, const uint64_t *sizes,
                      int n, const uint32_t groups[3], char *why, size_t len);
/* the same in two steps, for bindings used again: their bind group (NULL with why), then a
 * dispatch with it; the group holds its buffers until wg_bind_group_free */
WGPUBindGroup wg_bind_group_new(wg_device *d, WGPUComputePipeline p, const WGPUBuffer *bufs, const uint64_t *offsets, const uint64_t *sizes, int n,
                                char *why, size_t len);
bool wg_pass_dispatch_bound(wg_device *d, wg_pass *r, WGPUComputePipeline p, WGPUBindGroup bind, const uint32_t groups[3], char *why, size_t len);
void wg_bind_group_free(WGPUBindGroup bind);
bool wg_pass_submit(wg_device *d, wg_pass *r, char *why, size_t len);
/* one dispatch in a pass of its own, submitted */
bool wg_dispatch(wg_device *d, WGPUComputePipeline p, const WGPUBuffer *bufs, const uint64_t *offsets, const uint64_t *sizes, int n,
                 const uint32_t groups[3], char *why, size_t len);

/* The WGSL dialect (dialect.c): WG_THREADS invocations per work group of its 1-D kernels, and
 * at most WG_MAX_BINDINGS buffers a kernel binds (the device's limit is lower: 8 to 10) */
enum { WG_THREADS = 256, WG_MAX_BINDINGS = 64 };
#include "../codegen/dialect.h"
extern const dialect wgsl_dialect;
/* the WGSL source of kernel i of a module's source (emit_module with wgsl_dialect): the prelude
 * and the kernel's own text (free with free()); NULL when the module has no kernel i */
char *wg_kernel_source(const char *module, int i);
/* the vector width of kernel i's accesses, for its schedule: 4 (vec4<f32>) or 1 */
int wg_vector(const kir_module *m, int i);
/* whether the dialect writes kernel i (every kind; of the opaque ops, pooling, concat and pad) */
bool wg_writes(const kir_module *m, int i);
/* its matmul (matmul.c): WG_MM_TILE square output tiles of panels WG_MM_BK deep for floats, an
 * invocation per element for integers; the work groups a launch dispatches (x, y, z) */
enum { WG_MM_TILE = 64, WG_MM_BK = 16 };
void wg_declare_matmul(emitter *e);
void wg_matmul(emitter *e);
void wg_matmul_groups(const kir_module *m, int i, const int64_t *S, int64_t groups[3]);
/* its sliding windows (window.c): conv2d and pooling, an invocation per output element */
void wg_conv(emitter *e);
void wg_pool(emitter *e);
/* concat and pad (layout.c), an invocation per element */
void wg_layout(emitter *e);

/* The target (target.c, runtime.c). Its device is the process's one device of the library's
 * Vulkan adapter, made on first use (device 0; there is no other yet), or NULL with why; every
 * call into the library holds wg_lock. */
#include "../targets/target.h"
wg_device *wg_target_device(int index, char *why, size_t len);
void wg_lock(void);
void wg_unlock(void);
bool wg_target_available(char *why, size_t len);
const char *wg_target_device_name(void);
void wg_schedule(kir_module *m, int i, int device);
bool wg_supports(const portc_graph *g, int i, char *why, size_t len);
int wg_max_kernel_loads(int device);
/* the buffers a fused expression may read under these limits (NULL: WebGPU's defaults) */
int wg_loads_within(const WGPULimits *l);
void wg_describe(FILE *out);
/* the work groups kernel i dispatches at symbol values S, at most max per dimension (its loops
 * take the rest); false when it has nothing to do (runtime.c; web bundles ask the same) */
bool wg_groups(const kir_module *km, int i, const int64_t *S, uint32_t max, uint32_t grid[3]);

#endif
