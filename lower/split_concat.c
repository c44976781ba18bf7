/*
 * split_concat.c: a concat of more than MAX_CONCAT_INPUTS values becomes a concat of concats,
 * so that no kernel binds more buffers than GPU APIs guarantee per shader stage (Vulkan devices
 * offer 32 or fewer, lavapipe 32, WebGPU 8 to 10 by default). DenseNet's dense blocks concatenate
 * up to 49 feature maps.
 *
 *   before: y = concat(x0, x1, ..., x39, axis=1)
 *   after:  y.part0 = concat(x0, ..., x15, axis=1)
 *           y.part1 = concat(x16, ..., x31, axis=1)
 *           y.part2 = concat(x32, ..., x39, axis=1)
 *           y       = concat(y.part0, y.part1, y.part2, axis=1)
 */
#include <stdio.h>
#include <stdlib.h>

#include "passes.h"

#define MAX_CONCAT_INPUTS 16

static bool wide(const portc_graph *g, int i) { return g->nodes[i].op == OP_concat && g->nodes[i].nin > MAX_CONCAT_INPUTS; }

static portc_node split(portc_graph *out, const portc_graph *g, int i, const int32_t *remap) {
  const node *x = &g->nodes[i];
  portc_node parts[MAX_CONCAT_INPUTS], in[MAX_CONCAT_INPUTS];
  int64_t axis = attr_i(x, "axis");
  int np = 0;
  for (int k = 0; k < x->nin; k += MAX_CONCAT_INPUTS) {
    int n = x->nin - k < MAX_CONCAT_INPUTS ? x->nin - k : MAX_CONCAT_INPUTS;
    for (int j = 0; j < n; j++) in[j] = remap[x->in[k + j]];
    parts[np] = n == 1 ? in[0] : portc_concat(out, n, in, axis);
    char name[256];
    snprintf(name, sizeof name, "%s.part%d", x->name, np);
    if (parts[np] >= 0 && n > 1 && !node_name_taken(out, name)) portc_set_name(out, parts[np], name);
    np++;
  }
  portc_node y = portc_concat(out, np, parts, axis);
  if (y >= 0 && !node_name_taken(out, x->name)) portc_set_name(out, y, x->name);
  return y;
}

portc_status split_concat(portc_graph **gp, bool *changed) { return rebuild_replacing(gp, "split_concat", wide, split, changed); }
