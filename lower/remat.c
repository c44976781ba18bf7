/*
 * remat.c: rematerialization, chosen by the memory plan. A training graph computes values in its
 * forward part that its backward part reads again much later (the input of a layer, for its
 * weight's gradient); held in between, they make the arena's peak. Where such a value is
 * elementwise and cheap (an activation, a normalization's output) and what it is computed from
 * stays in memory anyway (the pre-activation, which the backward also reads; per-channel
 * statistics), computing it again where the backward reads it frees its bytes across the peak
 * for one more pass over memory, or for nothing when the backward reads it in an elementwise
 * kernel, into which the recomputation fuses. This is the choice Inductor's min-cut partitioner
 * makes between saving and recomputing, made here against portc's own plan:
 *
 *   1. plan the fused module; find the kernel where the live temporaries' bytes peak;
 *   2. every elementwise value held across that kernel (stored before it, read after it, not read
 *      by it) whose expression has at most REMAT_MAX_OPS ops over values that are live at its late
 *      readers anyway (or at most 1/16 of its size, or not temporaries) is cloned: the readers after
 *      the peak read the clone, placed in the graph just before the first of them;
 *   3. a sum of temporaries made one after the other that holds them across the peak (max
 *      pooling's gradient adds one share per window offset) keeps its partial sums in memory
 *      (`stored`), so that each share dies as it is added instead of all living until the sum;
 *   4. fuse again; keep the new module when its arena is smaller, and repeat (the peak moves).
 *
 *   before: a = gelu(h) ... y = matmul(a, w2) ... [peak] ... dw2 = matmul(permute(a), dy)
 *   after:  a = gelu(h) ... y = matmul(a, w2) ... [peak] ... a.recomputed = gelu(h); dw2 = ...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse_plan.h"
#include "passes.h"

#define REMAT_MAX_OPS 16
#define REMAT_ROUNDS 4

typedef struct candidate {
  int v, pos;            /* the value, and where its clone goes in the graph (its first late reader) */
  int32_t *expr, nexpr;  /* the nodes cloned, in graph order: v and what is inlined behind it */
  int32_t *late, nlate;  /* the consumers that read the clone */
} candidate;

typedef struct rctx {
  const kir_module *m;
  const portc_graph *g;
  int *first, *last;  /* per buffer: the kernels that store it and last read it (temps) */
  int64_t *size;      /* per buffer: bytes (temps) */
  int *tmin, *tmax;   /* per node: the first and last kernel computing it, or -1 */
  int32_t **cons;     /* per node: its consumers */
  int *ncons;
  char *taken;        /* per node: 1 cloned by a chosen candidate, 2 read by one */
  bool *split;        /* per node: a partial sum to keep in memory */
  int nsplit;
  candidate *c;
  int nc;
} rctx;

static bool push(int32_t **list, int32_t *n, int v) {
  int32_t *l = realloc(*list, sizeof *l * (size_t)(*n + 1));
  if (!l) return false;
  (*list = l)[(*n)++] = v;
  return true;
}

/* lifetimes, sizes and consumers; false when out of memory or when a size is symbolic */
static bool analyse(rctx *r) {
  const kir_module *m = r->m;
  const portc_graph *g = r->g;
  for (int b = 0; b < m->nbuf; b++) r->first[b] = r->last[b] = -1;
  for (int i = 0; i < g->n; i++) r->tmin[i] = r->tmax[i] = -1;
  for (int t = 0; t < m->nk; t++) {
    const kir_kernel *k = &m->k[t];
    for (int s = 0; s < k->nstore; s++)
      if (r->first[k->store[s].buf] < 0) r->first[k->store[s].buf] = t;
    for (int i = 0; i < k->nval + k->nin; i++) {
      int b = kir_read_buf(k, i);
      if (b >= 0) r->last[b] = t;
    }
    for (int j = 0; j < k->nnodes; j++) {
      int v = k->nodes[j];
      if (r->tmin[v] < 0) r->tmin[v] = t;
      r->tmax[v] = t;
    }
  }
  for (int b = 0; b < m->nbuf; b++) {
    if (m->buf[b].role != BUF_TEMP) continue;
    int64_t count = shape_numel_const(&m->buf[b].sh);
    if (count < 0) return false;
    r->size[b] = count * (int64_t)portc_dtype_size(m->buf[b].dt);
    if (r->last[b] < r->first[b]) r->last[b] = r->first[b];
  }
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nin; k++)
      if (!push(&r->cons[g->nodes[i].in[k]], &r->ncons[g->nodes[i].in[k]], i)) return false;
  return true;
}

