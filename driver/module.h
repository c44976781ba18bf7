/*
 * module.h: a compiled module's internals, shared by module.c (compile and run) and explain.c.
 */
#ifndef PORTC_DRIVER_MODULE_H
#define PORTC_DRIVER_MODULE_H

#include <pthread.h>

#include "../lower/kir.h"
#include "../targets/target.h"

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
  /* targets with their own memory: allocations kept from run to run (per buffer, and the arena) */
  void **dev_obj;
  int64_t *dev_bytes;
};

/* hold and release the module's lock, then b's (b may be NULL) */
void module_lock(const portc_module *m, portc_bindings *b);
void module_unlock(const portc_module *m, portc_bindings *b);

#endif
