/*
 * opt_cse.c: common subexpression elimination. A node equal to an earlier one (same op, dtype,
 * shape, operands and attributes; or a small constant with the same values) is replaced by it
 * in every use. Graph outputs keep their own node so that their names stay.
 *
 *   before: a = exp(x);  b = exp(x);  y = add(a, b)
 *   after:  a = exp(x);               y = add(a, a)      (b is left for dce)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static bool same_attrs(const node *a, const node *b) {
  const op_info *info = op_get(a->op);
  for (int k = 0; k < info->nattrs; k++) {
    const attr *x = &a->a[k], *y = &b->a[k];
    if (x->set != y->set || x->n != y->n || memcmp(&x->f, &y->f, sizeof x->f) != 0) return false;
    int count = info->attrs[k].kind == A_INTS || info->attrs[k].kind == A_DIMS ? x->n : 1;
    for (int j = 0; j < count; j++)
      if (x->v[j] != y->v[j] || (info->attrs[k].kind == A_DIMS && x->sym[j] != y->sym[j])) return false;
  }
  return true;
}

static bool equal_nodes(const node *a, const node *b) {
  if (a->op != b->op || a->dt != b->dt || a->nin != b->nin || !shape_eq(&a->sh, &b->sh)) return false;
  if (a->op == OP_input || a->op == OP_param) return false;
  if (a->op == OP_const) {
    if (a->value.n != b->value.n || a->value.n > 64) return false;
    size_t bytes = (size_t)a->value.n * 8;
    return a->value.f ? b->value.f && memcmp(a->value.f, b->value.f, bytes) == 0
                      : b->value.i && memcmp(a->value.i, b->value.i, bytes) == 0;
  }
  return memcmp(a->in, b->in, sizeof(int32_t) * (size_t)a->nin) == 0 && same_attrs(a, b);
}

portc_status opt_cse(portc_graph *g, bool *changed) {
  *changed = false;
  int32_t *repl = malloc(sizeof(int32_t) * (size_t)(g->n + 1));
  bool *is_out = calloc((size_t)g->n + 1, sizeof *is_out);
  if (!repl || !is_out) {
    free(repl);
    free(is_out);
    return err_set(PORTC_ERR_NOMEM, "cse: out of memory");
  }
  for (int k = 0; k < g->nout; k++) is_out[g->outputs[k]] = true;
  for (int i = 0; i < g->n; i++) {
    node *n = &g->nodes[i];
    for (int k = 0; k < n->nin; k++) n->in[k] = repl[n->in[k]];
    repl[i] = i;
    if (is_out[i]) continue;
    for (int j = 0; j < i; j++)
      if (repl[j] == j && equal_nodes(&g->nodes[j], n)) {
        repl[i] = j;
        *changed = true;
        break;
      }
  }
  free(repl);
  free(is_out);
  return PORTC_OK;
}
