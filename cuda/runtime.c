/*
 * runtime.c: the CUDA target. load compiles the module's CUDA C with NVRTC for the device's
 * architecture (or finds the cubin in the kernel cache) and loads it through the driver API. A
 * run collects the launches, then issues them in order on the module's stream between two
 * events, whose elapsed time is the run's device time. In reduce-overhead mode the launch
 * sequence is captured once into a CUDA graph and replayed while buffers and symbol values stay
 * the same.
 *
 * The same runtime runs the HIP dialect on NVIDIA GPUs (the hip-on-cuda target at the end): a
 * cu_flavor says what differs, the source prefix and the launch geometry.
 *
 * A matmul that cuBLASLt can compute runs on whichever of cuBLASLt and portc's own kernel is
 * faster for its shape, timed on the device once per shape (at load when the shape is known
 * then, else at the first run); PORTC_CUDA_MATMUL=own or =cublaslt forces one, and `portc
 * explain` says which runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"
#include "../hip/hip.h"
#include "../targets/cache.h"
#include "cu.h"

typedef enum { RUN_UNKNOWN, RUN_OWN, RUN_BLASLT } matmul_choice;

typedef struct cu_kernel {
  CUfunction f, epi;
  int nbind, bind[CU_MAX_ARGS];
  bool status;
  int shared;
  bool blaslt, direct; /* cuBLASLt can compute it; and writes the output itself */
  int bias;            /* with this buffer as its bias, or -1 */
  matmul_choice choice;
  int64_t mnk[3];      /* the shape the choice was made for */
  double own_ms, blas_ms;
  char why[440];       /* why the choice is what it is */
} cu_kernel;

/* one launch as asked for: its buffers and symbol values */
typedef struct cu_launch {
  dev_buf b[CU_MAX_ARGS];
  int64_t S[CU_MAX_SYMS];
} cu_launch;

typedef struct cu_mem {
  CUdeviceptr p;
  int64_t bytes;
} cu_mem;

typedef struct cu_module {
  const cu_flavor *f;
  cu_context *c;
  const kir_module *km;
  int nk, nsym;
  CUmodule mod;
  cu_kernel *k;
  cu_launch *pending, *recorded;
  bool has_recording, reduce_overhead;
  CUstream stream;
  CUevent ev0, ev1;
  CUgraph graph;
  CUgraphExec exec;
  CUdeviceptr status;
  CUdeviceptr scratch; /* cuBLASLt's f32 products before their epilogue */
  size_t scratch_bytes;
} cu_module;

static bool available(char *why, size_t len) { return cu_available(why, len); }
static const char *device(void) { return cu_default_device_name(); }
static int vector_bytes(void) { return 16; }

static void drop_graph(cu_module *m) {
  if (m->exec) CU.cuGraphExecDestroy(m->exec);
  if (m->graph) CU.cuGraphDestroy(m->graph);
  m->exec = NULL, m->graph = NULL, m->has_recording = false;
}

static void unload(void *handle) {
  cu_module *m = handle;
  if (!m) return;
  CU.cuCtxSetCurrent(m->c->ctx);
  if (m->stream) CU.cuStreamSynchronize(m->stream);
  drop_graph(m);
  if (m->ev0) CU.cuEventDestroy_v2(m->ev0);
  if (m->ev1) CU.cuEventDestroy_v2(m->ev1);
  if (m->stream) CU.cuStreamDestroy_v2(m->stream);
  if (m->status) CU.cuMemFree_v2(m->status);
  if (m->scratch) CU.cuMemFree_v2(m->scratch);
  if (m->mod) CU.cuModuleUnload(m->mod);
  free(m->k);
  free(m->pending);
  free(m->recorded);
  free(m);
}

