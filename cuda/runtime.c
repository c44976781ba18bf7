/*
 * runtime.c: the CUDA target. load compiles the module's CUDA C with NVRTC for the device's
 * architecture (or finds the cubin in the kernel cache) and loads it through the driver API. A
 * run collects the launches, then issues them in order on the module's stream between two
 * events, whose elapsed time is the run's device time. In reduce-overhead mode the launch
 * sequence is captured once into a CUDA graph and replayed while buffers and symbol values stay
 * the same.
 *
 * The collecting, timing, replay and status word are the shared GPU queue's
 * (targets/gpu_queue.c); this file issues. Every launch decision is the kernel's schedule
 * (schedule.c). The same runtime runs the HIP dialect on NVIDIA GPUs (hip_on_cuda/): a cu_flavor
 * says what differs, the source prefix.
 *
 * A matmul that cuBLASLt can compute runs on whichever of cuBLASLt and portc's own kernel is
 * faster for its shape, timed on the device once per shape (at load when the shape is known
 * then, else at the first run); PORTC_CUDA_MATMUL=own or =cublaslt forces one, and `portc
 * explain` says which runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/gpu_kernels.h"
#include "../codegen/grid.h"
#include "../ir/dtype.h"
#include "../targets/cache.h"
#include "../targets/gpu_queue.h"
#include "cu.h"

typedef enum { RUN_UNKNOWN, RUN_OWN, RUN_BLASLT } matmul_choice;

typedef struct cu_kernel {
  CUfunction f, epi, split; /* split: Hopper's f32 matmul's kN_split */
  matmul_choice choice;
  int64_t mnk[3];      /* the shape the choice was made for */
  double own_ms, blas_ms;
  char why[440];       /* why the choice is what it is */
  /* Hopper's f32 matmul whose B is a parameter or a constant: B's TF32 parts kept between runs,
   * written again only when B's buffer (split_of) was written since (its stamp) */
  CUdeviceptr split_buf, split_of;
  size_t split_bytes;
  uint64_t split_stamp;
  int clusters; /* Hopper's ping-pong matmul in clusters: how many run at once (0: not asked yet) */
} cu_kernel;

typedef struct cu_mem {
  CUdeviceptr p;
  int64_t bytes;
  uint64_t stamp; /* the last copy to it (dev_write), from a counter of the process: 0 never */
} cu_mem;

typedef struct cu_module {
  const cu_flavor *f;
  cu_context *c;
  const kir_module *km;
  int nk, nsym;
  CUmodule mod;
  cu_kernel *k;
  gpu_queue q;
  gpu_limits lim;
  CUstream stream;
  CUevent ev0, ev1;
  CUgraph graph;
  CUgraphExec exec;
  CUdeviceptr status;
  CUdeviceptr scratch; /* cuBLASLt's f32 products before their epilogue; split-K partial sums; B's TF32 parts */
  size_t scratch_bytes;
  CUdeviceptr blas_ws; /* cuBLASLt's workspace for this module's stream */
  CUdeviceptr cold;    /* written over between timings: twice the L2 (cu_flush_cache) */
  size_t cold_bytes;
  unsigned cold_runs;
  bool capturing; /* a CUDA graph records the launches: every kernel launches, none is skipped */
} cu_module;

static bool available(char *why, size_t len) { return cu_available(why, len); }
static const char *device(void) { return cu_default_device_name(); }

static void drop_graph(cu_module *m) {
  if (m->exec) CU.cuGraphExecDestroy(m->exec);
  if (m->graph) CU.cuGraphDestroy(m->graph);
  m->exec = NULL, m->graph = NULL;
}

void cu_unload(void *handle) {
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
  if (m->cold) CU.cuMemFree_v2(m->cold);
  if (m->blas_ws) CU.cuMemFree_v2(m->blas_ws);
  if (m->mod) CU.cuModuleUnload(m->mod);
  for (int i = 0; m->k && i < m->nk; i++)
    if (m->k[i].split_buf) CU.cuMemFree_v2(m->k[i].split_buf);
  free(m->k);
  gpu_queue_free(&m->q);
  free(m);
}

typedef struct cubin_build {
  const char *src, *arch, *name;
} cubin_build;

static portc_status build_cubin(void *ctx, void **data, size_t *bytes) {
  const cubin_build *b = ctx;
  return cu_compile(b->src, b->arch, b->name, data, bytes);
}

const char *cu_compile_arch(const cu_context *c, const kir_module *km) {
  for (int i = 0; i < km->nk; i++)
    if (km->k[i].sched.variant == KS_WGMMA) return "sm_90a";
  return c->arch;
}

/* the module's cubin: from the module file being loaded (req->from), else from the kernel cache
 * or compiled and stored there, and then recorded for a module file being written */

