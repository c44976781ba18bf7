/*
 * kernel_buffers.c: which buffers a kernel touches, for the GPU targets, which bind or pass only
 * those: the dialect declares them and the runtime hands them over in the same order; and whether
 * a matmul operand is a plain row-major matrix, or the whole matmul one 2-D GEMM, which the
 * matrix-unit and library paths need.
 */
#include <stdlib.h>

#include "../ir/dtype.h"
#include "emit.h"

bool kernel_writes(const kir_kernel *k, int buf) {
  for (int s = 0; s < k->nstore; s++)
    if (k->store[s].buf == buf) return true;
  return false;
}

/* adds b to the list unless it is there: n counts every distinct buffer, bufs keeps max */
static int add_buffer(int b, int *bufs, int n, int max) {
  for (int j = 0; j < n && j < max; j++)
    if (bufs[j] == b) return n;
  if (n < max) bufs[n] = b;
  return n + 1;
}

/* the order is the kernel's own (operands, then loads in value order, then stores), not the
 * module's buffer numbers: identical kernels anywhere in a graph list their buffers alike, and
 * so name and bind them alike (regional compilation) */
int kernel_buffers(const kir_module *m, int i, int *bufs, int max) {
  const kir_kernel *k = &m->k[i];
  int n = 0;
  for (int j = 0; j < k->nin; j++)
    if (k->in_buf[j] >= 0) n = add_buffer(k->in_buf[j], bufs, n, max);
  for (int v = 0; v < k->nval; v++)
    if (k->val[v].kind == KV_LOAD) n = add_buffer(k->val[v].buf, bufs, n, max);
  for (int s = 0; s < k->nstore; s++) n = add_buffer(k->store[s].buf, bufs, n, max);
  return n;
}

const char *status_message(unsigned word) {
  if ((word & STATUS_BAD_INDEX) && (word & STATUS_DIV_ZERO)) return "an index is out of range (gather), and an integer division by zero";
  return word & STATUS_DIV_ZERO ? "integer division by zero" : "an index is out of range (gather)";
}

bool kernel_has_status(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind == KK_OPAQUE && m->g->nodes[k->node].op == OP_gather) return true;
  for (int v = 0; v < k->nval; v++)
    if (k->val[v].kind == KV_OP && k->val[v].op == OP_div && !dtype_is_float(k->val[v].dt)) return true;
  return false;
}

static bool same_dims(const shape *a, const shape *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->d[d].sym != b->d[d].sym || a->d[d].c != b->d[d].c) return false;
  return true;
}

bool path_is_identity(const kir_kernel *k, int path) {
  const kir_path *p = path >= 0 ? &k->path[path] : NULL;
  for (int s = 0; p && s < p->n; s++) {
    const kir_step *st = &p->s[s];
    bool ident = same_dims(&st->from, &st->to) && (st->kind == ST_BCAST || st->kind == ST_RESHAPE);
    if (st->kind == ST_PERMUTE) {
      ident = same_dims(&st->from, &st->to);
      for (int j = 0; j < st->from.rank; j++) ident = ident && st->a[j] == j;
    }
    if (!ident) return false;
  }
  return true;
}

bool matmul_plain_operand(const kir_module *m, const kir_kernel *k, int slot) {
  return m->buf[k->in_buf[slot]].sh.rank == 2 && path_is_identity(k, k->in_path[slot]);
}

bool matmul_transposed_operand(const kir_module *m, const kir_kernel *k, int slot) {
  if (m->buf[k->in_buf[slot]].sh.rank != 2 || k->in_path[slot] < 0) return false;
  const kir_path *p = &k->path[k->in_path[slot]];
  int swaps = 0;
  for (int s = 0; s < p->n; s++) {
    const kir_step *st = &p->s[s];
    kir_path one = {.n = 1, .s = {*st}};
    kir_kernel probe = {.path = &one, .npath = 1};
    if (path_is_identity(&probe, 0)) continue;
    if (st->kind != ST_PERMUTE || st->from.rank != 2 || st->a[0] != 1 || st->a[1] != 0) return false;
    swaps++;
  }
  return swaps == 1;
}

