/*
 * runtime.c: the WebGPU target's modules. load cuts the module's WGSL into one shader per kernel
 * (the prelude in front of each) and makes a compute pipeline of each through the library; the
 * shared GPU queue (targets/gpu_queue.c) collects a run's launches, and they are issued as
 * the dispatches of one compute pass, submitted as one command buffer: each with its buffers
 * bound at their byte ranges (temporaries lie in one arena at 256-byte offsets, WebGPU's
 * largest storage offset alignment), then the status word where the kernel checks an integer
 * division, then the symbol values, written (once per run: every kernel takes the same) before
 * the submission. A kernel's bind group is kept and used again while its bindings recur (a
 * module run again on the same buffers makes none). The device is the process's one device of
 * the library's Vulkan adapter (target.c: wg_target_device); every call into the library holds
 * its lock, since a device of this Dawn is not safe to use from several threads at once.
 *
 * A web bundle (driver/export.c, through the target's `web` hooks) writes the same dispatches
 * down for a browser: the work groups come from wg_groups, the bindings in the order issue binds.
 *
 * A run's seconds are the GPU's, from timestamps the pass writes as it begins and ends, where the
 * adapter has timestamp-query (else the host's clock around the submission and the wait).
 *
 * Not yet: a recorded command buffer replayed in reduce-overhead mode (WebGPU has no bundles of
 * compute work: each run encodes its dispatches again, with the kept bind groups),
 * a kernel cache, and the opaque kernels argmax and gather (their indices are int64, which
 * the dialect does not compute yet: target.c sends those nodes to the CPU).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../codegen/emit.h"
#include "../targets/gpu_queue.h"
#include "wg.h"

/* a kernel's bindings, and the bind group made of them, kept while they recur */
typedef struct wg_binding {
  int n;
  WGPUBuffer b[WG_MAX_BINDINGS + 2];
  uint64_t off[WG_MAX_BINDINGS + 2], size[WG_MAX_BINDINGS + 2];
  WGPUBindGroup group;
} wg_binding;

typedef struct wg_module {
  wg_device *d;
  const kir_module *km;
  int nk;
  WGPUComputePipeline *pipe; /* per kernel */
  wg_binding *bound;         /* per kernel: its last run's bindings */
  WGPUBuffer sym, status;   /* the symbol values (one word each), the status word */
  gpu_queue q;
  wg_pass pass;    /* the run's dispatches */
  bool sym_written; /* in this run */
  char pass_error[1024];
  double t0;
} wg_module;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static portc_status fail(const char *what, const char *why) { return err_set(PORTC_ERR_DEVICE, "webgpu: %s: %s", what, why); }

static void unload(void *handle) {
  wg_module *m = handle;
  if (!m) return;
  wg_lock();
  for (int i = 0; m->pipe && i < m->nk; i++) wg_pipeline_free(m->pipe[i]);
  for (int i = 0; m->bound && i < m->nk; i++) wg_bind_group_free(m->bound[i].group);
  free(m->bound);
  wg_buffer_free(m->sym);
  wg_buffer_free(m->status);
  wg_unlock();
  free(m->pipe);
  gpu_queue_free(&m->q);
  free(m);
}

