/*
 * gpu_queue.c: the collect, issue, time, replay and status-word mechanics of the GPU runtimes
 * (gpu_queue.h), once for all of them.
 */
#include <stdlib.h>
#include <string.h>

#include "../codegen/emit.h"
#include "../ir/dtype.h"
#include "gpu_queue.h"

portc_status gpu_queue_init(gpu_queue *q, const char *target, const kir_module *km, bool reduce_overhead) {
  memset(q, 0, sizeof *q);
  q->target = target, q->km = km, q->nk = km->nk, q->nsym = km->g->nsyms, q->reduce_overhead = reduce_overhead;
  if (q->nsym > GPU_MAX_SYMS) return err_set(PORTC_ERR_INVALID, "%s: more than %d symbols", target, GPU_MAX_SYMS);
  q->args = calloc((size_t)q->nk + 1, sizeof *q->args);
  q->pending = calloc((size_t)q->nk + 1, sizeof *q->pending);
  q->recorded = calloc((size_t)q->nk + 1, sizeof *q->recorded);
  q->launched = calloc((size_t)q->nk + 1, sizeof *q->launched);
  q->in_recording = calloc((size_t)q->nk + 1, sizeof *q->in_recording);
  if (!q->args || !q->pending || !q->recorded || !q->launched || !q->in_recording) return err_set(PORTC_ERR_NOMEM, "%s: out of memory", target);
  for (int i = 0; i < q->nk; i++) {
    gpu_args *a = &q->args[i];
    a->nbind = kernel_buffers(km, i, a->bind, GPU_MAX_ARGS);
    if (a->nbind > GPU_MAX_ARGS) return err_set(PORTC_ERR_INVALID, "%s: kernel %d reads or writes more than %d buffers", target, i, GPU_MAX_ARGS);
    a->status = kernel_has_status(km, i);
    q->status = q->status || a->status;
  }
  return PORTC_OK;
}

void gpu_queue_free(gpu_queue *q) {
  free(q->args);
  free(q->pending);
  free(q->recorded);
  free(q->launched);
  free(q->in_recording);
  memset(q, 0, sizeof *q);
}

portc_status gpu_queue_launch(gpu_queue *q, int i, void *const *bufs, const int64_t *S) {
  const gpu_args *a = &q->args[i];
  gpu_launch *l = &q->pending[i];
  portc_status st = launch_fits_32bit(q->target, q->km, a->bind, a->nbind, bufs, S);
  if (st) return st;
  for (int j = 0; j < a->nbind; j++) l->b[j] = *(const dev_buf *)bufs[a->bind[j]];
  for (int s = 0; s < q->nsym; s++) l->S[s] = S[s];
  if (!q->launched[i]) q->launched[i] = true, q->nlaunched++;
  return PORTC_OK;
}

/* the status word cleared, then every launch of this run, between the timers when `timed`; the
 * timer stops even after a failed issue, so that waiting drains what was issued */
static portc_status issue_all(gpu_queue *q, const gpu_queue_ops *ops, void *rt, bool timed) {
  portc_status st = PORTC_OK;
  if (q->status) ops->status_clear(rt);
  if (timed) ops->timer_start(rt);
  for (int i = 0; i < q->nk && !st; i++)
    if (q->launched[i]) st = ops->issue(rt, i, &q->pending[i]);
  if (timed) ops->timer_stop(rt);
  return st;
}

/* every kernel is launched, or derived (its result kept from an earlier run) */
static bool whole_run(const gpu_queue *q) {
  for (int i = 0; i < q->nk; i++)
    if (!q->launched[i] && !q->km->k[i].derived) return false;
  return true;
}

/* the same kernels as the recording, with the same buffers and symbol values */
static bool as_recorded(const gpu_queue *q) {
  for (int i = 0; i < q->nk; i++)
    if (q->launched[i] != q->in_recording[i] || (q->launched[i] && memcmp(&q->pending[i], &q->recorded[i], sizeof q->pending[i]))) return false;
  return true;
}

static portc_status run(gpu_queue *q, const gpu_queue_ops *ops, void *rt, double *seconds) {
  bool whole = whole_run(q);
  bool records = ops->always_records || (q->reduce_overhead && whole);
  bool replay = q->reduce_overhead && whole && q->has_recording && as_recorded(q);
  portc_status st = PORTC_OK;
  if (!replay) {
    if (ops->prepare && (st = ops->prepare(rt))) return st;
    if (records) {
      q->has_recording = false;
      if ((st = ops->record_begin(rt))) return st;
      st = ops->record_end(rt, issue_all(q, ops, rt, ops->always_records));
      if (st) return st;
      memcpy(q->recorded, q->pending, sizeof *q->pending * (size_t)q->nk);
      memcpy(q->in_recording, q->launched, sizeof *q->launched * (size_t)q->nk);
      q->has_recording = whole;
    }
  }
  if (records) {
    if (!ops->always_records) ops->timer_start(rt);
    st = ops->replay(rt);
    if (!ops->always_records) ops->timer_stop(rt);
  } else {
    st = issue_all(q, ops, rt, true);
  }
  portc_status waited = ops->wait(rt, seconds);
  if (st || (st = waited)) return st;
  unsigned word = 0;
  if (q->status && (st = ops->status_read(rt, &word))) return st;
  return word ? err_set(PORTC_ERR_RUNTIME, "%s", status_message(word)) : PORTC_OK;
}

portc_status gpu_queue_run(gpu_queue *q, const gpu_queue_ops *ops, void *rt, double *seconds) {
  portc_status st = run(q, ops, rt, seconds);
  memset(q->launched, 0, sizeof *q->launched * (size_t)q->nk);
  q->nlaunched = 0;
  return st;
}

portc_status launch_fits_32bit(const char *target, const kir_module *m, const int *bind, int nbind, void *const *bufs, const int64_t *S) {
  for (int j = 0; j < nbind; j++) {
    const dev_buf *b = bufs[bind[j]];
    if (b->bytes / (int64_t)portc_dtype_size(m->buf[bind[j]].dt) >= (INT64_C(1) << 31) - (INT64_C(1) << 24))
      return err_set(PORTC_ERR_INVALID, "%s: buffer %d has 2^31 elements or more; kernels index with 32 bits", target, bind[j]);
  }
  for (int s = 0; s < m->g->nsyms; s++)
    if (S[s] < 0 || S[s] >= (INT64_C(1) << 31))
      return err_set(PORTC_ERR_INVALID, "%s: symbol value %lld does not fit 32 bits", target, (long long)S[s]);
  return PORTC_OK;
}