/* the kernel at which the temporaries alive together weigh the most */
static int peak_kernel(const rctx *r) {
  int best = -1;
  int64_t best_bytes = -1;
  for (int t = 0; t < r->m->nk; t++) {
    int64_t bytes = 0;
    for (int b = 0; b < r->m->nbuf; b++)
      if (r->m->buf[b].role == BUF_TEMP && r->first[b] <= t && t <= r->last[b]) bytes += r->size[b];
    if (bytes > best_bytes) best_bytes = bytes, best = t;
  }
  return best;
}

/* Walks the expression behind v (nodes without a buffer of their own: elementwise ops and views),
 * marking it in seen[]; false when it holds something else, is too long, or reads a temporary that
 * would have to live longer for it (one not live at late_at anyway and bigger than vsize / 16). */
static bool collect(rctx *r, candidate *c, int v, int late_at, int64_t vsize, char *seen, int *ops) {
  if (seen[v]) return true;
  seen[v] = 1;
  const node *n = &r->g->nodes[v];
  int b = r->m->node_buf[v];
  nclass cls = node_class(n);
  if (v != c->v && (b >= 0 || cls == C_SRC)) { /* a leaf, read by the clone */
    if (b < 0) return true; /* a one-element constant, inlined */
    if (r->taken[v] == 1) return false; /* another candidate's value: its readers after the peak move to the clone */
    if (r->m->buf[b].role != BUF_TEMP) return true;
    return r->last[b] >= late_at || r->size[b] * 16 <= vsize;
  }
  if (cls != C_PW && cls != C_VIEW) return false; /* a reduction inside a row kernel: not cheap */
  if (r->taken[v]) return false;
  if (cls == C_PW && ++*ops > REMAT_MAX_OPS) return false;
  for (int k = 0; k < n->nin; k++)
    if (!collect(r, c, n->in[k], late_at, vsize, seen, ops)) return false;
  return true;
}

/* Is buffer b's value worth recomputing after kernel t? Fills c when it is. */
static bool consider(rctx *r, int b, int t, char *seen, candidate *c) {
  const kir_module *m = r->m;
  int v = m->buf[b].node;
  if (m->buf[b].role != BUF_TEMP || !(r->first[b] < t && t < r->last[b]) || node_class(&r->g->nodes[v]) != C_PW || r->taken[v])
    return false;
  const kir_kernel *k = &m->k[t];
  for (int i = 0; i < k->nval + k->nin; i++)
    if (kir_read_buf(k, i) == b) return false; /* the peak reads it */
  memset(c, 0, sizeof *c);
  c->v = v;
  c->pos = r->g->n;
  int late_at = m->nk;
  for (int q = 0; q < r->ncons[v]; q++) {
    int u = r->cons[v][q];
    if (r->tmin[u] < 0 || (r->tmin[u] < t && r->tmax[u] > t)) goto fail; /* no kernel, or both sides */
    if (r->tmin[u] < t) continue;
    if (!push(&c->late, &c->nlate, u)) goto fail;
    if (u < c->pos) c->pos = u;
    if (r->tmin[u] < late_at) late_at = r->tmin[u];
  }
  memset(seen, 0, (size_t)r->g->n);
  int ops = 0;
  bool ok = c->nlate > 0 && collect(r, c, v, late_at, r->size[b], seen, &ops);
  for (int i = 0; ok && i < r->g->n; i++)
    if (seen[i] && (i == v || (m->node_buf[i] < 0 && node_class(&r->g->nodes[i]) != C_SRC))) ok = push(&c->expr, &c->nexpr, i);
  if (ok) return true;
fail:
  free(c->late), free(c->expr);
  return false;
}

/* marks what a chosen candidate clones and reads, so that no other candidate of the round
 * touches it */
static void take(rctx *r, const candidate *c, const char *seen) {
  for (int i = 0; i < r->g->n; i++)
    if (seen[i] && !r->taken[i]) r->taken[i] = 2;
  for (int i = 0; i < c->nexpr; i++) r->taken[c->expr[i]] = 1;
}

/* Does sum u (inlined in kernel t) add a temporary that dies at t and is not much smaller? */
static bool adds_dying(const rctx *r, int u, int t) {
  const node *n = &r->g->nodes[u];
  if (n->op != OP_add || r->m->node_buf[u] >= 0 || r->tmin[u] != t || r->tmax[u] != t) return false;
  int64_t bytes = shape_numel_const(&n->sh) * (int64_t)portc_dtype_size(n->dt);
  for (int k = 0; k < n->nin; k++) {
    int a = n->in[k];
    while (r->m->node_buf[a] < 0 && node_class(&r->g->nodes[a]) == C_VIEW) a = r->g->nodes[a].in[0];
    int b = r->m->node_buf[a];
    if (b >= 0 && r->m->buf[b].role == BUF_TEMP && r->last[b] == t && r->first[b] < t && r->size[b] * 4 >= bytes) return true;
  }
  return false;
}

