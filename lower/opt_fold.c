/*
 * opt_fold.c: constant folding. An elementwise op whose operands are all one-element constants
 * becomes a constant, computed with the op's own formula from ops.def and rounded to its dtype
 * (as a target would store it).
 *
 *   before: e = const f32[] 1e-5;  h = const f32[] 2;  s = mul(e, h);  y = add(x, s)
 *   after:  s = const f32[] 2e-05;                                     y = add(x, s)
 */
#include <math.h>
#include <stdlib.h>

#include "../ir/dtype.h"
#include "../ir/ops_eval.h"
#include "passes.h"


static bool fold_f(enum op op, double x, double y, double *out) {
  switch (op) {
#define UNARY(id, acc, fx, ix) case OP_##id: *out = fx; return true;
#define BINARY(id, acc, fx, ix) case OP_##id: *out = fx; return true;
#define COMPARE(id, acc, fx) case OP_##id: *out = fx; return true;
#define OP(id, mi, ma, k, at)
#include "../ir/ops.def"
  default: return false;
  }
}

static bool fold_i(enum op op, int64_t x, int64_t y, int64_t *out) {
  bool faulted = false, *fault = &faulted;
  switch (op) {
#define UNARY(id, acc, fx, ix) case OP_##id: *out = ix; break;
#define BINARY(id, acc, fx, ix) case OP_##id: *out = ix; break;
#define COMPARE(id, acc, fx) case OP_##id: *out = fx; break;
#define OP(id, mi, ma, k, at)
#include "../ir/ops.def"
  default: return false;
  }
  return !faulted;
}

static bool scalar_const(const portc_graph *g, int32_t i) {
  return g->nodes[i].op == OP_const && g->nodes[i].value.n == 1;
}

/* the one value of a constant, as a double and as an integer */
static double cf(const node *c) { return c->value.f ? c->value.f[0] : (double)c->value.i[0]; }
static int64_t ci(const node *c) { return c->value.i ? c->value.i[0] : (int64_t)c->value.f[0]; }

portc_status opt_fold(portc_graph *g, bool *changed) {
  *changed = false;
  for (int i = 0; i < g->n; i++) {
    node *n = &g->nodes[i];
    enum op_kind k = op_get(n->op)->kind;
    if (k != K_UNARY && k != K_BINARY && k != K_COMPARE && k != K_CAST) continue;
    bool all = true;
    for (int j = 0; j < n->nin; j++) all = all && scalar_const(g, n->in[j]);
    if (!all) continue;
    const node *a = &g->nodes[n->in[0]], *b = n->nin > 1 ? &g->nodes[n->in[1]] : a;
    bool in_float = dtype_is_float(a->dt), out_float = dtype_is_float(n->dt);
    double f = 0;
    int64_t v = 0;
    if (k == K_CAST) {
      if (in_float && out_float) f = round_to_dtype(cf(a), n->dt);
      else if (in_float) v = float_to_int(cf(a), n->dt);
      else if (out_float) f = round_to_dtype((double)ci(a), n->dt);
      else v = wrap_int(ci(a), n->dt);
    } else if (in_float) {
      if (!fold_f(n->op, cf(a), cf(b), &f)) continue;
      if (out_float) f = round_to_dtype(f, n->dt);
      else v = f != 0;
    } else {
      if (!fold_i(n->op, ci(a), ci(b), &v)) continue;
      v = wrap_int(v, n->dt);
    }
    double *fv = out_float ? malloc(sizeof *fv) : NULL;
    int64_t *iv = out_float ? NULL : malloc(sizeof *iv);
    if (!fv && !iv) return err_set(PORTC_ERR_NOMEM, "fold: out of memory");
    if (fv) *fv = f;
    else *iv = v;
    free(n->in);
    n->in = NULL;
    n->nin = 0;
    n->op = OP_const;
    n->value = (cdata){.n = 1, .f = fv, .i = iv};
    *changed = true;
  }
  return PORTC_OK;
}
