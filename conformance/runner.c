/*
 * runner.c: `portc verify`: every case on every selected target (fused and eager) against the
 * float64 reference. Outputs are poisoned before each run; NaN and infinities must agree with
 * the reference rounded to the output's dtype; finite values must meet the case's bounds
 * element by element and in the norm. Inputs are fresh for each invocation; the seed is printed
 * so that a failure can be replayed with --seed.
 */
#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../ir/api_struct.h"
#include "../ir/dtype.h"
#include "conformance.h"
#include "reference.h"

enum { R_PASS, R_FAIL, R_SKIP };

typedef struct column {
  char name[48];
  const char *target;
  bool eager, available;
  char why[256];
} column;

typedef struct result {
  int status;
  char *msg;
} result;

typedef struct job {
  const conf_options *o;
  conf_cases *cases;
  int *selected, nsel;
  column *cols;
  int ncols;
  result *res; /* nsel * ncols */
  atomic_int next, done;
  uint64_t seed;
  bool progress;
  pthread_mutex_t lock;
} job;

static void set_result(result *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_result(result *r, int status, const char *fmt, ...) {
  r->status = status;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&r->msg, fmt, ap) < 0) r->msg = NULL;
  va_end(ap);
}

/* compares one output with the reference; a message on failure */
/* the largest finite magnitude among the inputs and parameters the run used */
double conf_input_scale(const portc_graph *g, const portc_bindings *b) {
  double m = 0;
  for (int i = 0; i < portc_graph_node_count(g); i++) {
    const char *op = portc_node_op(g, i);
    if (strcmp(op, "input") != 0 && strcmp(op, "param") != 0) continue;
    const portc_tensor *t = portc_bindings_get(b, portc_node_name(g, i));
    if (!t || !dtype_is_float(t->dtype)) continue;
    for (int64_t k = 0; k < portc_tensor_numel(t); k++) {
      double v = fabs(portc_tensor_get(t, k));
      if (isfinite(v) && v > m) m = v;
    }
  }
  return m;
}

bool conf_compare(const portc_tensor *out, const portc_tensor *ref, const tolerance *t, double in_scale, char *msg, size_t len) {
  int64_t n = portc_tensor_numel(ref);
  if (out->rank != ref->rank || portc_tensor_numel(out) != n) {
    snprintf(msg, len, "shape differs from the reference");
    return false;
  }
  if (!dtype_is_float(out->dtype)) {
    for (int64_t i = 0; i < n; i++)
      if (portc_tensor_get(out, i) != portc_tensor_get(ref, i) ||
          (out->dtype == PORTC_I64 && ((int64_t *)out->data)[i] != ((int64_t *)ref->data)[i])) {
        snprintf(msg, len, "element %lld: got %.17g, reference %.17g (integers must be exact)", (long long)i, portc_tensor_get(out, i),
                 portc_tensor_get(ref, i));
        return false;
      }
    return true;
  }
  double sq = 0, err2 = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < n; i++) {
    double r = round_to_dtype(portc_tensor_get(ref, i), out->dtype);
    if (isfinite(r)) sq += r * r, finite++;
  }
  double rms = finite ? sqrt(sq / (double)finite) : 0;
  double abs_tol = t->rtol * (t->atol * rms + in_scale) + 1e-30;
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double r = round_to_dtype(portc_tensor_get(ref, i), out->dtype), v = portc_tensor_get(out, i);
    bool ok;
    if (isnan(r) || isnan(v)) ok = isnan(r) && isnan(v);
    else if (isinf(r) || isinf(v)) ok = r == v;
    else {
      double e = fabs(v - r), lim = abs_tol + t->rtol * fabs(r);
      ok = e <= lim;
      err2 += e * e;
      if (lim > 0 && e / lim > worst) worst = e / lim;
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (bad) {
    double r = round_to_dtype(portc_tensor_get(ref, first), out->dtype);
    snprintf(msg, len, "%lld of %lld elements out of bounds; first at %lld: got %.9g, reference %.9g (rtol %.3g, atol %.3g)",
             (long long)bad, (long long)n, (long long)first, portc_tensor_get(out, first), r, t->rtol, abs_tol);
    return false;
  }
  /* the same scale as the elements: the reference's norm, plus the inputs' scale per element */
  double scale = sqrt(sq) + in_scale * sqrt((double)finite);
  if (scale > 1e-30 && sqrt(err2) / scale > t->norm) {
    snprintf(msg, len, "norm error %.3g is more than %.3g times the scale %.3g", sqrt(err2), t->norm, scale);
    return false;
  }
  return true;
}