/* A sum of several temporaries made one after the other (a gradient accumulated over the
 * offsets of a pooling window) is one kernel that reads them all, so all of them live until it
 * runs. Where such a sum holds temporaries across the peak kernel t, each partial sum that feeds
 * the next is kept in memory instead: it runs as soon as its operands exist, and they die there. */
static bool choose_splits(rctx *r, int t) {
  bool *done = calloc((size_t)r->m->nk + 1, sizeof *done);
  if (!done) return false;
  for (int b = 0; b < r->m->nbuf; b++) {
    int at = r->last[b];
    if (r->m->buf[b].role != BUF_TEMP || r->first[b] > t || at < t || done[at]) continue;
    done[at] = true;
    const kir_kernel *k = &r->m->k[at];
    int n = 0;
    for (int j = 0; j < k->nnodes; j++) n += adds_dying(r, k->nodes[j], at);
    for (int j = 0; j < k->nnodes && n >= 2; j++) {
      int u = k->nodes[j];
      bool feeds_next = adds_dying(r, u, at) && r->ncons[u] == 1 && adds_dying(r, r->cons[u][0], at);
      if (feeds_next && !r->taken[u]) r->split[u] = true, r->nsplit++;
    }
  }
  free(done);
  return true;
}

/* the candidates of this round, largest first */
static bool choose(rctx *r) {
  int t = peak_kernel(r);
  if (t < 0) return true;
  int nb = r->m->nbuf, *order = malloc(sizeof *order * (size_t)(nb + 1));
  char *seen = malloc((size_t)r->g->n + 1);
  bool ok = order && seen;
  int n = 0;
  for (int b = 0; ok && b < nb; b++)
    if (r->m->buf[b].role == BUF_TEMP) order[n++] = b;
  for (int i = 1; ok && i < n; i++) /* insertion sort by size, largest first */
    for (int j = i; j > 0 && r->size[order[j]] > r->size[order[j - 1]]; j--) {
      int x = order[j];
      order[j] = order[j - 1], order[j - 1] = x;
    }
  for (int i = 0; ok && i < n; i++) {
    candidate c;
    if (!consider(r, order[i], t, seen, &c)) continue;
    candidate *cs = realloc(r->c, sizeof *cs * (size_t)(r->nc + 1));
    if (!cs) {
      free(c.late), free(c.expr);
      ok = false;
      break;
    }
    (r->c = cs)[r->nc++] = c;
    take(r, &c, seen);
  }
  free(order), free(seen);
  return ok && choose_splits(r, t);
}

/* a name for x's clone that neither graph uses */
static void clone_name(const portc_graph *g, const portc_graph *out, int x, char *name, size_t cap) {
  for (int tries = 0; tries < 1000; tries++) {
    snprintf(name, cap, tries ? "%.200s.recomputed%d" : "%.200s.recomputed", g->nodes[x].name, tries);
    if (graph_find(g, name) < 0 && graph_find(out, name) < 0) return;
  }
}

/* the clones of candidate c's expression, before node c->pos; *value receives the clone of c->v */
static portc_status add_clones(const rctx *r, portc_graph *out, const candidate *c, int32_t *remap, int32_t *saved, int32_t *value) {
  portc_status st = PORTC_OK;
  int e = 0;
  for (; !st && e < c->nexpr; e++) { /* in graph order, so that a clone's inputs are cloned first */
    int x = c->expr[e];
    char name[256];
    clone_name(r->g, out, x, name, sizeof name);
    portc_node y = copy_node_named(out, r->g, x, remap, NULL, name);
    if (y >= 0) out->nodes[y].recomputed = true;
    saved[e] = remap[x];
    remap[x] = y; /* the clones after this one read it */
    if (y < 0) st = portc_node_status(y);
    if (x == c->v) *value = y;
  }
  while (e-- > 0) remap[c->expr[e]] = saved[e];
  return st;
}

