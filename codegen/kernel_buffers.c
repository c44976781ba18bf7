/*
 * kernel_buffers.c: which buffers a kernel touches, for the GPU targets, which bind or pass only
 * those: the dialect declares them and the runtime hands them over in the same order; and whether
 * a matmul operand is a plain row-major matrix, which the tensor-core and library paths need.
 */
#include "../ir/dtype.h"
#include "emit.h"

bool kernel_writes(const kir_kernel *k, int buf) {
  for (int s = 0; s < k->nstore; s++)
    if (k->store[s].buf == buf) return true;
  return false;
}

int kernel_buffers(const kir_module *m, int i, int *bufs, int max) {
  const kir_kernel *k = &m->k[i];
  int n = 0;
  for (int b = 0; b < m->nbuf; b++) {
    bool used = kernel_writes(k, b);
    for (int v = 0; v < k->nval && !used; v++) used = k->val[v].kind == KV_LOAD && k->val[v].buf == b;
    for (int j = 0; j < k->nin && !used; j++) used = k->in_buf[j] == b;
    if (used && n < max) bufs[n] = b;
    n += used;
  }
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