/* on a device that may flush f32 denormals, a result that misses the reference may still be the
 * reference of the same sources with their denormals read as zeros; b holds the run's inputs as
 * drawn (a training step's reference has already updated the parameters of the bindings it ran on) */
static bool matches_flushed(const portc_graph *g, portc_module *m, portc_bindings *b, int k, const portc_tensor *out, const tolerance *t,
                            double scale) {
  portc_module_info info = PORTC_MODULE_INFO_INIT;
  if (portc_module_info_get(m, b, &info) != PORTC_OK || !info.flushes_denormals) return false;
  int nout = portc_graph_output_count(g);
  portc_tensor **refs = calloc((size_t)nout + 1, sizeof *refs);
  char msg[512];
  bool ok = refs && conf_reference_run(g, b, true, refs, NULL) == PORTC_OK && conf_compare(out, refs[k], t, scale, msg, sizeof msg);
  for (int i = 0; refs && i < nout; i++) portc_tensor_free(refs[i]);
  free(refs);
  return ok;
}

/* the bindings of one run of a case: its seed (the draw-th of the run) and symbol values */
static portc_bindings *case_bindings(const portc_graph *g, const job *j, const conf_case *c, int run, int draw) {
  portc_bindings *b = portc_bindings_new(g);
  portc_bindings_set_seed(b, j->seed + (uint64_t)run + (uint64_t)draw * 0x9E3779B97F4A7C15u);
  for (int k = 0; k < c->nsyms; k++) portc_bindings_set_symbol(b, c->sym[k], c->symval[run][k]);
  return b;
}

/* A comparison of computed f32 values decided by less than this (relative to the operands' RMS:
 * 64 ulps, a few times what a reduction of a few hundred terms may round by) is a coin toss
 * between the target and the reference: a relu's derivative on a pre-activation of 1e-7 takes a
 * whole term out of a gradient. An output sum that cancelled below CANCELLED of its terms' scale
 * (about one draw in twenty of a scalar loss of terms of either sign) is held to bounds that
 * scale with its result, far below the rounding errors its terms carry: a gradient case's loss of
 * 16-bit terms up to e^4 landed at 0.3 where it lies near 120 as a rule. Such a run's inputs are
 * drawn again, up to MAX_DRAWS times. */
#define CLOSE_CALL (64 * 0x1p-24)
#define CANCELLED (1.0 / 16)
#define MAX_DRAWS 8

/* the reference of one run, on inputs drawn until no comparison is a close call and no output sum
 * cancelled (or the last draw, which sets *close); its bindings for the target and the reference
 * in b and rb, and which draw it was in *drawn */
static portc_status reference_of(const portc_graph *g, const job *j, const conf_case *c, int run, portc_bindings **b, portc_bindings **rb,
                                 portc_tensor **refs, bool *close, int *drawn) {
  for (int draw = 0;; draw++) {
    *drawn = draw;
    *b = case_bindings(g, j, c, run, draw), *rb = case_bindings(g, j, c, run, draw);
    conf_draw d;
    portc_status st = conf_reference_update(g, *rb, refs, &d);
    *close = d.closest < CLOSE_CALL || d.cancelled < CANCELLED;
    if (st || !*close || draw + 1 == MAX_DRAWS) return st;
    for (int k = 0; k < portc_graph_output_count(g); k++) portc_tensor_free(refs[k]), refs[k] = NULL;
    portc_bindings_free(*b), portc_bindings_free(*rb);
  }
}

