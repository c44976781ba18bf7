/*
 * tuner.c: portc_tune, the search behind `portc tune` and --mode max-autotune.
 *
 * Kernels with the same key (targets/tune.h) form a group, tuned together: the sum of their
 * times decides. Each group's candidates are its default (what a compile picks today: tables,
 * else rules) and the target's tune_space. Candidates are tried in rounds: round r compiles the
 * graph once with every group's r-th candidate forced (all rounds compile first, in parallel on
 * the host's cores), checks the outputs against the default round's, and times every kernel
 * alone (median of reps, after a warm-up and a whole run that gives it its inputs; on a GPU,
 * after a second of whole runs: warm_up). A round that
 * fails to compile, or whose outputs differ, is split in halves and tried again, down to the one
 * group to blame, whose candidate then counts as infinitely slow. A group keeps its default
 * unless a checked candidate is 3% faster; the winners are then compiled together, checked once
 * more, and timed against the default again (a winner must win twice) before they are stored,
 * one measured entry per key.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../ir/api_struct.h"
#include "../ir/bindings.h"
#include "../ir/dtype.h"
#include "module.h"

enum { MAX_CAND = 12 };

typedef struct group {
  tune_kernel key;
  char text[512]; /* the key as a line, for reports */
  int first, n;   /* the first kernel with the key, and how many share it */
  tune_knobs cand[MAX_CAND]; /* cand[0]: the default (no knobs forced) */
  int ncand;
  double time[MAX_CAND];     /* seconds, summed over the group's kernels; INFINITY: failed, wrong or refused */
  bool done[MAX_CAND];
  bool skip;                 /* already measured (missing_only) */
  int win;
} group;

/* a round's module, compiled ahead on its own thread (compiles are what tuning mostly waits on) */
typedef struct round_build {
  portc_module *m;
  portc_status st;
  char why[512];
  int groups; /* how many groups it was compiled for: only the whole round uses it */
} round_build;

typedef struct tuner {
  const portc_graph *g;
  portc_compile_options co;
  portc_bindings *b;
  const target *t;
  int device, reps;
  double t0, budget;
  bool progress;
  group *grp;
  int ngrp, nk;
  int *group_of;           /* per kernel */
  portc_tensor **ref;      /* the default round's outputs */
  int nout;
  round_build *pre;           /* per candidate round */
} tuner;

void (*tuner_test_hook)(int group, int cand, portc_tensor **outputs, int nout, double *seconds) = NULL;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double left(const tuner *T) { return T->budget - (now() - T->t0); }

/* A GPU that sat idle for a second or more (while the host compiled a round) runs its next
 * kernels slower for a while: an f16 8192^3 matmul on the H200's Vulkan driver timed 16.7 to
 * 19.2 ms in the tuner against 3.9 in `portc bench`, and candidates 1.5 to 6x slower than their
 * default (bench/gpu/NOTES.md: warm-up by time). So before a module's kernels are timed on a GPU
 * target, it runs whole for at least this long, as `portc bench --warmup-s` does. */
enum { GPU_WARM_MS = 1000 };

static portc_status warm_up(const tuner *T, portc_module *m) {
  if (!T->t->gpu) return PORTC_OK;
  double t[8];
  portc_status st = PORTC_OK;
  for (double t0 = now(); !st && now() - t0 < GPU_WARM_MS * 1e-3;) st = portc_module_time(m, T->b, 8, t);
  return st;
}

