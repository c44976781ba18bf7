/*
 * module.h: a compiled module's internals, shared by module.c (compile and run) and explain.c.
 */
#ifndef PORTC_DRIVER_MODULE_H
#define PORTC_DRIVER_MODULE_H

#include <pthread.h>

#include "../ir/ptr_set.h"
#include "../lower/kir.h"
#include "../targets/target.h"

enum { MODULE_MAX_VARIANTS = 8, MODULE_LEAST_ALLOC = 4 /* bytes: no device API allocates 0 */ };

struct portc_module {
  pthread_mutex_t lock; /* recursive: every public call on the module holds it (portc.h's threading contract) */
  const target *t;
  const portc_graph *g; /* the user's graph (borrowed) */
  kir_module *km;
  void *handle;
  bool dynamic;
  int64_t *symvals;     /* per user symbol, when specialized */
  int *ksym;            /* per lowered-graph symbol: the user symbol it is */
  int *src_node;        /* per buffer: the user's node for inputs and parameters, else -1 */
  double compile_seconds;
  bool cache_hit;
  /* targets with their own memory: allocations kept from run to run (per buffer, and the arena),
   * each at least MODULE_LEAST_ALLOC bytes */
  void **dev_obj;
  int64_t *dev_bytes;
  /* parameters kept on the device (resident.c): per buffer, the bindings (id) and stamp of the
   * value its allocation holds; the bindings it holds newest values for (guarded by lock) */
  uint64_t *res_bid, *res_stamp;
  ptr_set held; /* of portc_bindings */
  int64_t uploaded, downloaded; /* the last run's host-device copies (portc_module_info) */
  /* derived.c: whether the kept buffers hold what the derived kernels would compute from the
   * parameters the device holds; the last run's launches (portc_module_info) */
  bool derived_fresh;
  int launched;
  /* recompiles (recompile.c): a specialized module run with other symbol values compiles again,
   * with the options it was compiled with (target copied), keeping what it compiled */
  portc_compile_options opts;
  char *target_name;
  portc_module *variant[MODULE_MAX_VARIANTS]; /* specialized for other values: the recompiles before dyn */
  int nvariant;
  portc_module *dyn; /* every symbol dynamic: used for every value once it exists (the last recompile) */
  struct partition *parts;  /* a graph with breaks: its regions, each a module (partition.c); km is NULL */
  portc_graph *owned_graph; /* a module loaded from a file: its graph, which g points to */
  char *file;               /* and that file's path, for messages */
};

/* portc_compile's work: force (per kernel, or NULL) gives knobs that replace the tune tables
 * (the tuner's candidates) */
portc_status module_compile(const portc_graph *g, const portc_compile_options *o, portc_bindings *b, const tune_knobs *const *force,
                            portc_module **out);
/* the lowered graph's symbol values for a run with b (per km->g symbol), checked against the
 * module's specialization */
portc_status module_symbols(portc_module *m, portc_bindings *b, int64_t *S);
/* a constant node's value as a tensor of the given shape */
portc_status module_const_tensor(const node *n, const int64_t *shape, portc_tensor **out);
/* the caller's options, whole (older callers' structs are shorter), with max-autotune done:
 * the tune table then holds its results, and the mode is the default */
portc_status module_options(const portc_graph *g, const portc_compile_options *opts, portc_bindings *b, portc_compile_options *whole);
/* what a compile for a module file, or from one, adds (artifact.c) */
typedef struct module_extra {
  const kir_schedule *sched; /* per kernel: the schedules the file's kernels were built with,
                              * instead of the rules and the tables (nsched of them) */
  int nsched;
  const prebuilt *from;      /* the file's binaries: the target builds nothing */
  prebuilt *record;          /* receives every binary the target loads */
} module_extra;
portc_status module_compile_extra(const portc_graph *g, const portc_compile_options *o, portc_bindings *b, const module_extra *x,
                                  portc_module **out);
/* the module that runs these bindings' symbol values: m itself when it was compiled dynamic or
 * for them, else one compiled for them, or dynamic, now or at an earlier miss (recompile.c) */
portc_status module_for_values(portc_module *m, portc_bindings *b, portc_module **use);
void module_variants_free(portc_module *m);

/* one whole run, then each kernel alone: median[i] of `reps` timings (device timer, else the host
 * clock); a kernel whose first timing is over 3 x cutoff[i] (cutoff may be NULL; 0: none) is not
 * timed again */
portc_status module_time_kernels(portc_module *m, portc_bindings *b, int reps, const double *cutoff, double *median);

/* tune.c: the device's tune key; the tables' entries (or force's knobs) applied to every kernel */
void tune_device_of(const target *t, int device, tune_device *d);
void tune_schedules(const target *t, kir_module *km, int device, const tune_knobs *const *force);
/* e's knobs on every kernel of e's kind, scheduled by the rules (a shipped entry checked on a
 * sample graph: the tests, compile_all): how many took them; -1 with why when the target refuses
 * them, 0 with why when no kernel has the kind */
int tune_entry_apply(const target *t, kir_module *km, const tune_entry *e, char *why, size_t len);

/* tests only (tuner.c): sees each checked candidate's outputs and time before the tuner judges them */
extern void (*tuner_test_hook)(int group, int cand, portc_tensor **outputs, int nout, double *seconds);

/* graph breaks (partition.c): whether target t lacks a node of g (with fullgraph, *st is then the
 * error naming it); the regions' modules; their run, timing on the host clock, info and explain */
typedef struct partition partition;
bool graph_needs_breaks(const target *t, const portc_graph *g, bool fullgraph, portc_status *st);
portc_status partition_compile(const portc_graph *g, const portc_compile_options *o, portc_bindings *b, const target *t, partition **out);
void partition_free(partition *p);
portc_status partition_run(portc_module *m, portc_bindings *b, portc_tensor **outputs);
portc_status partition_time(portc_module *m, portc_bindings *b, int iters, double *seconds);
portc_status partition_info(const portc_module *m, portc_bindings *b, portc_module_info *info);
char *partition_explain(const portc_module *m, portc_bindings *b);

/* resident.c: parameters kept on a GPU module's device between runs. Whether the module can;
 * whether update k's parameter and value have device buffers of their own (bp, bv) to swap;
 * whether parameter (input, constant) buffer i already holds b's value (of `bytes`); after a successful run, the
 * swaps and the record of what each parameter buffer holds (keep: the new values stay on the
 * device and b is told so; else call it after b took them); the values held handed back before
 * the module is freed. */
bool resident_capable(const portc_module *m);
bool resident_update(const portc_module *m, int k, int *bp, int *bv);
bool resident_current(const portc_module *m, int i, const portc_bindings *b, int64_t bytes);
portc_status resident_adopt(portc_module *m, portc_bindings *b, bool keep);
/* before a run with b overwrites the buffers: values held for other bindings go back to them */
portc_status resident_handover(portc_module *m, const portc_bindings *b);
void resident_release(portc_module *m);

/* derived.c: marks the kernels of m->km that read only parameters, constants and the buffers
 * such kernels store (kept on the device, apart from the arena), where m can keep them and
 * PORTC_DERIVED does not say rerun (an error when it says neither that nor keep); how many
 * kernels km has so marked */
portc_status derived_mark(portc_module *m);
int derived_kernels(const kir_module *km);

/* hold and release the module's lock, then b's (b may be NULL) */
void module_lock(const portc_module *m, portc_bindings *b);
void module_unlock(const portc_module *m, portc_bindings *b);

#endif
