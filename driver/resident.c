/*
 * resident.c: parameters that stay on a GPU module's device between runs. A parameter's device
 * copy (an input's too) is uploaded once and used again while the bindings' stamp for it says the
 * value has not changed (ir/bindings.h); a training step's updates (portc_update) swap the
 * device buffers of the parameter and of its new value, so the next step reads the new value
 * where the last one wrote it. With portc_module_step the new values are not even read back:
 * the bindings record that the module holds them, and portc_bindings_get, a checkpoint, another
 * module or the reference fetch them when they ask; a module freed first hands them over.
 *
 *   step 1: upload w, m, v           step 2: nothing uploaded       portc_bindings_get(b, "w"):
 *           run; swap w <-> w.next           run; swap again        one read of w's buffer
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/bindings.h"
#include "../ir/dtype.h"
#include "module.h"

/* res_bid of a constant's buffer (bindings ids start at 1; 0: nothing known) */
#define RESIDENT_CONST UINT64_MAX

static void owner_lock(void *m) { pthread_mutex_lock(&((portc_module *)m)->lock); }
static bool owner_trylock(void *m) { return pthread_mutex_trylock(&((portc_module *)m)->lock) == 0; }
static void owner_unlock(void *m) { pthread_mutex_unlock(&((portc_module *)m)->lock); }

/* the parameter buffer of node n (the first; -1 when no kernel reads it) */
static int param_buf(const portc_module *m, int n) {
  for (int i = 0; i < m->km->nbuf; i++)
    if (m->km->buf[i].role == BUF_PARAM && m->src_node[i] == n) return i;
  return -1;
}

static bool is_output_buf(const portc_module *m, int buf) {
  for (int o = 0; o < m->km->g->nout; o++)
    if (m->km->out_buf[o] == buf) return true;
  return false;
}

static portc_status owner_fetch(void *owner, portc_bindings *b, int n, portc_tensor **out) {
  portc_module *m = owner;
  int i = param_buf(m, n);
  const node *x = &b->g->nodes[n];
  int64_t shape[PORTC_MAX_RANK];
  portc_status st = bindings_shape(b->g, b, x, shape);
  if (st) return st;
  portc_tensor *t = portc_tensor_new(x->dt, x->sh.rank, shape);
  if (!t) return err_set(PORTC_ERR_NOMEM, "%s: out of memory reading it back from the device", x->name);
  int64_t bytes = portc_tensor_numel(t) * (int64_t)portc_dtype_size(x->dt);
  if (i < 0 || !m->dev_obj || !m->dev_obj[i] || m->dev_bytes[i] < bytes) {
    portc_tensor_free(t);
    return err_set(PORTC_ERR_INTERNAL, "%s: the module that holds its newest value has no device buffer of %lld bytes for it", x->name,
                   (long long)bytes);
  }
  char why[512];
  if (!target_fork_check(m->target_name, why, sizeof why)) {
    portc_tensor_free(t);
    return err_set(PORTC_ERR_DEVICE, "%s: its newest value is on a GPU: %s", x->name, why);
  }
  if (bytes && (st = m->t->gpu->read(m->handle, m->dev_obj[i], 0, t->data, bytes))) {
    portc_tensor_free(t);
    return err_set(st, "%s: reading it back from the device: %s", x->name, portc_last_error());
  }
  *out = t;
  return PORTC_OK;
}

static void owner_forget(void *owner, portc_bindings *b) {
  portc_module *m = owner;
  owner_lock(m);
  ptr_set_remove(&m->held, b);
  owner_unlock(m);
}

static const bindings_remote module_owner = {
    .lock = owner_lock, .trylock = owner_trylock, .unlock = owner_unlock, .fetch = owner_fetch, .forget = owner_forget};

bool resident_capable(const portc_module *m) { return m->t->gpu && m->km && !m->parts; }

bool resident_update(const portc_module *m, int k, int *bp, int *bv) {
  const portc_graph *g = m->g;
  if (!resident_capable(m) || !m->src_node) return false;
  int o = -1;
  for (int j = 0; j < g->nout && o < 0; j++)
    if (g->outputs[j] == g->upd_value[k]) o = j;
  for (int j = 0; j < g->nupd; j++) /* two parameters that take one value: both from the host */
    if (j != k && g->upd_value[j] == g->upd_value[k]) return false;
  if (o < 0 || o >= m->km->g->nout) return false;
  *bv = m->km->out_buf[o];
  *bp = param_buf(m, g->upd_param[k]);
  return *bp >= 0 && m->km->buf[*bv].role == BUF_OUTPUT && !is_output_buf(m, *bp);
}

