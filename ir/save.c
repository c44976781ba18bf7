/*
 * save.c: portc_graph_save(), a graph as .ptg text plus its weights. Parameters that hold their
 * values in memory (an imported model's initializers) go into an .npz archive beside the text and
 * become `file("M.npz", key="w")` declarations, so that numpy.load("M.npz") reads the weights and
 * portc_graph_load("M.ptg") gives back the same graph.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npz.h"

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

portc_status portc_graph_save(portc_graph *g, const char *ptg_path, const char *weights_path) {
  if (!g || !ptg_path) return err_set(PORTC_ERR_INVALID, "graph_save: graph or path is NULL");
  int held = 0;
  for (int i = 0; i < g->n; i++) held += g->nodes[i].op == OP_param && g->nodes[i].data && !g->nodes[i].file;
  if (held && !weights_path) return err_set(PORTC_ERR_INVALID, "graph %s holds %d weight tensors: name an .npz file for them", g->name, held);
  if (held) {
    npz_writer *w;
    portc_status st = npz_create(weights_path, &w);
    if (st) return st;
    for (int i = 0; i < g->n && !st; i++) {
      node *n = &g->nodes[i];
      if (n->op == OP_param && n->data && !n->file) st = npz_add(w, n->name, n->data->t);
    }
    portc_status closed = npz_close(w);
    if (st || closed) return st ? st : closed;
    /* the .ptg names the archive relative to itself: both are written side by side */
    for (int i = 0; i < g->n; i++) {
      node *n = &g->nodes[i];
      if (n->op != OP_param || !n->data || n->file) continue;
      if (!(n->file = strdup(base_name(weights_path))) || !(n->file_key = strdup(n->name))) return err_set(PORTC_ERR_NOMEM, "graph_save: out of memory");
    }
  }
  char *text = portc_graph_print(g);
  if (!text) return err_set(PORTC_ERR_NOMEM, "graph_save: out of memory");
  FILE *fp = fopen(ptg_path, "w");
  bool ok = fp && fputs(text, fp) >= 0;
  if (fp && fclose(fp) != 0) ok = false;
  free(text);
  return ok ? PORTC_OK : err_set(PORTC_ERR_IO, "%s: cannot write: %m", ptg_path);
}