/* whether out matches ref: relative to ref's largest magnitude, by dtype; integers exactly */
static bool outputs_match(const portc_tensor *ref, const portc_tensor *out, char *why, size_t len) {
  int64_t n = portc_tensor_numel(ref);
  if (!out || portc_tensor_numel(out) != n) return snprintf(why, len, "output size differs"), false;
  double tol = ref->dtype == PORTC_F32 || ref->dtype == PORTC_F64 ? 1e-3 : dtype_is_float(ref->dtype) ? 2e-2 : 0;
  double scale = 0, worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double a = portc_tensor_get(ref, i);
    if (isfinite(a) && fabs(a) > scale) scale = fabs(a);
  }
  for (int64_t i = 0; i < n; i++) {
    double a = portc_tensor_get(ref, i), b = portc_tensor_get(out, i);
    if (isnan(a) != isnan(b) || (isinf(a) && a != b)) return snprintf(why, len, "element %lld: %g, the default gives %g", (long long)i, b, a), false;
    double d = isfinite(a) ? fabs(a - b) : 0;
    if (d > worst) worst = d;
  }
  if (worst > tol * (scale > 0 ? scale : 1))
    return snprintf(why, len, "differs by %.3g (%.3g of the largest value; allowed %.1g)", worst, worst / (scale > 0 ? scale : 1), tol), false;
  return true;
}

static void free_outputs(portc_tensor **o, int n) {
  for (int i = 0; o && i < n; i++) portc_tensor_free(o[i]);
}

/* compiles with each listed group's candidate `cand` forced, checks the outputs against the
 * reference (none yet: they become it), and times every kernel. false with why when the compile,
 * the run or the check fails. */
static bool attempt(tuner *T, const int *groups, int n, int cand, char *why, size_t len) {
  const tune_knobs **force = calloc((size_t)T->nk, sizeof *force);
  portc_tensor **out = calloc((size_t)T->nout + 1, sizeof *out);
  double *med = calloc((size_t)T->nk, sizeof *med), *cut = calloc((size_t)T->nk, sizeof *cut);
  bool ok = force && out && med && cut;
  for (int k = 0; ok && k < T->nk; k++)
    for (int j = 0; j < n; j++)
      if (T->group_of[k] == groups[j]) {
        group *gr = &T->grp[groups[j]];
        force[k] = cand ? &gr->cand[cand] : NULL;
        double best = INFINITY;
        for (int c = 0; c < gr->ncand; c++)
          if (gr->done[c] && gr->time[c] < best) best = gr->time[c] / gr->n;
        cut[k] = isfinite(best) ? best : 0;
      }
  portc_module *m = NULL;
  portc_status st;
  round_build *pb = T->pre && cand ? &T->pre[cand] : NULL;
  if (pb && pb->groups == n && (pb->m || pb->st)) { /* compiled ahead for this whole round */
    m = pb->m, st = pb->st, pb->m = NULL, pb->groups = -1;
    if (st) err_set(st, "%s", pb->why);
  } else {
    st = ok ? module_compile(T->g, &T->co, T->b, force, &m) : err_set(PORTC_ERR_NOMEM, "tune: out of memory");
  }
  if (!st) st = portc_module_run(m, T->b, out);
  if (!st) st = warm_up(T, m);
  if (!st) st = module_time_kernels(m, T->b, T->reps, cut, med);
  if (st) snprintf(why, len, "%s", portc_last_error()), ok = false;
  double *sum = calloc((size_t)T->ngrp + 1, sizeof *sum);
  if (ok && !sum) snprintf(why, len, "out of memory"), ok = false;
  for (int k = 0; ok && k < T->nk; k++) sum[T->group_of[k]] += med[k];
  if (ok && T->ref && tuner_test_hook)
    for (int j = 0; j < n; j++) tuner_test_hook(groups[j], cand, out, T->nout, &sum[groups[j]]);
  for (int o = 0; ok && T->ref && o < T->nout; o++) {
    char w[200];
    if (!outputs_match(T->ref[o], out[o], w, sizeof w))
      snprintf(why, len, "output %s: %s", portc_node_name(T->g, portc_graph_output(T->g, o)), w), ok = false;
  }
  for (int j = 0; ok && j < n; j++) {
    group *gr = &T->grp[groups[j]];
    /* a candidate the target refused ran as the rules: it is not itself */
    bool refused = cand && strcmp(m->km->k[gr->first].sched.source, "candidate") != 0;
    gr->time[cand] = refused ? INFINITY : sum[groups[j]], gr->done[cand] = true;
    char knobs[256] = "the default";
    if (cand) tune_knobs_format(&gr->cand[cand], knobs, sizeof knobs);
    log_line("tune", "%s: %s: %.2f us%s", gr->text, knobs, gr->time[cand] / gr->n * 1e6, refused ? " (refused by the target: ran the rules)" : "");
  }
  if (ok && !T->ref) T->ref = out, out = NULL;
  free_outputs(out, T->nout);
  free(out);
  portc_module_free(m);
  free(force), free(med), free(cut), free(sum);
  return ok;
}