static portc_status cubin_for(cu_context *c, const load_request *req, const char *flavor, const char *src, void **cubin, size_t *bytes,
                              bool *hit) {
  char key[33];
  const char *arch = cu_compile_arch(c, req->km);
  if (req->from || req->record) prebuilt_key(flavor, src, arch, key);
  if (req->from) {
    const prebuilt_entry *e = prebuilt_find(req->from, key);
    if (!e) return prebuilt_missing(flavor, req->graph_name, 0);
    if (!(*cubin = malloc(e->bytes ? e->bytes : 1))) return err_set(PORTC_ERR_NOMEM, "%s: out of memory", flavor);
    memcpy(*cubin, e->data, e->bytes);
    *bytes = e->bytes;
    *hit = true;
    return PORTC_OK;
  }
  char why[512];
  const char *compiler = cu_compiler_id(why, sizeof why);
  if (!compiler) return err_set(PORTC_ERR_DEVICE, "cuda: %s", why);
  build_args args = {0};
  cu_compile_options(arch, &args);
  build_key k = {.target = "cuda", .source = src, .args = &args, .compiler = compiler, .device = c->cache_id};
  cubin_build b = {src, arch, req->graph_name};
  portc_status st = cache_or_build(&k, "cubin", "\177ELF", 4, req->graph_name, build_cubin, &b, cubin, bytes, hit, NULL, NULL);
  if (!st && req->record) st = prebuilt_add(req->record, key, *cubin, *bytes);
  return st;
}

static portc_status get_functions(cu_module *m) {
  CUresult r;
  for (int i = 0; i < m->nk; i++) {
    cu_kernel *k = &m->k[i];
    const kir_schedule *sc = &m->km->k[i].sched;
    char name[32];
    snprintf(name, sizeof name, "k%d", i);
    if ((r = CU.cuModuleGetFunction(&k->f, m->mod, name))) return cu_fail(r, "cuModuleGetFunction");
    if (sc->library >= 2 || gpu_conv_split(&m->km->k[i]) > 1) {
      snprintf(name, sizeof name, "k%d_epi", i);
      if ((r = CU.cuModuleGetFunction(&k->epi, m->mod, name))) return cu_fail(r, "cuModuleGetFunction");
    }
    if (cu_wgmma_tf32(m->km, &m->km->k[i])) {
      snprintf(name, sizeof name, "k%d_split", i);
      if ((r = CU.cuModuleGetFunction(&k->split, m->mod, name))) return cu_fail(r, "cuModuleGetFunction");
    }
    if (sc->shared_bytes > m->c->smem_optin)
      return err_set(PORTC_ERR_DEVICE, "cuda: kernel %d needs %d bytes of shared memory; %s offers %d", i, sc->shared_bytes, m->c->name,
                     m->c->smem_optin);
    if (sc->shared_bytes && (r = CU.cuFuncSetAttribute(k->f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, sc->shared_bytes)))
      return cu_fail(r, "cuFuncSetAttribute");
  }
  return PORTC_OK;
}

static CUdeviceptr ptr(const dev_buf *b) { return ((const cu_mem *)b->obj)->p + (CUdeviceptr)b->offset; }

/* buffer `buf`'s place in kernel i's launches (-1: not one of its buffers) */
static int bind_slot(const cu_module *m, int i, int buf) {
  const gpu_args *a = &m->q.args[i];
  for (int j = 0; j < a->nbind; j++)
    if (a->bind[j] == buf) return j;
  return -1;
}

/* the device address of buffer `buf` in kernel i's launch l */
static CUdeviceptr buf_ptr(const cu_module *m, int i, const gpu_launch *l, int buf) {
  int j = bind_slot(m, i, buf);
  return j < 0 ? 0 : ptr(&l->b[j]);
}

/* the bytes of B's two TF32 parts for Hopper's f32 matmul of n columns and a reduction of k (at
 * least 4: the extent its tensor maps take for an empty one) */
static size_t tf32_split_bytes(int64_t n, int64_t k) { return (size_t)(2 * n * (k > 4 ? k : 4) * 4); }

/* the tensor maps of Hopper's matmul (dialect_wgmma.c) for launch l, whose product is not empty,
 * all swizzled in 128-byte rows, zeros past the edges (with K = 0, which no k-step reads, K = 8, or
 * 4 in f32, whose K is a multiple of 4: the driver takes no empty extent):
 *  - f16/bf16: A as [rows x K] in boxes of BK x BM (BM / 2 rows in the ping-pong form's clusters of 2), B as [K x N]
 *    in boxes of 64 x BK;
 *  - f32: A as [rows x K] in boxes of 32 x BM; B's two parts, [N x K] each in the scratch buffer
 *    (kN_split wrote them), in boxes of 32 x BN (the schedule's tile_n) */
static portc_status tensor_maps(cu_module *m, int i, const gpu_launch *l, CUdeviceptr split, cu_tmap maps[3]) {
  const kir_kernel *kk = &m->km->k[i];
  if (!CU.cuTensorMapEncodeTiled)
    return err_set(PORTC_ERR_DEVICE, "cuda: the driver lacks cuTensorMapEncodeTiled, which Hopper's matmul needs (CUDA 12.0 or newer)");
  const int64_t *S = l->S;
  const portc_dtype t = m->km->buf[kk->in_buf[0]].dt;
  const bool f32 = t == PORTC_F32;
  int dt = f32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : t == PORTC_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  int64_t e[3] = {gpu_gemm_rows(m->km, i, S), dim_value(kk->mnk[1], S), dim_value(kk->mnk[2], S)};
  const int64_t least = f32 ? 4 : 8;
  uint64_t rows = (uint64_t)e[0], n = (uint64_t)e[1], k = (uint64_t)(e[2] > least ? e[2] : least), es = f32 ? 4 : 2;
  CUdeviceptr base[3] = {buf_ptr(m, i, l, kk->in_buf[0]), f32 ? split : buf_ptr(m, i, l, kk->in_buf[1]), split + n * k * 4};
  const uint64_t dims[3][2] = {{k, rows}, {f32 ? k : n, f32 ? n : k}, {k, n}}, strides[3][1] = {{k * es}, {(f32 ? k : n) * es}, {k * 4}};
  const unsigned bn = (unsigned)kk->sched.tile_n;
  const unsigned a_rows = (unsigned)cu_wgmma_a_rows(m->km, kk); /* the ping-pong form's cluster: a share of A each */
  const unsigned box[3][2] = {{f32 ? CU_WT_BK : CU_WG_BK, a_rows}, {f32 ? CU_WT_BK : 64, f32 ? bn : CU_WG_BK}, {CU_WT_BK, bn}}, ones[2] = {1, 1};
  static const char *const what[3] = {"cuTensorMapEncodeTiled (the matmul's A)", "cuTensorMapEncodeTiled (the matmul's B)",
                                      "cuTensorMapEncodeTiled (the low part of the matmul's B)"};
  for (int o = 0; o < (f32 ? 3 : 2); o++) {
    CUresult r = CU.cuTensorMapEncodeTiled(&maps[o], dt, 2, (void *)(uintptr_t)base[o], dims[o], strides[o], box[o], ones,
                                           CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r) return cu_fail(r, what[o]);
  }
  return PORTC_OK;
}

