/*
 * fuzz_npz.c: libFuzzer target for the .npz (ZIP) reader. The first byte picks the member asked
 * for; any archive must give that member's tensor or an error with a message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "npz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const keys[] = {"w", "x", "arr_0", "b"};
  if (size < 2) return 0;
  const char *key = keys[data[0] % 4];
  FILE *f = fmemopen((void *)(data + 1), size - 1, "rb");
  if (!f) return 0;
  portc_tensor *t = NULL;
  portc_status st = npz_read(f, "fuzz.npz", key, &t);
  fclose(f);
  if (st != PORTC_OK) {
    if (t || !*portc_last_error()) abort();
    return 0;
  }
  if (portc_tensor_numel(t) < 0) abort();
  portc_tensor_free(t);
  return 0;
}
