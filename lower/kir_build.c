/*
 * kir_build.c: turns fusion's plans into kernels. Values are built from each store backwards:
 * a materialized value becomes a load through the path that leads to it, a view extends the
 * path, an elementwise op becomes an op over its operands' values, and a reduction of the same
 * ROW kernel becomes the accumulator of its phase. Equal (node, path) pairs share one value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"
#include "fuse_plan.h"

typedef struct memo {
  int node, path, val;
  bool row;
} memo;

typedef struct bctx {
  fplan *p;
  kir_module *m;
  kir_kernel *k;
  int plan;
  int *phase_of; /* per node: its ROW phase, or -1 */
  memo *memo;
  int nmemo, capmemo;
  portc_status failed; /* the first failure */
} bctx;

static int fail(bctx *b, portc_status s, const char *fmt, const char *arg) {
  if (!b->failed) b->failed = err_set(s, fmt, arg);
  return -1;
}

static int add_val(bctx *b, kir_val v) {
  int i = kir_add_val(b->k, v);
  return i < 0 ? fail(b, PORTC_ERR_NOMEM, "%s: out of memory", "kir") : i;
}

static void note_node(bctx *b, int node) {
  kir_kernel *k = b->k;
  for (int i = 0; i < k->nnodes; i++)
    if (k->nodes[i] == node) return;
  int32_t *n = realloc(k->nodes, sizeof *n * (size_t)(k->nnodes + 1));
  if (!n) return;
  k->nodes = n;
  n[k->nnodes++] = node;
}

/* the step of a view node, from its own index space to its input's */
static kir_step view_step(const portc_graph *g, const node *v) {
  const node *x = &g->nodes[v->in[0]];
  kir_step s = {.from = v->sh, .to = x->sh};
  switch (v->op) {
  case OP_reshape: s.kind = ST_RESHAPE; break;
  case OP_expand: s.kind = ST_BCAST; break;
  case OP_permute: {
    s.kind = ST_PERMUTE;
    const attr *perm = attr_get(v, "perm");
    for (int j = 0; j < perm->n; j++) s.a[j] = norm_axis(perm->v[j], x->sh.rank);
    break;
  }
  default: { /* slice */
    s.kind = ST_SLICE;
    int64_t axis = norm_axis(attr_i(v, "axis"), x->sh.rank);
    s.a[0] = axis;
    s.a[1] = x->sh.d[axis].sym >= 0 ? 0 : clamp_index(attr_i(v, "start"), x->sh.d[axis].c);
    s.a[2] = v->sh.d[axis].sym < 0 && v->sh.d[axis].c <= 1 ? 1 : attr_i(v, "step"); /* one element: any step reads it */
    break;
  }
  }
  return s;
}

static int path_id(bctx *b, const kir_path *p) {
  int i = kir_add_path(b->k, p);
  return i < 0 ? fail(b, PORTC_ERR_NOMEM, "%s: out of memory", "kir") : i;
}

static bool extend(bctx *b, kir_path *p, kir_step s) {
  if (s.kind == ST_BCAST && shape_eq(&s.from, &s.to)) return true;
  if (path_push(p, s)) return true;
  fail(b, PORTC_ERR_SHAPE, "%s: the chain of views is longer than the kernel IR allows", b->m->g->nodes[b->k->node].name);
  return false;
}

static bool is_outer_level(const bctx *b, const shape *s) {
  const kplan *kp = &b->p->k[b->plan];
  if (kp->kind != KK_ROW) return false;
  shape keep = b->m->g->nodes[kp->x_node].sh;
  bool trivial = true; /* every reduced dim has extent 1: the row is one element, and a value of
                          the outer shape is also a row value, read with the row's index */
  for (int d = 0; d < keep.rank; d++)
    if (kp->red_mask[d]) trivial = trivial && keep.d[d].sym < 0 && keep.d[d].c == 1, keep.d[d] = (dim){1, -1};
  return !trivial && shape_eq(s, &keep);
}

static int build(bctx *b, int v, const kir_path *path, bool row);