/* Hopper's f32 matmul's first launch: kN_split writes B's two TF32 parts, transposed, in 32x32
 * tiles, to *split: the scratch buffer (choose() sized it), or where B is a parameter or a
 * constant, the kernel's own buffer, where they stay until B's buffer is copied to again (its
 * stamp) and the launch is skipped till then (not while a CUDA graph records: its replays must
 * split what they find) */
static portc_status launch_split(cu_module *m, int i, const gpu_launch *l, CUdeviceptr *split) {
  const kir_kernel *kk = &m->km->k[i];
  cu_kernel *k = &m->k[i];
  CUdeviceptr b = buf_ptr(m, i, l, kk->in_buf[1]);
  int K = (int)dim_value(kk->mnk[2], l->S), N = (int)dim_value(kk->mnk[1], l->S);
  const int slot = bind_slot(m, i, kk->in_buf[1]);
  const cu_mem *bm = slot < 0 ? NULL : l->b[slot].obj;
  const buf_role role = m->km->buf[kk->in_buf[1]].role;
  const size_t bytes = tf32_split_bytes(N, K);
  *split = m->scratch;
  if (K == 0) return PORTC_OK; /* no k-step reads B */
  /* not where the graph updates its parameters (training): an update's buffer becomes the next
   * run's parameter without a copy */
  if ((role == BUF_PARAM || role == BUF_CONST) && !m->km->g->nupd && bm && bm->stamp && !m->capturing) {
    if (k->split_buf && k->split_of == b && k->split_stamp == bm->stamp && k->split_bytes == bytes) return *split = k->split_buf, PORTC_OK;
    if (k->split_bytes != bytes) {
      if (k->split_buf) CU.cuMemFree_v2(k->split_buf);
      k->split_buf = 0, k->split_bytes = 0;
      if (CU.cuMemAlloc_v2(&k->split_buf, bytes) == CUDA_SUCCESS) k->split_bytes = bytes;
      else k->split_buf = 0; /* no room to keep them: split into the scratch every run */
    }
    if (k->split_buf) *split = k->split_buf, k->split_of = b, k->split_stamp = bm->stamp;
  }
  CUdeviceptr out = *split;
  void *params[] = {&b, &out, &K, &N};
  const unsigned T = CU_WT_SPLIT_TILE;
  CUresult r = CU.cuLaunchKernel(k->split, ((unsigned)N + T - 1) / T, ((unsigned)K + T - 1) / T, 1, T, 8, 1, 0, m->stream, params, NULL);
  if (r) k->split_of = 0; /* nothing kept */
  return r ? cu_fail(r, "cuLaunchKernel (the split of the matmul's B)") : PORTC_OK;
}

/* the clusters of kernel i (Hopper's ping-pong matmul in clusters of cl blocks, function f) that
 * the device runs at once, asked once: where a GPC's multiprocessors do not divide into whole
 * clusters, fewer than sms / cl, and a persistent grid of more would leave the last clusters'
 * tiles to a second wave */
static int active_clusters(cu_module *m, int i, CUfunction f, int cl) {
  cu_kernel *k = &m->k[i];
  const kir_schedule *s = &m->km->k[i].sched;
  if (k->clusters) return k->clusters;
  int n = 0;
  const unsigned blocks = (unsigned)(m->c->sms / cl * cl);
  cu_launch_config c = {{blocks, 1, 1}, {(unsigned)s->threads[0], 1, 1}, (unsigned)s->shared_bytes, m->stream, NULL, 0};
  if (!CU.cuOccupancyMaxActiveClusters || CU.cuOccupancyMaxActiveClusters(&n, f, &c) != CUDA_SUCCESS || n < 1) n = m->c->sms / cl;
  log_line("tune", "cuda: kernel %d runs in clusters of %d, %d at once", i, cl, n);
  return k->clusters = n;
}

/* kernel i's function f, or with epi its epilogue kernel kN_epi; the scratch buffer comes first
 * to an epilogue and to a split-K convolution, and Hopper's matmul takes its operands' tensor
 * maps last */