/* tries candidate `cand` of the listed groups; on a failure, halves, down to the group to blame */
static void try_round(tuner *T, const int *groups, int n, int cand) {
  if (!n || left(T) <= 0) return;
  char why[512];
  if (attempt(T, groups, n, cand, why, sizeof why)) return;
  if (n == 1) {
    group *gr = &T->grp[groups[0]];
    gr->time[cand] = INFINITY, gr->done[cand] = true;
    char knobs[256];
    tune_knobs_format(&gr->cand[cand], knobs, sizeof knobs);
    log_line("tune", "%s: candidate %s rejected: %s", gr->text, knobs, why);
    if (T->progress) fprintf(stderr, "tune: rejected %s for %s: %s\n", knobs, gr->text, why);
    return;
  }
  try_round(T, groups, n / 2, cand);
  try_round(T, groups + n / 2, n - n / 2, cand);
}

/* the groups: one per distinct kernel key, with their candidates */
static portc_status make_groups(tuner *T, const kir_module *km, const tune_device *d, bool missing_only) {
  T->nk = km->nk;
  T->grp = calloc((size_t)km->nk + 1, sizeof *T->grp);
  T->group_of = calloc((size_t)km->nk + 1, sizeof *T->group_of);
  if (!T->grp || !T->group_of) return err_set(PORTC_ERR_NOMEM, "tune: out of memory");
  for (int i = 0; i < km->nk; i++) {
    tune_kernel key;
    tune_kernel_key(km, i, &key);
    char text[512];
    tune_kernel_format(&key, text, sizeof text);
    int g;
    for (g = 0; g < T->ngrp && strcmp(T->grp[g].text, text) != 0; g++) {}
    T->group_of[i] = g;
    if (g < T->ngrp) {
      T->grp[g].n++;
      continue;
    }
    group *gr = &T->grp[T->ngrp++];
    gr->key = key, gr->first = i, gr->n = 1, gr->ncand = 1;
    snprintf(gr->text, sizeof gr->text, "%s", text);
    gr->skip = missing_only && strncmp(km->k[i].sched.source, "measured", 8) == 0;
    if (T->t->tune_space && !gr->skip) gr->ncand += T->t->tune_space(km, i, d, gr->cand + 1, MAX_CAND - 1);
  }
  return PORTC_OK;
}

typedef struct prebuild_job {
  tuner *T;
  int next, last; /* rounds still to compile: next..last */
  pthread_mutex_t lock;
} prebuild_job;

/* compiles whole rounds until none is left; each thread binds its own copy of the symbol values */
static void *prebuild_worker(void *arg) {
  prebuild_job *j = arg;
  tuner *T = j->T;
  portc_bindings *b = portc_bindings_new(T->g);
  for (int k = 0; b && k < T->g->nsyms; k++)
    if (T->b->sym_set[k]) portc_bindings_set_symbol(b, T->g->syms[k], T->b->sym[k]);
  const tune_knobs **force = calloc((size_t)T->nk + 1, sizeof *force);
  for (;;) {
    pthread_mutex_lock(&j->lock);
    int c = j->next <= j->last ? j->next++ : -1;
    pthread_mutex_unlock(&j->lock);
    if (c < 0 || !b || !force || left(T) <= 0) break;
    round_build *pb = &T->pre[c];
    pb->groups = 0;
    for (int g = 0; g < T->ngrp; g++) pb->groups += !T->grp[g].skip && T->grp[g].ncand > c;
    for (int k = 0; k < T->nk; k++) {
      const group *gr = &T->grp[T->group_of[k]];
      force[k] = !gr->skip && gr->ncand > c ? &gr->cand[c] : NULL;
    }
    if ((pb->st = module_compile(T->g, &T->co, b, force, &pb->m))) snprintf(pb->why, sizeof pb->why, "%s", portc_last_error());
  }
  free(force);
  portc_bindings_free(b);
  return NULL;
}

