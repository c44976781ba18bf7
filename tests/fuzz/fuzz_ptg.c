/*
 * fuzz_ptg.c: libFuzzer target for the .ptg text parser. Any text must parse into a graph or give
 * an error with a message; a graph that parses must print to text that parses again and prints the
 * same (the format's round-trip promise, docs/ptg.md).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portc/portc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  portc_graph *g = NULL;
  portc_status st = portc_graph_parse(text, "fuzz.ptg", &g);
  free(text);
  if (st != PORTC_OK) {
    if (g || !*portc_last_error()) abort();
    return 0;
  }
  char *printed = portc_graph_print(g);
  portc_graph *again = NULL;
  if (!printed || portc_graph_parse(printed, "printed", &again) != PORTC_OK) abort();
  char *reprinted = portc_graph_print(again);
  if (!reprinted || strcmp(printed, reprinted) != 0) abort();
  if (portc_graph_hash(g) != portc_graph_hash(again)) abort();
  free(printed);
  free(reprinted);
  portc_graph_free(again);
  portc_graph_free(g);
  return 0;
}