/* the module's cubin, from the kernel cache or compiled and stored there */
static portc_status cubin_for(cu_context *c, const char *src, const char *name, void **cubin, size_t *bytes, bool *hit) {
  char key[33], why[512];
  const char *compiler = cu_compiler_id(why, sizeof why);
  if (!compiler) return err_set(PORTC_ERR_DEVICE, "cuda: %s", why);
  const char *parts[] = {src, "cuda", c->cache_id, compiler, c->arch, NULL};
  portc_status st = cache_fetch(parts, "cubin", "\177ELF", 4, name, key, cubin, bytes);
  if (st || (*hit = *cubin != NULL)) return st;
  if ((st = cu_compile(src, c->arch, name, cubin, bytes))) return st;
  cache_keep(key, "cubin", *cubin, *bytes);
  return PORTC_OK;
}

static portc_status get_functions(cu_module *m) {
  CUresult r;
  for (int i = 0; i < m->nk; i++) {
    cu_kernel *k = &m->k[i];
    char name[32];
    snprintf(name, sizeof name, "k%d", i);
    if ((r = CU.cuModuleGetFunction(&k->f, m->mod, name))) return cu_fail(r, "cuModuleGetFunction");
    k->bias = -1;
    k->blaslt = m->f->blaslt_eligible && m->f->blaslt_eligible(m->km, i, &k->direct, &k->bias);
    if (k->blaslt && !k->direct) {
      snprintf(name, sizeof name, "k%d_epi", i);
      if ((r = CU.cuModuleGetFunction(&k->epi, m->mod, name))) return cu_fail(r, "cuModuleGetFunction");
    }
    k->shared = m->f->shared_bytes ? m->f->shared_bytes(m->km, i) : 0;
    if (k->shared > m->c->smem_optin)
      return err_set(PORTC_ERR_DEVICE, "cuda: kernel %d needs %d bytes of shared memory; %s offers %d", i, k->shared, m->c->name, m->c->smem_optin);
    if (k->shared && (r = CU.cuFuncSetAttribute(k->f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k->shared)))
      return cu_fail(r, "cuFuncSetAttribute");
    k->nbind = kernel_buffers(m->km, i, k->bind, CU_MAX_ARGS);
    if (k->nbind > CU_MAX_ARGS) return err_set(PORTC_ERR_INVALID, "cuda: kernel %d reads or writes more than %d buffers", i, CU_MAX_ARGS);
    k->status = kernel_checks_indices(m->km, i);
  }
  return PORTC_OK;
}

static CUdeviceptr ptr(const dev_buf *b) { return ((const cu_mem *)b->obj)->p + (CUdeviceptr)b->offset; }

/* the device address of buffer `buf` in kernel i's pending launch */
static CUdeviceptr buf_ptr(const cu_module *m, int i, int buf) {
  const cu_kernel *k = &m->k[i];
  for (int j = 0; j < k->nbind; j++)
    if (k->bind[j] == buf) return ptr(&m->pending[i].b[j]);
  return 0;
}

static portc_status launch_fn(cu_module *m, int i, CUfunction f, bool epi) {
  const cu_kernel *k = &m->k[i];
  const cu_launch *l = &m->pending[i];
  CUdeviceptr args[CU_MAX_ARGS + 2];
  void *params[CU_MAX_ARGS + 3];
  struct { int v[CU_MAX_SYMS]; } syms = {{0}};
  int n = 0;
  if (epi) args[n] = m->scratch, params[n] = &args[n], n++;
  for (int j = 0; j < k->nbind; j++) args[n] = ptr(&l->b[j]), params[n] = &args[n], n++;
  if (k->status) args[n] = m->status, params[n] = &args[n], n++;
  for (int s = 0; s < m->nsym; s++) syms.v[s] = (int)l->S[s];
  params[n++] = &syms;
  unsigned g[3], b[3];
  m->f->grid(m->km, i, l->S, m->c->sms, g, b);
  int shared = k->shared;
  if (epi) { /* a grid-stride loop over M x N */
    int64_t blocks = (cu_gemm_rows(m->km, i, l->S) * dim_value(m->km->k[i].mnk[1], l->S) + CU_PW_THREADS - 1) / CU_PW_THREADS;
    int64_t cap = (int64_t)m->c->sms * 32;
    b[0] = CU_PW_THREADS, b[1] = b[2] = g[1] = g[2] = 1, shared = 0;
    g[0] = (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
  }
  CUresult r = CU.cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], (unsigned)shared, m->stream, params, NULL);
  return r ? cu_fail(r, "cuLaunchKernel") : PORTC_OK;
}