/* B's path reads one matrix for every batch: identity steps, or a broadcast that drops the
 * leading (batch) dims and keeps the last two as they are */
bool matmul_same_matrix_per_batch(const kir_kernel *k, int path) {
  if (path < 0) return true;
  const kir_path *p = &k->path[path];
  for (int s = 0; s < p->n; s++) {
    const kir_step *st = &p->s[s];
    kir_path one = {.n = 1, .s = {*st}};
    bool drop = st->kind == ST_BCAST && st->to.rank == 2 && st->from.rank >= 2;
    for (int d = 0; drop && d < 2; d++) {
      dim f = st->from.d[st->from.rank - 2 + d], t = st->to.d[d];
      drop = f.sym == t.sym && f.c == t.c;
    }
    kir_kernel probe = {.path = &one, .npath = 1};
    if (!drop && !path_is_identity(&probe, 0)) return false;
  }
  return true;
}

bool matmul_gemm_view(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind != KK_MATMUL || k->dom.rank < 2) return false;
  const kir_buf *a = &m->buf[k->in_buf[0]], *b = &m->buf[k->in_buf[1]];
  return a->sh.rank == k->dom.rank && path_is_identity(k, k->in_path[0]) && b->sh.rank == 2 && matmul_same_matrix_per_batch(k, k->in_path[1]);
}

static bool multiple_of(dim d, int run) { return d.sym < 0 && d.c % run == 0; }

/* Follows dim d of the operand's index space through its path: a permute moves it, a broadcast
 * keeps it (unless it broadcasts it), a slice of it must keep unit steps from a multiple of
 * `run`, and a reshape must keep it last on both sides with extents that are multiples of `run`
 * (then the flat index of a run's first element stays a multiple of run). It must end as the
 * buffer's last dim, whose extent is a multiple of run, so the other dims' strides are too. */
bool operand_runs_along(const kir_module *m, const kir_kernel *k, int slot, int d, int run) {
  const shape *buf = &m->buf[k->in_buf[slot]].sh;
  const kir_path *p = k->in_path[slot] >= 0 ? &k->path[k->in_path[slot]] : NULL;
  for (int s = 0; p && s < p->n; s++) {
    const kir_step *st = &p->s[s];
    if (d < 0 || d >= st->from.rank) return false;
    switch (st->kind) {
    case ST_BCAST: {
      int t = d + st->to.rank - st->from.rank;
      if (t < 0 || st->to.d[t].sym != st->from.d[d].sym || st->to.d[t].c != st->from.d[d].c) return false;
      d = t;
      break;
    }
    case ST_PERMUTE: d = (int)st->a[d]; break;
    case ST_SLICE:
      if (st->a[0] == d && (st->a[2] != 1 || st->a[1] % run)) return false;
      break;
    case ST_RESHAPE:
      if (d != st->from.rank - 1 || !multiple_of(st->from.d[d], run) || !multiple_of(st->to.d[st->to.rank - 1], run)) return false;
      d = st->to.rank - 1;
      break;
    default: return false;
    }
  }
  return d == buf->rank - 1 && multiple_of(buf->d[d], run);
}

int operand_rank(const kir_module *m, const kir_kernel *k, int slot) {
  const kir_path *p = k->in_path[slot] >= 0 ? &k->path[k->in_path[slot]] : NULL;
  return p && p->n ? p->s[0].from.rank : m->buf[k->in_buf[slot]].sh.rank;
}

bool kernels_wider_than(const kir_module *m, int max) {
  int *bufs = malloc(sizeof *bufs * (size_t)(m->nbuf + 1));
  bool wide = false;
  for (int i = 0; bufs && i < m->nk && !wide; i++) wide = kernel_buffers(m, i, bufs, m->nbuf) > max;
  free(bufs);
  return wide;
}