static portc_status launch_fn(cu_module *m, int i, const gpu_launch *l, CUfunction f, bool epi) {
  const gpu_args *a = &m->q.args[i];
  const kir_kernel *kk = &m->km->k[i];
  CUdeviceptr args[GPU_MAX_ARGS + 2];
  void *params[GPU_MAX_ARGS + 6];
  struct { int v[GPU_MAX_SYMS]; } syms = {{0}};
  cu_tmap maps[3];
  int n = 0;
  if (epi || gpu_conv_split(kk) > 1) args[n] = m->scratch, params[n] = &args[n], n++;
  for (int j = 0; j < a->nbind; j++) args[n] = ptr(&l->b[j]), params[n] = &args[n], n++;
  if (a->status) args[n] = m->status, params[n] = &args[n], n++;
  for (int s = 0; s < m->nsym; s++) syms.v[s] = (int)l->S[s];
  params[n++] = &syms;
  if (!epi && kk->sched.variant == KS_WGMMA) {
    if (gpu_gemm_rows(m->km, i, l->S) == 0 || dim_value(kk->mnk[1], l->S) == 0) return PORTC_OK; /* an empty product */
    CUdeviceptr split = 0;
    portc_status st = cu_wgmma_tf32(m->km, kk) ? launch_split(m, i, l, &split) : PORTC_OK;
    if (!st) st = tensor_maps(m, i, l, split, maps);
    if (st) return st;
    params[n++] = &maps[0], params[n++] = &maps[1];
    if (cu_wgmma_tf32(m->km, kk)) params[n++] = &maps[2];
  }
  unsigned g[3], b[3] = {(unsigned)kk->sched.threads[0], (unsigned)kk->sched.threads[1], (unsigned)kk->sched.threads[2]};
  gpu_grid(m->km, i, l->S, &m->lim, g);
  if (!epi && cu_wgmma_pingpong(m->km, kk)) { /* persistent: its blocks loop over the tiles */
    const int cl = kk->sched.cluster > 1 ? kk->sched.cluster : 1;
    cu_pingpong_grid(g, cl > 1 ? active_clusters(m, i, f, cl) * cl : m->c->sms, cl);
  } else if (!epi && kk->sched.variant == KS_WGMMA && kk->sched.cluster > 1) {
    cu_coop_pair_grid(g); /* the 128x256 form in clusters: two row tiles a cluster */
  }
  int shared = kk->sched.shared_bytes;
  if (epi) { /* a grid-stride loop over M x N */
    int64_t mn[2] = {gpu_gemm_rows(m->km, i, l->S), dim_value(kk->mnk[1], l->S)};
    if (kk->kind == KK_CONV) gpu_conv_mn(m->km, i, l->S, mn);
    int64_t blocks = (mn[0] * mn[1] + CU_PW_THREADS - 1) / CU_PW_THREADS;
    int64_t cap = (int64_t)m->c->sms * 32;
    b[0] = CU_PW_THREADS, b[1] = b[2] = g[1] = g[2] = 1, shared = 0;
    g[0] = (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
  }
  CUresult r = CU.cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], (unsigned)shared, m->stream, params, NULL);
  return r ? cu_fail(r, "cuLaunchKernel") : PORTC_OK;
}

static portc_status run_blaslt(cu_module *m, int i, const gpu_launch *l) {
  const kir_kernel *kk = &m->km->k[i];
  const kir_schedule *sc = &kk->sched;
  const int64_t *S = l->S;
  char why[400];
  cu_blaslt *b = cu_blaslt_get(m->c, why, sizeof why);
  if (!b) return err_set(PORTC_ERR_DEVICE, "cuda: %s", why);
  bool direct = sc->library == 1, into_output = direct || sc->library == 3;
  portc_dtype t = m->km->buf[kk->in_buf[0]].dt;
  portc_dtype dt = into_output ? m->km->buf[kk->store[0].buf].dt : PORTC_F32;
  CUdeviceptr D = into_output ? buf_ptr(m, i, l, kk->store[0].buf) : m->scratch;
  if (!m->blas_ws) return err_set(PORTC_ERR_INTERNAL, "cuda: kernel %d runs cuBLASLt before its workspace was made", i);
  bool ta, tb;
  cu_blaslt_view(m->km, i, &ta, &tb);
  portc_status st = cu_blaslt_matmul(b, m->stream, m->blas_ws, t, dt, gpu_gemm_rows(m->km, i, S), dim_value(kk->mnk[1], S),
                                     dim_value(kk->mnk[2], S), ta, tb, sc->library_algo,
                                     buf_ptr(m, i, l, kk->in_buf[0]), buf_ptr(m, i, l, kk->in_buf[1]),
                                     sc->library_bias >= 0 ? buf_ptr(m, i, l, sc->library_bias) : 0, D);
  return st || direct ? st : launch_fn(m, i, l, m->k[i].epi, true);
}

/* the load-time choice between the own kernel and cuBLASLt: samples of a burst of launches each,
 * in rounds of one of each */
enum { CU_CHOICE_BURST = 3, CU_CHOICE_ROUNDS = 7 };

/* one sample of kernel i's own kernel (own) or cuBLASLt: the time of CU_CHOICE_BURST launches back
 * to back, per launch */