static void run_case(job *j, const conf_case *c, const column *col, result *r) {
  if (!col->available) {
    set_result(r, R_SKIP, "target not available: %s", col->why);
    return;
  }
  portc_graph *g = NULL;
  portc_status st = c->path ? portc_graph_load(c->path, &g) : portc_graph_parse(c->text, c->name, &g);
  if (st) {
    set_result(r, R_FAIL, "the case does not parse: %s", portc_last_error());
    return;
  }
  if (c->autocast != PORTC_F32) { /* the case is the graph's autocast copy, checked against its own reference */
    portc_graph *copy;
    st = portc_graph_autocast_copy(g, c->autocast, &copy, NULL);
    portc_graph_free(g);
    if (st) {
      set_result(r, R_FAIL, "autocast copy failed: %s", portc_last_error());
      return;
    }
    g = copy;
  }
  portc_compile_options co = {.target = col->target, .eager = col->eager, .dynamic = c->nruns > 1};
  portc_module *m = NULL;
  int nout = portc_graph_output_count(g);
  portc_tensor **outs = calloc((size_t)nout + 1, sizeof *outs), **refs = calloc((size_t)nout + 1, sizeof *refs);
  char msg[1024] = "";
  r->status = R_PASS;
  for (int run = 0; run < c->nruns && r->status == R_PASS; run++) {
    /* the reference has bindings of its own: a run of a training step updates the parameters
     * in the bindings it is given (portc_update), and the reference starts where the target did */
    portc_bindings *b, *rb, *fresh = NULL;
    bool close;
    int draw;
    if (reference_of(g, j, c, run, &b, &rb, refs, &close, &draw) != PORTC_OK) {
      set_result(r, R_FAIL, "reference failed: %s", portc_last_error());
    } else if (!m && portc_compile(g, &co, b, &m) != PORTC_OK) {
      set_result(r, R_FAIL, "compile failed: %s", portc_last_error());
    } else if (portc_module_run(m, b, outs) != PORTC_OK) {
      set_result(r, R_FAIL, "run%s failed: %s", c->nruns > 1 ? " (dynamic)" : "", portc_last_error());
    } else {
      tolerance t;
      conf_tolerance(g, b, col->target, col->eager, &t);
      double scale = conf_input_scale(g, b);
      for (int k = 0; k < nout && r->status == R_PASS; k++)
        if (!conf_compare(outs[k], refs[k], &t, scale, msg, sizeof msg) &&
            !matches_flushed(g, m, fresh ? fresh : (fresh = case_bindings(g, j, c, run, draw)), k, outs[k], &t, scale))
          set_result(r, R_FAIL, "output %s%s: %s%s", portc_node_name(g, portc_graph_output(g, k)),
                     c->nruns > 1 ? (run == 0 ? " (first size)" : " (a later size)") : "", msg,
                     close ? "; every draw of the inputs left a comparison within 64 ulps or an output sum cancelled" : "");
    }
    for (int k = 0; k < nout; k++) {
      portc_tensor_free(outs[k]);
      portc_tensor_free(refs[k]);
      outs[k] = refs[k] = NULL;
    }
    portc_bindings_free(b);
    portc_bindings_free(rb);
    portc_bindings_free(fresh);
  }
  free(outs);
  free(refs);
  portc_module_free(m);
  portc_graph_free(g);
}

static void *worker(void *arg) {
  job *j = arg;
  int total = j->nsel * j->ncols;
  for (;;) {
    int w = atomic_fetch_add(&j->next, 1);
    if (w >= total) break;
    int ci = w / j->ncols, col = w % j->ncols;
    const conf_case *c = &j->cases->c[j->selected[ci]];
    run_case(j, c, &j->cols[col], &j->res[w]);
    int d = atomic_fetch_add(&j->done, 1) + 1;
    if (j->progress) {
      pthread_mutex_lock(&j->lock);
      fprintf(stderr, "\r\033[K[%d/%d] %s %s", d, total, j->cols[col].name, c->name);
      fflush(stderr);
      pthread_mutex_unlock(&j->lock);
    }
  }
  return NULL;
}

static void xml_escape(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*s, f);
    }
  }
}

static void json_escape(FILE *f, const char *s) {
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if (*s == '\n') fputs("\\n", f);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
    else fputc(*s, f);
  }
}

