/*
 * fuse.c: decides which values live in memory and which nodes each kernel computes.
 *
 * Rules, in the order they apply:
 *  1. Graph outputs, inputs, parameters, constants (but one-element constants, which are
 *     inlined), the results of reductions, matmuls, convolutions and opaque ops, the values
 *     the memory plan marks `stored` (remat.c) and the views marked `copied` (matmul_rows.c) are
 *     materialized. Operands of a matmul are loaded
 *     through views, never computed, so the first non-view value behind each operand is
 *     materialized; inputs of convolutions and opaque ops are materialized as they are.
 *  2. Several consumers: an elementwise value used by more than one consumer is recomputed in
 *     each (inlined) when its expression has at most 8 ops, and materialized otherwise. An
 *     inlined expression is at most 64 ops deep and reads at most 24 buffers: a longer or wider
 *     one is cut into several kernels, as is a chain of views longer than a kernel's index maps.
 *  3. Matmul and conv2d take their elementwise epilogue: the chain of single-consumer elementwise
 *     ops of the same shape that follows them (bias, activation, residual add). A convolution
 *     also stores the casts of the epilogue's result that would be kernels of their own (under
 *     autocast, a residual block's f32 output narrowed to f16 for the next convolution): a
 *     second store of the value it holds, instead of a kernel that reads it back.
 *  4. Reductions over the same rows (same input shape, same reduced axes) share one ROW kernel
 *     when one feeds the next through elementwise ops (softmax: max, then sum). Elementwise ops
 *     over those rows, or over their per-row results, join the kernel, which stores only what is
 *     used outside it; clones that rematerialization made (`recomputed`) do not, since they are
 *     there to be computed late, where they are read, not with the rows they are computed from.
 *  5. Every other materialized elementwise value or view gets a POINTWISE kernel, with all the
 *     non-materialized values behind it inlined.
 * Eager mode materializes every value and gives each op its own kernel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse_plan.h"

#define RECOMPUTE_LIMIT 8
#define MAX_EXPR_DEPTH 64
#define MAX_EXPR_DEPTH_TEXT "64"
/* distinct buffers one inlined expression may read: Vulkan devices bind 32 storage buffers per
 * shader stage or fewer (lavapipe 32), and a kernel also writes and binds its status word */
#define MAX_EXPR_LOADS 24
#define MAX_EXPR_LOADS_TEXT "24"

nclass node_class(const node *n) {
  switch (op_get(n->op)->kind) {
  case K_SOURCE: return C_SRC;
  case K_UNARY: case K_BINARY: case K_COMPARE: case K_WHERE: case K_CAST: case K_MASK: return C_PW;
  case K_REDUCE: return C_RED;
  case K_MATMUL: return C_MM;
  case K_CONV: return C_CONV;
  case K_VIEW:
    return n->op == OP_reshape || n->op == OP_permute || n->op == OP_expand || n->op == OP_slice ? C_VIEW : C_OPQ;
  default: return C_OPQ;
  }
}

typedef struct fctx {
  fplan *p;
  portc_graph *g;
  int *ncons;
  int32_t **cons;
  int *cost;
  bool *is_out;
  int max_loads; /* the most buffers an inlined expression reads (MAX_EXPR_LOADS, or the target's lower bound) */
} fctx;

static void set_mat(fctx *c, int i, const char *why) {
  if (c->p->mat[i]) return;
  c->p->mat[i] = true;
  c->p->why_mat[i] = (char *)why;
}

static bool is_scalar_const(const node *n) { return n->op == OP_const && n->value.n == 1; }

/* ops in the inlined expression of node i (views cost nothing) */
static int expr_cost(fctx *c, int i) {
  if (c->cost[i] >= 0) return c->cost[i];
  const node *n = &c->g->nodes[i];
  int cost = 0;
  if (!c->p->mat[i] && (c->p->cls[i] == C_PW || c->p->cls[i] == C_VIEW)) {
    cost = c->p->cls[i] == C_PW;
    for (int k = 0; k < n->nin; k++) cost += expr_cost(c, n->in[k]);
  }
  return c->cost[i] = cost;
}