static int build_op(bctx *b, int v, const kir_path *path, bool row) {
  const node *n = &b->m->g->nodes[v];
  kir_val val = {.kind = KV_OP, .dt = n->dt, .op = n->op, .row = row, .arg = {-1, -1, -1}};
  for (int i = 0; i < n->nin; i++) {
    const node *a = &b->m->g->nodes[n->in[i]];
    kir_path ap = *path;
    if (!extend(b, &ap, (kir_step){.kind = ST_BCAST, .from = n->sh, .to = a->sh})) return -1;
    bool arow = row && !is_outer_level(b, &a->sh);
    if ((val.arg[i] = build(b, n->in[i], &ap, arow)) < 0) return -1;
  }
  if (n->op == OP_causal_mask) { /* the mask reads the position: row i and column j */
    int pid = path_id(b, path);
    if (pid < 0) return -1;
    for (int i = 0; i < 2; i++)
      if ((val.arg[1 + i] = add_val(b, (kir_val){.kind = KV_INDEX, .dt = PORTC_I64, .path = pid, .axis = n->sh.rank - 2 + i, .row = row})) < 0)
        return -1;
  }
  bool any_row = false;
  for (int i = 0; i < 3; i++) any_row = any_row || (val.arg[i] >= 0 && b->k->val[val.arg[i]].row);
  val.row = any_row;
  return add_val(b, val);
}

static int build(bctx *b, int v, const kir_path *path, bool row) {
  fplan *p = b->p;
  const node *n = &b->m->g->nodes[v];
  bool member = p->group[v] == b->plan;
  if (member && p->cls[v] == C_RED) return add_val(b, (kir_val){.kind = KV_ACC, .dt = n->dt, .phase = b->phase_of[v]});
  if (member && (p->cls[v] == C_MM || p->cls[v] == C_CONV)) return add_val(b, (kir_val){.kind = KV_ACC, .dt = n->dt});
  int pid = path_id(b, path);
  if (pid < 0) return -1;
  for (int i = 0; i < b->nmemo; i++)
    if (b->memo[i].node == v && b->memo[i].path == pid && b->memo[i].row == row) return b->memo[i].val;
  int val;
  if (!member && (p->mat[v] || (p->cls[v] == C_SRC && n->value.n != 1))) {
    val = add_val(b, (kir_val){.kind = KV_LOAD, .dt = n->dt, .buf = b->m->node_buf[v], .path = pid, .row = row});
  } else if (p->cls[v] == C_SRC) {
    val = add_val(b, (kir_val){.kind = KV_CONST, .dt = n->dt, .f = n->value.f ? n->value.f[0] : 0, .i = n->value.i ? n->value.i[0] : 0});
  } else if (p->cls[v] == C_VIEW) {
    kir_path vp = *path;
    note_node(b, v);
    if (!extend(b, &vp, view_step(b->m->g, n))) return -1;
    val = build(b, n->in[0], &vp, row);
  } else if (p->cls[v] == C_PW) {
    note_node(b, v);
    val = build_op(b, v, path, row);
  } else {
    return fail(b, PORTC_ERR_INVALID, "kir: %s is neither materialized nor fusable here", n->name);
  }
  if (val < 0) return -1;
  if (b->nmemo == b->capmemo) {
    int cap = b->capmemo ? b->capmemo * 2 : 64;
    memo *mm = realloc(b->memo, sizeof *mm * (size_t)cap);
    if (!mm) return fail(b, PORTC_ERR_NOMEM, "%s: out of memory", "kir");
    b->memo = mm;
    b->capmemo = cap;
  }
  b->memo[b->nmemo++] = (memo){v, pid, val, row};
  return val;
}

/* follows views from an operand of a matmul to its buffer, extending the path */
static bool operand(bctx *b, int v, kir_path *path, int slot) {
  while (!b->p->mat[v]) {
    const node *n = &b->m->g->nodes[v];
    note_node(b, v);
    if (!extend(b, path, view_step(b->m->g, n))) return false;
    v = n->in[0];
  }
  b->k->in_buf[slot] = b->m->node_buf[v];
  b->k->in_path[slot] = path_id(b, path);
  return b->k->in_path[slot] >= 0;
}

static bool add_store(bctx *b, int node, const kir_path *path, bool row) {
  kir_kernel *k = b->k;
  if (k->nstore == KIR_MAX_STORES) {
    fail(b, PORTC_ERR_INVALID, "%s: a row kernel stores too many values", b->m->g->nodes[node].name);
    return false;
  }
  int val = build(b, node, path, row);
  int pid = path_id(b, path);
  if (val < 0 || pid < 0) return false;
  k->store[k->nstore++] = (kir_store){.buf = b->m->node_buf[node], .val = val, .path = pid, .row = row};
  return true;
}

static int cmp_int(const void *a, const void *b) { return *(const int32_t *)a - *(const int32_t *)b; }

