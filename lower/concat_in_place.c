/*
 * concat_in_place.c: a concat whose inputs are made only for it is no kernel of its own. Each
 * input's kernel stores its value straight into its slab of the concat's buffer (the store's path
 * gains a slice step along the axis), and the copy goes away: SqueezeNet's fire modules, the
 * dense blocks of DenseNet and the skip connections of U-Net read every feature map one time
 * less and write it one time less. Inductor does the same with its concat-as-views.
 *
 *   before: k0 stores a (temp); k1 stores b (temp); k2 (opaque) copies a and b into y
 *   after:  k0 stores a into y[:, 0:64]; k1 stores b into y[:, 64:128]
 *
 * An input qualifies when it is a temporary buffer that one kernel stores through a path (not an
 * opaque template, which writes whole buffers) and that nothing reads but this concat, once. A
 * concat takes its inputs in place all or none. The absorbed buffers keep their entries, unused:
 * the memory plan gives them no bytes. Run before the kernels are ordered: the concat's buffer
 * then has one writer per input, and its readers wait for all of them.
 */
#include <stdlib.h>
#include <string.h>

#include "fuse_plan.h"
#include "kir.h"

/* the kernel and store that write buffer b, or -1 where none or more than one does */
static int sole_writer(const kir_module *m, int b, int *store) {
  int w = -1;
  for (int k = 0; k < m->nk; k++)
    for (int s = 0; s < m->k[k].nstore; s++)
      if (m->k[k].store[s].buf == b) {
        if (w >= 0) return -1;
        w = k, *store = s;
      }
  return w;
}

/* how many times kernels read buffer b */
static int reads(const kir_module *m, int b) {
  int n = 0;
  for (int k = 0; k < m->nk; k++)
    for (int i = 0; i < m->k[k].nval + m->k[k].nin; i++) n += kir_read_buf(&m->k[k], i) == b;
  return n;
}

/* whether concat kernel c can take every input in place; fills the writers and their stores */
static bool takes_inputs(const kir_module *m, int c, int64_t axis, int *writer, int *store) {
  const kir_kernel *k = &m->k[c];
  if (k->dom.d[axis].sym >= 0) return false;
  for (int j = 0; j < k->nin; j++) {
    const int b = k->in_buf[j];
    const kir_buf *x = &m->buf[b];
    if (x->role != BUF_TEMP || x->sh.d[axis].sym >= 0 || reads(m, b) != 1) return false;
    writer[j] = sole_writer(m, b, &store[j]);
    if (writer[j] < 0 || m->k[writer[j]].kind == KK_OPAQUE) return false;
    const kir_kernel *w = &m->k[writer[j]];
    const int path = w->store[store[j]].path;
    if (path < 0 || w->path[path].n == KIR_MAX_STEPS) return false; /* no room for the slice step */
  }
  return true;
}

/* the writer's store of input j goes to the concat's buffer, at `at` along the axis */
static bool store_in_place(kir_module *m, int c, int w, int s, int64_t axis, int64_t at) {
  kir_kernel *k = &m->k[w];
  kir_store *st = &k->store[s];
  const kir_buf *x = &m->buf[st->buf], *y = &m->buf[m->k[c].store[0].buf];
  kir_path p = k->path[st->path];
  kir_step slice = {.kind = ST_SLICE, .from = x->sh, .to = y->sh, .a = {axis, at, 1}};
  int id;
  if (!path_push(&p, slice) || (id = kir_add_path(k, &p)) < 0) return false;
  st->buf = m->k[c].store[0].buf, st->path = id;
  int32_t *nodes = realloc(k->nodes, sizeof *nodes * (size_t)(k->nnodes + 1));
  if (!nodes) return false;
  k->nodes = nodes;
  k->nodes[k->nnodes++] = m->k[c].node; /* the writers compute the concat between them */
  return true;
}

portc_status concat_in_place(kir_module *m) {
  for (int c = 0; c < m->nk; c++) {
    const kir_kernel *k = &m->k[c];
    if (k->kind != KK_OPAQUE || m->g->nodes[k->node].op != OP_concat) continue;
    const int64_t axis = norm_axis(attr_i(&m->g->nodes[k->node], "axis"), k->dom.rank);
    int writer[KIR_MAX_IN], store[KIR_MAX_IN];
    if (!takes_inputs(m, c, axis, writer, store)) continue;
    int64_t at = 0;
    for (int j = 0; j < k->nin; j++) {
      const int64_t extent = m->buf[k->in_buf[j]].sh.d[axis].c;
      if (!store_in_place(m, c, writer[j], store[j], axis, at)) return err_set(PORTC_ERR_NOMEM, "kir: out of memory");
      at += extent;
    }
    kir_kernel gone = m->k[c]; /* the copy kernel: dropped */
    free(gone.val), free(gone.path), free(gone.nodes);
    memmove(&m->k[c], &m->k[c + 1], sizeof *m->k * (size_t)(m->nk - c - 1));
    m->nk--, c--;
  }
  return PORTC_OK;
}