/* 2b. An inlined expression is at most MAX_EXPR_DEPTH elementwise ops and views deep: the value
 * at that depth is materialized, so that a long chain becomes several kernels (and building and
 * emitting a kernel, which recurse over its expression, stay within a thread's stack). Nodes come
 * in topological order, so one pass gives every node its depth. */
static void bound_depth(fctx *c) {
  fplan *p = c->p;
  for (int i = 0; i < c->g->n; i++) {
    c->cost[i] = 0; /* reused: the depth of node i's inlined expression */
    if (p->mat[i] || (p->cls[i] != C_PW && p->cls[i] != C_VIEW)) continue;
    const node *n = &c->g->nodes[i];
    int d = 0;
    for (int k = 0; k < n->nin; k++)
      if (!p->mat[n->in[k]] && c->cost[n->in[k]] > d) d = c->cost[n->in[k]];
    if (d + 1 > MAX_EXPR_DEPTH) set_mat(c, i, "an expression " MAX_EXPR_DEPTH_TEXT " ops deep ends here");
    else c->cost[i] = d + 1;
  }
}

/* 2d. The index maps from a kernel's index to a buffer it reads are at most KIR_MAX_STEPS long
 * (kir.h): one per view and one per broadcast operand on the way. Where a chain of views would be
 * longer (an exported attention's q: a projection sliced, reshaped, permuted and scaled), the
 * value where it passes MAX_EXPR_STEPS is materialized and the chain starts again from it; the
 * margin leaves room for the steps a matmul operand or a row kernel adds in front. */
#define MAX_EXPR_STEPS (KIR_MAX_STEPS - 4)
static void bound_steps(fctx *c) {
  fplan *p = c->p;
  for (int i = 0; i < c->g->n; i++) {
    c->cost[i] = 0; /* reused: the longest chain of steps from node i to a buffer it reads */
    if (p->mat[i] || (p->cls[i] != C_PW && p->cls[i] != C_VIEW)) continue;
    const node *n = &c->g->nodes[i];
    int steps = 0;
    for (int k = 0; k < n->nin; k++) {
      int a = n->in[k];
      int own = p->cls[i] == C_VIEW || !shape_eq(&n->sh, &c->g->nodes[a].sh); /* a view, or a broadcast */
      bool inlined = !p->mat[a] && (p->cls[a] == C_PW || p->cls[a] == C_VIEW);
      if (inlined && own + c->cost[a] > MAX_EXPR_STEPS) { /* the chain behind a starts again from memory */
        set_mat(c, a, "a chain of views longer than a kernel's index maps ends here");
        inlined = false;
      }
      if (own + (inlined ? c->cost[a] : 0) > steps) steps = own + (inlined ? c->cost[a] : 0);
    }
    c->cost[i] = steps;
  }
}

/* the distinct materialized values the inlined expression behind v reads, counted up to limit
 * (stamp[] marks what this walk has seen) */
static int count_loads(fctx *c, int v, int *stamp, int mark, int count, int limit) {
  if (stamp[v] == mark || count > limit) return count;
  stamp[v] = mark;
  fplan *p = c->p;
  if (p->mat[v] || (p->cls[v] != C_PW && p->cls[v] != C_VIEW)) return count + !is_scalar_const(&c->g->nodes[v]);
  const node *n = &c->g->nodes[v];
  for (int k = 0; k < n->nin; k++) count = count_loads(c, n->in[k], stamp, mark, count, limit);
  return count;
}

/* 2c. An inlined expression reads at most MAX_EXPR_LOADS buffers (fewer where the target binds
 * fewer: WebGPU's 8 to 10 storage buffers per shader): where a node's expression would read more
 * (a sum of 40 tensors), its widest operand is materialized, until it fits. */