static const char *const status_name[] = {"pass", "fail", "skip"};

static bool write_reports(const job *j) {
  const conf_options *o = j->o;
  bool ok = true;
  if (o->json) {
    FILE *f = fopen(o->json, "w");
    if (!f) return fprintf(stderr, "portc verify: cannot write %s\n", o->json), false;
    fprintf(f, "{\"seed\": %llu, \"results\": [", (unsigned long long)j->seed);
    for (int i = 0; i < j->nsel * j->ncols; i++) {
      const conf_case *c = &j->cases->c[j->selected[i / j->ncols]];
      fprintf(f, "%s\n  {\"case\": \"", i ? "," : "");
      json_escape(f, c->name);
      fprintf(f, "\", \"suite\": \"%s\", \"target\": \"%s\", \"status\": \"%s\", \"message\": \"", c->suite, j->cols[i % j->ncols].name,
              status_name[j->res[i].status]);
      json_escape(f, j->res[i].msg);
      fprintf(f, "\"}");
    }
    fprintf(f, "\n]}\n");
    ok = fclose(f) == 0 && ok;
  }
  if (o->junit) {
    FILE *f = fopen(o->junit, "w");
    if (!f) return fprintf(stderr, "portc verify: cannot write %s\n", o->junit), false;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"portc verify\">\n");
    for (int col = 0; col < j->ncols; col++) {
      int fails = 0, skips = 0;
      for (int i = 0; i < j->nsel; i++) {
        fails += j->res[i * j->ncols + col].status == R_FAIL;
        skips += j->res[i * j->ncols + col].status == R_SKIP;
      }
      fprintf(f, "  <testsuite name=\"%s\" tests=\"%d\" failures=\"%d\" skipped=\"%d\">\n", j->cols[col].name, j->nsel, fails, skips);
      for (int i = 0; i < j->nsel; i++) {
        const conf_case *c = &j->cases->c[j->selected[i]];
        const result *r = &j->res[i * j->ncols + col];
        fprintf(f, "    <testcase classname=\"%s.%s\" name=\"", j->cols[col].name, c->suite);
        xml_escape(f, c->name);
        fprintf(f, "\"");
        if (r->status == R_PASS) {
          fprintf(f, "/>\n");
          continue;
        }
        fprintf(f, ">\n      <%s message=\"", r->status == R_FAIL ? "failure" : "skipped");
        xml_escape(f, r->msg);
        fprintf(f, " (seed %llu)\"/>\n    </testcase>\n", (unsigned long long)j->seed);
      }
      fprintf(f, "  </testsuite>\n");
    }
    fprintf(f, "</testsuites>\n");
    ok = fclose(f) == 0 && ok;
  }
  return ok;
}

static void print_table(const job *j, FILE *out) {
  static const char *const suites[] = {"ops", "special", "fusion", "models", "dynamic", "grad"};
  fprintf(out, "%-10s", "suite");
  for (int col = 0; col < j->ncols; col++) fprintf(out, "  %-22s", j->cols[col].name);
  fprintf(out, "\n");
  for (unsigned s = 0; s < sizeof suites / sizeof *suites; s++) {
    fprintf(out, "%-10s", suites[s]);
    for (int col = 0; col < j->ncols; col++) {
      int cnt[3] = {0};
      for (int i = 0; i < j->nsel; i++)
        if (strcmp(j->cases->c[j->selected[i]].suite, suites[s]) == 0) cnt[j->res[i * j->ncols + col].status]++;
      char cell[64];
      snprintf(cell, sizeof cell, "%d pass %d fail %d skip", cnt[0], cnt[1], cnt[2]);
      fprintf(out, "  %-22s", cell);
    }
    fprintf(out, "\n");
  }
}

static int columns(const conf_options *o, column *cols) {
  int n = 0;
  for (int t = 0; t < portc_target_count(); t++) {
    const char *name = portc_target_name(t);
    if (o->targets) {
      char list[512];
      snprintf(list, sizeof list, ",%s,", o->targets);
      char want[64];
      snprintf(want, sizeof want, ",%s,", name);
      if (!strstr(list, want)) continue;
    }
    for (int e = 0; e < (o->eager ? 2 : 1); e++) {
      column *c = &cols[n++];
      memset(c, 0, sizeof *c);
      snprintf(c->name, sizeof c->name, "%s%s", name, e ? " (eager)" : "");
      c->target = name;
      c->eager = e;
      c->available = portc_target_available(t, c->why, sizeof c->why);
    }
  }
  return n;
}

