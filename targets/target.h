/*
 * target.h: what a target is: a const struct of data and function pointers, filled with
 * designated initializers. A target whose driver or compiler is missing says so through
 * `available` and is never used; it does not crash the process. Optional hooks are NULL.
 */
#ifndef PORTC_TARGETS_TARGET_H
#define PORTC_TARGETS_TARGET_H

#include <pthread.h>
#include <stdio.h>

#include "../codegen/dialect.h"
#include "prebuilt.h"
#include "tune.h"

/* what a target's load gets: the module's source in its dialect and the kernel IR it renders
 * (owned by the module, valid until unload) */
typedef struct load_request {
  const char *source;
  const kir_module *km;
  const char *graph_name;
  int device;           /* the index after "name:" in the target's name, or -1 */
  bool reduce_overhead; /* record the launch sequence once and replay it */
  /* module files (targets with `artifacts`): from, when set, holds every binary the module
   * needs, and the target builds nothing (a kernel missing there is prebuilt_missing's error);
   * record, when set, receives a copy of every binary the target loads */
  const prebuilt *from;
  prebuilt *record;
} load_request;

/* A buffer in a target's own memory (GPU targets): the allocation, and the byte range in it. */
typedef struct dev_buf {
  void *obj;
  int64_t offset, bytes;
} dev_buf;

/* What a target with a device of its own (a GPU) does besides compiling and launching: memory
 * that kernels bind, copies to and from the host, and the end of a run. Such a target's launch
 * only collects; end submits the run's launches, waits, and gives the device's own time for
 * them, and can replay a run (reduce-overhead mode). */
typedef struct target_gpu {
  portc_status (*alloc)(void *handle, int64_t bytes, void **obj);
  void (*free)(void *handle, void *obj);
  portc_status (*write)(void *handle, void *obj, int64_t offset, const void *src, int64_t bytes);
  portc_status (*read)(void *handle, void *obj, int64_t offset, void *dst, int64_t bytes);
  portc_status (*end)(void *handle, double *device_seconds);
  /* what end's seconds come from ("device timestamps", "device events") */
  const char *(*timer)(void *handle);
  /* optional: queues a write over twice the device's last-level cache ahead of the next run, so
   * that a kernel timed alone starts with a cold cache (module_time_kernels: the tuner and
   * profile); a device without the memory for it times with a warm cache, and the tune log says so */
  void (*flush_cache)(void *handle);
} target_gpu;

/* What a web bundle (driver/export.c: `portc export`) takes from a target whose kernels a browser
 * runs (WebGPU): each kernel's own source, and the work groups of its dispatch. */
typedef struct target_web {
  /* kernel i's source alone, cut from the module's (free() it), or NULL when there is none */
  char *(*kernel_source)(const char *module, int i);
  /* kernel i's work groups (x, y, z) at symbol values S on a device that dispatches at most
   * max_groups per dimension (the kernels loop over the rest); false when it has nothing to do */
  bool (*groups)(const kir_module *m, int i, const int64_t *S, uint32_t max_groups, uint32_t out[3]);
  /* the language the sources are in, for the bundle's files ("wgsl") */
  const char *language;
} target_web;

