/*
 * matmul_rows.c: a matmul of a weight matrix whose left operand only reorders its rows is the
 * matmul of the rows as they lie, reordered after. ONNX exporters write a sequence-first layer
 * applied to a batch-first input so (PyTorch's MultiheadAttention: MatMul(Transpose(x, [1,0,2]),
 * W)); every row of the product depends on its own row of x alone, so the order can move to the
 * result, and the matmul reads a plain row-major matrix, which the fast matmul kernels and the
 * vendor libraries take (on an H100, f32: 498 us for the permuted operand on the SIMT kernel,
 * against 40 TFLOP/s for the plain ones of the same layer).
 *
 *   before: t = permute(x, perm=[1, 0, 2])      x: f32[16, 128, 512]   w: f32[512, 1536]
 *           y = matmul(t, w)                     [128, 16, 1536]
 *   after:  y.rows = matmul(x, w)                [16, 128, 1536]
 *           y      = permute(y.rows, perm=[1, 0, 2])
 *
 * Elementwise ops after the matmul whose other operands are per column (a bias) or scalars move
 * with it, so its epilogue stays fused; the permuted result is a view that the ops after them
 * read in place.
 */
#include <stdio.h>

#include "passes.h"

/* the permute feeding matmul i's left operand, when it keeps the reduced (last) axis last and
 * the right operand is one matrix for every row; -1 otherwise */
static int row_permute(const portc_graph *g, int i) {
  const node *mm = &g->nodes[i];
  if (mm->op != OP_matmul) return -1;
  const node *a = &g->nodes[mm->in[0]], *b = &g->nodes[mm->in[1]];
  int r = a->sh.rank;
  if (a->op != OP_permute || r < 3 || b->sh.rank != 2) return -1;
  const attr *p = attr_get(a, "perm");
  if (!p || p->n != r || p->v[r - 1] != r - 1) return -1;
  bool moves = false;
  for (int d = 0; d < r; d++) moves = moves || p->v[d] != d;
  return moves ? mm->in[0] : -1;
}

static int permute_behind(const portc_graph *g, int i, int *from);

/* the one operand of elementwise node i that is such a matmul or another op of its epilogue, of
 * i's own shape, where the others are per column (rank 1, as a bias) or scalars: they broadcast
 * alike in either row order; -1 otherwise */
static int chain_operand(const portc_graph *g, int i) {
  const node *e = &g->nodes[i];
  if (!op_elementwise(e)) return -1;
  int chain = -1, from;
  for (int j = 0; j < e->nin; j++) {
    const node *x = &g->nodes[e->in[j]];
    if (x->sh.rank <= 1) continue;
    if (chain >= 0 || !shape_eq(&x->sh, &e->sh) || permute_behind(g, e->in[j], &from) < 0) return -1;
    chain = e->in[j];
  }
  return chain;
}

/* the row permute behind node i: i is a matmul whose left operand it is, or an op of that
 * matmul's epilogue (chain_operand); *from: the node it permutes */
static int permute_behind(const portc_graph *g, int i, int *from) {
  int p = row_permute(g, i), c;
  if (p < 0 && (c = chain_operand(g, i)) >= 0) p = permute_behind(g, c, from);
  if (p >= 0) *from = g->nodes[p].in[0];
  return p;
}

static bool reorders(const portc_graph *g, int i) {
  int from;
  return permute_behind(g, i, &from) >= 0;
}

/* node i computed on the rows as they lie (a matmul of the permute's input, or an epilogue op of
 * the unpermuted value behind its chain operand's permute), then permuted under its own name */
static portc_node reorder(portc_graph *out, const portc_graph *g, int i, const int32_t *remap) {
  const node *n = &g->nodes[i];
  int from, p = permute_behind(g, i, &from), c = chain_operand(g, i);
  int32_t in[64];
  for (int j = 0; j < n->nin; j++) in[j] = remap[n->in[j]];
  if (c < 0) in[0] = remap[from]; /* the matmul: its left operand unpermuted */
  for (int j = 0; j < n->nin && c >= 0; j++)
    if (n->in[j] == c) in[j] = out->nodes[remap[c]].in[0]; /* the chain operand's value before its permute */
  char name[256];
  snprintf(name, sizeof name, "%s.rows", n->name);
  portc_node rows = copy_op_onto(out, g, i, in, NULL, node_name_taken(out, name) ? NULL : name);
  if (rows < 0) return rows;
  return copy_op_onto(out, g, p, &rows, NULL, n->name); /* the same order, after */
}

portc_status matmul_rows(portc_graph **gp, bool *changed) { return rebuild_replacing(gp, "matmul_rows", reorders, reorder, changed); }

/* The heads of attention merged for its output projection: y = matmul(reshape(permute(a,
 * [0, 2, 1, 3]), [B, S, H*D]), w), a: [B, H, S, D]. The permute keeps the last axis last, but the
 * reshape merges it with the heads, which lie S*D elements apart: the reduction axis is no
 * matrix's, so no vendor library takes the operand and the matmul gathers it element by element
 * (on an H100, f32: 82 us against cuBLAS's 36 for the whole product). Where the target asks
 * (lower_options.copy_merged_rows), the operand (the last view) is marked `copied`: fusion
 * computes it into memory of its own (a copy as fast as the memory, about 6 us there), which the
 * matmul reads as a matrix. */

/* whether a permute behind matmul i's left operand (through reshapes) keeps its last axis last,
 * and the operand's reduction merges it with axes that do not lie next to it */
static bool merges_apart(const portc_graph *g, int i) {
  const node *mm = &g->nodes[i];
  if (mm->op != OP_matmul || g->nodes[mm->in[1]].sh.rank != 2) return false;
  const shape *as = &g->nodes[mm->in[0]].sh;
  const dim K = as->d[as->rank - 1];
  int v = mm->in[0];
  while (g->nodes[v].op == OP_reshape) v = g->nodes[v].in[0];
  const node *p = &g->nodes[v];
  const attr *perm = attr_get(p, "perm");
  const int r = p->sh.rank;
  if (p->op != OP_permute || K.sym >= 0 || !perm || perm->n != r || perm->v[r - 1] != r - 1) return false;
  int64_t merged = 1;
  int d = r - 1;
  for (; d >= 0 && merged < K.c; d--) {
    if (p->sh.d[d].sym >= 0) return false;
    merged *= p->sh.d[d].c;
  }
  if (merged != K.c || d == r - 2) return false; /* no merge of whole axes, or the last axis alone */
  for (int j = d + 1; j < r - 1; j++)
    if (perm->v[j] + 1 != perm->v[j + 1]) return true; /* merged axes that lie apart */
  return false;
}

portc_status matmul_merged_rows(portc_graph *g, unsigned dtypes, bool *changed) {
  *changed = false;
  for (int i = 0; i < g->n; i++) {
    const bool taken = dtypes >> g->nodes[i].dt & 1u;
    node *rows = taken && merges_apart(g, i) ? &g->nodes[g->nodes[i].in[0]] : NULL; /* the operand, after the reshapes */
    if (rows && !rows->copied) rows->copied = true, *changed = true;
  }
  return PORTC_OK;
}
