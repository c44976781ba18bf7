/*
 * bindings.h: the run-time side of a graph's interface, shared by every executor: symbol values,
 * the tensors bound to inputs and parameters, the seed, and the value of each source node.
 */
#ifndef PORTC_IR_BINDINGS_H
#define PORTC_IR_BINDINGS_H

#include <pthread.h>

#include "graph.h"

struct portc_bindings {
  pthread_mutex_t lock; /* recursive: every public call on the object holds it (portc.h's threading contract) */
  const portc_graph *g;
  int64_t *sym; /* per graph symbol */
  bool *sym_set;
  int nsyms;
  portc_tensor **given; /* per node: the tensor bound to an input or parameter, or NULL */
  portc_tensor **used;  /* per node: what the last run used (after seeding and rounding) */
  int n;
  bool seeded;
  uint64_t seed;
};

/* hold and release b's lock (b may be NULL): calls that use b from another folder (running a
 * module, the reference) hold it for the whole call */
void bindings_lock(portc_bindings *b);
void bindings_unlock(portc_bindings *b);

/* Binds symbols from the shapes of bound tensors; a clash names both sides. */
portc_status bindings_bind_symbols(const portc_graph *g, portc_bindings *b);
/* The concrete shape of a node under the bound symbols. */
portc_status bindings_shape(const portc_graph *g, const portc_bindings *b, const node *x, int64_t *shape);
/* The value of source node id, as a new tensor of its dtype. */
portc_status bindings_source(const portc_graph *g, portc_bindings *b, int id, portc_tensor **out);

/* after a run: each parameter the graph updates takes its value among the run's outputs (checkpoint.c) */
portc_status bindings_apply_updates(const portc_graph *g, portc_bindings *b, portc_tensor *const *outputs);

uint64_t rng_next(uint64_t *state);
double rng_uniform(uint64_t *state); /* [0, 1) */
double rng_normal(uint64_t *state);

#endif
