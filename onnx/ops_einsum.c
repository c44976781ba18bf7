/*
 * ops_einsum.c: ONNX Einsum of one or two operands, as the sums, permutes, reshapes and one
 * batched matmul it stands for. For two operands each letter is
 *   batch      in both and in the output          -> leading batch dimensions of the matmul
 *   contracted in both, not in the output         -> K
 *   kept       in one and in the output           -> M (the first operand's) or N (the second's)
 *   summed     in one only, not in the output     -> summed away first
 * so "bhqd,bhkd->bhqk" is matmul(A, permute(B)) over batch b, h. Ellipses, and a letter repeated
 * within one operand (a diagonal), are refused by name.
 */
#include <stdio.h>
#include <string.h>

#include "onnx_import.h"

#define MAX_TERMS 2

typedef struct term {
  char l[PORTC_MAX_RANK + 1]; /* the letters, one per dimension */
  int n;
} term;

static bool parse_term(const char **p, term *t) {
  t->n = 0;
  while (**p == ' ') (*p)++;
  while ((**p >= 'a' && **p <= 'z') || (**p >= 'A' && **p <= 'Z') || **p == ' ') { /* exporters may space the letters */
    if (**p == ' ') {
      (*p)++;
      continue;
    }
    if (t->n == PORTC_MAX_RANK) return false;
    for (int i = 0; i < t->n; i++)
      if (t->l[i] == **p) return false; /* a diagonal */
    t->l[t->n++] = *(*p)++;
  }
  t->l[t->n] = 0;
  while (**p == ' ') (*p)++;
  return true;
}

static int find(const term *t, char ch) {
  const char *s = strchr(t->l, ch);
  return ch && s ? (int)(s - t->l) : -1;
}

/* x with the dimensions of letters not in keep summed away; t updated */
static portc_node sum_away(portc_graph *g, portc_node x, term *t, const term *keep1, const term *keep2) {
  int64_t axes[PORTC_MAX_RANK];
  int na = 0;
  term left = {.n = 0};
  for (int i = 0; i < t->n; i++) {
    if (find(keep1, t->l[i]) < 0 && (!keep2 || find(keep2, t->l[i]) < 0)) axes[na++] = i;
    else left.l[left.n++] = t->l[i];
  }
  left.l[left.n] = 0;
  *t = left;
  return na ? portc_sum(g, x, na, axes, false) : x;
}

/* x over letters t, permuted to the letters of `order` (all of them in t) */
static portc_node arrange(portc_graph *g, portc_node x, const term *t, const char *order) {
  int64_t perm[PORTC_MAX_RANK];
  bool same = true;
  for (int i = 0; order[i]; i++) perm[i] = find(t, order[i]), same = same && perm[i] == i;
  return same ? x : portc_permute(g, x, t->n, perm);
}

/* dims of x (arranged as groups of letters) merged into one dim per group */
static portc_node merge(imp *c, portc_node x, const int *group_len, int ngroups) {
  portc_graph *g = c->g;
  dim d[PORTC_MAX_RANK];
  const node *n = &g->nodes[x];
  memcpy(d, n->sh.d, sizeof(dim) * (size_t)n->sh.rank);
  portc_dim to[PORTC_MAX_RANK];
  int at = 0;
  bool changed = false;
  for (int k = 0; k < ngroups; k++) {
    if (group_len[k] == 1) { /* as it is */
      to[k] = (portc_dim){d[at].c, d[at].sym >= 0 ? g->syms[d[at].sym] : NULL};
      at++;
      continue;
    }
    changed = true;
    int64_t size = 1;
    int sym = -1;
    for (int j = 0; j < group_len[k]; j++, at++) {
      if (d[at].sym >= 0) {
        if (sym >= 0) return -(portc_node)fail(c, PORTC_ERR_SHAPE, "two symbolic dimensions would merge into one matmul dimension");
        sym = d[at].sym;
      } else size *= d[at].c;
    }
    to[k] = (portc_dim){sym >= 0 ? -1 : size, NULL}; /* -1: inferred (a multiple of the symbol) */
  }
  return changed ? portc_reshape(g, x, ngroups, to) : x;
}