/* every candidate round's module, compiled on the host's cores before the rounds are timed */
static void prebuild(tuner *T, int ncand) {
  if (ncand < 2 || !(T->pre = calloc((size_t)ncand, sizeof *T->pre))) return;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = (int)(cores < 1 ? 1 : cores < ncand - 1 ? cores : ncand - 1);
  prebuild_job j = {.T = T, .next = 1, .last = ncand - 1, .lock = PTHREAD_MUTEX_INITIALIZER};
  pthread_t th[64];
  int started = 0;
  for (int t = 0; t < threads && t < 64; t++) started += pthread_create(&th[started], NULL, prebuild_worker, &j) == 0;
  if (!started) prebuild_worker(&j);
  for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
}

static void round_builds_free(tuner *T, int ncand) {
  for (int c = 0; T->pre && c < ncand; c++) portc_module_free(T->pre[c].m);
  free(T->pre);
}

/* the default's values of the knobs the candidates vary: what an entry for the default holds
 * ("library=off" can only say off: a default that may use the library leaves it out) */
static tune_knobs default_knobs(const group *gr, const kir_schedule *s) {
  tune_knobs k = {.v = *s};
  for (int c = 1; c < gr->ncand; c++) k.mask |= gr->cand[c].mask;
  if (s->library) k.mask &= ~tune_knob_bit("library");
  return k;
}

static portc_status store(tuner *T, const tune_device *d, portc_module *m0, const portc_tune_options *o, strbuf *rep);

