/*
 * kir.c: kernel IR bookkeeping: growing value and path arrays, freeing a module, and the
 * concrete numbers (extents, bytes, FLOPs) of a kernel under given symbol values.
 */
#include <stdlib.h>
#include <string.h>

#include "kir.h"

int kir_add_val(kir_kernel *k, kir_val v) {
  if (k->nval == k->capval) {
    int cap = k->capval ? k->capval * 2 : 32;
    kir_val *nv = realloc(k->val, sizeof *nv * (size_t)cap);
    if (!nv) return -1;
    k->val = nv;
    k->capval = cap;
  }
  k->val[k->nval] = v;
  return k->nval++;
}

int kir_add_path(kir_kernel *k, const kir_path *p) {
  for (int i = 0; i < k->npath; i++)
    if (k->path[i].n == p->n && memcmp(k->path[i].s, p->s, sizeof(kir_step) * (size_t)p->n) == 0) return i;
  if (k->npath == k->cappath) {
    int cap = k->cappath ? k->cappath * 2 : 8;
    kir_path *np = realloc(k->path, sizeof *np * (size_t)cap);
    if (!np) return -1;
    k->path = np;
    k->cappath = cap;
  }
  k->path[k->npath] = *p;
  return k->npath++;
}

bool path_push(kir_path *p, kir_step s) {
  if (p->n == KIR_MAX_STEPS) return false;
  p->s[p->n++] = s;
  return true;
}

void kir_module_free(kir_module *m) {
  if (!m) return;
  for (int i = 0; i < m->nk; i++) {
    free(m->k[i].val);
    free(m->k[i].path);
    free(m->k[i].nodes);
  }
  free(m->k);
  free(m->buf);
  free(m->node_buf);
  free(m->out_buf);
  portc_graph_free(m->g);
  free(m);
}

int kir_read_buf(const kir_kernel *k, int i) {
  return i < k->nval ? (k->val[i].kind == KV_LOAD ? k->val[i].buf : -1) : k->in_buf[i - k->nval];
}

int64_t dim_value(dim d, const int64_t *sym) { return d.sym >= 0 ? (sym ? sym[d.sym] : 0) : d.c; }

int64_t shape_count(const shape *s, const int64_t *sym) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) n *= dim_value(s->d[i], sym);
  return n;
}

static int64_t buf_bytes(const kir_module *m, int b, const int64_t *sym) {
  return shape_count(&m->buf[b].sh, sym) * (int64_t)portc_dtype_size(m->buf[b].dt);
}

void kir_attention_pitches(int64_t D, int64_t Dv, int bk, int64_t *dp, int64_t *dvp, int64_t *pp) {
  const int64_t d4 = (D + 3) / 4;
  *dp = 4 * (d4 % 2 ? d4 : d4 + 1), *dvp = 32 * ((Dv + 31) / 32), *pp = bk + 4;
}

int64_t kir_attention_shared(int64_t D, int64_t Dv, int bq, int bk) {
  int64_t dp, dvp, pp;
  kir_attention_pitches(D, Dv, bk, &dp, &dvp, &pp);
  return 4 * (bq * dp + bk * dp + bk * dvp + bq * pp + 8 * bq);
}

bool kir_attention_fits(const portc_graph *g, int i) {
  const node *n = &g->nodes[i];
  const shape *q = &g->nodes[n->in[0]].sh, *v = &g->nodes[n->in[2]].sh;
  dim D = q->d[q->rank - 1], Dv = v->d[v->rank - 1];
  if (n->op != OP_attention || D.sym >= 0 || Dv.sym >= 0 || D.c < 1 || Dv.c < 1) return false;
  return kir_attention_shared(D.c, Dv.c, KIR_ATTENTION_MIN_BQ, KIR_ATTENTION_MIN_BK) <= KIR_ATTENTION_MAX_SHARED;
}

bool kir_channels_last_fits(const portc_graph *g, int i) {
  const node *n = &g->nodes[i];
  if (n->op != OP_conv2d || attr_i(n, "groups") != 1 || (n->dt != PORTC_F16 && n->dt != PORTC_BF16)) return false;
  const conv_axes a = conv_axes_of(n);
  const shape *x = &g->nodes[n->in[0]].sh, *w = &g->nodes[n->in[1]].sh;
  int64_t C = x->d[a.c].c, H = x->d[a.h].c, W = x->d[a.w].c, O = w->d[a.wo].c, KH = w->d[a.wh].c, KW = w->d[a.ww].c;
  if (!attr_i(n, "channels_last")) C = (C + 7) / 8 * 8; /* channels_last.c pads them with zeros */
  /* a window past 11x11 is a weight gradient's (the output's pixels as the window; few outputs,
   * a long reduction), which the split SIMT kernel does better */
  return C % 8 == 0 && O % 8 == 0 && H * W * C < INT32_MAX && KH <= 11 && KW <= 11;
}

void kir_cost(const kir_module *m, const kir_kernel *k, const int64_t *sym, int64_t *bytes, int64_t *flops) {
  /* each distinct buffer read once and each store written once: the traffic a fused kernel needs */
  bool *seen = calloc((size_t)m->nbuf + 1, sizeof *seen);
  int64_t b = 0;
  for (int i = 0; seen && i < k->nval + k->nin; i++) {
    int bi = i < k->nval ? (k->val[i].kind == KV_LOAD ? k->val[i].buf : -1) : k->in_buf[i - k->nval];
    if (bi < 0 || seen[bi]) continue;
    seen[bi] = true;
    b += buf_bytes(m, bi, sym);
  }
  free(seen);
  for (int i = 0; i < k->nstore; i++) { /* the elements stored: the whole buffer, or a concat's slab of it */
    int64_t n = shape_count(&k->dom, sym) * (k->store[i].row ? shape_count(&k->red, sym) : 1);
    b += n * (int64_t)portc_dtype_size(m->buf[k->store[i].buf].dt);
  }
  int64_t ops = 0;
  for (int i = 0; i < k->nval; i++) ops += k->val[i].kind == KV_OP;
  int64_t dom = shape_count(&k->dom, sym), f = 0;
  if (k->kind == KK_ROW) {
    f = dom * shape_count(&k->red, sym) * (ops + k->nphase);
  } else if (k->kind == KK_MATMUL) {
    const node *a = &m->g->nodes[m->g->nodes[k->node].in[0]];
    int64_t K = dim_value(a->sh.d[a->sh.rank - 1], sym);
    f = 2 * dom * K + dom * ops;
  } else if (k->kind == KK_CONV) {
    const node *cv = &m->g->nodes[k->node], *w = &m->g->nodes[cv->in[1]];
    f = 2 * dom * shape_count(&w->sh, sym) / dim_value(w->sh.d[conv_axes_of(cv).wo], sym) + dom * ops;
  } else if (k->kind == KK_OPAQUE && m->g->nodes[k->node].op == OP_attention) { /* two products and the softmax */
    const shape *q = &m->g->nodes[m->g->nodes[k->node].in[0]].sh, *kk = &m->g->nodes[m->g->nodes[k->node].in[1]].sh;
    int64_t D = dim_value(q->d[q->rank - 1], sym), Lk = dim_value(kk->d[kk->rank - 2], sym);
    int64_t Dv = dim_value(k->dom.d[k->dom.rank - 1], sym), rows = dom / (Dv ? Dv : 1);
    f = rows * Lk * (2 * D + 2 * Dv + 4);
  } else {
    f = dom * ops;
  }
  *bytes = b;
  *flops = f;
}