static portc_status op_Einsum(imp *c) {
  char eq[256];
  const char *e = attr_string(c, "equation", "", eq, sizeof eq);
  if (strstr(e, "...")) return fail(c, PORTC_ERR_INVALID, "equation '%s': ellipses are not supported", e);
  if (c->nin < 1 || c->nin > MAX_TERMS) return fail(c, PORTC_ERR_INVALID, "%d operands: portc imports Einsum of one or two", c->nin);
  term in[MAX_TERMS], out;
  const char *p = e;
  for (int k = 0; k < c->nin; k++) {
    if (!parse_term(&p, &in[k]) || (k + 1 < c->nin && *p++ != ',')) return fail(c, PORTC_ERR_INVALID, "equation '%s': cannot read operand %d's letters (or it repeats one)", e, k);
  }
  if (p[0] == '-' && p[1] == '>') {
    p += 2;
    if (!parse_term(&p, &out) || *p) return fail(c, PORTC_ERR_INVALID, "equation '%s': cannot read the output's letters", e);
  } else if (*p) {
    return fail(c, PORTC_ERR_INVALID, "equation '%s': expected '->' after the operands", e);
  } else { /* implicit output: the letters that appear once, in alphabetical order */
    out.n = 0;
    for (char ch = 'A'; ch <= 'z'; ch++) {
      int times = 0;
      for (int k = 0; k < c->nin; k++) times += find(&in[k], ch) >= 0;
      if (times == 1 && out.n < PORTC_MAX_RANK) out.l[out.n++] = ch;
    }
    out.l[out.n] = 0;
  }
  portc_graph *g = c->g;
  portc_node x[MAX_TERMS];
  for (int k = 0; k < c->nin; k++) {
    if ((x[k] = val_node(c, op_in(c, k))) < 0) return out_node(c, 0, x[k]);
    if (portc_node_rank(g, x[k]) != in[k].n)
      return fail(c, PORTC_ERR_SHAPE, "operand %d has rank %d; the equation gives it %d letters", k, portc_node_rank(g, x[k]), in[k].n);
  }
  for (int i = 0; i < out.n; i++) {
    bool seen = false;
    for (int k = 0; k < c->nin; k++) seen = seen || find(&in[k], out.l[i]) >= 0;
    if (!seen) return fail(c, PORTC_ERR_INVALID, "equation '%s': output letter '%c' is in no operand", e, out.l[i]);
  }
  if (c->nin == 1) {
    x[0] = sum_away(g, x[0], &in[0], &out, NULL);
    return out_node(c, 0, arrange(g, x[0], &in[0], out.l));
  }
  x[0] = sum_away(g, x[0], &in[0], &out, &in[1]);
  x[1] = sum_away(g, x[1], &in[1], &out, &in[0]);
  term batch = {.n = 0}, m = {.n = 0}, n = {.n = 0}, k = {.n = 0};
  for (int i = 0; i < in[0].n; i++) {
    char ch = in[0].l[i];
    term *to = find(&in[1], ch) < 0 ? &m : find(&out, ch) >= 0 ? &batch : &k;
    to->l[to->n++] = ch;
  }
  for (int i = 0; i < in[1].n; i++)
    if (find(&in[0], in[1].l[i]) < 0) n.l[n.n++] = in[1].l[i];
  batch.l[batch.n] = m.l[m.n] = n.l[n.n] = k.l[k.n] = 0;
  /* A as [batch.., M, K], B as [batch.., K, N]; an empty group is a dimension of 1 */
  char oa[3 * PORTC_MAX_RANK + 1], ob[3 * PORTC_MAX_RANK + 1]; /* each letter is in one group */
  snprintf(oa, sizeof oa, "%s%s%s", batch.l, m.l, k.l);
  snprintf(ob, sizeof ob, "%s%s%s", batch.l, k.l, n.l);
  portc_node a = arrange(g, x[0], &in[0], oa), b = arrange(g, x[1], &in[1], ob);
  int ga[PORTC_MAX_RANK + 2], gb[PORTC_MAX_RANK + 2], ng = 0;
  for (int i = 0; i < batch.n; i++) ga[ng] = gb[ng] = 1, ng++;
  ga[ng] = m.n, gb[ng] = k.n, ga[ng + 1] = k.n, gb[ng + 1] = n.n;
  if (batch.n + 2 > PORTC_MAX_RANK) return fail(c, PORTC_ERR_SHAPE, "equation '%s' has too many batch letters", e);
  /* an empty group: insert a dimension of 1 by reshaping with the group's length counted as 0 */
  portc_dim ad[PORTC_MAX_RANK], bd[PORTC_MAX_RANK];
  if (m.n == 0 || k.n == 0 || n.n == 0) {
    portc_dim sa[PORTC_MAX_RANK], sb[PORTC_MAX_RANK];
    portc_node_shape(g, a, sa);
    portc_node_shape(g, b, sb);
    int ra = 0, rb = 0, ia = 0, ib = 0;
    for (int grp = 0; grp < ng + 2; grp++) {
      if (ga[grp] == 0) ad[ra++] = (portc_dim){1, NULL};
      else for (int j = 0; j < ga[grp]; j++) ad[ra++] = sa[ia++];
      if (gb[grp] == 0) bd[rb++] = (portc_dim){1, NULL};
      else for (int j = 0; j < gb[grp]; j++) bd[rb++] = sb[ib++];
      if (ga[grp] == 0) ga[grp] = 1;
      if (gb[grp] == 0) gb[grp] = 1;
    }
    a = portc_reshape(g, a, ra, ad);
    b = portc_reshape(g, b, rb, bd);
  }
  if (a < 0 || b < 0) return out_node(c, 0, a < 0 ? a : b);
  if ((a = merge(c, a, ga, ng + 2)) < 0 || (b = merge(c, b, gb, ng + 2)) < 0) return out_node(c, 0, a < 0 ? a : b);
  portc_node y = portc_matmul(g, a, b); /* [batch.., M, N] */
  /* back to one dimension per letter: batch, then m's, then n's */
  portc_dim od[PORTC_MAX_RANK];
  term got = {.n = 0};
  for (int i = 0; i < batch.n; i++) got.l[got.n++] = batch.l[i];
  for (int i = 0; i < m.n; i++) got.l[got.n++] = m.l[i];
  for (int i = 0; i < n.n; i++) got.l[got.n++] = n.l[i];
  got.l[got.n] = 0;
  for (int i = 0; i < got.n; i++) {
    int k0 = find(&in[0], got.l[i]), k1 = find(&in[1], got.l[i]);
    portc_dim d0[PORTC_MAX_RANK];
    portc_node_shape(g, k0 >= 0 ? x[0] : x[1], d0);
    od[i] = d0[k0 >= 0 ? k0 : k1];
  }
  if (y >= 0 && (got.n != portc_node_rank(g, y) || m.n > 1 || n.n > 1)) y = portc_reshape(g, y, got.n, od);
  return out_node(c, 0, y < 0 ? y : arrange(g, y, &got, out.l));
}

const onnx_op onnx_ops_einsum[] = {
    {"Einsum", op_Einsum}, {NULL, NULL},
};