portc_status portc_tune(const portc_graph *g, const portc_tune_options *opts, portc_bindings *b, char **report) {
  portc_tune_options o;
  api_struct_in(&o, sizeof o, opts, sizeof o);
  if (report) *report = NULL;
  if (!g || !opts) return err_set(PORTC_ERR_INVALID, "tune: NULL argument");
  tuner T = {.g = g, .b = b, .budget = o.budget_seconds > 0 ? o.budget_seconds : 600, .reps = o.reps > 0 ? o.reps : 10,
             .progress = o.progress, .t0 = now()};
  T.co = (portc_compile_options)PORTC_COMPILE_OPTIONS_INIT;
  T.co.target = o.target, T.co.dynamic = o.dynamic, T.co.eager = o.eager;
  T.t = target_find(o.target ? o.target : "cpu", &T.device);
  if (!T.t) return err_set(PORTC_ERR_INVALID, "tune: unknown target '%s'", o.target);
  portc_bindings *own = NULL;
  if (!b && !(T.b = own = portc_bindings_new(g))) return err_set(PORTC_ERR_NOMEM, "tune: out of memory");
  portc_bindings_set_seed(T.b, o.seed ? o.seed : 1);
  T.nout = portc_graph_output_count(g);
  tune_device d;
  tune_device_of(T.t, T.device, &d);
  /* the default: what a compile picks today, and the reference outputs */
  portc_module *m0 = NULL;
  portc_status st = module_compile(g, &T.co, T.b, NULL, &m0);
  if (!st) st = make_groups(&T, m0->km, &d, o.missing_only);
  int *all = st ? NULL : malloc(sizeof *all * (size_t)(T.ngrp + 1));
  if (!st && !all) st = err_set(PORTC_ERR_NOMEM, "tune: out of memory");
  int ncand = 1, nall = 0;
  for (int j = 0; !st && j < T.ngrp; j++) {
    if (T.grp[j].ncand > ncand) ncand = T.grp[j].ncand;
    if (!T.grp[j].skip) all[nall++] = j;
  }
  char why[512] = "";
  if (!st && nall && !attempt(&T, all, nall, 0, why, sizeof why)) st = err_set(PORTC_ERR_INVALID, "tune: the default schedule does not run: %s", why);
  if (!st && nall) {
    if (T.progress) fprintf(stderr, "tune: compiling %d candidate rounds for %d kernel keys on the host's cores\n", ncand - 1, nall);
    prebuild(&T, ncand);
  }
  for (int c = 1; !st && c < ncand && left(&T) > 0; c++) {
    int n = 0;
    for (int j = 0; j < nall; j++)
      if (T.grp[all[j]].ncand > c) all[n++] = all[j];
    if (T.progress) {
      double base = 0, best = 0;
      for (int j = 0; j < nall; j++) {
        const group *gr = &T.grp[all[j]];
        double b = gr->time[0];
        for (int k = 1; k < gr->ncand; k++)
          if (gr->done[k] && gr->time[k] < b) b = gr->time[k];
        base += gr->time[0], best += b;
      }
      fprintf(stderr, "tune: candidate %d of %d for %d kernel keys; best so far %.2fx the default; %.0f s left\n", c, ncand - 1, n,
              best > 0 ? base / best : 1, left(&T));
    }
    try_round(&T, all, n, c);
    for (int j = 0, k = 0; j < T.ngrp; j++) /* the list again, for the next round */
      if (!T.grp[j].skip) all[k++] = j;
  }
  if (!st && left(&T) <= 0 && T.progress) fprintf(stderr, "tune: the budget (%.0f s) is spent; the rest keep their defaults\n", T.budget);
  strbuf rep = {0};
  if (!st && nall) st = store(&T, &d, m0, &o, &rep);
  else if (!st) sb_printf(&rep, "nothing to tune: %s\n", T.ngrp ? "every kernel has a measured entry" : "the graph has no kernels");
  if (!st && report) *report = rep.s, rep.s = NULL;
  free(rep.s);
  free(all);
  round_builds_free(&T, ncand);
  portc_module_free(m0);
  free_outputs(T.ref, T.nout);
  free(T.ref);
  free(T.grp);
  free(T.group_of);
  portc_bindings_free(own);
  return st;
}

/* the summed kernel times per group of module m (a fresh timing) */
static portc_status group_times(tuner *T, portc_module *m, double *sum) {
  double *med = calloc((size_t)T->nk + 1, sizeof *med);
  portc_status st = med ? warm_up(T, m) : err_set(PORTC_ERR_NOMEM, "tune: out of memory");
  if (!st) st = module_time_kernels(m, T->b, T->reps, NULL, med);
  for (int j = 0; j < T->ngrp; j++) sum[j] = 0;
  for (int k = 0; !st && k < T->nk; k++) sum[T->group_of[k]] += med[k];
  free(med);
  return st;
}

/* picks each group's winner (3% faster than the default, or the default), checks the winners
 * together, times them against the default once more (a winner must win twice: noise does not),
 * and writes one measured entry per group */