static void bound_loads(fctx *c) {
  fplan *p = c->p;
  int n = c->g->n, *stamp = calloc((size_t)n + 1, sizeof *stamp), *loads = calloc((size_t)n + 1, sizeof *loads), mark = 0;
  if (!stamp || !loads) { /* out of memory: fusion goes on unbounded; the target reports a kernel too wide */
    free(stamp), free(loads);
    return;
  }
  for (int i = 0; i < n; i++) {
    if (p->mat[i] || (p->cls[i] != C_PW && p->cls[i] != C_VIEW)) continue;
    const node *x = &c->g->nodes[i];
    for (;;) {
      int count = 0, widest = -1;
      mark++;
      for (int k = 0; k < x->nin; k++) count = count_loads(c, x->in[k], stamp, mark, count, c->max_loads);
      loads[i] = count;
      if (count <= c->max_loads) break;
      for (int k = 0; k < x->nin; k++) {
        int v = x->in[k];
        if (!p->mat[v] && (p->cls[v] == C_PW || p->cls[v] == C_VIEW) && (widest < 0 || loads[v] > loads[widest])) widest = v;
      }
      if (widest < 0) break; /* every operand is a buffer already */
      set_mat(c, widest, c->max_loads == MAX_EXPR_LOADS ? "the expression it joins would read more than " MAX_EXPR_LOADS_TEXT " buffers"
                                                         : "the expression it joins would read more buffers than the target binds in a kernel");
    }
  }
  free(stamp), free(loads);
}

static void initial_materialization(fctx *c, bool eager) {
  fplan *p = c->p;
  for (int i = 0; i < c->g->n; i++) {
    const node *n = &c->g->nodes[i];
    if (p->cls[i] == C_SRC && !is_scalar_const(n)) set_mat(c, i, "a graph input, parameter or constant");
    if (c->is_out[i]) set_mat(c, i, "a graph output");
    if (n->stored && !eager) set_mat(c, i, "a partial sum the memory plan keeps, so that its operands are freed as it goes");
    if (n->copied && !eager) set_mat(c, i, "a matmul's rows, copied so that they lie as a matrix");
    if (eager && p->cls[i] != C_SRC) set_mat(c, i, "eager mode: one kernel per op");
    if (p->cls[i] == C_RED || p->cls[i] == C_MM || p->cls[i] == C_CONV || p->cls[i] == C_OPQ) set_mat(c, i, "the result of a kernel anchor");
    if (p->cls[i] == C_CONV || p->cls[i] == C_OPQ)
      for (int k = 0; k < n->nin; k++) set_mat(c, n->in[k], "read whole by a convolution or an opaque op");
    if (p->cls[i] == C_MM)
      for (int k = 0; k < n->nin; k++) {
        int v = n->in[k];
        while (p->cls[v] == C_VIEW && !p->mat[v]) v = c->g->nodes[v].in[0];
        set_mat(c, v, "an operand of a matmul (operands are loaded through views, not computed)");
      }
  }
  if (eager) return;
  for (int i = 0; i < c->g->n; i++) c->cost[i] = -1;
  for (int i = 0; i < c->g->n; i++)
    if (p->cls[i] == C_PW && c->ncons[i] > 1 && expr_cost(c, i) > RECOMPUTE_LIMIT)
      set_mat(c, i, "used by several consumers and too costly to recompute in each");
  bound_depth(c);
  bound_steps(c);
  bound_loads(c);
}

static int new_plan(fplan *p, kir_kind kind, int anchor) {
  kplan *k = realloc(p->k, sizeof *k * (size_t)(p->nk + 1));
  if (!k) return -1;
  p->k = k;
  memset(&k[p->nk], 0, sizeof *k);
  k[p->nk].kind = kind;
  k[p->nk].anchor = anchor;
  k[p->nk].end = anchor;
  k[p->nk].x_node = -1;
  return p->nk++;
}

static bool add_member(fplan *p, int plan, int node) {
  kplan *k = &p->k[plan];
  int32_t *m = realloc(k->members, sizeof *m * (size_t)(k->nmembers + 1));
  if (!m) return false;
  k->members = m;
  m[k->nmembers++] = node;
  p->group[node] = plan;
  return true;
}