static portc_status time_burst(cu_module *m, int i, bool own, double *ms) {
  portc_status st = PORTC_OK;
  CU.cuEventRecord(m->ev0, m->stream);
  for (int b = 0; b < CU_CHOICE_BURST && !st; b++)
    st = own ? launch_fn(m, i, &m->q.pending[i], m->k[i].f, false) : run_blaslt(m, i, &m->q.pending[i]);
  CU.cuEventRecord(m->ev1, m->stream);
  CUresult r = CU.cuEventSynchronize(m->ev1);
  if (!st && r) st = cu_fail(r, "cuEventSynchronize");
  float t = 0;
  CU.cuEventElapsedTime(&t, m->ev0, m->ev1);
  *ms = (double)t / CU_CHOICE_BURST;
  return st;
}

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* kernel i's own kernel and cuBLASLt timed in turn, CU_CHOICE_ROUNDS rounds after one of each
 * (which goes first alternates), the median of each's samples: timed one after the other, the
 * first ran at the clock an idle GPU starts with and the second at a lower one (8192^3 f16 with
 * bias and GELU: 1.46 ms own, 1.50 cuBLASLt at load; 1.73 and 1.51 over 30 runs after). Returns
 * the own kernel's failure; cuBLASLt's goes to *blas_st, with its error set and its median at
 * infinity (an algorithm it does not offer for the shape) */
static portc_status time_both(cu_module *m, int i, double *own_ms, double *blas_ms, portc_status *blas_st) {
  double own[CU_CHOICE_ROUNDS], blas[CU_CHOICE_ROUNDS], warm;
  portc_status st = time_burst(m, i, true, &warm);
  *blas_st = st ? PORTC_OK : time_burst(m, i, false, &warm);
  for (int r = 0; r < CU_CHOICE_ROUNDS && !st; r++) {
    for (int side = 0; side < 2 && !st; side++) {
      const bool is_own = (side == 0) == (r % 2 == 0);
      if (is_own) st = time_burst(m, i, true, &own[r]);
      else if (!*blas_st) *blas_st = time_burst(m, i, false, &blas[r]);
    }
  }
  if (st) return st;
  qsort(own, CU_CHOICE_ROUNDS, sizeof *own, by_value);
  *own_ms = own[CU_CHOICE_ROUNDS / 2];
  if (!*blas_st) qsort(blas, CU_CHOICE_ROUNDS, sizeof *blas, by_value);
  *blas_ms = *blas_st ? 1e30 : blas[CU_CHOICE_ROUNDS / 2];
  return PORTC_OK;
}

static portc_status ensure_scratch(cu_module *m, size_t bytes) {
  if (bytes <= m->scratch_bytes) return PORTC_OK;
  if (m->scratch) CU.cuMemFree_v2(m->scratch), m->scratch = 0, m->scratch_bytes = 0;
  CUresult r = CU.cuMemAlloc_v2(&m->scratch, bytes);
  if (r) return cu_fail(r, "cuMemAlloc (the scratch of cuBLASLt's products, split-K partial sums and the f32 matmul's split B)");
  m->scratch_bytes = bytes;
  return PORTC_OK;
}

static portc_status ensure_workspace(cu_module *m) {
  if (m->blas_ws) return PORTC_OK;
  CUresult r = CU.cuMemAlloc_v2(&m->blas_ws, CU_BLASLT_WORKSPACE);
  if (r) m->blas_ws = 0;
  return r ? cu_fail(r, "cuMemAlloc (cuBLASLt's workspace)") : PORTC_OK;
}

/* picks cuBLASLt or the own kernel for kernel i at its pending shape (the pending buffers are
 * written by the timing runs, which the run then overwrites) */
static portc_status choose(cu_module *m, int i) {
  cu_kernel *k = &m->k[i];
  const kir_kernel *kk = &m->km->k[i];
  const int64_t *S = m->q.pending[i].S;
  int split = gpu_conv_split(kk);
  if (split > 1) { /* the slices' partial sums */
    int64_t mn[2];
    gpu_conv_mn(m->km, i, S, mn);
    k->choice = RUN_OWN;
    return ensure_scratch(m, (size_t)(split * mn[0] * mn[1]) * 4);
  }
  int64_t mnk[3] = {gpu_gemm_rows(m->km, i, S), dim_value(kk->mnk[1], S), dim_value(kk->mnk[2], S)};
  if (cu_wgmma_tf32(m->km, kk)) { /* B's two parts, written by kN_split */
    portc_status st = ensure_scratch(m, tf32_split_bytes(mnk[1], mnk[2]));
    if (st) return st;
  }
  if (!kk->sched.library) {
    k->choice = RUN_OWN;
    return PORTC_OK;
  }
  if (k->choice != RUN_UNKNOWN && memcmp(mnk, k->mnk, sizeof mnk) == 0) return PORTC_OK;
  memcpy(k->mnk, mnk, sizeof mnk);
  const char *force = getenv("PORTC_CUDA_MATMUL");
  char why[400];
  bool have = cu_blaslt_get(m->c, why, sizeof why) != NULL;
  portc_status st = kk->sched.library != 2 || !have ? PORTC_OK : ensure_scratch(m, (size_t)(mnk[0] * mnk[1] * 4));
  if (!st && have) st = ensure_workspace(m); /* before a CUDA graph's capture, which may not allocate */
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
    portc_status blas_st;
    if ((st = time_both(m, i, &k->own_ms, &k->blas_ms, &blas_st))) return st;
    if (blas_st) { /* an algorithm this cuBLASLt does not offer for the shape */
      k->choice = RUN_OWN;
      snprintf(k->why, sizeof k->why, "%.400s", portc_last_error());
    } else {
      k->choice = k->blas_ms < k->own_ms ? RUN_BLASLT : RUN_OWN;
      snprintf(k->why, sizeof k->why, "timed for %lldx%lldx%lld: cuBLASLt (algo=%d) %.3f ms, own kernel %.3f ms", (long long)mnk[0],
               (long long)mnk[1], (long long)mnk[2], kk->sched.library_algo, k->blas_ms, k->own_ms);
    }
  }
  log_line("tune", "cuda: kernel %d runs %s (%s)", i, k->choice == RUN_BLASLT ? "cuBLASLt" : "the own kernel", k->why);
  return st;
}