static portc_status load(const load_request *req, void **handle, bool *hit) {
  *hit = false;
  char why[4096] = "";
  wg_device *d = wg_target_device(req->device, why, sizeof why);
  if (!d) return err_set(PORTC_ERR_DEVICE, "webgpu: %s", why);
  const kir_module *km = req->km;
  wg_module *m = calloc(1, sizeof *m);
  if (!m || !(m->pipe = calloc((size_t)km->nk + 1, sizeof *m->pipe)) || !(m->bound = calloc((size_t)km->nk + 1, sizeof *m->bound))) {
    if (m) free(m->pipe);
    free(m);
    return err_set(PORTC_ERR_NOMEM, "webgpu: out of memory");
  }
  m->d = d, m->km = km, m->nk = km->nk;
  portc_status st = gpu_queue_init(&m->q, "webgpu", km, false);
  wg_lock();
  for (int i = 0; i < km->nk && !st; i++) {
    if (!wg_writes(km, i)) {
      st = err_set(PORTC_ERR_INTERNAL, "webgpu: kernel %d (%s) is of a kind the WGSL dialect does not write yet", i, km->k[i].why);
      break;
    }
    char *src = wg_kernel_source(req->source, i);
    if (!src) {
      st = err_set(PORTC_ERR_NOMEM, "webgpu: kernel %d is not in the module's source", i);
      break;
    }
    if (!(m->pipe[i] = wg_pipeline_new(d, src, "main", why, sizeof why))) {
      char *numbered = emit_numbered(src);
      st = err_set(PORTC_ERR_INTERNAL, "webgpu: kernel %d of graph %s does not compile: %s\n%s", i, req->graph_name, why, numbered ? numbered : "");
      free(numbered);
    }
    free(src);
  }
  int nsym = km->g->nsyms;
  if (!st && nsym && !(m->sym = wg_buffer_new(d, 4 * (uint64_t)nsym, why, sizeof why))) st = fail("the symbol buffer", why);
  if (!st && m->q.status && !(m->status = wg_buffer_new(d, 4, why, sizeof why))) st = fail("the status word", why);
  wg_unlock();
  if (st) return unload(m), st;
  *handle = m;
  return PORTC_OK;
}

static portc_status launch(void *handle, int i, void *const *bufs, const int64_t *S) {
  wg_module *m = handle;
  return gpu_queue_launch(&m->q, i, bufs, S);
}

/* ---- the queue's calls: one dispatch per launch ---- */

static void status_clear(void *rt) {
  wg_module *m = rt;
  char why[512];
  const uint32_t zero = 0;
  wg_buffer_write(m->d, m->status, 0, &zero, 4, why, sizeof why);
}

static void timer_start(void *rt) {
  wg_module *m = rt;
  m->t0 = now();
  m->sym_written = false;
  m->pass_error[0] = 0;
  if (!wg_pass_begin(m->d, &m->pass, m->d->info.timestamps, m->pass_error, sizeof m->pass_error) && !m->pass_error[0])
    snprintf(m->pass_error, sizeof m->pass_error, "no command encoder");
}

static void timer_stop(void *rt) {
  wg_module *m = rt;
  char why[1024];
  if (!wg_pass_submit(m->d, &m->pass, why, sizeof why) && !m->pass_error[0]) snprintf(m->pass_error, sizeof m->pass_error, "%s", why);
}

/* bindings are whole 4-byte words (a 3-byte bool tensor binds 4: its allocation is rounded up) */
static uint64_t words(int64_t bytes) { return bytes < 4 ? 4 : (uint64_t)(bytes + 3) & ~(uint64_t)3; }

bool wg_groups(const kir_module *km, int i, const int64_t *S, uint32_t max, uint32_t grid[3]) {
  int64_t count = shape_count(&km->k[i].dom, S);
  if (count <= 0) return false;
  if (km->k[i].kind == KK_POINTWISE && km->k[i].sched.vector > 1) count /= km->k[i].sched.vector; /* an invocation per vector */
  int64_t groups[3] = {(count + WG_THREADS - 1) / WG_THREADS, 1, 1};
  if (km->k[i].kind == KK_ROW) groups[0] = count; /* a row per work group */
  if (km->k[i].kind == KK_MATMUL) wg_matmul_groups(km, i, S, groups);
  for (int d = 0; d < 3; d++) grid[d] = groups[d] > max ? max : groups[d] < 1 ? 1 : (uint32_t)groups[d]; /* the kernels loop over the rest */
  return true;
}

/* kernel i's bind group for bindings b (n of them): the last run's where they are the same (a
 * module run again on its buffers makes none), else a new one */