/* 3. the elementwise epilogue of a matmul or conv */
static bool epilogue(fctx *c, int plan, int anchor) {
  fplan *p = c->p;
  int cur = anchor;
  const char *stop = "its result is stored";
  for (;;) {
    if (c->is_out[cur]) { stop = "its value is a graph output"; break; }
    if (c->ncons[cur] != 1) { stop = c->ncons[cur] ? "its value has several consumers" : "nothing reads it"; break; }
    int nx = c->cons[cur][0];
    const node *n = &c->g->nodes[nx];
    if (p->cls[nx] != C_PW || p->group[nx] >= 0) { stop = "its consumer is not elementwise"; break; }
    const shape *a = &c->g->nodes[anchor].sh;
    bool same = n->sh.rank == a->rank;
    for (int d = 0; same && d < a->rank; d++) same = dim_eq(n->sh.d[d], a->d[d]);
    if (!same) { stop = "its consumer changes the shape"; break; }
    p->mat[cur] = false; /* read only by the next op of the epilogue */
    if (!add_member(p, plan, nx)) return false;
    cur = nx;
  }
  set_mat(c, cur, "the end of an epilogue");
  p->k[plan].end = cur;
  snprintf(p->k[plan].why, sizeof p->k[plan].why, "ends at %s: %s", c->g->nodes[cur].name, stop);
  int stores = 1;
  for (int q = 0; q < c->ncons[cur] && p->cls[anchor] == C_CONV && stores < KIR_MAX_STORES; q++) { /* casts stored beside it */
    int x = c->cons[cur][q];
    const node *n = &c->g->nodes[x];
    if (op_get(n->op)->kind != K_CAST || !p->mat[x] || p->group[x] >= 0 || !shape_eq(&n->sh, &c->g->nodes[cur].sh)) continue;
    if (!add_member(p, plan, x)) return false;
    stores++;
  }
  return true;
}

/* the row space of a reduction: its input's shape and the reduced axes */
static void row_key(const portc_graph *g, int r, bool *mask) {
  const node *n = &g->nodes[r], *x = &g->nodes[n->in[0]];
  const attr *axes = attr_get(n, "axes");
  memset(mask, 0, sizeof(bool) * PORTC_MAX_RANK);
  for (int k = 0; k < axes->n; k++) mask[norm_axis(axes->v[k], x->sh.rank)] = true;
  if (axes->n == 0)
    for (int d = 0; d < x->sh.rank; d++) mask[d] = true;
}

/* Is s the row space X itself (2), X with its reduced dims kept as 1 (1), X with them dropped
 * (3), or none of these (0)? */
static int row_level(const shape *s, const shape *x, const bool *mask) {
  if (shape_eq(s, x)) return 2;
  shape keep = *x, drop = {0};
  for (int d = 0; d < x->rank; d++) {
    if (mask[d]) keep.d[d] = (dim){1, -1};
    else drop.d[drop.rank++] = x->d[d];
  }
  if (shape_eq(s, &keep)) return 1;
  if (shape_eq(s, &drop)) return 3;
  return 0;
}

/* Does node v depend, through any path, on a member of plan? (a kernel must not read a value
 * that is computed from its own results) */
static bool depends_on(fctx *c, int v, int plan, char *seen) {
  if (seen[v]) return seen[v] == 2;
  seen[v] = 1;
  if (c->p->group[v] == plan) return seen[v] = 2, true;
  const node *n = &c->g->nodes[v];
  for (int k = 0; k < n->nin; k++)
    if (depends_on(c, n->in[k], plan, seen)) return seen[v] = 2, true;
  return false;
}

/* Walks the inlined expression behind node v for joining row plan `plan`: every inlined node
 * must be elementwise over the row space, every value read must not depend on the plan. Sets
 * *touches when the expression uses a member of the plan. */
static bool joinable_expr(fctx *c, int v, int plan, bool *touches, char *seen, bool root);
static bool joinable(fctx *c, int v, int plan, bool *touches, char *seen) { return joinable_expr(c, v, plan, touches, seen, false); }

