/*
 * fuzz_onnx.c: libFuzzer target for the ONNX importer. Any bytes must give a graph that verifies
 * and prints, or an error with a message: never a crash, a leak or undefined behaviour (the
 * target is built with ASan and UBSan). External data is refused for models in memory, so the
 * fuzzer never reads files.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portc/portc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  portc_graph *g = NULL;
  portc_status st = portc_graph_from_onnx_memory(data, size, "fuzz.onnx", &g);
  if (st != PORTC_OK) {
    if (g || !*portc_last_error()) abort(); /* a failure has a message and no graph */
    return 0;
  }
  if (portc_graph_verify(g, NULL) != PORTC_OK) abort(); /* the importer returns verified graphs */
  char *text = portc_graph_print(g);
  if (!text) abort();
  portc_graph *again = NULL;
  if (portc_graph_parse(text, "printed", &again) != PORTC_OK) abort(); /* its text parses */
  portc_graph_free(again);
  free(text);
  portc_graph_free(g);
  return 0;
}
