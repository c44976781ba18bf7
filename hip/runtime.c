/*
 * runtime.c: the HIP target. load compiles the module's HIP C++ with hiprtc for the device's gfx
 * architecture and wavefront size (or finds the code object in the kernel cache) and loads it
 * through the HIP runtime, both opened at run time. A run collects the launches, then issues them
 * in order on the module's stream between two events, whose elapsed time is the run's device
 * time. reduce-overhead mode (HIP graphs) is not implemented yet and is refused by name.
 *
 * No AMD GPU has run this file: the dialect is checked by compiling every conformance kernel for
 * gfx90a, gfx940 and gfx1030 and by running it on NVIDIA GPUs (hip-on-cuda); this runtime mirrors
 * the CUDA target's, call for call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../targets/cache.h"
#include "hip.h"

typedef struct hip_kernel {
  hipFunction_t f;
  int nbind, bind[HIP_MAX_ARGS];
  bool status;
} hip_kernel;

typedef struct hip_launch {
  dev_buf b[HIP_MAX_ARGS];
  int64_t S[HIP_MAX_SYMS];
} hip_launch;

typedef struct hip_mem {
  void *p;
  int64_t bytes;
} hip_mem;

typedef struct hip_module {
  hip_context *c;
  const kir_module *km;
  int nk, nsym;
  hipModule_t mod;
  hip_kernel *k;
  hip_launch *pending;
  hipStream_t stream;
  hipEvent_t ev0, ev1;
  void *status;
} hip_module;

static bool available(char *why, size_t len) {
  if (!hip_available(why, len)) return false;
  return hip_compiler_id(why, len) != NULL;
}
static const char *device(void) { return hip_default_device_name(); }
static int vector_bytes(void) { return 16; }

static void unload(void *handle) {
  hip_module *m = handle;
  if (!m) return;
  HIP.hipSetDevice(m->c->index);
  if (m->stream) HIP.hipStreamSynchronize(m->stream);
  if (m->ev0) HIP.hipEventDestroy(m->ev0);
  if (m->ev1) HIP.hipEventDestroy(m->ev1);
  if (m->stream) HIP.hipStreamDestroy(m->stream);
  if (m->status) HIP.hipFree(m->status);
  if (m->mod) HIP.hipModuleUnload(m->mod);
  free(m->k);
  free(m->pending);
  free(m);
}

/* the module's code object, from the kernel cache or compiled and stored there */
static portc_status code_for(hip_context *c, const char *src, const char *name, void **code, size_t *bytes, bool *hit) {
  char key[33], why[512];
  const char *compiler = hip_compiler_id(why, sizeof why);
  if (!compiler) return err_set(PORTC_ERR_DEVICE, "hip: %s", why);
  const char *parts[] = {src, "hip", c->cache_id, compiler, NULL};
  portc_status st = cache_fetch(parts, "hsaco", "\177ELF", 4, name, key, code, bytes);
  if (st || (*hit = *code != NULL)) return st;
  if ((st = hip_compile(src, c->arch, c->wave, name, code, bytes))) return st;
  cache_keep(key, "hsaco", *code, *bytes);
  return PORTC_OK;
}

static portc_status load(const load_request *req, void **handle, bool *hit) {
  char why[600];
  hip_context *c = hip_context_get(req->device, why, sizeof why);
  if (!c) return err_set(PORTC_ERR_DEVICE, "hip: %s", why);
  if (req->reduce_overhead) return err_set(PORTC_ERR_INVALID, "hip: reduce-overhead mode (HIP graphs) is not implemented yet");
  const kir_module *km = req->km;
  if (km->g->nsyms > HIP_MAX_SYMS) return err_set(PORTC_ERR_INVALID, "hip: more than %d symbols", HIP_MAX_SYMS);
  hip_module *m = calloc(1, sizeof *m);
  if (!m) return err_set(PORTC_ERR_NOMEM, "hip: out of memory");
  m->c = c, m->km = km, m->nk = km->nk, m->nsym = km->g->nsyms;
  m->k = calloc((size_t)km->nk + 1, sizeof *m->k);
  m->pending = calloc((size_t)km->nk + 1, sizeof *m->pending);
  if (!m->k || !m->pending) {
    unload(m);
    return err_set(PORTC_ERR_NOMEM, "hip: out of memory");
  }
  void *code = NULL;
  size_t bytes = 0;
  hipError_t r;
  portc_status st = code_for(c, req->source, req->graph_name, &code, &bytes, hit);
  if (!st && (r = HIP.hipModuleLoadData(&m->mod, code))) st = hip_fail(r, "hipModuleLoadData");
  free(code);
  bool status = false;
  for (int i = 0; i < m->nk && !st; i++) {
    hip_kernel *k = &m->k[i];
    char name[32];
    snprintf(name, sizeof name, "k%d", i);
    if ((r = HIP.hipModuleGetFunction(&k->f, m->mod, name))) st = hip_fail(r, "hipModuleGetFunction");
    k->nbind = kernel_buffers(km, i, k->bind, HIP_MAX_ARGS);
    if (!st && k->nbind > HIP_MAX_ARGS) st = err_set(PORTC_ERR_INVALID, "hip: kernel %d reads or writes more than %d buffers", i, HIP_MAX_ARGS);
    k->status = kernel_checks_indices(km, i);
    status = status || k->status;
    if (!st && hip_lds_bytes(km, i) > c->lds)
      st = err_set(PORTC_ERR_DEVICE, "hip: kernel %d needs %d bytes of LDS; %s offers %d per work group", i, hip_lds_bytes(km, i), c->name, c->lds);
  }
  if (!st && (r = HIP.hipStreamCreate(&m->stream))) st = hip_fail(r, "hipStreamCreate");
  if (!st && ((r = HIP.hipEventCreate(&m->ev0)) || (r = HIP.hipEventCreate(&m->ev1)))) st = hip_fail(r, "hipEventCreate");
  if (!st && status && (r = HIP.hipMalloc(&m->status, 4))) st = hip_fail(r, "hipMalloc");
  if (st) {
    unload(m);
    return st;
  }
  *handle = m;
  return PORTC_OK;
}

