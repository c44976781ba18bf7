/*
 * runtime.c: the HIP target. load compiles the module's HIP C++ with hiprtc for the device's gfx
 * architecture and wavefront size (or finds the code object in the kernel cache) and loads it
 * through the HIP runtime, both opened at run time. The shared GPU queue (targets/gpu_queue.c)
 * collects a run's launches and issues them through this file in order on the module's stream
 * between two events, whose elapsed time is the run's device time. reduce-overhead mode (HIP
 * graphs) is not implemented yet and is refused by name.
 *
 * No AMD GPU has run this file: the dialect is checked by compiling every conformance kernel for
 * gfx90a, gfx940 and gfx1030 and by running it on NVIDIA GPUs (hip-on-cuda); this runtime mirrors
 * the CUDA target's, call for call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/grid.h"
#include "../targets/cache.h"
#include "../targets/gpu_queue.h"
#include "hip.h"

typedef struct hip_mem {
  void *p;
  int64_t bytes;
} hip_mem;

typedef struct hip_module {
  hip_context *c;
  const kir_module *km;
  int nk, nsym;
  hipModule_t mod;
  hipFunction_t *f; /* per kernel */
  gpu_queue q;
  gpu_limits lim;
  hipStream_t stream;
  hipEvent_t ev0, ev1;
  void *status;
  void *cold; /* written over between timings: twice the L2 (flush_cache) */
  size_t cold_bytes;
  unsigned cold_runs;
} hip_module;

static bool available(char *why, size_t len) {
  if (!hip_available(why, len)) return false;
  return hip_compiler_id(why, len) != NULL;
}
static const char *device(void) { return hip_default_device_name(); }

static void unload(void *handle) {
  hip_module *m = handle;
  if (!m) return;
  HIP.hipSetDevice(m->c->index);
  if (m->stream) HIP.hipStreamSynchronize(m->stream);
  if (m->ev0) HIP.hipEventDestroy(m->ev0);
  if (m->ev1) HIP.hipEventDestroy(m->ev1);
  if (m->stream) HIP.hipStreamDestroy(m->stream);
  if (m->status) HIP.hipFree(m->status);
  if (m->cold) HIP.hipFree(m->cold);
  if (m->mod) HIP.hipModuleUnload(m->mod);
  free(m->f);
  gpu_queue_free(&m->q);
  free(m);
}

typedef struct code_build {
  const char *src, *name;
  const hip_context *c;
} code_build;

static portc_status build_code(void *ctx, void **data, size_t *bytes) {
  const code_build *b = ctx;
  return hip_compile(b->src, b->c->arch, b->c->wave, b->name, data, bytes);
}

/* the module's code object, from the kernel cache or compiled and stored there; hiprtc finds
 * the ROCm installation through these variables */
static portc_status code_for(hip_context *c, const char *src, const char *name, void **code, size_t *bytes, bool *hit) {
  static const char *const env[] = {"HIP_PATH", "ROCM_PATH", "HIP_CLANG_PATH", "HIP_DEVICE_LIB_PATH", NULL};
  char why[512];
  const char *compiler = hip_compiler_id(why, sizeof why);
  if (!compiler) return err_set(PORTC_ERR_DEVICE, "hip: %s", why);
  build_args args = {0};
  hip_compile_options(c->arch, c->wave, &args);
  build_key k = {.target = "hip", .source = src, .args = &args, .compiler = compiler, .device = c->cache_id, .env = env};
  code_build b = {src, name, c};
  return cache_or_build(&k, "hsaco", "\177ELF", 4, name, build_code, &b, code, bytes, hit, NULL, NULL);
}

