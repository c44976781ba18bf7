/*
 * tensor.c: host tensors, the way data enters and leaves libportc. Elements are kept in their
 * own dtype's bytes (f16/bf16 as bits), so what a caller hands over is what a device receives.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "graph.h"

portc_tensor *portc_tensor_new(portc_dtype t, int rank, const int64_t *shape) {
  if (portc_dtype_size(t) == 0) {
    err_set(PORTC_ERR_DTYPE, "tensor: unknown dtype %d", (int)t);
    return NULL;
  }
  if (rank < 0 || rank > PORTC_MAX_RANK || (rank > 0 && !shape)) {
    err_set(PORTC_ERR_SHAPE, "tensor: rank %d is outside 0..%d", rank, PORTC_MAX_RANK);
    return NULL;
  }
  int64_t numel = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0) {
      err_set(PORTC_ERR_SHAPE, "tensor: dimension %d is negative (%lld)", i, (long long)shape[i]);
      return NULL;
    }
    if (shape[i] && numel > (INT64_MAX / 16) / shape[i]) {
      err_set(PORTC_ERR_SHAPE, "tensor: too many elements");
      return NULL;
    }
    numel *= shape[i];
  }
  portc_tensor *x = calloc(1, sizeof *x);
  size_t bytes = (size_t)numel * portc_dtype_size(t);
  if (!x || !(x->data = calloc(1, bytes ? bytes : 1))) {
    free(x);
    err_set(PORTC_ERR_NOMEM, "tensor: out of memory for %lld elements", (long long)numel);
    return NULL;
  }
  x->dtype = t;
  x->rank = rank;
  if (rank) memcpy(x->shape, shape, (size_t)rank * sizeof *shape);
  return x;
}

void portc_tensor_free(portc_tensor *t) {
  if (!t) return;
  free(t->data);
  free(t);
}

int64_t portc_tensor_numel(const portc_tensor *t) {
  if (!t) return 0;
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

double portc_tensor_get(const portc_tensor *t, int64_t i) {
  if (!t || i < 0 || i >= portc_tensor_numel(t)) return NAN; /* no such element */
  const void *d = t->data;
  switch (t->dtype) {
  case PORTC_F32: return ((const float *)d)[i];
  case PORTC_F16: return f16_value(((const uint16_t *)d)[i]);
  case PORTC_BF16: return bf16_value(((const uint16_t *)d)[i]);
  case PORTC_I32: return ((const int32_t *)d)[i];
  case PORTC_I64: return (double)((const int64_t *)d)[i];
  case PORTC_BOOL: return ((const uint8_t *)d)[i];
  case PORTC_F64: return ((const double *)d)[i];
  }
  return 0;
}

void portc_tensor_set(portc_tensor *t, int64_t i, double v) {
  if (!t || i < 0 || i >= portc_tensor_numel(t)) return; /* no such element */
  void *d = t->data;
  switch (t->dtype) {
  case PORTC_F32: ((float *)d)[i] = (float)v; break;
  case PORTC_F16: ((uint16_t *)d)[i] = f16_bits(v); break;
  case PORTC_BF16: ((uint16_t *)d)[i] = bf16_bits(v); break;
  case PORTC_I32: ((int32_t *)d)[i] = (int32_t)float_to_int(v, PORTC_I32); break;
  case PORTC_I64: ((int64_t *)d)[i] = float_to_int(v, PORTC_I64); break;
  case PORTC_BOOL: ((uint8_t *)d)[i] = v != 0; break;
  case PORTC_F64: ((double *)d)[i] = v; break;
  }
}
