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

static portc_node split(portc_graph *out, const node *x, const int32_t *remap) {
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

portc_status split_concat(portc_graph **gp, bool *changed) {
  portc_graph *g = *gp;
  *changed = false;
  bool any = false;
  for (int i = 0; i < g->n && !any; i++) any = g->nodes[i].op == OP_concat && g->nodes[i].nin > MAX_CONCAT_INPUTS;
  if (!any) return PORTC_OK;
  portc_graph *out = portc_graph_new(g->name);
  int32_t *remap = malloc(sizeof(int32_t) * (size_t)(g->n + 1));
  if (!out || !remap) {
    portc_graph_free(out);
    free(remap);
    return err_set(PORTC_ERR_NOMEM, "split_concat: out of memory");
  }
  out->next_auto = g->next_auto;
  portc_status st = PORTC_OK;
  for (int i = 0; i < g->n && !st; i++) {
    const node *x = &g->nodes[i];
    bool wide = x->op == OP_concat && x->nin > MAX_CONCAT_INPUTS;
    remap[i] = wide ? split(out, x, remap) : copy_node(out, g, i, remap, NULL);
    if (remap[i] < 0) st = err_set(portc_node_status(remap[i]), "split_concat %s: %s", x->name, portc_last_error());
  }
  st = rebuild_finish(gp, out, remap, st);
  free(remap);
  *changed = !st;
  return st;
}
