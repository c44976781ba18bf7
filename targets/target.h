/*
 * target.h: what a target is: a const struct of data and function pointers, filled with
 * designated initializers. A target whose driver or compiler is missing says so through
 * `available` and is never used; it does not crash the process. Optional hooks are NULL.
 */
#ifndef PORTC_TARGETS_TARGET_H
#define PORTC_TARGETS_TARGET_H

#include "dialect.h"

typedef struct target {
  const char *name;    /* "cpu" */
  const char *summary; /* one line for `portc devices` */
  const dialect *dialect;
  /* false, with the reason in why, when the target cannot run here */
  bool (*available)(char *why, size_t len);
  /* a name for the device: part of the cache key and of reports */
  const char *(*device)(void);
  /* widest vector register in bytes, for the schedule */
  int (*vector_bytes)(void);
  /* compiles source (or finds it in the kernel cache) and loads it */
  portc_status (*load)(const char *source, const char *graph_name, void **handle, bool *cache_hit);
  /* runs kernel i over the buffers, with symbol values S */
  portc_status (*launch)(void *handle, int i, void *const *bufs, const int64_t *S);
  void (*unload)(void *handle);
  /* optional: whether the target can run an op (NULL: all of them) */
  bool (*supports)(enum op op);
} target;

const target *target_find(const char *name);
int target_count(void);
const target *target_at(int i);

/* PORTC_LOG: comma-separated topics (fusion, kernels, cache, tune, recompile, breaks) */
bool log_enabled(const char *topic);
void log_line(const char *topic, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
