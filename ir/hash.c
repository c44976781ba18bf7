/*
 * hash.c: a structural hash of a graph (portc_graph_hash, printed by `portc check`): two graphs
 * that compute the same thing hash alike. The kernel cache keys compiled code by its generated
 * source instead (targets/cache.c), which covers the schedule and the target as well.
 *
 * It covers what the graph computes: ops, dtypes, shapes (symbols by name), attributes, constant
 * values, parameter sources, the wiring, and the names that callers bind (inputs, parameters,
 * outputs' order). Names of intermediate values do not change it.
 */
#include <math.h>
#include <string.h>

#include "graph.h"

#define FNV_PRIME 0x100000001b3ull

static void mix(uint64_t *h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) *h = (*h ^ b[i]) * FNV_PRIME;
}
static void mix_i(uint64_t *h, int64_t v) { mix(h, &v, sizeof v); }
static void mix_s(uint64_t *h, const char *s) { mix(h, s, strlen(s) + 1); }

static void mix_dim(uint64_t *h, const portc_graph *g, int64_t c, int32_t sym) {
  if (sym >= 0 && sym < g->nsyms) mix_s(h, g->syms[sym]);
  else mix_i(h, c);
  mix_i(h, sym >= 0);
}

uint64_t portc_graph_hash(const portc_graph *g) {
  uint64_t h = 0xcbf29ce484222325ull;
  if (!g) return h;
  mix_i(&h, g->n);
  for (int i = 0; i < g->n; i++) {
    const node *n = &g->nodes[i];
    const op_info *info = op_get(n->op);
    mix_i(&h, n->op);
    mix_i(&h, n->dt);
    mix_i(&h, n->sh.rank);
    for (int k = 0; k < n->sh.rank; k++) mix_dim(&h, g, n->sh.d[k].c, n->sh.d[k].sym);
    mix_i(&h, n->nin);
    for (int k = 0; k < n->nin; k++) mix_i(&h, n->in[k]);
    for (int k = 0; info && k < info->nattrs; k++) {
      const attr *a = &n->a[k];
      mix_i(&h, a->set);
      if (!a->set) continue;
      if (info->attrs[k].kind == A_FLOAT) mix(&h, &a->f, sizeof a->f);
      mix_i(&h, a->n);
      int count = info->attrs[k].kind == A_INTS || info->attrs[k].kind == A_DIMS ? a->n : 1;
      for (int j = 0; j < count; j++) mix_dim(&h, g, a->v[j], info->attrs[k].kind == A_DIMS ? a->sym[j] : -1);
    }
    if (n->op == OP_input || n->op == OP_param) mix_s(&h, n->name);
    if (n->op == OP_const) {
      mix_i(&h, n->value.n);
      for (int64_t k = 0; n->value.f && k < n->value.n; k++) { /* every NaN alike: the text has one "nan" */
        double v = isnan(n->value.f[k]) ? NAN : n->value.f[k];
        mix(&h, &v, sizeof v);
      }
      if (n->value.i) mix(&h, n->value.i, (size_t)n->value.n * sizeof(int64_t));
    }
    if (n->op == OP_param) {
      mix_s(&h, n->file ? n->file : "");
      mix_s(&h, n->file_key ? n->file_key : "");
      mix_i(&h, n->data != NULL);
      mix_i(&h, n->has_init);
      if (n->has_init) {
        mix_i(&h, n->init);
        mix_i(&h, (int64_t)n->seed);
        mix(&h, &n->p0, sizeof n->p0);
        mix(&h, &n->p1, sizeof n->p1);
      }
    }
  }
  mix_i(&h, g->nout);
  for (int k = 0; k < g->nout; k++) {
    mix_i(&h, g->outputs[k]);
    if (g->outputs[k] >= 0 && g->outputs[k] < g->n) mix_s(&h, g->nodes[g->outputs[k]].name);
  }
  mix_i(&h, g->nupd);
  for (int k = 0; k < g->nupd; k++) mix_i(&h, g->upd_param[k]), mix_i(&h, g->upd_value[k]);
  return h;
}