/* ---- the shared queue's calls (targets/gpu_queue.h) ---- */

static portc_status prepare(void *rt) {
  cu_module *m = rt;
  portc_status st = PORTC_OK;
  for (int i = 0; i < m->nk && !st; i++) /* not one this run leaves out: timing it would write its kept result */
    if (m->q.launched[i]) st = choose(m, i);
  return st;
}

static portc_status record_begin(void *rt) {
  cu_module *m = rt;
  drop_graph(m);
  CUresult r = CU.cuStreamBeginCapture_v2(m->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  m->capturing = r == CUDA_SUCCESS;
  return r ? cu_fail(r, "cuStreamBeginCapture") : PORTC_OK;
}

static portc_status record_end(void *rt, portc_status st) {
  cu_module *m = rt;
  CUresult r = CU.cuStreamEndCapture(m->stream, &m->graph);
  m->capturing = false;
  if (!st && r) st = cu_fail(r, "cuStreamEndCapture");
  if (!st && (r = CU.cuGraphInstantiateWithFlags(&m->exec, m->graph, 0))) st = cu_fail(r, "cuGraphInstantiate");
  if (st) drop_graph(m);
  return st;
}

static portc_status replay(void *rt) {
  cu_module *m = rt;
  CUresult r = CU.cuGraphLaunch(m->exec, m->stream);
  return r ? cu_fail(r, "cuGraphLaunch") : PORTC_OK;
}

static void status_clear(void *rt) {
  cu_module *m = rt;
  CU.cuMemsetD32Async(m->status, 0, 1, m->stream);
}

static void timer_start(void *rt) {
  cu_module *m = rt;
  CU.cuEventRecord(m->ev0, m->stream);
}

static void timer_stop(void *rt) {
  cu_module *m = rt;
  CU.cuEventRecord(m->ev1, m->stream);
}

static portc_status issue(void *rt, int i, const gpu_launch *l) {
  cu_module *m = rt;
  if (m->k[i].choice == RUN_BLASLT) return run_blaslt(m, i, l);
  portc_status st = launch_fn(m, i, l, m->k[i].f, false);
  return st || gpu_conv_split(&m->km->k[i]) <= 1 ? st : launch_fn(m, i, l, m->k[i].epi, true);
}

static portc_status wait(void *rt, double *seconds) {
  cu_module *m = rt;
  CUresult r = CU.cuEventSynchronize(m->ev1);
  if (r) {
    CU.cuStreamSynchronize(m->stream);
    return cu_fail(r, "running the kernels");
  }
  float ms = 0;
  CU.cuEventElapsedTime(&ms, m->ev0, m->ev1);
  *seconds = ms * 1e-3;
  return PORTC_OK;
}

static portc_status status_read(void *rt, unsigned *word) {
  cu_module *m = rt;
  *word = 0;
  CUresult r = CU.cuMemcpyDtoH_v2(word, m->status, 4);
  return r ? cu_fail(r, "reading the status word") : PORTC_OK;
}

static const gpu_queue_ops queue_ops = {
    .prepare = prepare,
    .record_begin = record_begin,
    .record_end = record_end,
    .replay = replay,
    .status_clear = status_clear,
    .timer_start = timer_start,
    .issue = issue,
    .timer_stop = timer_stop,
    .wait = wait,
    .status_read = status_read,
};

/* a timing buffer's contents: values of dt spread over [-1, 1), a 1 MiB pattern repeated. Constant
 * operands draw less power, and the GPU then clocks higher: the f16 8192^3 matmul ran in 1.24 ms
 * on bytes of 0x3c against 1.74 ms on the benchmark's random inputs, both kernels alike, so the
 * choice came down to noise (H100) */
static void fill_varied(CUdeviceptr p, size_t bytes, portc_dtype dt) {
  enum { PATTERN = 1 << 20 };
  unsigned char *host = malloc(PATTERN);
  if (!host || (dt != PORTC_F32 && dt != PORTC_F16 && dt != PORTC_BF16)) {
    CU.cuMemsetD8_v2(p, 0x3c, bytes); /* about 1 in f16, 0.0115 in f32 and bf16 */
    free(host);
    return;
  }
  uint32_t x = 0x9E3779B9u; /* xorshift32 */
  const size_t es = dt == PORTC_F32 ? 4 : 2;
  for (size_t o = 0; o < PATTERN; o += es) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    const float v = (float)(x >> 8) / 8388608.0f - 1.0f;
    if (dt == PORTC_F32) {
      memcpy(host + o, &v, 4);
    } else {
      const uint16_t h = dt == PORTC_F16 ? f16_bits(v) : bf16_bits(v);
      memcpy(host + o, &h, 2);
    }
  }
  for (size_t done = 0; done < bytes; done += PATTERN) CU.cuMemcpyHtoD_v2(p + done, host, bytes - done < PATTERN ? bytes - done : PATTERN);
  free(host);
}