static WGPUBindGroup bind_group(wg_module *m, int i, const WGPUBuffer *b, const uint64_t *off, const uint64_t *size, int n, char *why, size_t len) {
  wg_binding *k = &m->bound[i];
  if (k->group && k->n == n && !memcmp(k->b, b, sizeof *b * (size_t)n) && !memcmp(k->off, off, sizeof *off * (size_t)n) &&
      !memcmp(k->size, size, sizeof *size * (size_t)n))
    return k->group;
  wg_bind_group_free(k->group);
  k->group = wg_bind_group_new(m->d, m->pipe[i], b, off, size, n, why, len);
  k->n = n;
  memcpy(k->b, b, sizeof *b * (size_t)n), memcpy(k->off, off, sizeof *off * (size_t)n), memcpy(k->size, size, sizeof *size * (size_t)n);
  return k->group;
}

static portc_status issue(void *rt, int i, const gpu_launch *l) {
  wg_module *m = rt;
  const gpu_args *a = &m->q.args[i];
  if (shape_count(&m->km->k[i].dom, l->S) <= 0) return PORTC_OK;
  WGPUBuffer b[WG_MAX_BINDINGS + 2];
  uint64_t off[WG_MAX_BINDINGS + 2], size[WG_MAX_BINDINGS + 2];
  int n = 0;
  const uint64_t most = m->d->info.limits.maxStorageBufferBindingSize;
  for (int j = 0; j < a->nbind; j++, n++) {
    b[n] = l->b[j].obj, off[n] = (uint64_t)l->b[j].offset, size[n] = words(l->b[j].bytes);
    if (size[n] > most) /* splitting or windowing such a tensor is to come */
      return err_set(PORTC_ERR_DEVICE, "webgpu: kernel %d binds buffer %d of %llu bytes; %s binds at most %llu bytes (maxStorageBufferBindingSize)",
                     i, a->bind[j], (unsigned long long)size[n], m->d->info.name, (unsigned long long)most);
  }
  if (a->status) b[n] = m->status, off[n] = 0, size[n] = 4, n++;
  char why[2048];
  int nsym = m->km->g->nsyms;
  if (m->pass_error[0]) return fail("the run's compute pass", m->pass_error);
  if (nsym) {
    int32_t s[GPU_MAX_SYMS];
    for (int k = 0; k < nsym; k++) s[k] = (int32_t)l->S[k];
    if (!m->sym_written && !wg_buffer_write(m->d, m->sym, 0, s, 4 * (size_t)nsym, why, sizeof why)) return fail("the symbol values", why);
    m->sym_written = true;
    b[n] = m->sym, off[n] = 0, size[n] = 4 * (uint64_t)nsym, n++;
  }
  uint32_t grid[3];
  wg_groups(m->km, i, l->S, m->d->info.limits.maxComputeWorkgroupsPerDimension, grid);
  WGPUBindGroup group = bind_group(m, i, b, off, size, n, why, sizeof why);
  if (!group || !wg_pass_dispatch_bound(m->d, &m->pass, m->pipe[i], group, grid, why, sizeof why)) {
    char what[64];
    snprintf(what, sizeof what, "kernel %d's dispatch", i);
    return fail(what, why);
  }
  return PORTC_OK;
}

static portc_status wait(void *rt, double *seconds) {
  wg_module *m = rt;
  char why[1024];
  if (m->pass_error[0]) return fail("the run's compute pass", m->pass_error);
  if (m->pass.timed) {
    double gpu = 0;
    if (!wg_pass_seconds(m->d, &gpu, why, sizeof why)) return fail("the run's timestamps", why);
    if (seconds) *seconds = gpu;
    return PORTC_OK;
  }
  if (!wg_queue_finish(m->d, why, sizeof why)) return fail("waiting for the queue", why);
  if (seconds) *seconds = now() - m->t0;
  return PORTC_OK;
}

static portc_status status_read(void *rt, unsigned *word) {
  wg_module *m = rt;
  char why[1024];
  uint32_t w = 0;
  if (!wg_buffer_read(m->d, m->status, 0, &w, 4, why, sizeof why)) return fail("the status word", why);
  *word = w;
  return PORTC_OK;
}

