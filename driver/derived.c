/*
 * derived.c: values a GPU module computes from parameters and constants alone, kept on the device
 * and computed again only when a parameter changes. Under autocast every weight is cast to f16 in
 * every run (ResNet-50: 106 small kernels beside 53 convolutions); a folded batch norm scales
 * weights; a transposed weight is copied. Parameters already stay on the device between runs
 * (resident.c), so a kernel that reads only them gives the same result every run until one is
 * uploaded again.
 *
 *   run 1:  cast(w1) cast(w2) conv(x, w1') conv(.., w2')    w1', w2' kept, apart from the arena
 *   run 2:                    conv(x, w1') conv(.., w2')    the parameters' stamps unchanged
 *   run 3, after portc_bindings_set(b, "w1", ...): all four again
 *
 * A kernel is derived when every buffer it reads is a parameter, a constant or a kept buffer, and
 * every buffer it stores is a temp of a fixed size that only derived kernels store (a concat's
 * slab stored by a kernel that runs every time would otherwise be lost). Graphs that train update
 * their parameters every step, so they have no derived kernels. Neither have WebGPU modules: a
 * web bundle's runner (export.c) runs every kernel into one arena. PORTC_DERIVED=rerun runs
 * every kernel every time (the A/B baseline).
 */
#include <stdlib.h>
#include <string.h>

#include "module.h"

/* buffer b: a temp of a fixed size */
static bool fixed_temp(const kir_module *km, int b) { return km->buf[b].role == BUF_TEMP && shape_numel_const(&km->buf[b].sh) >= 0; }

/* kernel i reads only parameters, constants and buffers that derived kernels alone stored */
static bool reads_only_kept(const kir_module *km, int i, const bool *kept, const bool *other) {
  const kir_kernel *k = &km->k[i];
  for (int v = 0; v < k->nval + k->nin; v++) {
    int b = kir_read_buf(k, v);
    if (b < 0) continue;
    buf_role r = km->buf[b].role;
    if (r != BUF_PARAM && r != BUF_CONST && !(kept[b] && !other[b])) return false;
  }
  return true;
}

/* the kernels (in km's order, each after the writers of what it reads) whose reads are kept and
 * whose stores are fixed temps; then the buffers that only they store. False when out of memory. */
static bool mark(kir_module *km) {
  bool *kept = calloc((size_t)km->nbuf + 1, sizeof *kept), *other = calloc((size_t)km->nbuf + 1, sizeof *other);
  if (!kept || !other) return free(kept), free(other), false;
  for (bool again = true; again;) { /* a kernel dropped below drops those that read its stores */
    again = false;
    for (int b = 0; b < km->nbuf; b++) kept[b] = other[b] = false;
    for (int i = 0; i < km->nk; i++) {
      kir_kernel *k = &km->k[i];
      bool stores_fixed = k->nstore > 0;
      for (int s = 0; s < k->nstore; s++) stores_fixed = stores_fixed && fixed_temp(km, k->store[s].buf);
      if (k->derived && !(stores_fixed && reads_only_kept(km, i, kept, other))) k->derived = false, again = true;
      for (int s = 0; s < k->nstore; s++) (k->derived ? kept : other)[k->store[s].buf] = true;
    }
    for (int b = 0; b < km->nbuf; b++) kept[b] = kept[b] && !other[b];
    for (int i = 0; i < km->nk; i++) /* a slab of a buffer that another kernel also stores */
      for (int s = 0; s < km->k[i].nstore && km->k[i].derived; s++)
        if (!kept[km->k[i].store[s].buf]) km->k[i].derived = false, again = true;
  }
  for (int b = 0; b < km->nbuf; b++) km->buf[b].kept = kept[b];
  free(kept), free(other);
  return true;
}

portc_status derived_mark(portc_module *m) {
  kir_module *km = m->km;
  for (int i = 0; i < km->nk; i++) km->k[i].derived = false;
  for (int b = 0; b < km->nbuf; b++) km->buf[b].kept = false;
  m->derived_fresh = false;
  const char *env = getenv("PORTC_DERIVED");
  if (env && *env && strcmp(env, "rerun") && strcmp(env, "keep"))
    return err_set(PORTC_ERR_INVALID, "PORTC_DERIVED is '%s': keep (the default) or rerun", env);
  if (!resident_capable(m) || m->g->nupd || m->t->web || km->eager || (env && !strcmp(env, "rerun"))) return PORTC_OK;
  for (int i = 0; i < km->nk; i++) km->k[i].derived = true; /* until a read or a store rules it out */
  if (!mark(km))
    for (int i = 0; i < km->nk; i++) km->k[i].derived = false; /* out of memory: every kernel runs every time */
  return PORTC_OK;
}

int derived_kernels(const kir_module *km) {
  int n = 0;
  for (int i = 0; i < km->nk; i++) n += km->k[i].derived;
  return n;
}