static portc_status run_blaslt(cu_module *m, int i) {
  const kir_kernel *kk = &m->km->k[i];
  const cu_kernel *k = &m->k[i];
  const int64_t *S = m->pending[i].S;
  char why[400];
  cu_blaslt *b = cu_blaslt_get(m->c, why, sizeof why);
  if (!b) return err_set(PORTC_ERR_DEVICE, "cuda: %s", why);
  portc_dtype t = m->km->buf[kk->in_buf[0]].dt;
  portc_dtype dt = k->direct ? m->km->buf[kk->store[0].buf].dt : PORTC_F32;
  CUdeviceptr D = k->direct ? buf_ptr(m, i, kk->store[0].buf) : m->scratch;
  portc_status st = cu_blaslt_matmul(b, m->stream, t, dt, cu_gemm_rows(m->km, i, S), dim_value(kk->mnk[1], S), dim_value(kk->mnk[2], S),
                                     buf_ptr(m, i, kk->in_buf[0]), buf_ptr(m, i, kk->in_buf[1]), k->bias >= 0 ? buf_ptr(m, i, k->bias) : 0, D);
  return st || k->direct ? st : launch_fn(m, i, k->epi, true);
}

/* median-free minimum of a few timed runs of kernel i's own kernel (own) or cuBLASLt */
static portc_status time_variant(cu_module *m, int i, bool own, double *ms) {
  portc_status st = PORTC_OK;
  *ms = 1e30;
  for (int rep = 0; rep < 4 && !st; rep++) {
    CU.cuEventRecord(m->ev0, m->stream);
    st = own ? launch_fn(m, i, m->k[i].f, false) : run_blaslt(m, i);
    CU.cuEventRecord(m->ev1, m->stream);
    CUresult r = CU.cuEventSynchronize(m->ev1);
    if (!st && r) st = cu_fail(r, "cuEventSynchronize");
    float t = 0;
    CU.cuEventElapsedTime(&t, m->ev0, m->ev1);
    if (rep > 0 && t < *ms) *ms = t; /* the first is a warm-up */
  }
  return st;
}

static portc_status ensure_scratch(cu_module *m, size_t bytes) {
  if (bytes <= m->scratch_bytes) return PORTC_OK;
  if (m->scratch) CU.cuMemFree_v2(m->scratch), m->scratch = 0, m->scratch_bytes = 0;
  CUresult r = CU.cuMemAlloc_v2(&m->scratch, bytes);
  if (r) return cu_fail(r, "cuMemAlloc (cuBLASLt's product)");
  m->scratch_bytes = bytes;
  return PORTC_OK;
}

/* picks cuBLASLt or the own kernel for kernel i at its pending shape (the pending buffers are
 * written by the timing runs, which the run then overwrites) */
