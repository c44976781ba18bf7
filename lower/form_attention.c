/*
 * form_attention.c: finds attention written out as matmul, softmax, matmul (what ONNX exporters,
 * nn.MultiheadAttention and hand-written graphs give) and makes it one attention node, which the
 * targets that have an attention kernel run without writing the score matrix to memory (others
 * decompose it again, to the same ops).
 *
 *   before: kt = permute(k, perm=[0, 1, 3, 2])       after: y = attention(q, k, v, m, scale=0.125)
 *           s  = matmul(q, kt)
 *           z  = div(s, c)          (c: one element, 8; or mul by 0.125; optional)
 *           b  = add(z, m)          (a mask or bias that broadcasts to the scores; optional)
 *           p  = softmax(b, axis=-1)
 *           y  = matmul(p, v)
 *
 * Only attention of the dtypes given (bit 1 << dtype: those the target runs as one kernel) is
 * formed. A causal_mask between the scores and the softmax sets causal. Every value between the first
 * matmul and the last must be read only by the next op of the pattern (and not be an output).
 * Scales on q or k (PyTorch's exporter writes sqrt(scale) on each) stay where they are, with
 * scale=1 on the node.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"
#include "passes.h"

typedef struct pattern {
  int q, kt, v, mask; /* mask -1: none */
  double scale;
  bool causal;
} pattern;

/* the one value of a one-element float constant */
static bool scalar_of(const portc_graph *g, int i, double *f) {
  const node *c = &g->nodes[i];
  if (c->op != OP_const || c->value.n != 1 || !dtype_is_float(c->dt) || !c->value.f) return false;
  *f = c->value.f[0];
  return true;
}

/* is x a permute that swaps its last two dims and keeps the others? */
static bool swaps_last_two(const node *x) {
  if (x->op != OP_permute) return false;
  const attr *p = attr_get(x, "perm");
  int r = p->n;
  if (r < 2 || p->v[r - 1] != r - 2 || p->v[r - 2] != r - 1) return false;
  for (int d = 0; d + 2 < r; d++)
    if (p->v[d] != d) return false;
  return true;
}

/* can node i be the scores on their way to the softmax: their shape, from a matmul or a scale */
static bool scores_like(const portc_graph *g, int i, const shape *scores) {
  enum op op = g->nodes[i].op;
  return shape_eq(&g->nodes[i].sh, scores) && (op == OP_matmul || op == OP_mul || op == OP_div || op == OP_causal_mask);
}

/* i: a matmul; fills *p when it is the pattern's last one */
static bool match(const portc_graph *g, const int *uses, unsigned dtypes, int i, pattern *p) {
  const node *y = &g->nodes[i];
  if (y->op != OP_matmul || !dtype_is_float(y->dt) || !(dtypes >> y->dt & 1u)) return false;
  int cur = y->in[0];
  const node *sm = &g->nodes[cur];
  if (sm->op != OP_softmax || uses[cur] != 1 || norm_axis(attr_i(sm, "axis"), sm->sh.rank) != sm->sh.rank - 1) return false;
  *p = (pattern){.v = y->in[1], .mask = -1, .scale = 1.0};
  if (g->nodes[p->v].sh.rank < 2 || sm->sh.rank < 2) return false;
  const shape *scores = &sm->sh;
  cur = sm->in[0];
  /* back from the softmax to the first matmul: the causal mask, the mask, the scale, each at most
   * once (the scale: any number of factors), in that order */
  enum { SEEN_NONE, SEEN_CAUSAL, SEEN_MASK, SEEN_SCALE } seen = SEEN_NONE;
  for (;;) {
    const node *x = &g->nodes[cur];
    double f;
    if (uses[cur] != 1 || !shape_eq(&x->sh, scores)) return false;
    if (x->op == OP_matmul) break;
    if (x->op == OP_causal_mask && seen < SEEN_CAUSAL) {
      p->causal = true, seen = SEEN_CAUSAL;
      cur = x->in[0];
    } else if ((x->op == OP_mul || x->op == OP_div) && seen <= SEEN_SCALE &&
               (scalar_of(g, x->in[1], &f) || (x->op == OP_mul && scalar_of(g, x->in[0], &f)))) {
      if (f == 0 || !isfinite(f)) return false;
      p->scale *= x->op == OP_div ? 1.0 / f : f, seen = SEEN_SCALE;
      cur = scalar_of(g, x->in[1], &f) ? x->in[0] : x->in[1];
    } else if (x->op == OP_add && seen < SEEN_MASK) {
      /* the scores are the operand of their shape computed by the pattern's ops (a full-size
       * mask is read, not computed by a matmul or a scale) */
      int a = x->in[0], b = x->in[1];
      bool a_scores = scores_like(g, a, scores), b_scores = scores_like(g, b, scores);
      if (a_scores == b_scores) return false;
      p->mask = a_scores ? b : a, seen = SEEN_MASK;
      if (g->nodes[p->mask].dt != y->dt || g->nodes[p->mask].sh.rank < 2) return false;
      cur = a_scores ? a : b;
    } else {
      return false;
    }
  }
  const node *s = &g->nodes[cur];
  p->q = s->in[0], p->kt = s->in[1];
  const node *q = &g->nodes[p->q], *kt = &g->nodes[p->kt], *v = &g->nodes[p->v];
  return q->sh.rank >= 2 && kt->sh.rank >= 2 && q->dt == y->dt && kt->dt == y->dt && v->dt == y->dt;
}

