/*
 * fold_batch_sum.c: a batched matmul summed over its batch is one matmul whose reduction runs
 * over the batch too. The weight gradient of a linear layer applied to a batch of sequences comes
 * out of the gradient rules so (x_b^T dy_b for each b, then the sum, because the shapes were
 * symbolic there); once the sizes are known it is a single GEMM over B*S rows that a vendor
 * library runs at full rate, with no [B, K, N] intermediate to write and sum (on an H200, the
 * transformer layer's weight gradients: 0.16 ms matmul + 0.16 ms sum each, before).
 *
 *   before: xt = permute(x, perm=[0, 2, 1])       x: f32[16, 512, 1024]   dy: f32[16, 512, 256]
 *           p  = matmul(xt, dy)                    [16, 1024, 256]
 *           dw = sum(p, axes=[0])                  [1024, 256]
 *   after:  dw.rows = reshape(x, shape=[8192, 1024])   dw.drows = reshape(dy, shape=[8192, 256])
 *           dw.t    = permute(dw.rows, perm=[1, 0])
 *           dw      = matmul(dw.t, dw.drows)
 * (a sum with keepdim, [1, 1024, 256], reshapes that matmul's result).
 */
#include <stdio.h>
#include <string.h>

#include "passes.h"

/* the input of x when x permutes the last two dimensions of a rank-r value and nothing else */
static int swapped_from(const node *x, int r) {
  if (x->op != OP_permute || x->sh.rank != r) return -1;
  const attr *p = attr_get(x, "perm");
  if (!p || p->n != r) return -1;
  for (int d = 0; d < r; d++)
    if (p->v[d] != (d < r - 2 ? d : d == r - 2 ? r - 1 : r - 2)) return -1;
  return x->in[0];
}

/* whether value n lies in memory as its shape says, seen through reshapes: not a permuted or
 * broadcast view, which the flat matmul would read through a gather no library takes (a
 * [256, 256] result over 8192 rows in a few work groups: 0.63 ms, where the batched form took 0.11) */
static bool lies_flat(const portc_graph *g, int n) {
  while (g->nodes[n].op == OP_reshape) n = g->nodes[n].in[0];
  return op_get(g->nodes[n].op)->kind != K_VIEW;
}

static bool folds(const portc_graph *g, int i) {
  const node *x = &g->nodes[i];
  if (x->op != OP_sum) return false;
  const attr *axes = attr_get(x, "axes"); /* with keepdim, the [M, N] result is reshaped to [1, ..., M, N] */
  const node *mm = &g->nodes[x->in[0]];
  int r = mm->sh.rank;
  if (mm->op != OP_matmul || r < 3 || !axes || axes->n != r - 2 || shape_numel_const(&mm->sh) < 0) return false;
  bool seen[PORTC_MAX_RANK] = {false};
  for (int k = 0; k < axes->n; k++) {
    int64_t a = axes->v[k] < 0 ? axes->v[k] + r : axes->v[k];
    if (a < 0 || a >= r - 2 || seen[a]) return false;
    seen[a] = true;
  }
  const node *a = &g->nodes[mm->in[0]], *b = &g->nodes[mm->in[1]];
  if (a->sh.rank != r || b->sh.rank != r || a->dt != b->dt || x->dt != mm->dt) return false;
  if (shape_numel_const(&b->sh) < 0) return false; /* the rows, B*S: S may be symbolic where the result is not */
  for (int d = 0; d < r - 2; d++) /* the same batch on both sides: no broadcasting */
    if (a->sh.d[d].c != mm->sh.d[d].c || b->sh.d[d].c != mm->sh.d[d].c) return false;
  int src = swapped_from(a, r); /* A^T's rows are x's */
  return src >= 0 && lies_flat(g, src) && lies_flat(g, mm->in[1]);
}

static void name(portc_graph *out, portc_node n, const char *base, const char *piece) {
  char s[256];
  if (piece) snprintf(s, sizeof s, "%s.%s", base, piece);
  else snprintf(s, sizeof s, "%s", base);
  if (n >= 0 && !node_name_taken(out, s)) portc_set_name(out, n, s);
}

static portc_node fold(portc_graph *out, const portc_graph *g, int i, const int32_t *remap) {
  const node *x = &g->nodes[i], *mm = &g->nodes[x->in[0]];
  int r = mm->sh.rank, src = swapped_from(&g->nodes[mm->in[0]], r);
  const node *b = &g->nodes[mm->in[1]];
  int64_t rows = 1;
  for (int d = 0; d < r - 2; d++) rows *= mm->sh.d[d].c;
  rows *= b->sh.d[r - 2].c;
  portc_dim ax[2] = {{rows, NULL}, {mm->sh.d[r - 2].c, NULL}}, bx[2] = {{rows, NULL}, {mm->sh.d[r - 1].c, NULL}};
  portc_node ar = portc_reshape(out, remap[src], 2, ax), br = portc_reshape(out, remap[mm->in[1]], 2, bx);
  name(out, ar, x->name, "rows"), name(out, br, x->name, "drows");
  portc_node at = portc_op(out, "permute", 1, &ar, "perm=[1, 0]");
  name(out, at, x->name, "t");
  portc_node in[2] = {at, br};
  portc_node y = portc_op(out, "matmul", 2, in, "");
  if (x->sh.rank > 2) { /* keepdim */
    portc_dim d[PORTC_MAX_RANK];
    for (int k = 0; k < x->sh.rank; k++) d[k] = (portc_dim){x->sh.d[k].c, NULL};
    name(out, y, x->name, "flat");
    y = portc_reshape(out, y, x->sh.rank, d);
  }
  name(out, y, x->name, NULL);
  return y;
}

portc_status fold_batch_sum(portc_graph **gp, bool *changed) { return rebuild_replacing(gp, "fold_batch_sum", folds, fold, changed); }