static portc_status load(const load_request *req, void **handle, bool *hit) {
  char why[600];
  hip_context *c = hip_context_get(req->device, why, sizeof why);
  if (!c) return err_set(PORTC_ERR_DEVICE, "hip: %s", why);
  if (req->reduce_overhead) return err_set(PORTC_ERR_INVALID, "hip: reduce-overhead mode (HIP graphs) is not implemented yet");
  const kir_module *km = req->km;
  hip_module *m = calloc(1, sizeof *m);
  if (!m) return err_set(PORTC_ERR_NOMEM, "hip: out of memory");
  m->c = c, m->km = km, m->nk = km->nk, m->nsym = km->g->nsyms;
  m->lim = (gpu_limits){.max_groups = {INT32_MAX, 65535, 65535}, .stride_groups = (int64_t)(c->cus > 0 ? c->cus : 1) * 32};
  portc_status st = gpu_queue_init(&m->q, "hip", km, false);
  m->f = calloc((size_t)km->nk + 1, sizeof *m->f);
  if (st || !m->f) {
    unload(m);
    return st ? st : err_set(PORTC_ERR_NOMEM, "hip: out of memory");
  }
  void *code = NULL;
  size_t bytes = 0;
  hipError_t r;
  st = code_for(c, req->source, req->graph_name, &code, &bytes, hit);
  if (!st && (r = HIP.hipModuleLoadData(&m->mod, code))) st = hip_fail(r, "hipModuleLoadData");
  free(code);
  for (int i = 0; i < m->nk && !st; i++) {
    char name[32];
    snprintf(name, sizeof name, "k%d", i);
    if ((r = HIP.hipModuleGetFunction(&m->f[i], m->mod, name))) st = hip_fail(r, "hipModuleGetFunction");
    if (!st && hip_lds_bytes(km, i) > c->lds)
      st = err_set(PORTC_ERR_DEVICE, "hip: kernel %d needs %d bytes of LDS; %s offers %d per work group", i, hip_lds_bytes(km, i), c->name, c->lds);
  }
  if (!st && (r = HIP.hipStreamCreate(&m->stream))) st = hip_fail(r, "hipStreamCreate");
  if (!st && ((r = HIP.hipEventCreate(&m->ev0)) || (r = HIP.hipEventCreate(&m->ev1)))) st = hip_fail(r, "hipEventCreate");
  if (!st && m->q.status && (r = HIP.hipMalloc(&m->status, 4))) st = hip_fail(r, "hipMalloc");
  if (st) {
    unload(m);
    return st;
  }
  *handle = m;
  return PORTC_OK;
}

static portc_status launch(void *handle, int i, void *const *bufs, const int64_t *S) {
  hip_module *m = handle;
  return gpu_queue_launch(&m->q, i, bufs, S);
}

/* ---- the shared queue's calls (targets/gpu_queue.h) ---- */

static portc_status issue(void *rt, int i, const gpu_launch *l) {
  hip_module *m = rt;
  const gpu_args *a = &m->q.args[i];
  void *args[GPU_MAX_ARGS + 1], *params[GPU_MAX_ARGS + 2];
  struct { int v[GPU_MAX_SYMS]; } syms = {{0}};
  int n = 0;
  for (int j = 0; j < a->nbind; j++) {
    args[n] = (char *)((const hip_mem *)l->b[j].obj)->p + l->b[j].offset;
    params[n] = &args[n], n++;
  }
  if (a->status) args[n] = m->status, params[n] = &args[n], n++;
  for (int s = 0; s < m->nsym; s++) syms.v[s] = (int)l->S[s];
  params[n++] = &syms;
  const int *t = m->km->k[i].sched.threads;
  unsigned g[3];
  gpu_grid(m->km, i, l->S, &m->lim, g);
  hipError_t r = HIP.hipModuleLaunchKernel(m->f[i], g[0], g[1], g[2], (unsigned)t[0], (unsigned)t[1], (unsigned)t[2], 0, m->stream, params, NULL);
  return r ? hip_fail(r, "hipModuleLaunchKernel") : PORTC_OK;
}

static void status_clear(void *rt) {
  hip_module *m = rt;
  HIP.hipMemsetD32Async(m->status, 0, 1, m->stream);
}

static void timer_start(void *rt) {
  hip_module *m = rt;
  HIP.hipEventRecord(m->ev0, m->stream);
}

static void timer_stop(void *rt) {
  hip_module *m = rt;
  HIP.hipEventRecord(m->ev1, m->stream);
}

static portc_status wait(void *rt, double *seconds) {
  hip_module *m = rt;
  hipError_t r = HIP.hipEventSynchronize(m->ev1);
  if (r) return hip_fail(r, "running the kernels");
  float ms = 0;
  HIP.hipEventElapsedTime(&ms, m->ev0, m->ev1);
  *seconds = ms * 1e-3;
  return PORTC_OK;
}