/* root: v is the candidate itself, which the kernel would compute even if it is stored */
static bool joinable_expr(fctx *c, int v, int plan, bool *touches, char *seen, bool root) {
  fplan *p = c->p;
  const kplan *k = &p->k[plan];
  const shape *x = &c->g->nodes[k->x_node].sh;
  const node *n = &c->g->nodes[v];
  if (p->group[v] == plan) {
    *touches = true;
    return true;
  }
  if (!root && (p->group[v] >= 0 || p->mat[v] || p->cls[v] == C_SRC)) { /* read from memory */
    memset(seen, 0, (size_t)c->g->n);
    return !depends_on(c, v, plan, seen);
  }
  if (!root && p->cls[v] == C_VIEW) { /* a view of a value in memory is a load through an index map */
    int base = v;
    while (p->cls[base] == C_VIEW && !p->mat[base]) base = c->g->nodes[base].in[0];
    if (!p->mat[base] && p->cls[base] != C_SRC) return false;
    memset(seen, 0, (size_t)c->g->n);
    return !depends_on(c, v, plan, seen);
  }
  if (p->cls[v] != C_PW) return false; /* a computed view or an unfused anchor inside the row */
  int lv = row_level(&n->sh, x, k->red_mask);
  if (!lv) return false;
  for (int i = 0; i < n->nin; i++) {
    const node *a = &c->g->nodes[n->in[i]];
    bool member_like = p->group[n->in[i]] == plan || (!p->mat[n->in[i]] && p->cls[n->in[i]] == C_PW);
    int la = row_level(&a->sh, x, k->red_mask);
    /* per-row values reach the row only through keepdim broadcasting */
    if (member_like && la != lv && !(lv == 2 && la == 1)) return false;
    if (!joinable(c, n->in[i], plan, touches, seen)) return false;
  }
  return true;
}

/* the reductions a row plan holds: a kernel runs at most KIR_MAX_PHASES of them */
static int plan_reductions(const fplan *p, int k) {
  int n = 0;
  for (int m = 0; m < p->k[k].nmembers; m++) n += p->cls[p->k[k].members[m]] == C_RED;
  return n;
}

/* 4. row kernels */
static bool row_plans(fctx *c) {
  fplan *p = c->p;
  int n = c->g->n;
  char *seen = malloc((size_t)n + 1);
  if (!seen) return false;
  for (int i = 0; i < n; i++) {
    if (p->cls[i] != C_RED) continue;
    bool mask[PORTC_MAX_RANK];
    row_key(c->g, i, mask);
    int x = c->g->nodes[i].in[0], joined = -1;
    for (int k = 0; k < p->nk && joined < 0; k++) {
      kplan *kp = &p->k[k];
      if (kp->kind != KK_ROW || memcmp(kp->red_mask, mask, sizeof mask) != 0 || !shape_eq(&c->g->nodes[kp->x_node].sh, &c->g->nodes[x].sh))
        continue;
      bool touches = false;
      if (plan_reductions(p, k) >= KIR_MAX_PHASES) continue; /* full: the next reduction starts a kernel */
      if (joinable(c, x, k, &touches, seen) && touches && kp->nmembers < 64) joined = k;
    }
    if (joined < 0) {
      if ((joined = new_plan(p, KK_ROW, i)) < 0) goto oom;
      p->k[joined].x_node = x;
      memcpy(p->k[joined].red_mask, mask, sizeof mask);
    }
    if (!add_member(p, joined, i)) goto oom;
    /* elementwise consumers over the row join, in order */
    for (int j = i + 1; j < n; j++) {
      if (p->cls[j] != C_PW || p->group[j] >= 0 || c->g->nodes[j].recomputed) continue;
      bool touches = false;
      if (joinable_expr(c, j, joined, &touches, seen, true) && touches && !add_member(p, joined, j)) goto oom;
    }
  }
  free(seen);
  return true;
oom:
  free(seen);
  return false;
}

/* which members of a plan are read outside it: those are stored */
static void plan_stores(fctx *c, int plan) {
  fplan *p = c->p;
  kplan *k = &p->k[plan];
  for (int m = 0; m < k->nmembers; m++) {
    int v = k->members[m];
    bool outside = c->is_out[v];
    for (int q = 0; q < c->ncons[v] && !outside; q++) outside = p->group[c->cons[v][q]] != plan;
    if (outside) set_mat(c, v, "read outside its row kernel");
    else if (p->cls[v] != C_SRC) p->mat[v] = false;
  }
}

