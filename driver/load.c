/*
 * load.c: portc_graph_load, the one door for model files: ONNX files go to the importer
 * (onnx/), everything else is .ptg text (ir/). It lives here so that ir/ does not know onnx/.
 */
#include <string.h>

#include "../ir/graph.h"

portc_status portc_graph_load(const char *path, portc_graph **out) {
  if (!out) return err_set(PORTC_ERR_INVALID, "graph_load: out is NULL");
  *out = NULL;
  size_t len = path ? strlen(path) : 0;
  if (len > 5 && strcmp(path + len - 5, ".onnx") == 0) return portc_graph_from_onnx(path, out);
  if (!path) return err_set(PORTC_ERR_IO, "graph_load: path is NULL");
  return graph_load_text(path, out);
}