static portc_status choose(cu_module *m, int i) {
  cu_kernel *k = &m->k[i];
  const kir_kernel *kk = &m->km->k[i];
  const int64_t *S = m->pending[i].S;
  int64_t mnk[3] = {cu_gemm_rows(m->km, i, S), dim_value(kk->mnk[1], S), dim_value(kk->mnk[2], S)};
  if (!k->blaslt) {
    k->choice = RUN_OWN;
    return PORTC_OK;
  }
  if (k->choice != RUN_UNKNOWN && memcmp(mnk, k->mnk, sizeof mnk) == 0) return PORTC_OK;
  memcpy(k->mnk, mnk, sizeof mnk);
  const char *force = getenv("PORTC_CUDA_MATMUL");
  char why[400];
  bool have = cu_blaslt_get(m->c, why, sizeof why) != NULL;
  portc_status st = k->direct || !have ? PORTC_OK : ensure_scratch(m, (size_t)(mnk[0] * mnk[1] * 4));
  if (force && strcmp(force, "own") == 0) {
    k->choice = RUN_OWN;
    snprintf(k->why, sizeof k->why, "PORTC_CUDA_MATMUL=own");
  } else if (!have || st) {
    k->choice = RUN_OWN;
    snprintf(k->why, sizeof k->why, "%.400s", have ? portc_last_error() : why);
    st = PORTC_OK;
  } else if (force && strcmp(force, "cublaslt") == 0) {
    k->choice = RUN_BLASLT;
    snprintf(k->why, sizeof k->why, "PORTC_CUDA_MATMUL=cublaslt");
  } else {
    if ((st = time_variant(m, i, true, &k->own_ms)) || (st = time_variant(m, i, false, &k->blas_ms))) return st;
    k->choice = k->blas_ms < k->own_ms ? RUN_BLASLT : RUN_OWN;
    snprintf(k->why, sizeof k->why, "timed for %lldx%lldx%lld: cuBLASLt %.3f ms, own kernel %.3f ms", (long long)mnk[0], (long long)mnk[1],
             (long long)mnk[2], k->blas_ms, k->own_ms);
  }
  log_line("tune", "cuda: kernel %d runs %s (%s)", i, k->choice == RUN_BLASLT ? "cuBLASLt" : "the own kernel", k->why);
  return st;
}

static portc_status issue(cu_module *m) {
  if (m->status) CU.cuMemsetD32Async(m->status, 0, 1, m->stream);
  for (int i = 0; i < m->nk; i++) {
    portc_status st = m->k[i].choice == RUN_BLASLT ? run_blaslt(m, i) : launch_fn(m, i, m->k[i].f, false);
    if (st) return st;
  }
  return PORTC_OK;
}

/* static shapes: chooses between cuBLASLt and the own kernel now, on scratch buffers, so that
 * `portc explain` can say which runs */
static void choose_at_load(cu_module *m) {
  for (int i = 0; i < m->nk; i++) {
    const kir_kernel *kk = &m->km->k[i];
    cu_kernel *k = &m->k[i];
    if (!k->blaslt) continue;
    bool known = true;
    for (int j = 0; j < k->nbind; j++)
      for (int d = 0; d < m->km->buf[k->bind[j]].sh.rank; d++) known = known && m->km->buf[k->bind[j]].sh.d[d].sym < 0;
    for (int d = 0; d < kk->dom.rank; d++) known = known && kk->dom.d[d].sym < 0;
    for (int d = 0; d < 3; d++) known = known && kk->mnk[d].sym < 0;
    if (!known) continue;
    cu_mem mem[CU_MAX_ARGS] = {{0}};
    bool ok = true;
    for (int j = 0; j < k->nbind && ok; j++) {
      const kir_buf *b = &m->km->buf[k->bind[j]];
      mem[j].bytes = shape_count(&b->sh, NULL) * (int64_t)portc_dtype_size(b->dt);
      ok = CU.cuMemAlloc_v2(&mem[j].p, (size_t)(mem[j].bytes > 4 ? mem[j].bytes : 4)) == CUDA_SUCCESS;
      if (ok) CU.cuMemsetD8_v2(mem[j].p, 0x3c, (size_t)mem[j].bytes); /* about 1 in f16, 0.0115 in f32 and bf16 */
      m->pending[i].b[j] = (dev_buf){&mem[j], 0, mem[j].bytes};
    }
    if (ok && choose(m, i) != PORTC_OK) k->choice = RUN_UNKNOWN; /* try again at the first run */
    CU.cuStreamSynchronize(m->stream);
    for (int j = 0; j < k->nbind; j++)
      if (mem[j].p) CU.cuMemFree_v2(mem[j].p);
    memset(&m->pending[i], 0, sizeof m->pending[i]);
  }
}