static bool build_row(bctx *b, kplan *kp) {
  kir_kernel *k = b->k;
  const node *x = &b->m->g->nodes[kp->x_node];
  kir_step rowmap = {.kind = ST_PERMUTE, .to = x->sh};
  int j = 0;
  for (int d = 0; d < x->sh.rank; d++)
    if (!kp->red_mask[d]) rowmap.a[j] = d, rowmap.from.d[j++] = x->sh.d[d], k->dom.d[k->dom.rank++] = x->sh.d[d];
  for (int d = 0; d < x->sh.rank; d++)
    if (kp->red_mask[d]) rowmap.a[j] = d, rowmap.from.d[j++] = x->sh.d[d], k->red.d[k->red.rank++] = x->sh.d[d];
  rowmap.from.rank = x->sh.rank;
  kir_path rowpath = {0};
  bool identity = true;
  for (int d = 0; d < x->sh.rank; d++) identity = identity && rowmap.a[d] == d;
  if (!identity) path_push(&rowpath, rowmap);
  qsort(kp->members, (size_t)kp->nmembers, sizeof *kp->members, cmp_int);
  for (int i = 0; i < kp->nmembers; i++) {
    int r = kp->members[i];
    if (b->p->cls[r] != C_RED) continue;
    if (k->nphase == KIR_MAX_PHASES) {
      fail(b, PORTC_ERR_INVALID, "%s: too many reductions in one row kernel", b->m->g->nodes[r].name);
      return false;
    }
    int v = build(b, b->m->g->nodes[r].in[0], &rowpath, true);
    if (v < 0) return false;
    note_node(b, r);
    b->phase_of[r] = k->nphase;
    k->phase[k->nphase++] = (kir_phase){b->m->g->nodes[r].op, v};
  }
  for (int i = 0; i < kp->nmembers; i++) {
    int v = kp->members[i];
    if (!b->p->mat[v]) continue;
    const node *n = &b->m->g->nodes[v];
    if (shape_eq(&n->sh, &x->sh)) {
      if (!add_store(b, v, &rowpath, true)) return false;
      continue;
    }
    kir_path op = {0};
    if (n->sh.rank == x->sh.rank) { /* kept as size-1 dims */
      kir_step s = {.kind = ST_OUTER, .from = k->dom, .to = n->sh};
      for (int d = 0; d < x->sh.rank; d++) s.a[d] = kp->red_mask[d];
      path_push(&op, s);
    }
    if (!add_store(b, v, &op, false)) return false;
  }
  return true;
}

static bool build_contraction(bctx *b, kplan *kp) {
  kir_kernel *k = b->k;
  const portc_graph *g = b->m->g;
  const node *mm = &g->nodes[kp->anchor];
  kir_path outpath = {0};
  if (k->kind == KK_MATMUL) {
    const node *a = &g->nodes[mm->in[0]], *bb = &g->nodes[mm->in[1]];
    int ra = a->sh.rank, rb = bb->sh.rank, tail = (ra > 1) + (rb > 1);
    dim M = ra > 1 ? a->sh.d[ra - 2] : (dim){1, -1}, K = a->sh.d[ra - 1], N = rb > 1 ? bb->sh.d[rb - 1] : (dim){1, -1};
    k->dom.rank = 0;
    for (int d = 0; d < mm->sh.rank - tail; d++) k->dom.d[k->dom.rank++] = mm->sh.d[d];
    int nb = k->dom.rank;
    k->dom.d[k->dom.rank++] = M;
    k->dom.d[k->dom.rank++] = N;
    k->mnk[0] = M, k->mnk[1] = N, k->mnk[2] = K;
    kir_path pa = {0}, pb = {0};
    kir_step sa = {.kind = ST_BCAST, .from = k->dom, .to = a->sh};
    sa.from.d[nb + 1] = K;
    kir_step sb = {.kind = ST_BCAST, .from = k->dom, .to = bb->sh};
    sb.from.d[nb] = K;
    if (rb == 1) {
      sb.to = (shape){.rank = 2, .d = {K, {1, -1}}};
      if (!extend(b, &pb, sb) || !extend(b, &pb, (kir_step){.kind = ST_RESHAPE, .from = sb.to, .to = bb->sh})) return false;
    } else if (!extend(b, &pb, sb)) {
      return false;
    }
    if (!extend(b, &pa, sa) || !operand(b, mm->in[0], &pa, 0) || !operand(b, mm->in[1], &pb, 1)) return false;
    k->nin = 2;
    if (!shape_eq(&k->dom, &mm->sh) && !extend(b, &outpath, (kir_step){.kind = ST_RESHAPE, .from = k->dom, .to = mm->sh})) return false;
  } else {
    k->dom = mm->sh;
    k->nin = mm->nin;
    for (int i = 0; i < mm->nin; i++) k->in_buf[i] = b->m->node_buf[mm->in[i]], k->in_path[i] = -1;
  }
  note_node(b, kp->anchor);
  if (!add_store(b, kp->end, &outpath, false)) return false;
  for (int i = 0; i < kp->nmembers; i++) { /* the casts of the epilogue's result stored beside it (fuse.c) */
    int v = kp->members[i];
    if (v != kp->end && v != kp->anchor && b->p->mat[v] && !add_store(b, v, &outpath, false)) return false;
  }
  return true;
}

