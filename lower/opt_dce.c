/*
 * opt_dce.c: dead code elimination. Nodes that no output depends on are removed and the graph
 * is compacted; inputs and parameters stay, since callers bind them by name.
 *
 *   before: a = exp(x);  b = neg(x);  output a
 *   after:  a = exp(x);               output a
 */
#include <stdlib.h>

#include "passes.h"

portc_status opt_dce(portc_graph *g, bool *changed) {
  bool *live = calloc((size_t)g->n + 1, sizeof *live);
  int32_t *to = malloc(sizeof(int32_t) * (size_t)(g->n + 1));
  if (!live || !to) {
    free(live);
    free(to);
    return err_set(PORTC_ERR_NOMEM, "dce: out of memory");
  }
  for (int k = 0; k < g->nout; k++) live[g->outputs[k]] = true;
  for (int i = g->n - 1; i >= 0; i--) {
    const node *n = &g->nodes[i];
    if (n->op == OP_input || n->op == OP_param) live[i] = true;
    if (!live[i]) continue;
    for (int k = 0; k < n->nin; k++) live[n->in[k]] = true;
  }
  int m = 0;
  for (int i = 0; i < g->n; i++) {
    if (!live[i]) {
      node_free_data(&g->nodes[i]);
      continue;
    }
    node *n = &g->nodes[i];
    for (int k = 0; k < n->nin; k++) n->in[k] = to[n->in[k]];
    to[i] = m;
    g->nodes[m++] = *n;
  }
  for (int k = 0; k < g->nout; k++) g->outputs[k] = to[g->outputs[k]];
  *changed = m != g->n;
  g->n = m;
  if (*changed) graph_names_rebuild(g);
  free(live);
  free(to);
  return PORTC_OK;
}
