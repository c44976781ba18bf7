/*
 * decompose.c: rewrites each composite op into primitive ops, which fusion then puts back
 * together into one kernel per composite (Inductor's approach). The formulas are the ones the
 * reference evaluator uses, term for term.
 *
 *   before: y = softmax(x, axis=-1)
 *   after:  y.max = max(x, axes=[-1], keepdim=true)
 *           y.sub = sub(x, y.max)
 *           y.exp = exp(y.sub)
 *           y.sum = sum(y.exp, axes=[-1], keepdim=true)
 *           y     = div(y.exp, y.sum)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kir.h"
#include "passes.h"

typedef struct dctx {
  portc_graph *g;
  const char *base; /* the composite's name: pieces are base.piece, the last one is base */
} dctx;

static portc_node named(dctx *c, portc_node n, const char *piece) {
  if (n < 0) return n;
  char name[256];
  if (piece) snprintf(name, sizeof name, "%s.%s", c->base, piece);
  else snprintf(name, sizeof name, "%s", c->base);
  /* the user's graph may already use base.piece: fall back to an automatic name */
  if (node_name_taken(c->g, name)) return n;
  portc_status st = portc_set_name(c->g, n, name);
  return st ? -(portc_node)st : n;
}

static portc_node scalar(dctx *c, portc_dtype t, double v, const char *piece) {
  return named(c, portc_scalar(c->g, t, v), piece);
}

static portc_node softmax(dctx *c, portc_node x, int64_t axis, bool log_form) {
  portc_graph *g = c->g;
  portc_node m = named(c, portc_max(g, x, 1, &axis, true), "max");
  portc_node d = named(c, portc_sub(g, x, m), "sub");
  portc_node e = named(c, portc_exp(g, d), "exp");
  portc_node s = named(c, portc_sum(g, e, 1, &axis, true), "sum");
  if (!log_form) return named(c, portc_div(g, e, s), NULL);
  portc_node l = named(c, portc_log(g, s), "log");
  return named(c, portc_sub(g, d, l), NULL);
}

static portc_node norm(dctx *c, const node *n, const int32_t *in, bool rms) {
  portc_graph *g = c->g;
  int64_t last = -1;
  portc_node x = in[0];
  portc_dtype t = g->nodes[x].dt;
  portc_node centered = x;
  if (!rms) {
    portc_node mu = named(c, portc_mean(g, x, 1, &last, true), "mean");
    centered = named(c, portc_sub(g, x, mu), "center");
  }
  portc_node sq = named(c, portc_mul(g, centered, centered), "sq");
  portc_node var = named(c, portc_mean(g, sq, 1, &last, true), rms ? "ms" : "var");
  portc_node ve = named(c, portc_add(g, var, scalar(c, t, attr_f(n, "eps"), "eps")), "veps");
  portc_node r = named(c, portc_rsqrt(g, ve), "rstd");
  bool has_w = n->nin > 1, has_b = n->nin > 2;
  portc_node y = named(c, portc_mul(g, centered, r), has_w ? "norm" : NULL);
  if (has_w) y = named(c, portc_mul(g, y, in[1]), has_b ? "scale" : NULL);
  if (has_b) y = named(c, portc_add(g, y, in[2]), NULL);
  return y;
}

static portc_node attention(dctx *c, const node *n, const int32_t *in) {
  portc_graph *g = c->g;
  /* copied, not pointed to: adding nodes below may move g->nodes */
  const int krank = g->nodes[in[1]].sh.rank;
  const dim D = g->nodes[in[0]].sh.d[g->nodes[in[0]].sh.rank - 1];
  const portc_dtype qdt = g->nodes[in[0]].dt;
  int64_t perm[PORTC_MAX_RANK];
  for (int d = 0; d < krank; d++) perm[d] = d;
  perm[krank - 2] = krank - 1, perm[krank - 1] = krank - 2;
  portc_node kt = named(c, portc_permute(g, in[1], krank, perm), "kt");
  portc_node s = named(c, portc_matmul(g, in[0], kt), "scores");
  const attr *sc = attr_get(n, "scale");
  if (!sc->set && D.sym >= 0) return err_node(PORTC_ERR_SHAPE, "attention %s: a symbolic head size needs an explicit scale", c->base);
  double scale = sc->set ? sc->f : 1.0 / sqrt((double)D.c);
  s = named(c, portc_mul(g, s, scalar(c, qdt, scale, "scale")), "scaled");
  if (n->nin > 3) s = named(c, portc_add(g, s, in[3]), "biased");
  if (attr_i(n, "causal")) s = named(c, portc_causal_mask(g, s), "masked");
  dctx inner = *c;
  char base[256];
  snprintf(base, sizeof base, "%s.p", c->base);
  inner.base = base;
  portc_node p = softmax(&inner, s, -1, false);
  return named(c, portc_matmul(g, p, in[2]), NULL);
}

/* a node whose shape has a constant dimension of 0 */
static bool empty_result(const node *x) {
  for (int d = 0; d < x->sh.rank; d++)
    if (x->sh.d[d].sym < 0 && x->sh.d[d].c == 0) return true;
  return false;
}

portc_status decompose(portc_graph **gp, unsigned whole_attention, bool *changed) {
  portc_graph *g = *gp, *out = portc_graph_new(g->name);
  int32_t *remap = malloc(sizeof(int32_t) * (size_t)(g->n + 1));
  if (!out || !remap) {
    portc_graph_free(out);
    free(remap);
    return err_set(PORTC_ERR_NOMEM, "decompose: out of memory");
  }
  out->next_auto = g->next_auto;
  *changed = false;
  portc_status st = PORTC_OK;
  for (int i = 0; i < g->n && !st; i++) {
    const node *x = &g->nodes[i];
    bool whole = x->op == OP_attention && (whole_attention >> x->dt & 1u) && kir_attention_fits(g, i); /* one kernel */
    if (op_get(x->op)->kind != K_COMPOSITE || whole) {
      remap[i] = copy_node(out, g, i, remap, NULL);
    } else {
      int32_t in[4];
      for (int k = 0; k < x->nin; k++) in[k] = remap[x->in[k]];
      dctx c = {out, x->name};
      if (empty_result(x)) { /* nothing to compute (a softmax over an axis of 0): an empty constant */
        int64_t shape[PORTC_MAX_RANK];
        for (int d = 0; d < x->sh.rank; d++) shape[d] = x->sh.d[d].c;
        remap[i] = named(&c, portc_const(out, x->dt, x->sh.rank, shape, NULL, 0), NULL);
      } else {
        switch (x->op) {
        case OP_softmax: remap[i] = softmax(&c, in[0], attr_i(x, "axis"), false); break;
        case OP_log_softmax: remap[i] = softmax(&c, in[0], attr_i(x, "axis"), true); break;
        case OP_layer_norm: remap[i] = norm(&c, x, in, false); break;
        case OP_rms_norm: remap[i] = norm(&c, x, in, true); break;
        default: remap[i] = attention(&c, x, in); break;
        }
      }
      *changed = true;
    }
    if (remap[i] < 0) st = err_set(portc_node_status(remap[i]), "decompose %s: %s", x->name, portc_last_error());
  }
  st = rebuild_finish(gp, out, remap, st);
  free(remap);
  return st;
}
