/*
 * passes.h: the graph passes of the lowering pipeline and the helpers they share. A pass that
 * rebuilds the graph takes it by pointer and replaces it; one that edits in place takes it by
 * value. Each reports whether it changed anything; failures return a status with the last error.
 */
#ifndef PORTC_LOWER_PASSES_H
#define PORTC_LOWER_PASSES_H

#include "../ir/graph.h"

/* Copies node i of src into dst with inputs renamed through remap; symbols take the values in
 * symvals (indexed by src symbol) when it is not NULL. Returns the new node or a failure. */
portc_node copy_node(portc_graph *dst, const portc_graph *src, int i, const int32_t *remap, const int64_t *symvals);
/* the same under another name (NULL: node i's) */
portc_node copy_node_named(portc_graph *dst, const portc_graph *src, int i, const int32_t *remap, const int64_t *symvals, const char *name);
/* op node i of src (not a source) appended to dst on the inputs `in` (dst's nodes), under `name`
 * (NULL: an automatic one), its attributes' symbols carried over as copy_node does */
portc_node copy_op_onto(portc_graph *dst, const portc_graph *src, int i, const int32_t *in, const int64_t *symvals, const char *name);
/* an op computed element by element from its operands' elements at the same (broadcast) index,
 * which a pass may move a layout change across (channels_last.c, matmul_rows.c) */
bool op_elementwise(const node *n);
/* A copy of g, with symbols replaced by symvals when it is not NULL. */
portc_status graph_copy(const portc_graph *g, const int64_t *symvals, portc_graph **out);
/* the same, its matmul, conv2d and attention nodes of f32 operands built under autocast (f16 or
 * bf16; PORTC_F32: none), as portc_graph_autocast builds them; *converted (may be NULL) counts
 * the nodes so built */
portc_status graph_copy_autocast(const portc_graph *g, const int64_t *symvals, portc_dtype autocast, portc_graph **out, int *converted);
/* The end of a pass that rebuilt *g into out (remap: old node -> new): out takes g's outputs and
 * folder and replaces *g. On failure (st, or an output) out is freed and *g left as it was. */
portc_status rebuild_finish(portc_graph **g, portc_graph *out, const int32_t *remap, portc_status st);

/* A pass that rebuilds *g replacing some nodes: node i is replace(out, g, i, remap) where
 * replaces(g, i), else copied; nothing is rebuilt when no node qualifies (*changed false). */
typedef bool (*node_test)(const portc_graph *g, int i);
typedef portc_node (*node_rewrite)(portc_graph *out, const portc_graph *g, int i, const int32_t *remap);
portc_status rebuild_replacing(portc_graph **g, const char *pass, node_test replaces, node_rewrite replace, bool *changed);

/* composite ops into primitives; attention of the dtypes in `attention` (bit 1 << dtype) stays
 * one node, which fusion makes one kernel, where kir_attention_fits */
/* matmul, softmax, matmul into attention, for the dtypes in `attention` (bit 1 << dtype) */
portc_status form_attention(portc_graph **g, unsigned attention, bool *changed);
portc_status decompose(portc_graph **g, unsigned attention, bool *changed);
portc_status split_concat(portc_graph **g, bool *changed);
portc_status split_reduce(portc_graph **g, bool *changed);
portc_status fold_batch_sum(portc_graph **g, bool *changed);
/* matmul_rows.c: a weight matmul of row-permuted rows reads them as they lie, permuted after */
portc_status matmul_rows(portc_graph **g, bool *changed);
/* ... and where a permute merges axes lying apart into its reduction (heads merged after
 * attention), marks the operand `copied`: fusion computes it into a matrix the matmul reads */
portc_status matmul_merged_rows(portc_graph *g, unsigned dtypes, bool *changed);
/* widenings of 16-bit floats to f32 moved past ops that only select or move values, and
 * cancelled where narrowed again (cast_sink.c) */
portc_status cast_sink(portc_graph **g, bool *changed);
/* convolutions of the dtypes in `dtypes` (bit 1 << dtype) that kir_channels_last_fits made
 * channels-last when `convert`, with the permutes between them moved through elementwise ops
 * until they cancel; channels-last ones outside `dtypes` made NCHW (channels_last.c) */
portc_status channels_last(portc_graph **g, unsigned dtypes, bool convert, bool *changed);
portc_status opt_fold(portc_graph *g, bool *changed);
portc_status opt_cse(portc_graph *g, bool *changed);
portc_status opt_dce(portc_graph *g, bool *changed);

#endif
