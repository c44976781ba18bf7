/*
 * blaslt.c: matmul through cuBLASLt, NVIDIA's tuned library, as the alternative to portc's own
 * kernel that the runtime times against it per shape (as inductor does with cuBLAS). cuBLASLt
 * is column-major; a row-major C = A B is the column-major C^T = B^T A^T, so the operands are
 * passed swapped and nothing is transposed (and a bias over the output's columns is cuBLASLt's
 * bias over D^T's rows); an operand stored transposed is cuBLASLt's op T over its layout as it
 * lies. Sums are f32 (CUBLAS_COMPUTE_32F: no TF32). The library is opened on
 * first use; descriptors and the heuristic's algorithm are kept per shape and choice: the
 * schedule's library_algo picks among the heuristic's first CU_BLASLT_ALGOS (a tuning knob).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu.h"

enum { PLANS = 32 };

typedef struct plan {
  portc_dtype t, dt;
  bool bias, ta, tb;
  int64_t M, N, K;
  int algo; /* the heuristic's choice it runs: 0 its first */
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t a, b, d;
  cublasLtMatmulAlgo_t algo_run;
} plan;

struct cu_blaslt {
  cu_blaslt_api api;
  cublasLtHandle_t h;
  plan plans[PLANS];
  int nplans;
  pthread_mutex_t lock;
};

cu_blaslt *cu_blaslt_get(cu_context *c, char *why, size_t len) {
  pthread_mutex_lock(&c->lock);
  if (!c->blas && !c->blas_why[0]) {
    cu_blaslt *b = calloc(1, sizeof *b);
    cublasStatus_t s;
    if (!b) snprintf(c->blas_why, sizeof c->blas_why, "out of memory");
    else if (!cu_load_blaslt(&b->api, c->blas_why, sizeof c->blas_why)) {
    } else if ((s = b->api.cublasLtCreate(&b->h)))
      snprintf(c->blas_why, sizeof c->blas_why, "cublasLtCreate failed: status %d", s);
    if (c->blas_why[0]) {
      if (b && b->h) b->api.cublasLtDestroy(b->h);
      free(b);
    } else {
      pthread_mutex_init(&b->lock, NULL);
      c->blas = b;
    }
  }
  cu_blaslt *b = c->blas;
  if (!b) snprintf(why, len, "cuBLASLt is not available: %s", c->blas_why);
  pthread_mutex_unlock(&c->lock);
  return b;
}

static void drop_plan(cu_blaslt *b, plan *p) {
  if (p->a) b->api.cublasLtMatrixLayoutDestroy(p->a);
  if (p->b) b->api.cublasLtMatrixLayoutDestroy(p->b);
  if (p->d) b->api.cublasLtMatrixLayoutDestroy(p->d);
  if (p->op) b->api.cublasLtMatmulDescDestroy(p->op);
}

void cu_blaslt_free(cu_blaslt *b) {
  if (!b) return;
  for (int i = 0; i < b->nplans; i++) drop_plan(b, &b->plans[i]);
  b->api.cublasLtDestroy(b->h);
  free(b);
}

static int cuda_type(portc_dtype t) { return t == PORTC_F16 ? CUDA_R_16F : t == PORTC_BF16 ? CUDA_R_16BF : CUDA_R_32F; }