static portc_status load_flavor(const cu_flavor *f, const load_request *req, void **handle, bool *hit) {
  char why[512];
  cu_context *c = cu_context_get(req->device, why, sizeof why);
  if (!c) return err_set(PORTC_ERR_DEVICE, "%s: %s", f->name, why);
  if (c->cc_major < 8)
    return err_set(PORTC_ERR_DEVICE, "cuda: %s has compute capability %d.%d; portc's CUDA kernels need 8.0 or newer", c->name, c->cc_major,
                   c->cc_minor);
  const kir_module *km = req->km;
  if (km->g->nsyms > CU_MAX_SYMS) return err_set(PORTC_ERR_INVALID, "cuda: more than %d symbols", CU_MAX_SYMS);
  cu_module *m = calloc(1, sizeof *m);
  if (!m) return err_set(PORTC_ERR_NOMEM, "cuda: out of memory");
  m->f = f, m->c = c, m->km = km, m->nk = km->nk, m->nsym = km->g->nsyms, m->reduce_overhead = req->reduce_overhead;
  m->k = calloc((size_t)km->nk + 1, sizeof *m->k);
  m->pending = calloc((size_t)km->nk + 1, sizeof *m->pending);
  m->recorded = calloc((size_t)km->nk + 1, sizeof *m->recorded);
  size_t pre = strlen(f->source_prefix), n = strlen(req->source);
  char *src = malloc(pre + n + 1);
  if (!m->k || !m->pending || !m->recorded || !src) {
    free(src);
    unload(m);
    return err_set(PORTC_ERR_NOMEM, "cuda: out of memory");
  }
  memcpy(src, f->source_prefix, pre);
  memcpy(src + pre, req->source, n + 1);
  void *cubin = NULL;
  size_t bytes = 0;
  CUresult r;
  portc_status st = cubin_for(c, src, req->graph_name, &cubin, &bytes, hit);
  free(src);
  if (!st && (r = CU.cuModuleLoadData(&m->mod, cubin))) st = cu_fail(r, "cuModuleLoadData");
  free(cubin);
  if (!st) st = get_functions(m);
  if (!st && (r = CU.cuStreamCreate(&m->stream, CU_STREAM_NON_BLOCKING))) st = cu_fail(r, "cuStreamCreate");
  if (!st && ((r = CU.cuEventCreate(&m->ev0, CU_EVENT_DEFAULT)) || (r = CU.cuEventCreate(&m->ev1, CU_EVENT_DEFAULT))))
    st = cu_fail(r, "cuEventCreate");
  bool status = false;
  for (int i = 0; i < m->nk; i++) status = status || m->k[i].status;
  if (!st && status && (r = CU.cuMemAlloc_v2(&m->status, 4))) st = cu_fail(r, "cuMemAlloc");
  if (st) {
    unload(m);
    return st;
  }
  choose_at_load(m);
  *handle = m;
  return PORTC_OK;
}

static portc_status launch(void *handle, int i, void *const *bufs, const int64_t *S) {
  cu_module *m = handle;
  cu_kernel *k = &m->k[i];
  cu_launch *l = &m->pending[i];
  portc_status st = launch_fits_32bit(m->f->name, m->km, k->bind, k->nbind, bufs, S);
  if (st) return st;
  for (int j = 0; j < k->nbind; j++) l->b[j] = *(const dev_buf *)bufs[k->bind[j]];
  for (int s = 0; s < m->nsym; s++) l->S[s] = S[s];
  if (m->f->mma && m->f->mma(m->km, i) &&
      (cu_gemm_rows(m->km, i, S) + CU_MMA_BM - 1) / CU_MMA_BM > 65535)
    return err_set(PORTC_ERR_INVALID, "cuda: kernel %d: more than %d rows", i, 65535 * CU_MMA_BM);
  return PORTC_OK;
}

