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

#include "../ir/bindings.h"

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

/* evaluates one computing node; out is allocated with its concrete shape and dtype */
portc_status ref_eval(const node *n, rval *const *in, rval *out);
/* how near a draw of the inputs came to results the bounds (TOLERANCES.md) do not describe */
typedef struct conf_draw {
  /* the closest call among the graph's comparisons of computed f32 values (relu's and max
   * pooling's derivatives, masks): the least nonzero difference of their operands relative to the
   * larger operand's RMS, +INF without such a comparison. A target that rounds differently may
   * decide a closer call the other way and be right. */
  double closest;
  /* the most an output that is a sum (or a mean) cancelled: the least, over such outputs, of their
   * RMS over the RMS a sum of their terms with random signs has (sqrt(n) times the terms' RMS for
   * n terms a result), +INF without such an output. The bounds take a sum's magnitude from its
   * result; one that cancelled far below its terms keeps their rounding errors all the same. */
  double cancelled;
} conf_draw;

/* portc_reference_run without its updates, optionally reading f32 and bf16 denormal sources as
 * zeros (the reference for devices that may flush them, as Vulkan allows without float
 * controls); with draw, how near the draw came to what the bounds do not describe, as above */
portc_status conf_reference_run(const portc_graph *g, portc_bindings *b, bool flush_denormals, portc_tensor **outputs, conf_draw *draw);
/* portc_reference_run, and the draw's report as above */
portc_status conf_reference_update(const portc_graph *g, portc_bindings *b, portc_tensor **outputs, conf_draw *draw);

#endif
