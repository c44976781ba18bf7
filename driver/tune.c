/*
 * tune.c: where the tune tables meet a compile. The target's schedule hook has filled every
 * kernel's schedule from its rules; then the best entry of the first table that has one for the
 * device and the kernel (targets/tune.h: measured, then site, then shipped) overrides the knobs
 * it sets, and the target's schedule_check recomputes what follows from them or refuses (the
 * rules stay, and PORTC_LOG=tune says why). The tuner passes its candidates the same way.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module.h"

void tune_device_of(const target *t, int device, tune_device *d) {
  memset(d, 0, sizeof *d);
  if (t->device_key) t->device_key(device, d);
  if (!d->api[0]) snprintf(d->api, sizeof d->api, "%s", t->name);
}

/* kernel i's name for log lines: the node it is anchored at */
static const char *kernel_name(const kir_module *km, int i) {
  const kir_kernel *k = &km->k[i];
  int n = k->node >= 0 ? k->node : k->nnodes ? k->nodes[0] : 0;
  return km->g->nodes[n].name;
}

/* applies knobs to kernel i; false (the rules restored) with why when the target refuses them */
static bool apply(const target *t, kir_module *km, int i, int device, const tune_knobs *k, const char *source, char *why, size_t len) {
  kir_schedule rules = km->k[i].sched;
  tune_knobs_apply(k, &km->k[i].sched);
  if (t->schedule_check && !t->schedule_check(km, i, device, why, len)) {
    km->k[i].sched = rules;
    log_line("tune", "kernel %d (%s): %s refused: %s; the rules stay", i, kernel_name(km, i), source, why);
    return false;
  }
  snprintf(km->k[i].sched.source, sizeof km->k[i].sched.source, "%s", source);
  return true;
}

void tune_schedules(const target *t, kir_module *km, int device, const tune_knobs *const *force) {
  tune_device d;
  tune_device_of(t, device, &d);
  tune_set set = {0};
  bool loaded = false;
  for (int i = 0; i < km->nk; i++) {
    kir_schedule *s = &km->k[i].sched;
    snprintf(s->source, sizeof s->source, "rules");
    if (force && force[i]) {
      char why[256];
      apply(t, km, i, device, force[i], "candidate", why, sizeof why);
      continue;
    }
    if (!loaded) {
      tune_set_load(&set);
      loaded = true;
      if (set.unread[0]) log_line("tune", "tables that cannot be read (skipped):\n%s", set.unread);
      for (int j = 0; j < set.n; j++)
        if (set.t[j].err) log_line("tune", "lines that are not entries (skipped):\n%s", set.t[j].err);
    }
    tune_kernel key;
    tune_kernel_key(km, i, &key);
    const tune_entry *e = NULL;
    const tune_table *from = NULL;
    for (int j = 0; j < set.n && !e; j++)
      if ((e = tune_best(&set.t[j], &d, &key))) from = &set.t[j];
    char what[512];
    tune_kernel_format(&key, what, sizeof what);
    if (!e) {
      log_line("tune", "kernel %d (%s) %s: no entry; the rules", i, kernel_name(km, i), what);
      continue;
    }
    const char *base = strncmp(from->name, "shipped:", 8) == 0 ? from->name + 7 : strrchr(from->name, '/');
    char source[sizeof s->source], knobs[256];
    str_cut(source, sizeof source, "%s, %s %s:%d: %s", tune_prov_name(e->prov), from->origin, base ? base + 1 : from->name, e->line, e->why);
    tune_knobs_format(&e->knobs, knobs, sizeof knobs);
    char why[256];
    if (apply(t, km, i, device, &e->knobs, source, why, sizeof why))
      log_line("tune", "kernel %d (%s) %s: %s from %s", i, kernel_name(km, i), what, knobs, source);
  }
  tune_set_free(&set);
}

int tune_entry_apply(const target *t, kir_module *km, const tune_entry *e, char *why, size_t len) {
  int n = 0;
  for (int i = 0; i < km->nk; i++) {
    tune_kernel key;
    tune_kernel_key(km, i, &key);
    if (e->kern.kind[0] && strcmp(key.kind, e->kern.kind) != 0) continue;
    if (!apply(t, km, i, -1, &e->knobs, tune_prov_name(e->prov), why, len)) return -1;
    n++;
  }
  if (!n) snprintf(why, len, "no kernel of kind %s", e->kern.kind);
  return n;
}

/* a table's line for `portc tune --check`, and its problems */
static void check_table(const tune_table *t, FILE *out) {
  int prov[3] = {0};
  for (int i = 0; i < t->n; i++) prov[t->e[i].prov]++;
  fprintf(out, "%-40s %-8s %4d entries (%d measured, %d heuristic, %d transferred), %d problems\n", t->name, t->origin, t->n, prov[0],
          prov[1], prov[2], t->problems);
  if (t->err) fputs(t->err, out);
}

int portc_tune_check(const char *path, void *file) {
  FILE *out = file ? file : stdout;
  int problems = 0;
  if (path) {
    tune_table t;
    if (!tune_table_read(&t, path, "file")) {
      const char *why = strerror(errno);
      err_set(PORTC_ERR_IO, "tune: cannot read %s: %s", path, why);
      fprintf(out, "%s: cannot read (%s)\n", path, why);
      return 1;
    }
    check_table(&t, out);
    problems = t.problems;
    tune_table_free(&t);
    return problems;
  }
  tune_set set;
  tune_set_load(&set);
  for (int i = 0; i < set.n; i++) check_table(&set.t[i], out), problems += set.t[i].problems;
  if (!set.n) fprintf(out, "no tune tables\n");
  tune_set_free(&set);
  return problems;
}

void portc_target_tune_describe(int i, void *file) {
  FILE *out = file ? file : stdout;
  const target *t = target_at(i);
  if (!t) return;
  tune_device d;
  tune_device_of(t, -1, &d);
  char key[512];
  tune_device_format(&d, key, sizeof key);
  fprintf(out, "          tune key: %s\n", key);
  tune_set set;
  tune_set_load(&set);
  for (int j = 0; j < set.n; j++) {
    int prov[3] = {0}, n = 0, rank;
    for (int e = 0; e < set.t[j].n; e++)
      if (tune_match_device(&set.t[j].e[e], &d, &rank)) prov[set.t[j].e[e].prov]++, n++;
    if (n)
      fprintf(out, "          tune table %s: %d entries for this device (%d measured, %d heuristic%s, %d transferred)\n", set.t[j].name, n,
              prov[0], prov[1], prov[1] ? ": from public guides, not measured here" : "", prov[2]);
  }
  tune_set_free(&set);
}

void portc_target_key(const char *name, char *out, size_t len) {
  if (!out || !len) return;
  out[0] = 0;
  int device;
  const target *t = target_find(name ? name : "cpu", &device);
  if (!t) return;
  tune_device d;
  tune_device_of(t, device, &d);
  tune_device_format(&d, out, len);
}