static bool build_kernel(bctx *b, kplan *kp) {
  kir_kernel *k = b->k;
  k->kind = kp->kind;
  k->node = kp->anchor;
  memcpy(k->why, kp->why, sizeof k->why);
  switch (kp->kind) {
  case KK_ROW: return build_row(b, kp);
  case KK_MATMUL:
  case KK_CONV: return build_contraction(b, kp);
  case KK_OPAQUE: {
    const node *n = &b->m->g->nodes[kp->anchor];
    k->dom = n->sh;
    if (n->nin > KIR_MAX_IN) { /* the op table allows no more */
      fail(b, PORTC_ERR_INVALID, "%s: more inputs than a kernel takes", n->name);
      return false;
    }
    k->nin = n->nin;
    for (int i = 0; i < n->nin; i++) k->in_buf[i] = b->m->node_buf[n->in[i]], k->in_path[i] = -1;
    k->store[k->nstore++] = (kir_store){.buf = b->m->node_buf[kp->anchor], .val = -1, .path = -1};
    note_node(b, kp->anchor);
    return true;
  }
  default: {
    kir_path none = {0};
    k->dom = b->m->g->nodes[kp->anchor].sh;
    return add_store(b, kp->anchor, &none, false);
  }
  }
}

static bool make_buffers(fplan *p, kir_module *m) {
  portc_graph *g = m->g;
  m->node_buf = malloc(sizeof *m->node_buf * (size_t)(g->n + 1));
  m->buf = calloc((size_t)g->n + 1, sizeof *m->buf);
  m->out_buf = malloc(sizeof *m->out_buf * (size_t)(g->nout + 1));
  if (!m->node_buf || !m->buf || !m->out_buf) return false;
  for (int i = 0; i < g->n; i++) {
    m->node_buf[i] = -1;
    if (!p->mat[i]) continue;
    const node *n = &g->nodes[i];
    buf_role role = n->op == OP_input ? BUF_INPUT : n->op == OP_param ? BUF_PARAM : n->op == OP_const ? BUF_CONST : BUF_TEMP;
    for (int k = 0; k < g->nout && role == BUF_TEMP; k++)
      if (g->outputs[k] == i) role = BUF_OUTPUT;
    m->buf[m->nbuf] = (kir_buf){.node = i, .role = role, .dt = n->dt, .sh = n->sh};
    m->node_buf[i] = m->nbuf++;
  }
  for (int k = 0; k < g->nout; k++) m->out_buf[k] = m->node_buf[g->outputs[k]];
  return true;
}

static bool kernel_stores(const kir_kernel *k, int b) {
  for (int s = 0; s < k->nstore; s++)
    if (k->store[s].buf == b) return true;
  return false;
}

/* kernel k waits on kernel w, once; false when out of memory */
static bool wait_on(int32_t **users, int32_t *nusers, int *waits, int k, int w) {
  for (int u = 0; u < nusers[w]; u++)
    if (users[w][u] == k) return true;
  int32_t *us = realloc(users[w], sizeof *us * (size_t)(nusers[w] + 1));
  if (!us) return false;
  users[w] = us;
  us[nusers[w]++] = k;
  waits[k]++;
  return true;
}

/* Kernels in an order where each runs after the kernels that store what it loads, and among those
 * ready, the one whose stored values come first in the graph: the graph's order is the program's
 * (the gradient rules emit each op's backward where its output's gradient is complete), so a
 * value is used soon after it is made. (A kernel that sums a parameter's gradient runs right
 * after the gradient it reads, not at the end with the optimizer that reads its result, so the
 * big gradient it reads is freed early.) */