static portc_status store(tuner *T, const tune_device *d, portc_module *m0, const portc_tune_options *o, strbuf *rep) {
  const tune_knobs **force = calloc((size_t)T->nk + 1, sizeof *force);
  double *t0 = calloc((size_t)T->ngrp + 1, sizeof *t0), *t1 = calloc((size_t)T->ngrp + 1, sizeof *t1);
  if (!force || !t0 || !t1) {
    free(force), free(t0), free(t1);
    return err_set(PORTC_ERR_NOMEM, "tune: out of memory");
  }
  for (int j = 0; j < T->ngrp; j++) {
    group *gr = &T->grp[j];
    gr->win = 0;
    for (int c = 1; c < gr->ncand; c++)
      if (gr->done[c] && gr->time[c] < 0.97 * gr->time[gr->win]) gr->win = c;
    for (int k = 0; gr->win && k < T->nk; k++)
      if (T->group_of[k] == j) force[k] = &gr->cand[gr->win];
  }
  /* the winners together: the outputs must still match, and each must beat the default again */
  portc_module *m = NULL;
  portc_tensor **out = calloc((size_t)T->nout + 1, sizeof *out);
  portc_status st = out ? module_compile(T->g, &T->co, T->b, force, &m) : err_set(PORTC_ERR_NOMEM, "tune: out of memory");
  if (!st) st = portc_module_run(m, T->b, out);
  char why[256];
  for (int i = 0; !st && i < T->nout; i++)
    if (!outputs_match(T->ref[i], out[i], why, sizeof why)) st = err_set(PORTC_ERR_INVALID, "tune: the winners together change output %d: %s; nothing stored", i, why);
  free_outputs(out, T->nout);
  free(out);
  if (!st) st = group_times(T, m0, t0);
  if (!st) st = group_times(T, m, t1);
  for (int j = 0; !st && j < T->ngrp; j++) {
    group *gr = &T->grp[j];
    if (!gr->win || t1[j] < 0.99 * t0[j]) continue;
    log_line("tune", "%s: %.2f us against the default's %.2f us on the second timing: the default stays", gr->text, t1[j] / gr->n * 1e6,
             t0[j] / gr->n * 1e6);
    gr->win = 0;
  }
  char path[4096];
  if (!st && o->table_path) snprintf(path, sizeof path, "%s", o->table_path);
  else if (!st) st = tune_user_path(path, sizeof path);
  time_t now_t = time(NULL);
  struct tm tmv;
  char date[16];
  strftime(date, sizeof date, "%Y-%m-%d", gmtime_r(&now_t, &tmv));
  sb_printf(rep, "%5s %12s %12s %7s  %-32s  %s\n", "count", "default us", "best us", "speedup", "knobs", "kernel");
  for (int j = 0; !st && j < T->ngrp; j++) {
    group *gr = &T->grp[j];
    if (gr->skip || !gr->done[0] || gr->ncand < 2) continue;
    tune_entry e = {0};
    snprintf(e.dev.api, sizeof e.dev.api, "%s", d->api);
    snprintf(e.dev.vendor, sizeof e.dev.vendor, "%s", d->vendor);
    snprintf(e.dev.family, sizeof e.dev.family, "%s", d->family);
    snprintf(e.dev.arch, sizeof e.dev.arch, "%s", d->arch);
    snprintf(e.dev.model, sizeof e.dev.model, "%s", d->model);
    e.kern = gr->key;
    for (int x = 0; x < TX_COUNT; x++)
      e.ext[x] = (tune_range){gr->key.ext[x], gr->key.ext[x], gr->key.ext[x] != TUNE_NONE};
    e.knobs = gr->win ? gr->cand[gr->win] : default_knobs(gr, &m->km->k[gr->first].sched);
    if (!e.knobs.mask) continue;
    e.prov = PROV_MEASURED;
    double us = gr->time[gr->win] / gr->n * 1e6, us0 = gr->time[0] / gr->n * 1e6;
    str_cut(e.why, sizeof e.why, "device=\"%s\"%s%s%s date=%s median_us=%.2f samples=%d note=\"default %.2f us\"", d->model[0] ? d->model : d->api,
            d->driver[0] ? " driver=\"" : "", d->driver, d->driver[0] ? "\"" : "", date, us, T->reps, us0);
    st = tune_store(path, &e);
    if (!st && o->export_path) st = tune_store(o->export_path, &e);
    char knobs[256];
    tune_knobs_format(&e.knobs, knobs, sizeof knobs);
    sb_printf(rep, "%5d %12.2f %12.2f %6.2fx  %-32s  %s\n", gr->n, us0, us, us > 0 ? us0 / us : 1, gr->win ? knobs : "(the default)", gr->text);
  }
  portc_module_free(m);
  free(force), free(t0), free(t1);
  return st;
}