int conf_run(const conf_options *o, const char *examples_dir, FILE *out) {
  conf_cases cases;
  if (o->nmodels) conf_generate_models(&cases, o->nmodels, o->models, o->nsets, o->sets, o->autocast);
  else conf_generate(&cases, examples_dir);
  regex_t re;
  if (o->filter && regcomp(&re, o->filter, REG_EXTENDED | REG_NOSUB) != 0) {
    fprintf(stderr, "portc verify: --filter '%s' is not a valid regular expression\n", o->filter);
    conf_free(&cases);
    return -1;
  }
  job j = {.o = o, .cases = &cases, .lock = PTHREAD_MUTEX_INITIALIZER};
  j.selected = malloc(sizeof *j.selected * (size_t)(cases.n + 1));
  for (int i = 0; i < cases.n; i++)
    if (!o->filter || regexec(&re, cases.c[i].name, 0, NULL, 0) == 0) j.selected[j.nsel++] = i;
  if (o->filter) regfree(&re);
  column cols[16];
  j.cols = cols;
  j.ncols = columns(o, cols);
  if (!j.ncols) {
    fprintf(stderr, "portc verify: no target matches '%s'\n", o->targets ? o->targets : "");
    free(j.selected);
    conf_free(&cases);
    return -1;
  }
  j.seed = o->seed_given ? o->seed : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
  j.res = calloc((size_t)(j.nsel * j.ncols + 1), sizeof *j.res);
  j.progress = !o->quiet && isatty(2);
  fprintf(out, "portc verify: %d cases on %d target configurations, seed %llu\n", j.nsel, j.ncols, (unsigned long long)j.seed);
  for (int col = 0; col < j.ncols; col++)
    if (!cols[col].available) fprintf(out, "  %s: not available (%s): its cases are skipped\n", cols[col].name, cols[col].why);
  fflush(out);
  long nthreads = sysconf(_SC_NPROCESSORS_ONLN);
  if (nthreads < 1) nthreads = 1;
  if (nthreads > 16) nthreads = 16;
  pthread_t th[16];
  for (long t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, worker, &j);
  for (long t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
  if (j.progress) fprintf(stderr, "\r\033[K");
  int counts[3] = {0};
  for (int i = 0; i < j.nsel * j.ncols; i++) {
    counts[j.res[i].status]++;
    if (j.res[i].status == R_FAIL)
      fprintf(out, "FAIL %s %s: %s (seed %llu)\n", j.cols[i % j.ncols].name, cases.c[j.selected[i / j.ncols]].name,
              j.res[i].msg ? j.res[i].msg : "", (unsigned long long)j.seed);
  }
  print_table(&j, out);
  bool reports = write_reports(&j);
  fprintf(out, "%d passed, %d failed, %d skipped\n", counts[R_PASS], counts[R_FAIL], counts[R_SKIP]);
  for (int i = 0; i < j.nsel * j.ncols; i++) free(j.res[i].msg);
  free(j.res);
  free(j.selected);
  conf_free(&cases);
  return reports ? counts[R_FAIL] : counts[R_FAIL] + 1;
}

int portc_verify(const portc_verify_options *opts, void *out) {
  portc_verify_options v;
  api_struct_in(&v, sizeof v, opts, API_FIRST_SIZE(portc_verify_options, nsets));
  conf_options o = {.targets = v.targets, .filter = v.filter, .json = v.json, .junit = v.junit, .seed = v.seed,
                    .seed_given = v.seed_given, .eager = !v.no_eager, .quiet = v.quiet, .models = v.models,
                    .nmodels = v.nmodels, .sets = v.sets, .nsets = v.nsets, .autocast = v.autocast};
  return conf_run(&o, v.examples_dir ? v.examples_dir : "examples", out ? out : stdout);
}
