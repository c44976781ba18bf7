/*
 * checkpoint.c: the state a training run keeps in its bindings. After each run, the parameters a
 * graph updates (portc_update) take the values the run computed, so the next run starts from
 * them; and the parameters, optimizer state included, go to and come from an .npz checkpoint
 * that numpy.load reads as it is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bindings.h"
#include "npz.h"

portc_status bindings_apply_updates(const portc_graph *g, portc_bindings *b, portc_tensor *const *outputs) {
  for (int k = 0; k < g->nupd; k++) {
    int out = -1;
    for (int o = 0; o < g->nout && out < 0; o++)
      if (g->outputs[o] == g->upd_value[k]) out = o;
    if (out >= 0 && !outputs[out] && b->remote[g->upd_param[k]]) continue; /* kept on the device (driver/resident.c) */
    if (out < 0 || !outputs[out]) return err_set(PORTC_ERR_INTERNAL, "update of %s: its value is not among the outputs", g->nodes[g->upd_param[k]].name);
    /* in the parameter's own dtype (the reference's results are float64): rounded as a run would */
    const node *p = &g->nodes[g->upd_param[k]];
    const portc_tensor *v = outputs[out];
    portc_tensor *r = v->dtype == p->dt ? NULL : portc_tensor_new(p->dt, v->rank, v->shape);
    if (v->dtype != p->dt && !r) return err_set(PORTC_ERR_NOMEM, "update of %s: out of memory", p->name);
    for (int64_t e = 0; r && e < portc_tensor_numel(v); e++) portc_tensor_set(r, e, portc_tensor_get(v, e));
    portc_status st = portc_bindings_set(b, p->name, r ? r : v);
    portc_tensor_free(r);
    if (st) return st;
  }
  return PORTC_OK;
}

portc_status portc_bindings_save_npz(portc_bindings *b, const char *path) {
  if (!b || !path) return err_set(PORTC_ERR_INVALID, "bindings_save_npz: NULL argument");
  portc_status pulled = bindings_pull(b, NULL, -1); /* values kept on a device */
  if (pulled) return pulled;
  bindings_lock(b);
  npz_writer *w = NULL;
  portc_status st = npz_create(path, &w);
  int saved = 0;
  for (int i = 0; i < b->n && !st; i++) {
    const node *x = &b->g->nodes[i];
    if (x->op != OP_param) continue;
    const portc_tensor *t = b->given[i] ? b->given[i] : b->used[i];
    if (t) st = npz_add(w, x->name, t), saved++;
  }
  if (w) {
    portc_status closed = npz_close(w);
    if (!st) st = closed;
  }
  if (!st && !saved) st = err_set(PORTC_ERR_INVALID, "bindings_save_npz: no parameter of graph %s has a value yet: run it once, or bind them", b->g->name);
  bindings_unlock(b);
  return st;
}

portc_status portc_bindings_load_npz(portc_bindings *b, const char *path) {
  if (!b || !path) return err_set(PORTC_ERR_INVALID, "bindings_load_npz: NULL argument");
  bindings_lock(b);
  portc_status st = PORTC_OK;
  int loaded = 0;
  for (int i = 0; i < b->n && !st; i++) {
    const node *x = &b->g->nodes[i];
    if (x->op != OP_param) continue;
    portc_tensor *t = NULL;
    portc_status got = npz_load(path, x->name, &t);
    if (got == PORTC_ERR_INVALID) continue; /* not in the file: left as it is */
    if ((st = got)) break;
    st = portc_bindings_set(b, x->name, t);
    portc_tensor_free(t);
    loaded++;
  }
  if (!st && !loaded) st = err_set(PORTC_ERR_INVALID, "bindings_load_npz: %s holds no parameter of graph %s", path, b->g->name);
  bindings_unlock(b);
  return st;
}