static const gpu_queue_ops queue_ops = {
    .status_clear = status_clear, .timer_start = timer_start, .issue = issue, .timer_stop = timer_stop,
    .wait = wait, .status_read = status_read,
};

static portc_status end(void *handle, double *seconds) {
  wg_module *m = handle;
  wg_lock();
  portc_status st = gpu_queue_run(&m->q, &queue_ops, m, seconds);
  wg_unlock();
  return st;
}

static const char *timer(void *handle) {
  wg_module *m = handle;
  return m->d->info.timestamps ? "timestamp queries at the start and end of the run's compute pass"
                               : "the host's clock around the submission and the wait (the adapter has no timestamp-query)";
}

/* WGSL lets every device flush f32 denormals, and a shader cannot ask it not to (NVIDIA's driver
 * does, through Dawn) */
static bool flushes_denormals(void *handle) {
  (void)handle;
  return true;
}

/* ---- memory: a storage buffer per allocation, its size rounded up to whole words ---- */

static portc_status dev_alloc(void *handle, int64_t bytes, void **obj) {
  wg_module *m = handle;
  char why[1024];
  wg_lock();
  WGPUBuffer b = wg_buffer_new(m->d, words(bytes), why, sizeof why);
  wg_unlock();
  if (!b) return err_set(PORTC_ERR_NOMEM, "webgpu: a buffer of %lld bytes: %s", (long long)bytes, why);
  *obj = b;
  return PORTC_OK;
}

static void dev_free(void *handle, void *obj) {
  (void)handle;
  wg_lock();
  wg_buffer_free(obj);
  wg_unlock();
}

/* WebGPU writes whole words: a tail of 1 to 3 bytes goes as a word padded with zeros (the
 * allocation is rounded up to words, and nothing else lies in its last word) */
static portc_status dev_write(void *handle, void *obj, int64_t offset, const void *src, int64_t bytes) {
  wg_module *m = handle;
  char why[1024];
  int64_t whole = bytes & ~(int64_t)3;
  wg_lock();
  bool ok = !whole || wg_buffer_write(m->d, obj, (uint64_t)offset, src, (size_t)whole, why, sizeof why);
  if (ok && whole < bytes) {
    uint8_t tail[4] = {0};
    memcpy(tail, (const uint8_t *)src + whole, (size_t)(bytes - whole));
    ok = wg_buffer_write(m->d, obj, (uint64_t)(offset + whole), tail, 4, why, sizeof why);
  }
  wg_unlock();
  return ok ? PORTC_OK : fail("a write", why);
}

static portc_status dev_read(void *handle, void *obj, int64_t offset, void *dst, int64_t bytes) {
  wg_module *m = handle;
  char why[1024];
  wg_lock();
  bool ok = wg_buffer_read(m->d, obj, (uint64_t)offset, dst, (size_t)bytes, why, sizeof why);
  wg_unlock();
  return ok ? PORTC_OK : fail("a read", why);
}

static const target_web web = {.kernel_source = wg_kernel_source, .groups = wg_groups, .language = "wgsl"};

static const target_gpu gpu = {.alloc = dev_alloc, .free = dev_free, .write = dev_write, .read = dev_read, .end = end, .timer = timer};

const target webgpu_target = {
    .name = "webgpu",
    .summary = "WGSL compute shaders run through webgpu.h (Dawn, opened at run time) on its Vulkan adapter; int64 values "
               "(argmax, gather) on the CPU so far",
    .dialect = &wgsl_dialect,
    .available = wg_target_available,
    .device = wg_target_device_name,
    .schedule = wg_schedule,
    .supports = wg_supports,
    .max_kernel_loads = wg_max_kernel_loads,
    .describe = wg_describe,
    .load = load,
    .launch = launch,
    .unload = unload,
    .gpu = &gpu,
    .web = &web,
    .flushes_denormals = flushes_denormals,
};
