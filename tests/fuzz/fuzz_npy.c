/*
 * fuzz_npy.c: libFuzzer target for the .npy reader. Any bytes must give a tensor or an error with
 * a message; a tensor that is read must write back and read again to the same dtype, shape and
 * bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FILE *f = fmemopen((void *)data, size ? size : 1, "rb");
  if (!f) return 0;
  portc_tensor *t = NULL;
  portc_status st = size ? npy_read(f, "fuzz.npy", &t) : PORTC_ERR_PARSE;
  fclose(f);
  if (st != PORTC_OK) {
    if (t || (size && !*portc_last_error())) abort();
    return 0;
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *w = open_memstream(&buf, &len);
  if (!w || !npy_write(w, t)) abort();
  fclose(w);
  FILE *r = fmemopen(buf, len, "rb");
  portc_tensor *again = NULL;
  if (!r || npy_read(r, "again.npy", &again) != PORTC_OK) abort();
  fclose(r);
  size_t bytes = (size_t)portc_tensor_numel(t) * portc_dtype_size(t->dtype);
  if (again->dtype != t->dtype || again->rank != t->rank || memcmp(again->shape, t->shape, sizeof(int64_t) * (size_t)t->rank) != 0 ||
      memcmp(again->data, t->data, bytes) != 0)
    abort();
  portc_tensor_free(again);
  portc_tensor_free(t);
  free(buf);
  return 0;
}