/* static shapes: chooses between cuBLASLt and the own kernel now, on scratch buffers, so that
 * `portc explain` can say which runs */
static void choose_at_load(cu_module *m) {
  for (int i = 0; i < m->nk; i++) {
    const kir_kernel *kk = &m->km->k[i];
    cu_kernel *k = &m->k[i];
    const gpu_args *a = &m->q.args[i];
    if (!kk->sched.library) continue;
    bool known = true;
    for (int j = 0; j < a->nbind; j++)
      for (int d = 0; d < m->km->buf[a->bind[j]].sh.rank; d++) known = known && m->km->buf[a->bind[j]].sh.d[d].sym < 0;
    for (int d = 0; d < kk->dom.rank; d++) known = known && kk->dom.d[d].sym < 0;
    for (int d = 0; d < 3; d++) known = known && kk->mnk[d].sym < 0;
    if (!known) continue;
    cu_mem mem[GPU_MAX_ARGS] = {{0}};
    bool ok = true;
    for (int j = 0; j < a->nbind && ok; j++) {
      const kir_buf *b = &m->km->buf[a->bind[j]];
      mem[j].bytes = shape_count(&b->sh, NULL) * (int64_t)portc_dtype_size(b->dt);
      ok = CU.cuMemAlloc_v2(&mem[j].p, (size_t)(mem[j].bytes > 4 ? mem[j].bytes : 4)) == CUDA_SUCCESS;
      if (ok) fill_varied(mem[j].p, (size_t)mem[j].bytes, b->dt);
      m->q.pending[i].b[j] = (dev_buf){&mem[j], 0, mem[j].bytes};
    }
    if (ok && choose(m, i) != PORTC_OK) k->choice = RUN_UNKNOWN; /* try again at the first run */
    CU.cuStreamSynchronize(m->stream);
    for (int j = 0; j < a->nbind; j++)
      if (mem[j].p) CU.cuMemFree_v2(mem[j].p);
    memset(&m->q.pending[i], 0, sizeof m->q.pending[i]);
  }
}

static void set_limits(cu_module *m) {
  m->lim = (gpu_limits){.max_groups = {INT32_MAX, 65535, 65535}, .stride_groups = (int64_t)(m->c->sms > 0 ? m->c->sms : 1) * 32};
}

portc_status cu_load_flavor(const cu_flavor *f, const load_request *req, void **handle, bool *hit) {
  char why[512];
  cu_context *c = cu_context_get(req->device, why, sizeof why);
  if (!c) return err_set(PORTC_ERR_DEVICE, "%s: %s", f->name, why);
  if (c->cc_major < 8)
    return err_set(PORTC_ERR_DEVICE, "cuda: %s has compute capability %d.%d; portc's CUDA kernels need 8.0 or newer", c->name, c->cc_major,
                   c->cc_minor);
  const kir_module *km = req->km;
  cu_module *m = calloc(1, sizeof *m);
  if (!m) return err_set(PORTC_ERR_NOMEM, "cuda: out of memory");
  m->f = f, m->c = c, m->km = km, m->nk = km->nk, m->nsym = km->g->nsyms;
  set_limits(m);
  portc_status st = gpu_queue_init(&m->q, f->name, km, req->reduce_overhead);
  m->k = calloc((size_t)km->nk + 1, sizeof *m->k);
  size_t pre = strlen(f->source_prefix), n = strlen(req->source);
  char *src = malloc(pre + n + 1);
  if (st || !m->k || !src) {
    free(src);
    cu_unload(m);
    return st ? st : err_set(PORTC_ERR_NOMEM, "cuda: out of memory");
  }
  memcpy(src, f->source_prefix, pre);
  memcpy(src + pre, req->source, n + 1);
  void *cubin = NULL;
  size_t bytes = 0;
  CUresult r;
  st = cubin_for(c, req, f->name, src, &cubin, &bytes, hit);
  free(src);
  if (!st && (r = CU.cuModuleLoadData(&m->mod, cubin))) st = cu_fail(r, "cuModuleLoadData");
  free(cubin);
  if (!st) st = get_functions(m);
  if (!st && (r = CU.cuStreamCreate(&m->stream, CU_STREAM_NON_BLOCKING))) st = cu_fail(r, "cuStreamCreate");
  if (!st && ((r = CU.cuEventCreate(&m->ev0, CU_EVENT_DEFAULT)) || (r = CU.cuEventCreate(&m->ev1, CU_EVENT_DEFAULT))))
    st = cu_fail(r, "cuEventCreate");
  if (!st && m->q.status && (r = CU.cuMemAlloc_v2(&m->status, 4))) st = cu_fail(r, "cuMemAlloc");
  if (st) {
    cu_unload(m);
    return st;
  }
  choose_at_load(m);
  *handle = m;
  return PORTC_OK;
}

portc_status cu_launch(void *handle, int i, void *const *bufs, const int64_t *S) {
  cu_module *m = handle;
  portc_status st = gpu_queue_launch(&m->q, i, bufs, S);
  if (st) return st;
  const kir_schedule *sc = &m->km->k[i].sched;
  bool tiles = m->km->k[i].kind == KK_MATMUL && (sc->variant == KS_MMA || sc->variant == KS_WGMMA); /* a block per tile, no loop */
  if (tiles && (gpu_gemm_rows(m->km, i, S) + sc->tile_m - 1) / sc->tile_m > m->lim.max_groups[1])
    return err_set(PORTC_ERR_INVALID, "%s: kernel %d: more than %lld rows", m->f->name, i, (long long)(m->lim.max_groups[1] * sc->tile_m));
  return PORTC_OK;
}