static portc_status end(void *handle, double *seconds) {
  cu_module *m = handle;
  CU.cuCtxSetCurrent(m->c->ctx);
  size_t bytes = sizeof *m->pending * (size_t)m->nk;
  bool replay = m->reduce_overhead && m->has_recording && memcmp(m->pending, m->recorded, bytes) == 0;
  portc_status st = PORTC_OK;
  CUresult r;
  if (!replay) {
    for (int i = 0; i < m->nk && !st; i++) st = choose(m, i);
    if (!st && m->reduce_overhead) { /* capture the launches into a graph */
      drop_graph(m);
      if ((r = CU.cuStreamBeginCapture_v2(m->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))) return cu_fail(r, "cuStreamBeginCapture");
      st = issue(m);
      r = CU.cuStreamEndCapture(m->stream, &m->graph);
      if (!st && r) st = cu_fail(r, "cuStreamEndCapture");
      if (!st && (r = CU.cuGraphInstantiateWithFlags(&m->exec, m->graph, 0))) st = cu_fail(r, "cuGraphInstantiate");
      if (st) {
        drop_graph(m);
        return st;
      }
      memcpy(m->recorded, m->pending, bytes);
      m->has_recording = true;
    }
  }
  if (st) return st;
  CU.cuEventRecord(m->ev0, m->stream);
  if (m->reduce_overhead) {
    if ((r = CU.cuGraphLaunch(m->exec, m->stream))) return cu_fail(r, "cuGraphLaunch");
  } else if ((st = issue(m))) {
    CU.cuStreamSynchronize(m->stream);
    return st;
  }
  CU.cuEventRecord(m->ev1, m->stream);
  if ((r = CU.cuEventSynchronize(m->ev1))) return cu_fail(r, "running the kernels");
  float ms = 0;
  CU.cuEventElapsedTime(&ms, m->ev0, m->ev1);
  *seconds = ms * 1e-3;
  if (m->status) {
    unsigned bad = 0;
    if ((r = CU.cuMemcpyDtoH_v2(&bad, m->status, 4))) return cu_fail(r, "reading the status word");
    if (bad) return err_set(PORTC_ERR_RUNTIME, "an index is out of range (gather)");
  }
  return PORTC_OK;
}

static const char *timer(void *handle) {
  (void)handle;
  return "device events";
}

static portc_status dev_alloc(void *handle, int64_t bytes, void **obj) {
  cu_module *m = handle;
  CU.cuCtxSetCurrent(m->c->ctx);
  cu_mem *b = calloc(1, sizeof *b);
  if (!b) return err_set(PORTC_ERR_NOMEM, "cuda: out of memory");
  CUresult r = CU.cuMemAlloc_v2(&b->p, (size_t)bytes);
  if (r) {
    free(b);
    size_t free_bytes = 0, total = 0;
    CU.cuMemGetInfo_v2(&free_bytes, &total);
    return err_set(r == CUDA_ERROR_OUT_OF_MEMORY ? PORTC_ERR_NOMEM : PORTC_ERR_DEVICE,
                   "cuda: cannot allocate %lld bytes on %s (%zu of %zu bytes free)", (long long)bytes, m->c->name, free_bytes, total);
  }
  b->bytes = bytes;
  *obj = b;
  return PORTC_OK;
}

static void dev_free(void *handle, void *obj) {
  cu_module *m = handle;
  cu_mem *b = obj;
  if (!b) return;
  CU.cuCtxSetCurrent(m->c->ctx);
  CU.cuStreamSynchronize(m->stream);
  CU.cuMemFree_v2(b->p);
  free(b);
}

static portc_status dev_write(void *handle, void *obj, int64_t offset, const void *src, int64_t bytes) {
  cu_module *m = handle;
  cu_mem *b = obj;
  CU.cuCtxSetCurrent(m->c->ctx);
  CUresult r = CU.cuMemcpyHtoDAsync_v2(b->p + (CUdeviceptr)offset, src, (size_t)bytes, m->stream);
  if (!r) r = CU.cuStreamSynchronize(m->stream);
  return r ? cu_fail(r, "copying to the device") : PORTC_OK;
}

