/*
 * reference_util.h: strided iteration and the op groups of the reference evaluator, shared by
 * reference_ops.c (elementwise, reductions, views) and reference_nn.c (contractions, pooling,
 * composites).
 */
#ifndef PORTC_CONFORMANCE_REFERENCE_UTIL_H
#define PORTC_CONFORMANCE_REFERENCE_UTIL_H

#include "reference.h"

/* walks an index space in row-major order, keeping one offset per stream */
typedef struct iter {
  int rank, n;
  int64_t shape[PORTC_MAX_RANK], idx[PORTC_MAX_RANK];
  int64_t st[3][PORTC_MAX_RANK];
  int64_t off[3];
} iter;

void it_init(iter *it, int rank, const int64_t *shape, int nstreams);
void it_step(iter *it);
/* strides of `in` read as if broadcast to oshape (0 along broadcast dimensions) */
void bstrides(const rval *in, int orank, const int64_t *oshape, int64_t *st);
void contiguous_strides(int rank, const int64_t *shape, int64_t *st);
void split_axis(const rval *x, int64_t axis, int64_t *outer, int64_t *n, int64_t *inner);

portc_status ref_matmul(const rval *a, const rval *b, rval *out);
portc_status ref_conv2d(const node *n, const rval *x, const rval *w, const rval *bias, rval *out);
portc_status ref_pool2d(const node *n, const rval *x, rval *out);
portc_status ref_composite(const node *n, rval *const *in, rval *out);

#endif