static portc_status cu_end(void *handle, double *seconds) {
  cu_module *m = handle;
  CU.cuCtxSetCurrent(m->c->ctx);
  return gpu_queue_run(&m->q, &queue_ops, m, seconds);
}

static const char *cu_timer(void *handle) {
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
  static _Atomic uint64_t writes;
  b->stamp = ++writes;
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

static void cu_flush_cache(void *handle) {
  cu_module *m = handle;
  CU.cuCtxSetCurrent(m->c->ctx);
  if (!m->cold) {
    size_t bytes = 2 * (size_t)(m->c->l2_bytes > 0 ? m->c->l2_bytes : 64 << 20);
    if (CU.cuMemAlloc_v2(&m->cold, bytes)) {
      m->cold = 0;
      if (!m->cold_runs++) log_line("tune", "cuda: no device memory for %zu MiB to flush the L2 between timings; timing with a warm cache", bytes >> 20);
      return;
    }
    m->cold_bytes = bytes;
  }
  CU.cuMemsetD32Async(m->cold, ++m->cold_runs, m->cold_bytes / 4, m->stream);
}

const target_gpu cu_gpu = {.alloc = dev_alloc,
                           .free = dev_free,
                           .write = dev_write,
                           .read = dev_read,
                           .end = cu_end,
                           .timer = cu_timer,
                           .flush_cache = cu_flush_cache};

static const char *blaslt_how(const kir_schedule *s) {
  return s->library == 2   ? " + epilogue kernel"
         : s->library == 3 ? " into the output, finished in place by an epilogue kernel"
         : s->library_bias >= 0 ? " with its bias epilogue"
                                : "";
}

static void kernel_note(void *handle, int i, char *buf, size_t len) {
  cu_module *m = handle;
  const cu_kernel *k = &m->k[i];
  const kir_schedule *s = &m->km->k[i].sched;
  if (m->km->k[i].kind != KK_MATMUL) {
    buf[0] = 0;
    return;
  }
  char own[160];
  if (cu_wgmma_tf32(m->km, &m->km->k[i]))
    snprintf(own, sizeof own, "portc's Hopper tensor-core kernel in f32 (three TF32 products a term, wgmma m64n%dk8, %dx%d tiles)", s->tile_n,
             s->tile_m, s->tile_n);
  else if (cu_wgmma_pingpong(m->km, &m->km->k[i]))
    snprintf(own, sizeof own, "portc's Hopper tensor-core kernel, ping-pong (TMA and wgmma m64n128k16, %dx%d tiles, a block an SM%s)", s->tile_m,
             s->tile_n, s->cluster > 1 ? ", clusters of 2 sharing A's loads" : "");
  else if (s->variant == KS_WGMMA && s->cluster > 1)
    snprintf(own, sizeof own, "portc's Hopper tensor-core kernel (TMA and wgmma m64n256k16, %dx%d tiles, clusters of 2 sharing B's loads)", s->tile_m,
             s->tile_n);
  else
    snprintf(own, sizeof own,
             s->variant == KS_WGMMA ? "portc's Hopper tensor-core kernel (TMA and wgmma m64n256k16, %dx%d tiles)"
             : s->variant == KS_MMA ? "portc's tensor-core kernel (mma.sync m16n8k16, %dx%d tiles)"
                                    : "portc's SIMT kernel (%dx%d tiles)",
             s->tile_m, s->tile_n);
  if (!s->library) snprintf(buf, len, "%s", own);
  else if (k->choice == RUN_UNKNOWN)
    snprintf(buf, len, "cuBLASLt%s or %s, whichever is faster, timed at the first run of each shape", blaslt_how(s), own);
  else if (k->choice == RUN_BLASLT) snprintf(buf, len, "cuBLASLt%s (%s)", blaslt_how(s), k->why);
  else snprintf(buf, len, "%s (%s)", own, k->why);
}

static const cu_flavor cuda_flavor = {.name = "cuda", .source_prefix = ""};

static portc_status load(const load_request *req, void **handle, bool *hit) { return cu_load_flavor(&cuda_flavor, req, handle, hit); }

static void device_key(int device, tune_device *d) { cu_device_key(device, "cuda", d); }

const target cuda_target = {
    .name = "cuda",
    .summary = "CUDA C compiled to cubin by NVRTC, run through the CUDA driver API",
    .dialect = &cuda_dialect,
    .available = available,
    .device = device,
    .schedule = cu_schedule,
    .device_key = device_key,
    .schedule_check = cu_schedule_check,
    .tune_space = cu_tune_space,
    .load = load,
    .launch = cu_launch,
    .unload = cu_unload,
    .artifacts = true,
    .runs_prebuilt = cu_driver_available,
    .describe = cu_describe,
    .gpu = &cu_gpu,
    .kernel_note = kernel_note,
    .attention_kernel = TARGET_ATTENTION_FLOATS,
    .copy_merged_rows = 1u << PORTC_F32 | 1u << PORTC_F16 | 1u << PORTC_BF16,
    .channels_last_convs = cu_channels_last,
};