static portc_status dev_read(void *handle, void *obj, int64_t offset, void *dst, int64_t bytes) {
  cu_module *m = handle;
  cu_mem *b = obj;
  CU.cuCtxSetCurrent(m->c->ctx);
  CUresult r = CU.cuMemcpyDtoHAsync_v2(dst, b->p + (CUdeviceptr)offset, (size_t)bytes, m->stream);
  if (!r) r = CU.cuStreamSynchronize(m->stream);
  return r ? cu_fail(r, "copying from the device") : PORTC_OK;
}

static const char *blaslt_how(const cu_kernel *k) { return !k->direct ? " + epilogue kernel" : k->bias >= 0 ? " with its bias epilogue" : ""; }

static void kernel_note(void *handle, int i, char *buf, size_t len) {
  cu_module *m = handle;
  const cu_kernel *k = &m->k[i];
  if (m->km->k[i].kind != KK_MATMUL) {
    buf[0] = 0;
    return;
  }
  const char *own = m->f->mma && m->f->mma(m->km, i) ? "portc's tensor-core kernel (mma.sync m16n8k16, 128x128 tiles)"
                                                                : "portc's SIMT kernel (64x64 tiles)";
  if (!k->blaslt) snprintf(buf, len, "%s", own);
  else if (k->choice == RUN_UNKNOWN)
    snprintf(buf, len, "cuBLASLt%s or %s, whichever is faster, timed at the first run of each shape", blaslt_how(k), own);
  else if (k->choice == RUN_BLASLT) snprintf(buf, len, "cuBLASLt%s (%s)", blaslt_how(k), k->why);
  else snprintf(buf, len, "%s (%s)", own, k->why);
}

static bool cuda_mma(const kir_module *m, int i) { return cu_matmul_variant(m, i) == CU_MM_MMA; }

static const cu_flavor cuda_flavor = {
    .name = "cuda",
    .source_prefix = "",
    .grid = cu_grid,
    .shared_bytes = cu_shared_bytes,
    .blaslt_eligible = cu_blaslt_eligible,
    .mma = cuda_mma,
};

static portc_status load_cuda(const load_request *req, void **handle, bool *hit) { return load_flavor(&cuda_flavor, req, handle, hit); }
static portc_status load_hip(const load_request *req, void **handle, bool *hit) { return load_flavor(&cu_hip_flavor, req, handle, hit); }

const target cuda_target = {
    .name = "cuda",
    .summary = "CUDA C compiled to cubin by NVRTC, run through the CUDA driver API",
    .dialect = &cuda_dialect,
    .available = available,
    .device = device,
    .vector_bytes = vector_bytes,
    .load = load_cuda,
    .launch = launch,
    .unload = unload,
    .describe = cu_describe,
    .dev_alloc = dev_alloc,
    .dev_free = dev_free,
    .dev_write = dev_write,
    .dev_read = dev_read,
    .end = end,
    .timer = timer,
    .kernel_note = kernel_note,
};

/* the HIP dialect run by this runtime on NVIDIA GPUs (cu_hip_flavor, hip_on_cuda.c) */
const target hip_on_cuda_target = {
    .name = "hip-on-cuda",
    .summary = "the HIP dialect (wavefronts of 32) compiled by NVRTC and run through the CUDA driver API, to check it on NVIDIA GPUs",
    .dialect = &hip_dialect,
    .available = available,
    .device = device,
    .vector_bytes = vector_bytes,
    .load = load_hip,
    .launch = launch,
    .unload = unload,
    .dev_alloc = dev_alloc,
    .dev_free = dev_free,
    .dev_write = dev_write,
    .dev_read = dev_read,
    .end = end,
    .timer = timer,
};
