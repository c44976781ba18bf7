/*
 * autocast.c: mixed precision for a graph built without it, such as an imported ONNX model. The
 * copy's matmul, conv2d and attention nodes of f32 operands compute in f16 or bf16, exactly as
 * portc_graph_autocast would have built them (torch.autocast's rule): operands cast down, sums
 * in f32 on every target, the result cast back to f32 under the node's own name.
 */
#include "passes.h"

portc_status portc_graph_autocast_copy(const portc_graph *g, portc_dtype t, portc_graph **out, int *converted) {
  if (!g || !out) return err_set(PORTC_ERR_INVALID, "autocast copy: graph or out is NULL");
  *out = NULL;
  if (t != PORTC_F16 && t != PORTC_BF16) return err_set(PORTC_ERR_DTYPE, "autocast copy of %s: %s is not f16 or bf16", g->name, portc_dtype_name(t));
  if (g->nupd)
    return err_set(PORTC_ERR_INVALID, "autocast copy of %s: the graph trains (%d parameter updates); build it under autocast (portc_graph_autocast) before its forward pass, so that the gradients flow through the casts",
                   g->name, g->nupd);
  return graph_copy_autocast(g, NULL, t, out, converted);
}