/* k [..., Lk, D] from kt [..., D, Lk], in out: the input of a transpose, or under a scale by a
 * constant (mul(transpose(k), c): PyTorch's exporter scales k^T) the scaled input, or else a
 * permute of kt. Each view avoided keeps the chain of views behind k short (kir_build allows
 * KIR_MAX_STEPS). */
static portc_node untransposed(portc_graph *out, const portc_graph *g, int kt, const int32_t *remap, int depth) {
  const node *x = &g->nodes[kt];
  double f;
  if (swaps_last_two(x)) return remap[x->in[0]];
  if (depth < 4 && x->op == OP_mul && (scalar_of(g, x->in[0], &f) || scalar_of(g, x->in[1], &f))) {
    int c = scalar_of(g, x->in[1], &f) ? 1 : 0;
    portc_node inner = untransposed(out, g, x->in[1 - c], remap, depth + 1);
    return inner < 0 ? inner : portc_mul(out, inner, remap[x->in[c]]);
  }
  int64_t perm[PORTC_MAX_RANK];
  for (int d = 0; d < x->sh.rank; d++) perm[d] = d;
  perm[x->sh.rank - 2] = x->sh.rank - 1, perm[x->sh.rank - 1] = x->sh.rank - 2;
  return portc_permute(out, remap[kt], x->sh.rank, perm);
}

static portc_node build(portc_graph *out, const portc_graph *g, int i, const pattern *p, const int32_t *remap) {
  portc_node k = untransposed(out, g, p->kt, remap, 0);
  if (k < 0) return k;
  portc_node y = portc_attention_masked(out, remap[p->q], k, remap[p->v], p->mask >= 0 ? remap[p->mask] : PORTC_NONE, p->causal, p->scale);
  if (y < 0) return y;
  portc_status st = portc_set_name(out, y, g->nodes[i].name);
  return st ? -(portc_node)st : y;
}

portc_status form_attention(portc_graph **gp, unsigned dtypes, bool *changed) {
  portc_graph *g = *gp;
  *changed = false;
  int *uses = calloc((size_t)g->n + 1, sizeof *uses);
  pattern *pat = malloc(sizeof *pat * (size_t)(g->n + 1));
  int32_t *remap = malloc(sizeof *remap * (size_t)(g->n + 1));
  bool *is = calloc((size_t)g->n + 1, sizeof *is), any = false;
  portc_status st = PORTC_OK;
  if (!uses || !pat || !remap || !is) {
    st = err_set(PORTC_ERR_NOMEM, "form_attention: out of memory");
    goto done;
  }
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nin; k++) uses[g->nodes[i].in[k]]++;
  for (int k = 0; k < g->nout; k++) uses[g->outputs[k]] += 2; /* an output is never inside a pattern */
  for (int i = 0; i < g->n; i++) any |= is[i] = match(g, uses, dtypes, i, &pat[i]);
  if (!any) goto done;
  portc_graph *out = portc_graph_new(g->name);
  if (!out) {
    st = err_set(PORTC_ERR_NOMEM, "form_attention: out of memory");
    goto done;
  }
  out->next_auto = g->next_auto;
  for (int i = 0; i < g->n && !st; i++) {
    remap[i] = is[i] ? build(out, g, i, &pat[i], remap) : copy_node(out, g, i, remap, NULL);
    if (remap[i] < 0) st = err_set(portc_node_status(remap[i]), "form_attention %s: %s", g->nodes[i].name, portc_last_error());
  }
  st = rebuild_finish(gp, out, remap, st);
  *changed = !st;
done:
  free(uses), free(pat), free(remap), free(is);
  return st;
}