bool resident_current(const portc_module *m, int i, const portc_bindings *b, int64_t bytes) {
  if (m->km->buf[i].role == BUF_CONST) return m->res_bid && m->dev_obj && m->dev_obj[i] && m->res_bid[i] == RESIDENT_CONST;
  if (!m->res_bid || !m->dev_obj || !m->dev_obj[i] || m->res_bid[i] != b->id || m->src_node[i] < 0) return false;
  if (bytes < MODULE_LEAST_ALLOC) bytes = MODULE_LEAST_ALLOC; /* as dev_slot allocates */
  return m->res_stamp[i] == b->stamp[m->src_node[i]] && m->dev_bytes[i] == bytes && !is_output_buf(m, i);
}

portc_status resident_adopt(portc_module *m, portc_bindings *b, bool keep) {
  if (!resident_capable(m) || !m->dev_obj) return PORTC_OK;
  int nbuf = m->km->nbuf;
  if (!m->res_bid) {
    m->res_bid = calloc((size_t)nbuf + 1, sizeof *m->res_bid);
    m->res_stamp = calloc((size_t)nbuf + 1, sizeof *m->res_stamp);
    if (!m->res_bid || !m->res_stamp) {
      free(m->res_bid), free(m->res_stamp);
      m->res_bid = m->res_stamp = NULL;
      /* a run uploads every time, as without residency; a step is not taken */
      return keep ? err_set(PORTC_ERR_NOMEM, "step: out of memory") : PORTC_OK;
    }
  }
  /* what can fail first, so that a step is taken whole or not at all */
  portc_status st = keep && !ptr_set_add(&m->held, b) ? err_set(PORTC_ERR_NOMEM, "run: out of memory") : PORTC_OK;
  if (!st && keep) st = bindings_hold(b, m, &module_owner);
  if (st) return st;
  for (int k = 0; k < m->g->nupd; k++) {
    int bp, bv;
    if (!resident_update(m, k, &bp, &bv) || !m->dev_obj[bp] || !m->dev_obj[bv] || m->dev_bytes[bp] != m->dev_bytes[bv]) continue;
    void *o = m->dev_obj[bp];
    m->dev_obj[bp] = m->dev_obj[bv], m->dev_obj[bv] = o;
    if (keep) bindings_set_remote(b, m->g->upd_param[k], m);
  }
  /* every parameter and input buffer now holds the bindings' value of this stamp (an input bound
   * once and run again is not uploaded again either), and every constant its value (unless its
   * shape has symbols) */
  for (int i = 0; i < nbuf; i++) {
    const kir_buf *kb = &m->km->buf[i];
    if (kb->role == BUF_CONST && m->dev_obj[i] && shape_numel_const(&kb->sh) >= 0) m->res_bid[i] = RESIDENT_CONST;
    if ((kb->role != BUF_PARAM && kb->role != BUF_INPUT) || !m->dev_obj[i] || m->src_node[i] < 0) continue;
    m->res_bid[i] = b->id;
    m->res_stamp[i] = b->stamp[m->src_node[i]];
  }
  return PORTC_OK;
}

portc_status resident_handover(portc_module *m, const portc_bindings *b) {
  portc_status st = PORTC_OK;
  int k = 0;
  for (int h = 0; h < m->held.n; h++) {
    portc_bindings *o = m->held.p[h];
    if (o == b) {
      m->held.p[k++] = o;
      continue;
    }
    portc_status s = bindings_release_owner(o, m);
    if (s && !st) st = s;
  }
  m->held.n = k;
  return st;
}

void resident_release(portc_module *m) {
  for (int h = 0; h < m->held.n; h++) {
    portc_bindings *b = m->held.p[h];
    if (bindings_release_owner(b, m)) /* a destructor has no status to return: say it where it is seen */
      fprintf(stderr, "portc: freeing a module of graph %s: a parameter it kept on the device could not be read back: %s\n", m->g->name,
              portc_last_error());
  }
  ptr_set_free(&m->held);
  free(m->res_bid);
  free(m->res_stamp);
  m->res_bid = m->res_stamp = NULL;
}
