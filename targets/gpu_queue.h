/*
 * gpu_queue.h: what every GPU runtime does with a run, written once (IREE's deferred command
 * buffer is the model). The launches of a run are collected as they are asked for (buffers and
 * symbol values), then issued in order between two timers, with the status word (an index out
 * of range) cleared before them and read after. In reduce-overhead mode the issued sequence is
 * recorded once (a CUDA graph, a Vulkan command buffer) and replayed while the launches stay
 * the same. A run may also launch only some kernels (the tuner times one alone): then only those
 * are issued, and nothing is replayed or kept as the recording, unless the kernels left out are
 * derived ones (driver/derived.c: their results are kept), which a whole run may skip: such a run
 * records, and replays a recording that left out the same ones. A runtime supplies the calls
 * that differ (gpu_queue_ops) and only issues.
 */
#ifndef PORTC_TARGETS_GPU_QUEUE_H
#define PORTC_TARGETS_GPU_QUEUE_H

#include "target.h"

enum { GPU_MAX_ARGS = 64, GPU_MAX_SYMS = 32 };

/* one launch as asked for: the kernel's buffers (in kernel_buffers order) and symbol values */
typedef struct gpu_launch {
  dev_buf b[GPU_MAX_ARGS];
  int64_t S[GPU_MAX_SYMS];
} gpu_launch;

/* the buffers a kernel binds, and whether it also takes the status word */
typedef struct gpu_args {
  int nbind, bind[GPU_MAX_ARGS];
  bool status;
} gpu_args;

typedef struct gpu_queue_ops {
  /* every run issues a recording (Vulkan's command buffers): record_begin and record_end
   * bracket each fresh issue, timers included; false: launches go straight to a stream, and are
   * recorded (captured) only in reduce-overhead mode */
  bool always_records;
  portc_status (*prepare)(void *rt);      /* optional: before a fresh issue (CUDA: matmul choices) */
  portc_status (*record_begin)(void *rt); /* NULL: the target cannot record (no reduce-overhead) */
  /* ends the recording; st is how the issue went (a failed recording is dropped) */
  portc_status (*record_end)(void *rt, portc_status st);
  portc_status (*replay)(void *rt);       /* submits the recording */
  void (*status_clear)(void *rt);
  void (*timer_start)(void *rt);
  portc_status (*issue)(void *rt, int i, const gpu_launch *l);
  void (*timer_stop)(void *rt);
  /* waits for the work; seconds: the device's time between the timers */
  portc_status (*wait)(void *rt, double *seconds);
  /* whether a kernel found an index out of range */
  portc_status (*status_read)(void *rt, unsigned *word);
} gpu_queue_ops;

typedef struct gpu_queue {
  const char *target; /* for messages */
  const kir_module *km;
  int nk, nsym;
  gpu_args *args;     /* per kernel */
  bool status;        /* some kernel checks indices */
  bool reduce_overhead, has_recording;
  gpu_launch *pending, *recorded;
  bool *launched;     /* per kernel: launched in this run */
  bool *in_recording; /* per kernel: launched in the recorded run */
  int nlaunched;
} gpu_queue;

/* the queue of a module: each kernel's buffers (at most GPU_MAX_ARGS), at most GPU_MAX_SYMS
 * symbols; errors name the target */
portc_status gpu_queue_init(gpu_queue *q, const char *target, const kir_module *km, bool reduce_overhead);
void gpu_queue_free(gpu_queue *q);
/* collects kernel i's launch (the target's `launch` hook): bufs are dev_buf pointers per buffer */
portc_status gpu_queue_launch(gpu_queue *q, int i, void *const *bufs, const int64_t *S);
/* issues (or replays) the collected launches and waits (the target's `end` hook) */
portc_status gpu_queue_run(gpu_queue *q, const gpu_queue_ops *ops, void *rt, double *seconds);

/* GPU kernels index with 32 bits: refuses (naming the target) a bound buffer of 2^31 elements or
 * more and a symbol value that does not fit; bind[0..nbind) are the kernel's buffers */
portc_status launch_fits_32bit(const char *target, const kir_module *m, const int *bind, int nbind, void *const *bufs, const int64_t *S);

#endif