static portc_status status_read(void *rt, unsigned *word) {
  hip_module *m = rt;
  *word = 0;
  hipError_t r = HIP.hipMemcpyDtoHAsync(word, m->status, 4, m->stream);
  if (!r) r = HIP.hipStreamSynchronize(m->stream);
  return r ? hip_fail(r, "reading the status word") : PORTC_OK;
}

static const gpu_queue_ops queue_ops = {
    .status_clear = status_clear,
    .timer_start = timer_start,
    .issue = issue,
    .timer_stop = timer_stop,
    .wait = wait,
    .status_read = status_read,
};

static portc_status end(void *handle, double *seconds) {
  hip_module *m = handle;
  HIP.hipSetDevice(m->c->index);
  return gpu_queue_run(&m->q, &queue_ops, m, seconds);
}

static const char *timer(void *handle) {
  (void)handle;
  return "device events";
}

static portc_status dev_alloc(void *handle, int64_t bytes, void **obj) {
  hip_module *m = handle;
  HIP.hipSetDevice(m->c->index);
  hip_mem *b = calloc(1, sizeof *b);
  if (!b) return err_set(PORTC_ERR_NOMEM, "hip: out of memory");
  hipError_t r = HIP.hipMalloc(&b->p, (size_t)bytes);
  if (r) {
    free(b);
    return err_set(r == hipErrorOutOfMemory ? PORTC_ERR_NOMEM : PORTC_ERR_DEVICE, "hip: cannot allocate %lld bytes on %s: %s",
                   (long long)bytes, m->c->name, HIP.hipGetErrorString(r));
  }
  b->bytes = bytes;
  *obj = b;
  return PORTC_OK;
}

static void dev_free(void *handle, void *obj) {
  hip_module *m = handle;
  hip_mem *b = obj;
  if (!b) return;
  HIP.hipSetDevice(m->c->index);
  HIP.hipStreamSynchronize(m->stream);
  HIP.hipFree(b->p);
  free(b);
}

static portc_status dev_write(void *handle, void *obj, int64_t offset, const void *src, int64_t bytes) {
  hip_module *m = handle;
  hip_mem *b = obj;
  HIP.hipSetDevice(m->c->index);
  hipError_t r = HIP.hipMemcpyHtoDAsync((char *)b->p + offset, (void *)src, (size_t)bytes, m->stream);
  if (!r) r = HIP.hipStreamSynchronize(m->stream);
  return r ? hip_fail(r, "copying to the device") : PORTC_OK;
}

static portc_status dev_read(void *handle, void *obj, int64_t offset, void *dst, int64_t bytes) {
  hip_module *m = handle;
  hip_mem *b = obj;
  HIP.hipSetDevice(m->c->index);
  hipError_t r = HIP.hipMemcpyDtoHAsync(dst, (char *)b->p + offset, (size_t)bytes, m->stream);
  if (!r) r = HIP.hipStreamSynchronize(m->stream);
  return r ? hip_fail(r, "copying from the device") : PORTC_OK;
}

static void flush_cache(void *handle) {
  hip_module *m = handle;
  HIP.hipSetDevice(m->c->index);
  if (!m->cold) {
    size_t bytes = 2 * (size_t)(m->c->l2 > 0 ? m->c->l2 : 64 << 20);
    if (HIP.hipMalloc(&m->cold, bytes)) {
      m->cold = NULL;
      if (!m->cold_runs++) log_line("tune", "hip: no device memory for %zu MiB to flush the L2 between timings; timing with a warm cache", bytes >> 20);
      return;
    }
    m->cold_bytes = bytes;
  }
  HIP.hipMemsetD32Async((hipDeviceptr_t)m->cold, (int)++m->cold_runs, m->cold_bytes / 4, m->stream);
}

static const target_gpu gpu = {
    .alloc = dev_alloc, .free = dev_free, .write = dev_write, .read = dev_read, .end = end, .timer = timer, .flush_cache = flush_cache};

const target hip_target = {
    .name = "hip",
    .summary = "HIP C++ compiled to AMD code objects by hiprtc, run through the HIP runtime",
    .dialect = &hip_dialect,
    .available = available,
    .device = device,
    .schedule = hip_schedule,
    .device_key = hip_device_key,
    .schedule_check = hip_schedule_check,
    .tune_space = hip_tune_space,
    .load = load,
    .launch = launch,
    .unload = unload,
    .describe = hip_describe,
    .gpu = &gpu,
    .attention_kernel = TARGET_ATTENTION_FLOATS,
};