typedef struct target {
  const char *name;    /* "cpu" */
  const char *summary; /* one line for `portc devices` */
  const dialect *dialect;
  /* false, with the reason in why, when the target cannot run here */
  bool (*available)(char *why, size_t len);
  /* a name for the device: part of the cache key and of reports */
  const char *(*device)(void);
  /* fills kernel i's schedule (kir_schedule: threads, tiles, variant, vector width, ...) for
   * the device index after "name:" (-1: the default device), from the target's rules; it works
   * without a device, for code generation alone. Called once per kernel by the compile
   * pipeline; the dialect and the runtime only read what it wrote. */
  void (*schedule)(kir_module *m, int i, int device);
  /* compiles the source (or finds it in the kernel cache) and loads it */
  portc_status (*load)(const load_request *r, void **handle, bool *cache_hit);
  /* runs kernel i over the buffers, with symbol values S: host pointers, or for targets with
   * their own memory, dev_buf pointers */
  portc_status (*launch)(void *handle, int i, void *const *bufs, const int64_t *S);
  void (*unload)(void *handle);
  /* load honours load_request's from and record: the target's modules can be written to and
   * run from module files (.portc) */
  bool artifacts;
  /* optional: whether a module file's prebuilt kernels can run here, where `available` (which
   * asks for the compiler too) may say no: the CPU runs them without a C compiler (NULL: available) */
  bool (*runs_prebuilt)(char *why, size_t len);
  /* optional: whether the target can run node i of g (its op, dtypes and attributes); when not,
   * why gets what it lacks, as words after the target's name ("has no softmax"), and the node
   * runs on the fallback target (driver/partition.c) unless the compile is fullgraph (NULL: the
   * target runs every node) */
  bool (*supports)(const portc_graph *g, int i, char *why, size_t len);
  /* the dtypes (bit 1 << portc_dtype) whose attention nodes run as one kernel (codegen/attention.c:
   * the scores stay in shared memory) instead of matmul, softmax, matmul; 0: always the
   * decomposition. Read by the lowering (lower_options.attention). */
  unsigned attention_kernel;
#define TARGET_ATTENTION_FLOATS (1u << PORTC_F32 | 1u << PORTC_F16 | 1u << PORTC_BF16)
  /* the dtypes (bit 1 << portc_dtype) whose weight matmuls, where their rows reach them through a
   * permute that merges axes lying apart into the reduction (attention's heads merged for the
   * output projection), read those rows copied into a matrix first: for a target whose fast
   * matmuls (a vendor library's, cooperative matrices) take matrices only. 0: none. Read by the
   * lowering (lower_options.copy_merged_rows, lower/matmul_rows.c). */
  unsigned copy_merged_rows;
  /* optional: the dtypes (bit 1 << portc_dtype) whose convolutions run channels-last (NHWC) on
   * the device where kir_channels_last_fits: the lowering makes them so in fused compiles, and
   * the target's schedule must take every such convolution (NULL or 0: none; a channels-last
   * convolution is then computed NCHW between permutes) */
  unsigned (*channels_last_convs)(int device);
  /* optional: the most buffers a fused expression may read on the device (0 or NULL: fusion's own
   * bound), for a target that binds few buffers per kernel (WebGPU: 8 to 10 in all) */
  int (*max_kernel_loads)(int device);
  /* optional: more lines about the devices for `portc devices` */
  void (*describe)(FILE *out);
  /* optional: the hooks of a target with a device of its own (NULL: buffers are host memory,
   * launches run at once, timed by the host clock) */
  const target_gpu *gpu;
  /* optional: the target's kernels run in a browser: what a web bundle needs of it */
  const target_web *web;
  /* optional: a line for `portc explain` on how kernel i runs (empty: nothing to add) */
  void (*kernel_note)(void *handle, int i, char *buf, size_t len);
  /* optional: whether the device may flush f32 denormals to zero (NULL: it keeps them) */
  bool (*flushes_denormals)(void *handle);

  /* ---- tuning (driver/tune.c, driver/tuner.c; NULL: only api=<name> is known, nothing is tuned) ---- */
  /* the device's tune key and the facts that filter candidates; works without a device (the
   * fields it cannot know stay empty) */
  void (*device_key)(int device, tune_device *out);
  /* after a tune entry changed kernel i's schedule: recomputes what follows from the knobs
   * (shared memory) and says whether the kernel can run so; false with why, and the driver
   * goes back to the rules */
  bool (*schedule_check)(kir_module *m, int i, int device, char *why, size_t len);
  /* the knob sets max-autotune times for kernel i besides its default, filtered by the device's
   * facts; returns how many it wrote (at most max) */
  int (*tune_space)(const kir_module *m, int i, const tune_device *d, tune_knobs *out, int max);
} target;

/* the device index a target's context is for: `index`, or when it is -1 the value of $env,
 * else `fallback`; -1 with why ("no device cuda:3 (1 found: cuda:0 to cuda:0)") when there is
 * no such device among n */
int device_pick(const char *target, int index, const char *env, int fallback, int n, char *why, size_t len);

/* The contexts of a target's devices, each made once and kept for the process's lifetime, under
 * one lock that also guards starting the driver. */
typedef struct device_table {
  pthread_mutex_t lock;
  void *made[16];
} device_table;
#define DEVICE_TABLE_INIT {PTHREAD_MUTEX_INITIALIZER, {0}}
/* device `index`'s context (device_pick's rules, env naming the default): start() starts the
 * driver and gives the number of devices (or -1 with why), make() makes a context (or NULL with
 * why); both run under the table's lock */
void *device_table_get(device_table *t, const char *target, int index, const char *env, int (*start)(char *why, size_t len),
                       void *(*make)(int index, char *why, size_t len), char *why, size_t len);

/* finds "name" or "name:N" (device N of that target; *device gets N, or -1) */
const target *target_find(const char *name, int *device);
int target_count(void);
const target *target_at(int i);

/* PORTC_LOG: comma-separated topics (cache, fusion, graph_breaks, kernels, memory, recompiles, tune) */
bool log_enabled(const char *topic);
void log_line(const char *topic, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A GPU driver does not survive fork(): its threads and its devices' mappings stay with the
 * process that started it, and a forked child that calls into it hangs (lavapipe) or fails deep
 * in the driver. Each GPU target notes the start of its driver (target_driver_started, in the
 * process that starts it); compiles for a GPU target and runs of GPU modules in a process forked
 * after that fail at once, with why (target_fork_check: false), as PyTorch refuses CUDA there. */
void target_driver_started(void);
bool target_fork_check(const char *target, char *why, size_t len);

#endif