static portc_status order_kernels(kir_module *m) {
  int nk = m->nk;
  int *writer = malloc(sizeof *writer * (size_t)(m->nbuf + 1)), *waits = calloc((size_t)nk + 1, sizeof *waits);
  int *rank = malloc(sizeof *rank * (size_t)(nk + 1)), *order = malloc(sizeof *order * (size_t)(nk + 1));
  bool *done = calloc((size_t)nk + 1, sizeof *done);
  int32_t **users = calloc((size_t)nk + 1, sizeof *users), *nusers = calloc((size_t)nk + 1, sizeof *nusers);
  portc_status st = PORTC_OK;
  if (!writer || !waits || !rank || !order || !done || !users || !nusers) goto oom;
  for (int i = 0; i < m->nbuf; i++) writer[i] = -1;
  for (int k = 0; k < nk; k++) {
    rank[k] = m->k[k].node;
    for (int s = 0; s < m->k[k].nstore; s++) {
      int b = m->k[k].store[s].buf;
      writer[b] = writer[b] == -1 ? k : -2; /* -2: several (concat_in_place's slabs) */
      if (m->buf[b].node > rank[k]) rank[k] = m->buf[b].node;
    }
  }
  for (int k = 0; k < nk; k++) { /* waits[k]: distinct writers k reads; users[w]: who waits on w */
    const kir_kernel *kk = &m->k[k];
    for (int i = 0; i < kk->nval + kk->nin; i++) {
      int b = kir_read_buf(kk, i);
      if (b < 0 || writer[b] == -1) continue;
      const int first = writer[b] >= 0 ? writer[b] : 0, end = writer[b] >= 0 ? writer[b] + 1 : nk; /* the writer, or each of several */
      for (int w = first; w < end; w++)
        if (w != k && kernel_stores(&m->k[w], b) && !wait_on(users, nusers, waits, k, w)) goto oom;
    }
  }
  for (int n = 0; n < nk; n++) {
    int next = -1;
    for (int k = 0; k < nk; k++)
      if (!done[k] && !waits[k] && (next < 0 || rank[k] < rank[next])) next = k;
    if (next < 0) { /* fusion must never allow this */
      st = err_set(PORTC_ERR_INVALID, "internal error: fusion made kernels that depend on each other in a cycle");
      goto out;
    }
    done[next] = true;
    order[n] = next;
    for (int u = 0; u < nusers[next]; u++) waits[users[next][u]]--;
  }
  kir_kernel *sorted = malloc(sizeof *sorted * (size_t)(nk + 1));
  if (!sorted) goto oom;
  for (int i = 0; i < nk; i++) sorted[i] = m->k[order[i]];
  free(m->k);
  m->k = sorted;
  goto out;
oom:
  st = err_set(PORTC_ERR_NOMEM, "kir: out of memory");
out:
  for (int k = 0; k < nk && users; k++) free(users[k]);
  free(writer), free(waits), free(rank), free(order), free(done), free(users), free(nusers);
  return st;
}

portc_status kir_build(fplan *p, bool eager, kir_module **out) {
  kir_module *m = calloc(1, sizeof *m);
  if (!m) return err_set(PORTC_ERR_NOMEM, "kir: out of memory");
  m->g = p->g;
  m->eager = eager;
  int *phase_of = malloc(sizeof *phase_of * (size_t)(p->g->n + 1));
  m->k = calloc((size_t)p->nk + 1, sizeof *m->k);
  if (!phase_of || !m->k || !make_buffers(p, m)) {
    free(phase_of);
    m->g = NULL;
    kir_module_free(m);
    return err_set(PORTC_ERR_NOMEM, "kir: out of memory");
  }
  for (int i = 0; i < p->g->n; i++) phase_of[i] = -1;
  portc_status st = PORTC_OK;
  for (int i = 0; i < p->nk && !st; i++) {
    bctx b = {.p = p, .m = m, .k = &m->k[i], .plan = i, .phase_of = phase_of};
    m->nk++;
    if (!build_kernel(&b, &p->k[i])) st = b.failed ? b.failed : err_set(PORTC_ERR_NOMEM, "kir: out of memory");
    free(b.memo);
  }
  if (!st && !eager) st = concat_in_place(m);
  if (!st) st = order_kernels(m);
  free(phase_of);
  if (st) {
    m->g = NULL;
    kir_module_free(m);
    return st;
  }
  *out = m;
  return PORTC_OK;
}