/* g rebuilt with every candidate's clone into *res */
static portc_status rebuild_with_clones(const rctx *r, portc_graph **res) {
  const portc_graph *g = r->g;
  portc_graph *out = portc_graph_new(g->name);
  int most = 1;
  for (int q = 0; q < r->nc; q++)
    if (r->c[q].nexpr > most) most = r->c[q].nexpr;
  int32_t *remap = malloc(sizeof *remap * (size_t)(g->n + 1)), *saved = malloc(sizeof *saved * (size_t)most);
  int32_t *value = malloc(sizeof *value * (size_t)(r->nc + 1));
  bool ok = out && remap && saved && value && (!g->basedir || (out->basedir = strdup(g->basedir)));
  portc_status st = ok ? PORTC_OK : err_set(PORTC_ERR_NOMEM, "remat: out of memory");
  if (ok) out->next_auto = g->next_auto;
  for (int i = 0; ok && i < g->n; i++) {
    for (int q = 0; ok && q < r->nc; q++)
      if (r->c[q].pos == i && (st = add_clones(r, out, &r->c[q], remap, saved, &value[q]))) ok = false;
    int32_t keep[8]; /* a late consumer reads the clone of each candidate it consumes */
    int patched[8], np = 0;
    for (int q = 0; ok && q < r->nc; q++)
      for (int u = 0; u < r->c[q].nlate && np < 8; u++)
        if (r->c[q].late[u] == i) {
          patched[np] = r->c[q].v, keep[np++] = remap[r->c[q].v];
          remap[r->c[q].v] = value[q];
        }
    if (ok && (remap[i] = copy_node(out, g, i, remap, NULL)) < 0) ok = false, st = portc_node_status(remap[i]);
    if (ok && r->split[i]) out->nodes[remap[i]].stored = true;
    while (np-- > 0) remap[patched[np]] = keep[np];
  }
  for (int k = 0; ok && k < g->nout; k++) ok = !(st = portc_output(out, remap[g->outputs[k]]));
  free(remap), free(saved), free(value);
  if (st) portc_graph_free(out);
  else *res = out;
  return st;
}

static void free_candidates(rctx *r) {
  for (int q = 0; q < r->nc; q++) free(r->c[q].expr), free(r->c[q].late);
  free(r->c);
  r->c = NULL;
  r->nc = 0;
}

/* one round: the module with this round's clones, when its arena is smaller (else NULL) */
static portc_status round_of(const kir_module *m, int max_loads, kir_module **better) {
  const portc_graph *g = m->g;
  *better = NULL;
  rctx r = {.m = m, .g = g};
  r.first = malloc(sizeof *r.first * (size_t)(m->nbuf + 1));
  r.last = malloc(sizeof *r.last * (size_t)(m->nbuf + 1));
  r.size = calloc((size_t)m->nbuf + 1, sizeof *r.size);
  r.tmin = malloc(sizeof *r.tmin * (size_t)(g->n + 1));
  r.tmax = malloc(sizeof *r.tmax * (size_t)(g->n + 1));
  r.cons = calloc((size_t)g->n + 1, sizeof *r.cons);
  r.ncons = calloc((size_t)g->n + 1, sizeof *r.ncons);
  r.taken = calloc((size_t)g->n + 1, 1);
  r.split = calloc((size_t)g->n + 1, sizeof *r.split);
  portc_status st = PORTC_OK;
  if (!r.first || !r.last || !r.size || !r.tmin || !r.tmax || !r.cons || !r.ncons || !r.taken || !r.split)
    st = err_set(PORTC_ERR_NOMEM, "remat: out of memory");
  else if (analyse(&r) && choose(&r) && r.nc + r.nsplit > 0) {
    portc_graph *g2 = NULL;
    bool dead;
    kir_module *m2 = NULL;
    if ((st = rebuild_with_clones(&r, &g2)) || (st = opt_dce(g2, &dead)) || (st = fuse(g2, false, max_loads, &m2))) {
      portc_graph_free(g2); /* fuse owns it only when it succeeds */
    } else {
      mem_plan before, after;
      if (!(st = plan_memory(m, NULL, &before, NULL)) && !(st = plan_memory(m2, NULL, &after, NULL)) && after.arena_bytes < before.arena_bytes) {
        m2->remat_values = m->remat_values + r.nc + r.nsplit;
        m2->remat_arena_before = m->remat_values ? m->remat_arena_before : before.arena_bytes;
        *better = m2;
      } else {
        kir_module_free(m2);
      }
    }
  }
  for (int i = 0; r.cons && i < g->n; i++) free(r.cons[i]);
  free_candidates(&r);
  free(r.first), free(r.last), free(r.size), free(r.tmin), free(r.tmax), free(r.cons), free(r.ncons), free(r.taken), free(r.split);
  return st;
}

/* A round that fails (out of memory, a rebuilt graph the fuser refuses) ends the search with the
 * module of the round before: rematerialization only saves memory, and that module is whole. */
bool remat(kir_module **m, int max_loads) {
  bool changed = false;
  for (int round = 0; round < REMAT_ROUNDS; round++) {
    kir_module *better = NULL;
    if (round_of(*m, max_loads, &better) || !better) break;
    kir_module_free(*m);
    *m = better;
    changed = true;
  }
  return changed;
}