static portc_status make_plan(cu_blaslt *b, plan *p) {
  const cu_blaslt_api *L = &b->api;
  cublasStatus_t s;
  uint64_t ws = CU_BLASLT_WORKSPACE;
  cublasLtMatmulPreference_t pref = NULL;
  cublasLtMatmulHeuristicResult_t r[CU_BLASLT_ALGOS];
  int found = 0;
  /* column-major: D^T [N x M] = B^T [N x K] A^T [K x M]; B stored [N x K] (tb) is, column-major,
   * a [K x N] matrix taken with op T, and A stored [K x M] (ta) an [M x K] one */
  int epilogue = CUBLASLT_EPILOGUE_BIAS, bias_type = cuda_type(p->dt);
  int32_t opa = p->tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = p->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  uint64_t ar = (uint64_t)(p->tb ? p->K : p->N), ac = (uint64_t)(p->tb ? p->N : p->K);
  uint64_t br = (uint64_t)(p->ta ? p->M : p->K), bc = (uint64_t)(p->ta ? p->K : p->M);
  if ((s = L->cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F)) ||
      (p->bias && ((s = L->cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue)) ||
                   (s = L->cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type)))) ||
      (s = L->cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa)) ||
      (s = L->cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb)) ||
      (s = L->cublasLtMatrixLayoutCreate(&p->a, cuda_type(p->t), ar, ac, (int64_t)ar)) ||
      (s = L->cublasLtMatrixLayoutCreate(&p->b, cuda_type(p->t), br, bc, (int64_t)br)) ||
      (s = L->cublasLtMatrixLayoutCreate(&p->d, cuda_type(p->dt), (uint64_t)p->N, (uint64_t)p->M, p->N)) ||
      (s = L->cublasLtMatmulPreferenceCreate(&pref)) ||
      (s = L->cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws)) ||
      (s = L->cublasLtMatmulAlgoGetHeuristic(b->h, p->op, p->a, p->b, p->d, p->d, pref, p->algo + 1, r, &found)) || found <= p->algo) {
    if (pref) L->cublasLtMatmulPreferenceDestroy(pref);
    drop_plan(b, p);
    if (!s && found >= 1)
      return err_set(PORTC_ERR_DEVICE, "cuda: cuBLASLt offers %d algorithms for %lldx%lldx%lld; algo=%d asks for number %d", found, (long long)p->M,
                     (long long)p->N, (long long)p->K, p->algo, p->algo + 1);
    return err_set(PORTC_ERR_DEVICE, "cuda: cuBLASLt has no algorithm for %lldx%lldx%lld (status %d)", (long long)p->M, (long long)p->N,
                   (long long)p->K, s);
  }
  L->cublasLtMatmulPreferenceDestroy(pref);
  p->algo_run = r[p->algo].algo;
  return PORTC_OK;
}

portc_status cu_blaslt_matmul(cu_blaslt *b, CUstream s, CUdeviceptr ws, portc_dtype t, portc_dtype dt, int64_t M, int64_t N, int64_t K,
                              bool ta, bool tb, int algo, CUdeviceptr A, CUdeviceptr B, CUdeviceptr bias, CUdeviceptr D) {
  if (algo < 0 || algo >= CU_BLASLT_ALGOS) return err_set(PORTC_ERR_INVALID, "cuda: cuBLASLt algorithm %d: 0 to %d", algo, CU_BLASLT_ALGOS - 1);
  pthread_mutex_lock(&b->lock);
  plan *p = NULL;
  for (int i = 0; i < b->nplans && !p; i++) {
    plan *q = &b->plans[i];
    if (q->t == t && q->dt == dt && q->bias == (bias != 0) && q->M == M && q->N == N && q->K == K && q->ta == ta && q->tb == tb && q->algo == algo)
      p = q;
  }
  portc_status st = PORTC_OK;
  if (!p) {
    if (b->nplans == PLANS) { /* forget the oldest */
      drop_plan(b, &b->plans[0]);
      memmove(&b->plans[0], &b->plans[1], sizeof *b->plans * (PLANS - 1));
      b->nplans--;
    }
    p = &b->plans[b->nplans];
    *p = (plan){.t = t, .dt = dt, .bias = bias != 0, .ta = ta, .tb = tb, .M = M, .N = N, .K = K, .algo = algo};
    if ((st = make_plan(b, p))) goto done;
    b->nplans++;
  }
  const float one = 1.0f, zero = 0.0f;
  const void *bp = (const void *)bias;
  cublasStatus_t r = bias ? b->api.cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp) : 0;
  if (!r) r = b->api.cublasLtMatmul(b->h, p->op, &one, (const void *)B, p->a, (const void *)A, p->b, &zero, (const void *)D, p->d,
                                           (void *)D, p->d, &p->algo_run, (void *)ws, CU_BLASLT_WORKSPACE, s);
  if (r) st = err_set(PORTC_ERR_DEVICE, "cuda: cublasLtMatmul failed for %lldx%lldx%lld: status %d", (long long)M, (long long)N, (long long)K, r);
done:
  pthread_mutex_unlock(&b->lock);
  return st;
}