static portc_status plan_all(fctx *c, bool eager) {
  fplan *p = c->p;
  initial_materialization(c, eager);
  for (int i = 0; i < c->g->n; i++) {
    nclass cl = p->cls[i];
    if (cl == C_MM || cl == C_CONV || cl == C_OPQ) {
      int k = new_plan(p, cl == C_MM ? KK_MATMUL : cl == C_CONV ? KK_CONV : KK_OPAQUE, i);
      if (k < 0 || !add_member(p, k, i)) return err_set(PORTC_ERR_NOMEM, "fuse: out of memory");
      if (cl != C_OPQ && !eager && !epilogue(c, k, i)) return err_set(PORTC_ERR_NOMEM, "fuse: out of memory");
      if (cl == C_OPQ || eager) snprintf(p->k[k].why, sizeof p->k[k].why, "%s", cl == C_OPQ ? "an opaque op: a kernel of its own" : "eager mode");
    }
  }
  if (eager) {
    for (int i = 0; i < c->g->n; i++)
      if (p->cls[i] == C_RED) {
        int k = new_plan(p, KK_ROW, i);
        if (k < 0 || !add_member(p, k, i)) return err_set(PORTC_ERR_NOMEM, "fuse: out of memory");
        p->k[k].x_node = c->g->nodes[i].in[0];
        row_key(c->g, i, p->k[k].red_mask);
        snprintf(p->k[k].why, sizeof p->k[k].why, "eager mode");
      }
  } else if (!row_plans(c)) {
    return err_set(PORTC_ERR_NOMEM, "fuse: out of memory");
  }
  for (int k = 0; k < p->nk; k++)
    if (p->k[k].kind == KK_ROW) {
      plan_stores(c, k);
      if (!p->k[k].why[0]) snprintf(p->k[k].why, sizeof p->k[k].why, "stores what is read outside the row kernel");
    }
  /* 5. the remaining materialized elementwise values and views */
  for (int i = 0; i < c->g->n; i++) {
    if ((p->cls[i] != C_PW && p->cls[i] != C_VIEW) || !p->mat[i] || p->group[i] >= 0) continue;
    int k = new_plan(p, KK_POINTWISE, i);
    if (k < 0 || !add_member(p, k, i)) return err_set(PORTC_ERR_NOMEM, "fuse: out of memory");
    snprintf(p->k[k].why, sizeof p->k[k].why, "%s is %s", c->g->nodes[i].name, p->why_mat[i] ? p->why_mat[i] : "stored");
  }
  return PORTC_OK;
}

portc_status fuse(portc_graph *g, bool eager, int max_loads, kir_module **out) {
  int n = g->n;
  fplan p = {.g = g};
  fctx c = {.p = &p, .g = g, .max_loads = max_loads > 0 && max_loads < MAX_EXPR_LOADS ? max_loads : MAX_EXPR_LOADS};
  p.cls = calloc((size_t)n + 1, sizeof *p.cls);
  p.mat = calloc((size_t)n + 1, sizeof *p.mat);
  p.group = malloc(sizeof *p.group * (size_t)(n + 1));
  p.why_mat = calloc((size_t)n + 1, sizeof *p.why_mat);
  c.ncons = calloc((size_t)n + 1, sizeof *c.ncons);
  c.cons = calloc((size_t)n + 1, sizeof *c.cons);
  c.cost = malloc(sizeof *c.cost * (size_t)(n + 1));
  c.is_out = calloc((size_t)n + 1, sizeof *c.is_out);
  portc_status st = PORTC_OK;
  if (!p.cls || !p.mat || !p.group || !p.why_mat || !c.ncons || !c.cons || !c.cost || !c.is_out) {
    st = err_set(PORTC_ERR_NOMEM, "fuse: out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++) {
    p.cls[i] = node_class(&g->nodes[i]);
    p.group[i] = -1;
    for (int k = 0; k < g->nodes[i].nin; k++) {
      int v = g->nodes[i].in[k];
      int32_t *cs = realloc(c.cons[v], sizeof *cs * (size_t)(c.ncons[v] + 1));
      if (!cs) {
        st = err_set(PORTC_ERR_NOMEM, "fuse: out of memory");
        goto done;
      }
      c.cons[v] = cs;
      cs[c.ncons[v]++] = i;
    }
  }
  for (int k = 0; k < g->nout; k++) c.is_out[g->outputs[k]] = true;
  if (!(st = plan_all(&c, eager))) st = kir_build(&p, eager, out);
done:
  for (int i = 0; i < n && c.cons; i++) free(c.cons[i]);
  for (int k = 0; k < p.nk; k++) free(p.k[k].members);
  free(p.k);
  free(c.cons);
  free(c.ncons);
  free(c.cost);
  free(c.is_out);
  free(p.cls);
  free(p.mat);
  free(p.group);
  free(p.why_mat);
  return st;
}