static portc_status launch(void *handle, int i, void *const *bufs, const int64_t *S) {
  hip_module *m = handle;
  hip_kernel *k = &m->k[i];
  hip_launch *l = &m->pending[i];
  portc_status st = launch_fits_32bit("hip", m->km, k->bind, k->nbind, bufs, S);
  if (st) return st;
  for (int j = 0; j < k->nbind; j++) l->b[j] = *(const dev_buf *)bufs[k->bind[j]];
  for (int s = 0; s < m->nsym; s++) l->S[s] = S[s];
  return PORTC_OK;
}

static portc_status issue(hip_module *m, int i) {
  const hip_kernel *k = &m->k[i];
  const hip_launch *l = &m->pending[i];
  void *args[HIP_MAX_ARGS + 1], *params[HIP_MAX_ARGS + 2];
  struct { int v[HIP_MAX_SYMS]; } syms = {{0}};
  int n = 0;
  for (int j = 0; j < k->nbind; j++) {
    args[n] = (char *)((const hip_mem *)l->b[j].obj)->p + l->b[j].offset;
    params[n] = &args[n], n++;
  }
  if (k->status) args[n] = m->status, params[n] = &args[n], n++;
  for (int s = 0; s < m->nsym; s++) syms.v[s] = (int)l->S[s];
  params[n++] = &syms;
  unsigned g[3], b[3];
  hip_grid(m->km, i, l->S, m->c->cus, g, b);
  hipError_t r = HIP.hipModuleLaunchKernel(k->f, g[0], g[1], g[2], b[0], b[1], b[2], 0, m->stream, params, NULL);
  return r ? hip_fail(r, "hipModuleLaunchKernel") : PORTC_OK;
}

static portc_status end(void *handle, double *seconds) {
  hip_module *m = handle;
  HIP.hipSetDevice(m->c->index);
  hipError_t r;
  portc_status st = PORTC_OK;
  if (m->status) HIP.hipMemsetD32Async(m->status, 0, 1, m->stream);
  HIP.hipEventRecord(m->ev0, m->stream);
  for (int i = 0; i < m->nk && !st; i++) st = issue(m, i);
  HIP.hipEventRecord(m->ev1, m->stream);
  if ((r = HIP.hipEventSynchronize(m->ev1)) && !st) st = hip_fail(r, "running the kernels");
  if (st) return st;
  float ms = 0;
  HIP.hipEventElapsedTime(&ms, m->ev0, m->ev1);
  *seconds = ms * 1e-3;
  if (m->status) {
    unsigned bad = 0;
    if ((r = HIP.hipMemcpyDtoHAsync(&bad, m->status, 4, m->stream)) || (r = HIP.hipStreamSynchronize(m->stream)))
      return hip_fail(r, "reading the status word");
    if (bad) return err_set(PORTC_ERR_RUNTIME, "an index is out of range (gather)");
  }
  return PORTC_OK;
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

const target hip_target = {
    .name = "hip",
    .summary = "HIP C++ compiled to AMD code objects by hiprtc, run through the HIP runtime",
    .dialect = &hip_dialect,
    .available = available,
    .device = device,
    .vector_bytes = vector_bytes,
    .load = load,
    .launch = launch,
    .unload = unload,
    .describe = hip_describe,
    .dev_alloc = dev_alloc,
    .dev_free = dev_free,
    .dev_write = dev_write,
    .dev_read = dev_read,
    .end = end,
    .timer = timer,
};
