/*
 * reference.h: the float64 reference evaluator's values and entry points.
 *
 * A value holds its logical dtype and, for storage, doubles (floating dtypes) or int64 (integer
 * dtypes and bool), so integer arithmetic is exact and floating arithmetic runs in float64 with
 * no rounding between ops. Inputs, parameters, constants and explicit casts are rounded to their
 * dtype; nothing else is.
 */
#ifndef PORTC_CONFORMANCE_REFERENCE_H
#define PORTC_CONFORMANCE_REFERENCE_H

#include "../ir/graph.h"

typedef struct rval {
  portc_dtype dt;
  int rank;
  int64_t shape[PORTC_MAX_RANK];
  int64_t numel;
  double *f;  /* floating dtypes */
  int64_t *i; /* i32, i64, bool */
} rval;

rval *rval_new(portc_dtype dt, int rank, const int64_t *shape); /* NULL when out of memory */
void rval_free(rval *v);

struct portc_bindings {
  const portc_graph *g;
  int64_t *sym;       /* per graph symbol */
  bool *sym_set;
  int nsyms;
  portc_tensor **given; /* per node: the tensor bound to an input or parameter, or NULL */
  portc_tensor **used;  /* per node: what the last run used (after seeding and rounding) */
  int n;
  bool seeded;
  uint64_t seed;
};

/* the value of a source node as the run sees it */
portc_status ref_source(const portc_graph *g, portc_bindings *b, int id, const int64_t *shape, rval **out);

/* evaluates one computing node; out is allocated with its concrete shape and dtype */
portc_status ref_eval(const portc_graph *g, const node *n, rval *const *in, rval *out);

/* seeded generator shared by inputs and parameters */
uint64_t rng_next(uint64_t *state);
double rng_uniform(uint64_t *state); /* [0, 1) */
double rng_normal(uint64_t *state);

#endif
