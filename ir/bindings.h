/*
 * bindings.h: the run-time side of a graph's interface, shared by every executor: symbol values,
 * the tensors bound to inputs and parameters, the seed, and the value of each source node.
 */
#ifndef PORTC_IR_BINDINGS_H
#define PORTC_IR_BINDINGS_H

#include <pthread.h>

#include "graph.h"
#include "ptr_set.h"

/* Where a parameter's newest value lives when it is not in the bindings but on a compiled module's
 * device (driver/resident.c): the module keeps it there between runs, and the host tensor is made
 * when somebody asks for it. The owner is locked (its own lock, recursive) around fetch; forget
 * tells an owner that the bindings are being freed. */
typedef struct bindings_remote {
  void (*lock)(void *owner);
  bool (*trylock)(void *owner);
  void (*unlock)(void *owner);
  portc_status (*fetch)(void *owner, portc_bindings *b, int node, portc_tensor **out);
  void (*forget)(void *owner, portc_bindings *b);
} bindings_remote;

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
  /* versions: id is unique in the process; stamp[n] changes whenever node n's value may have
   * (bound, updated, reseeded, a symbol set), so that a module can tell that its device copy is
   * still the value */
  uint64_t id, clock, *stamp;
  void **remote;                  /* per node: the owner holding the newest value, or NULL */
  const bindings_remote *remote_ops;
  ptr_set holders;                /* owners that know these bindings (told on free) */
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

/* node n's value changed: a new stamp */
void bindings_touch(portc_bindings *b, int n);
/* owner will hold values for b (b locked): it is told when b is freed; then node n's newest
 * value is on owner's device (a new stamp), which cannot fail */
portc_status bindings_hold(portc_bindings *b, void *owner, const bindings_remote *ops);
void bindings_set_remote(portc_bindings *b, int n, void *owner);
/* brings the values other owners than `except` hold for b into it (node: that one, -1: all);
 * called with no lock held: each owner's lock is taken before b's, as the owner's runs take them
 * (bindings_source, under a run's locks, only tries an owner's lock, and says so if it is busy) */
portc_status bindings_pull(portc_bindings *b, const void *except, int node);
/* an owner is being freed: every value it holds for b is fetched into b first */
portc_status bindings_release_owner(portc_bindings *b, void *owner);

/* after a run: each parameter the graph updates takes its value among the run's outputs (checkpoint.c) */
portc_status bindings_apply_updates(const portc_graph *g, portc_bindings *b, portc_tensor *const *outputs);

uint64_t rng_next(uint64_t *state);
double rng_uniform(uint64_t *state); /* [0, 1) */
double rng_normal(uint64_t *state);

#endif
