/*
 * cmd_bench.c: `portc bench G.ptg -t cpu` measures a compiled graph: compile time cold (an
 * empty kernel cache) and warm (a cache hit); then, after warm-up, the median, min and max of
 * back-to-back runs, fused and eager on the same device (and the untuned rules where tune
 * tables set some schedules), with bytes and FLOPs from the kernel IR turned into GB/s and
 * GFLOP/s, and peak memory; as text, JSON, CSV and an SVG chart (chart.c).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char *const help =
    "usage: portc bench G.ptg [-t TARGET[,TARGET...]] [--set SYM=N]... [--input NAME=FILE.npy]... [--seed S]\n"
    "                   [--iters N] [--warmup N] [--warmup-s S] [--json FILE] [--csv FILE] [--chart FILE.svg] [--trace FILE.json]\n"
    "                   [--no-eager] [--steps N]\n"
    "                   [COMPILE OPTIONS]\n"
    "\n"
    "Compiles G.ptg twice (cold: an empty kernel cache; warm: a cache hit), runs --warmup runs, then\n"
    "times --iters runs (default 20) and prints median, min and max, bytes moved and FLOPs from the\n"
    "kernel IR as GB/s and GFLOP/s, peak memory, and the same for eager mode with the fused/eager\n"
    "ratio; where tune tables set some kernels' schedules, also the targets' rules alone (untuned).\n"
    "A spread of the runs over 10%% of the median is reported as a noisy machine. Inputs without\n"
    "--input come from the seed (default 1), drawn once. Several targets run one after the other.\n"
    "--warmup-s S warms up for at least S seconds of run time as well (default 2 on GPU targets, 0 on\n"
    "the CPU): a GPU left idle for a few seconds (while the host draws large seeded inputs, say) runs\n"
    "its next second or so of kernels up to 5x slower on NVIDIA's H200.\n"
    "--json writes every sample with the symbol values, mode, portc version, device key and host\n"
    "(one object per target: {\"targets\": [...]} when there are several); --csv one row per target\n"
    "and series; --chart an SVG of every kernel's rate against the device's peaks, which portc\n"
    "measures first (a 64 MiB copy and a 2048 f32 matmul), fused, eager and untuned (one file per\n"
    "target when there are several: FILE-TARGET.svg); --trace the fused run's kernels as a Chrome\n"
    "trace (chrome://tracing, Perfetto), named as explain names them, each lasting its median time\n"
    "alone (one file per target when there are several: FILE-TARGET.json). --steps N also times N\n"
    "whole calls on the host clock, as a training loop makes them: portc_module_step (parameters and\n"
    "optimizer state kept on the device) and portc_module_run (every output read back), each with the\n"
    "bytes its last call copied up and down.\n"
    "%s";

typedef struct measure {
  double cold, warm, med, min, max, spread;
  int warmed;        /* the warm-up runs made: --warmup, or more for --warmup-s */
  double *samples; /* every timed run, in order */
  int n;
  portc_module_info info;
  /* --steps: host-clock medians of whole calls, and the last call's copies */
  double step_wall, run_wall;
  int64_t step_up, step_down, run_up, run_down;
  double *ks;        /* --chart, --trace: per kernel, its median time alone */
  int64_t *kb, *kf;  /* and its bytes and FLOPs */
  char *explain;     /* and the module's explain text */
} measure;

static void measure_free(measure *m) {
  free(m->samples), free(m->ks), free(m->kb), free(m->kf), free(m->explain);
  memset(m, 0, sizeof *m);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* compile cold and warm, then time (and with `profile` reps, each kernel alone); fills m */
static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the median of n whole calls (after one more), and the last one's copies */
static portc_status time_calls(portc_module *mod, portc_bindings *b, const portc_graph *g, bool step, int n, double *med, int64_t *up, int64_t *down) {
  int nout = portc_graph_output_count(g);
  portc_tensor **out = calloc((size_t)nout + 1, sizeof *out);
  double *t = malloc(sizeof *t * (size_t)(n + 1));
  portc_status st = out && t ? PORTC_OK : PORTC_ERR_NOMEM;
  for (int i = 0; i <= n && !st; i++) {
    double t0 = wall();
    st = step ? portc_module_step(mod, b, out) : portc_module_run(mod, b, out);
    t[i] = wall() - t0;
    for (int k = 0; k < nout; k++) portc_tensor_free(out[k]), out[k] = NULL;
  }
  portc_module_info info = PORTC_MODULE_INFO_INIT;
  if (!st) st = portc_module_info_get(mod, b, &info);
  if (!st) {
    qsort(t + 1, (size_t)n, sizeof *t, cmp_double);
    *med = t[1 + n / 2], *up = info.uploaded_bytes, *down = info.downloaded_bytes;
  }
  free(t);
  free(out);
  return st;
}

/* Draws the seeded inputs once and binds them, so that no later measurement draws them again
 * (rounding 134M values to f16 takes the host seconds). One run records what it used
 * (portc_bindings_get); each input takes that value; *once is that run's time. */
static portc_status pin_seeded_inputs(portc_module *mod, const portc_graph *g, portc_bindings *b, double *once) {
  portc_status st = portc_module_time(mod, b, 1, once);
  for (int i = 0; !st && i < portc_graph_input_count(g); i++) {
    const char *name = portc_node_name(g, portc_graph_input(g, i));
    const portc_tensor *x = portc_bindings_get(b, name);
    if (x) st = portc_bindings_set(b, name, x);
  }
  return st;
}

/* the warm-up runs: `warmup`, or as many as fill warm_s seconds at `once` seconds a run */
static int warm_runs(int warmup, double warm_s, double once) {
  double want = once > 0 ? warm_s / once : 0;
  return want > 100000 ? 100000 : want > warmup ? (int)want + 1 : warmup;
}

/* set while measure_peaks tries a copy the device may not bind: its failure is not reported */
static bool probing;

static void report_failure(void) {
  if (!probing) fprintf(stderr, "portc bench: %s\n", portc_last_error());
}

static int measure_one(const portc_graph *g, portc_bindings *b, portc_compile_options co, int warmup, double warm_s, int iters, int profile,
                       int steps, measure *m) {
  char cold_dir[] = "/tmp/portc-bench-XXXXXX";
  if (!mkdtemp(cold_dir)) {
    fprintf(stderr, "portc bench: cannot make a temporary kernel cache\n");
    return EXIT_FAIL;
  }
  const char *prev = getenv("PORTC_CACHE_DIR");
  char *saved = prev ? strdup(prev) : NULL;
  setenv("PORTC_CACHE_DIR", cold_dir, 1);
  portc_module *mod = NULL;
  portc_status st = portc_compile(g, &co, b, &mod);
  if (!st) {
    portc_module_info i = PORTC_MODULE_INFO_INIT;
    portc_module_info_get(mod, b, &i);
    m->cold = i.compile_seconds;
    portc_module_free(mod);
    mod = NULL;
    st = portc_compile(g, &co, b, &mod);
  }
  if (saved) setenv("PORTC_CACHE_DIR", saved, 1);
  else unsetenv("PORTC_CACHE_DIR");
  free(saved);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cold_dir);
  if (system(cmd) != 0) fprintf(stderr, "portc bench: could not remove %s\n", cold_dir);
  if (st) {
    report_failure();
    return EXIT_FAIL;
  }
  double once = 0;
  if (pin_seeded_inputs(mod, g, b, &once) != PORTC_OK) {
    report_failure();
    portc_module_free(mod);
    return EXIT_FAIL;
  }
  warmup = m->warmed = warm_runs(warmup, warm_s, once);
  double *t = malloc(sizeof *t * (size_t)(warmup + iters));
  m->info = (portc_module_info)PORTC_MODULE_INFO_INIT;
  m->samples = malloc(sizeof *m->samples * (size_t)iters);
  if (!t || !m->samples || portc_module_time(mod, b, warmup + iters, t) != PORTC_OK || portc_module_info_get(mod, b, &m->info) != PORTC_OK) {
    report_failure();
    free(t);
    portc_module_free(mod);
    return EXIT_FAIL;
  }
  m->warm = m->info.compile_seconds;
  if (steps > 0 && (time_calls(mod, b, g, true, steps, &m->step_wall, &m->step_up, &m->step_down) ||
                    time_calls(mod, b, g, false, steps, &m->run_wall, &m->run_up, &m->run_down))) {
    fprintf(stderr, "portc bench: --steps: %s\n", portc_last_error());
    portc_module_free(mod);
    return EXIT_FAIL;
  }
  if (!m->info.cache_hit) fprintf(stderr, "portc bench: warning: the second compile missed the kernel cache\n");
  memcpy(m->samples, t + warmup, sizeof *t * (size_t)iters);
  m->n = iters;
  qsort(t + warmup, (size_t)iters, sizeof *t, cmp_double);
  const double *r = t + warmup;
  m->min = r[0], m->max = r[iters - 1], m->med = r[iters / 2];
  m->spread = (r[iters * 9 / 10 < iters ? iters * 9 / 10 : iters - 1] - r[iters / 10]) / m->med;
  free(t);
  int nk = m->info.kernels;
  if (profile && nk > 0) {
    m->ks = calloc((size_t)nk, sizeof *m->ks), m->kb = calloc((size_t)nk, sizeof *m->kb), m->kf = calloc((size_t)nk, sizeof *m->kf);
    if (!m->ks || !m->kb || !m->kf || portc_module_profile(mod, b, profile, m->ks, m->kb, m->kf) != PORTC_OK) {
      fprintf(stderr, "portc bench: per-kernel times: %s\n", portc_last_error());
      portc_module_free(mod);
      return EXIT_FAIL;
    }
    m->explain = portc_module_explain(mod, b);
  }
  portc_module_free(mod);
  return EXIT_OK;
}

static void print_measure(const char *what, const measure *m) {
  printf("%-6s %3d kernels  median %9.3f ms  (min %.3f, max %.3f)  %7.2f GB/s  %8.2f GFLOP/s  compile cold %.3f s, warm %.4f s\n", what,
         m->info.kernels, m->med * 1e3, m->min * 1e3, m->max * 1e3, (double)m->info.bytes / m->med / 1e9,
         (double)m->info.flops / m->med / 1e9, m->cold, m->warm);
  if (m->info.derived_kernels)
    printf("       %d of them compute from parameters alone: run once, their %.2f MB kept on the device (not in the steady-state times, bytes or FLOPs)\n",
           m->info.derived_kernels, (double)m->info.kept_bytes / 1e6);
  if (m->step_wall > 0)
    printf("steps  portc_module_step %9.3f ms (up %.2f MB, down %.2f MB)  portc_module_run %9.3f ms (up %.2f MB, down %.2f MB), host clock\n",
           m->step_wall * 1e3, (double)m->step_up / 1e6, (double)m->step_down / 1e6, m->run_wall * 1e3, (double)m->run_up / 1e6,
           (double)m->run_down / 1e6);
  if (m->spread > 0.10)
    printf("warning: %s runs spread %.0f%% around the median (10th to 90th percentile): the machine was noisy\n", what, m->spread * 100);
}

void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

static void json_measure(FILE *f, const char *what, const measure *m) {
  fprintf(f,
          "\"%s\": {\"kernels\": %d, \"median_s\": %.9g, \"min_s\": %.9g, \"max_s\": %.9g, \"spread\": %.6g, \"bytes\": %lld, \"flops\": %lld, "
          "\"gbps\": %.6g, \"gflops\": %.6g, \"compile_cold_s\": %.6g, \"compile_warm_s\": %.6g, \"arena_bytes\": %lld, "
          "\"intermediate_bytes\": %lld, \"io_bytes\": %lld, \"tuned_kernels\": %d, \"derived_kernels\": %d, \"kept_bytes\": %lld, \"samples_s\": [",
          what, m->info.kernels, m->med, m->min, m->max, m->spread, (long long)m->info.bytes, (long long)m->info.flops,
          (double)m->info.bytes / m->med / 1e9, (double)m->info.flops / m->med / 1e9, m->cold, m->warm,
          (long long)m->info.arena_bytes, (long long)m->info.intermediate_bytes, (long long)m->info.io_bytes, m->info.tuned_kernels,
          m->info.derived_kernels, (long long)m->info.kept_bytes);
  for (int i = 0; i < m->n; i++) fprintf(f, "%s%.9g", i ? ", " : "", m->samples[i]);
  fprintf(f, "]");
  if (m->step_wall > 0)
    fprintf(f, ", \"step_wall_s\": %.9g, \"step_uploaded_bytes\": %lld, \"step_downloaded_bytes\": %lld, \"run_wall_s\": %.9g, "
            "\"run_uploaded_bytes\": %lld, \"run_downloaded_bytes\": %lld",
            m->step_wall, (long long)m->step_up, (long long)m->step_down, m->run_wall, (long long)m->run_up, (long long)m->run_down);
  if (m->ks) {
    fprintf(f, ", \"kernel_median_s\": [");
    for (int i = 0; i < m->info.kernels; i++) fprintf(f, "%s%.9g", i ? ", " : "", m->ks[i]);
    fprintf(f, "]");
  }
  fprintf(f, "}");
}

static void csv_measure(FILE *f, const char *graph, const char *series, const measure *m) {
  fprintf(f, "%s,%s,\"%s\",%s,%d,%.9g,%.9g,%.9g,%.6g,%.6g,%.6g,%.6g,%.6g,%d\n", graph, m->info.target, m->info.device, series, m->info.kernels,
          m->med, m->min, m->max, m->spread, (double)m->info.bytes / m->med / 1e9, (double)m->info.flops / m->med / 1e9, m->cold, m->warm,
          m->info.tuned_kernels);
}

/* the rate of one graph, from the fastest of 3 runs after warm_s seconds of warm-up: bytes per
 * second when gbps, else FLOPs per second (in G); 0 where it does not run */
static double peak_rate(const char *text, const char *target, double warm_s, bool gbps) {
  portc_graph *g = NULL;
  if (portc_graph_parse(text, "peak", &g)) return 0;
  portc_bindings *b = portc_bindings_new(g);
  portc_bindings_set_seed(b, 1);
  portc_compile_options co = PORTC_COMPILE_OPTIONS_INIT;
  co.target = target;
  measure m = {0};
  double rate = 0;
  if (measure_one(g, b, co, 1, warm_s, 3, 0, 0, &m) == EXIT_OK) rate = (double)(gbps ? m.info.bytes : m.info.flops) / m.min / 1e9;
  measure_free(&m);
  portc_bindings_free(b);
  portc_graph_free(g);
  return rate;
}

/* the device's peaks as portc reaches them: a copy of 256 MiB where the device binds that much
 * (on the H200 a 64 MiB one reached 2.1 TB/s, bench/gpu/copy_64M.ptg's 256 MiB 4.2), else of
 * 64 MiB (lavapipe binds 128 MiB; the CPU takes 64 MiB too), and a 2048 f32 matmul, each warmed
 * up for warm_s seconds as the graph was */
static void measure_peaks(const char *target, double warm_s, portc_dtype half, double *gbps, double *gflops, double *half_gflops) {
  *gbps = 0;
  if (strncmp(target, "cpu", 3)) {
    probing = true;
    *gbps = peak_rate("graph peak_copy\ninput x: f32[67108864]\ny = relu(x)\noutput y\n", target, warm_s, true);
    probing = false;
  }
  if (*gbps <= 0) *gbps = peak_rate("graph peak_copy\ninput x: f32[16777216]\ny = relu(x)\noutput y\n", target, warm_s, true);
  *gflops = peak_rate("graph peak_matmul\ninput a: f32[2048, 2048]\ninput b: f32[2048, 2048]\ny = matmul(a, b)\noutput y\n", target, warm_s, false);
  *half_gflops = 0;
  if (half != PORTC_F32 && strncmp(target, "cpu", 3)) { /* 4096: 2048 leaves the H100's tensor cores half idle */
    char text[160];
    const char *t = portc_dtype_name(half);
    snprintf(text, sizeof text, "graph peak_matmul\ninput a: %s[4096, 4096]\ninput b: %s[4096, 4096]\ny = matmul(a, b)\noutput y\n", t, t);
    *half_gflops = peak_rate(text, target, warm_s, false);
  }
}

/* the 16-bit float dtype graph g computes in (autocast's, else its first f16 or bf16 node's), or
 * PORTC_F32 where it has none */
static portc_dtype half_dtype(const portc_graph *g, portc_dtype autocast) {
  if (autocast == PORTC_F16 || autocast == PORTC_BF16) return autocast;
  for (portc_node n = 0; n < portc_graph_node_count(g); n++) {
    portc_dtype t = portc_node_dtype(g, n);
    if (t == PORTC_F16 || t == PORTC_BF16) return t;
  }
  return PORTC_F32;
}

/* per target: what was measured */
typedef struct result {
  char target[64], key[512];
  measure fused, eager, rules;
  bool has_eager, has_rules;
  double peak_gbps, peak_gflops, peak_half_gflops;
  portc_dtype half; /* the dtype of peak_half_gflops */
} result;

static void json_result(FILE *f, const portc_graph *g, const graph_args *ga, const result *r, int iters) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  fprintf(f, "{\"graph\": ");
  json_string(f, portc_graph_name(g));
  fprintf(f, ", \"portc_version\": \"%s\", \"host\": ", portc_version());
  json_string(f, host);
  fprintf(f, ", \"mode\": \"%s\", \"autocast\": \"%s\", \"seed\": %llu, \"symbols\": {", ga->co.mode == PORTC_MODE_REDUCE_OVERHEAD ? "reduce-overhead" : "default",
          ga->autocast != PORTC_F32 ? portc_dtype_name(ga->autocast) : "off", (unsigned long long)ga->seed);
  for (int i = 0; i < ga->nsets; i++) {
    const char *eq = strchr(ga->sets[i], '=');
    fprintf(f, "%s\"%.*s\": %s", i ? ", " : "", (int)(eq - ga->sets[i]), ga->sets[i], eq + 1);
  }
  fprintf(f, "}, \"target\": ");
  json_string(f, r->fused.info.target);
  fprintf(f, ", \"device\": ");
  json_string(f, r->fused.info.device);
  fprintf(f, ", \"device_key\": ");
  json_string(f, r->key);
  fprintf(f, ", \"timer\": ");
  json_string(f, r->fused.info.timer);
  fprintf(f, ", \"iters\": %d, \"warmup\": %d, ", iters, r->fused.warmed);
  json_measure(f, ga->co.eager ? "eager" : "fused", &r->fused);
  if (r->has_eager) {
    fprintf(f, ", ");
    json_measure(f, "eager", &r->eager);
    fprintf(f, ", \"speedup\": %.6g", r->eager.med / r->fused.med);
  }
  if (r->has_rules) {
    fprintf(f, ", ");
    json_measure(f, "rules", &r->rules);
    fprintf(f, ", \"tuned_speedup\": %.6g", r->rules.med / r->fused.med);
  }
  if (r->peak_gbps > 0) fprintf(f, ", \"peak_gbps\": %.6g, \"peak_gflops\": %.6g", r->peak_gbps, r->peak_gflops);
  if (r->peak_half_gflops > 0) fprintf(f, ", \"peak_gflops_%s\": %.6g", portc_dtype_name(r->half), r->peak_half_gflops);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  fprintf(f, ", \"peak_rss_bytes\": %ld}", ru.ru_maxrss * 1024L);
}

static bool write_chart(const portc_graph *g, const result *r, const char *path) {
  const measure *ms[3] = {&r->fused, r->has_eager ? &r->eager : NULL, r->has_rules ? &r->rules : NULL};
  static const char *const names[3] = {"fused", "eager", "rules"};
  int n = 0;
  for (int s = 0; s < 3; s++) n += ms[s] ? ms[s]->info.kernels : 0;
  chart_point *p = calloc((size_t)n + 1, sizeof *p);
  if (!p) return false;
  n = 0;
  for (int s = 0; s < 3; s++)
    for (int i = 0; ms[s] && ms[s]->ks && i < ms[s]->info.kernels; i++)
      p[n++] = (chart_point){names[s], (double)ms[s]->kb[i], (double)ms[s]->kf[i], ms[s]->ks[i]};
  char title[512];
  snprintf(title, sizeof title, "%s on %s: each kernel alone (fused, eager, and the rules without tune tables)", portc_graph_name(g),
           r->fused.info.device);
  chart c = {title, r->peak_gbps, r->peak_gflops, r->peak_half_gflops, portc_dtype_name(r->half),
             "a copy of 256 MiB (64 MiB where the device binds less, and on the CPU), a 2048 f32 matmul and a 4096 16-bit one, fastest of 3 after the warm-up",
             p, n};
  bool ok = chart_write(&c, path);
  free(p);
  return ok;
}

/* the file of one target's chart or trace: `file` itself, or with several targets (target not
 * NULL) FILE-TARGET.ext, where FILE is `file` less its extension ext */
static void target_file(const char *file, const char *ext, const char *target, char *out, size_t len) {
  size_t n = strlen(file), e = strlen(ext);
  if (!target) snprintf(out, len, "%s", file);
  else snprintf(out, len, "%.*s-%s%s", (int)(n > e && !strcmp(file + n - e, ext) ? n - e : n), file, target, ext);
}

int cmd_bench(int argc, char **argv) {
  graph_args ga = {.seed = 1, .seeded = true, .several = true};
  const char *json = NULL, *csv = NULL, *svg = NULL, *tracef = NULL;
  int iters = 20, warmup = 3, steps = 0;
  double warm_s = -1; /* by target: 2 s on GPUs, none on the CPU */
  bool eager = true;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (is_help(a)) {
      printf(help, compile_options_help);
      return EXIT_OK;
    }
    int took = parse_graph_arg("bench", argc, argv, &i, &ga, false);
    if (took < 0) return EXIT_USAGE;
    if (took) continue;
    uint64_t v;
    bool takes = !strcmp(a, "--iters") || !strcmp(a, "--warmup") || !strcmp(a, "--warmup-s") || !strcmp(a, "--steps") || !strcmp(a, "--json") || !strcmp(a, "--csv") || !strcmp(a, "--chart") || !strcmp(a, "--trace");
    if (takes && i + 1 >= argc) return usage_error("bench", "%s needs a value", a);
    if (!strcmp(a, "--iters") || !strcmp(a, "--warmup")) {
      if (!parse_u64(argv[++i], &v) || v > 100000 || (!strcmp(a, "--iters") && v == 0)) return usage_error("bench", "%s wants a count", a);
      if (!strcmp(a, "--iters")) iters = (int)v;
      else warmup = (int)v;
    } else if (!strcmp(a, "--warmup-s")) {
      char *end;
      warm_s = strtod(argv[++i], &end);
      if (end == argv[i] || *end || !(warm_s >= 0 && warm_s <= 600)) return usage_error("bench", "--warmup-s wants seconds, 0 to 600");
    } else if (!strcmp(a, "--steps")) {
      if (!parse_u64(argv[++i], &v) || v == 0 || v > 100000) return usage_error("bench", "--steps wants a count");
      steps = (int)v;
    } else if (!strcmp(a, "--json")) {
      json = argv[++i];
    } else if (!strcmp(a, "--csv")) {
      csv = argv[++i];
    } else if (!strcmp(a, "--chart")) {
      svg = argv[++i];
    } else if (!strcmp(a, "--trace")) {
      tracef = argv[++i];
    } else if (!strcmp(a, "--no-eager")) {
      eager = false;
    } else {
      return usage_error("bench", "unknown option '%s'", a);
    }
  }
  if (!ga.path) return usage_error("bench", "no graph file given");
  if (ga.co.mode == PORTC_MODE_MAX_AUTOTUNE) return usage_error("bench", "--mode max-autotune: tune first (portc tune), then bench the default mode");
  portc_graph *g;
  portc_bindings *b;
  int rc = open_graph("bench", &ga, true, &g, &b);
  if (rc) return rc;
  const char *targets = ga.target ? ga.target : "cpu";
  int nt = 1;
  for (const char *p = targets; *p; p++) nt += *p == ',';
  result *res = calloc((size_t)nt, sizeof *res);
  if (!res) rc = EXIT_FAIL;
  int done = 0;
  for (const char *p = targets; !rc && *p; done++) {
    result *r = &res[done];
    size_t n = strcspn(p, ",");
    snprintf(r->target, sizeof r->target, "%.*s", (int)n, p);
    p += n + (p[n] == ',');
    portc_target_key(r->target, r->key, sizeof r->key);
    portc_compile_options co = ga.co;
    co.size = sizeof co;
    co.target = r->target;
    const int profile = svg ? 10 : 0; /* per-kernel times of every series for the chart; a trace is of the fused run */
    const double ws = warm_s >= 0 ? warm_s : strncmp(r->target, "cpu", 3) ? 2.0 : 0.0;
    rc = measure_one(g, b, co, warmup, ws, iters, tracef ? 10 : profile, steps, &r->fused);
    portc_compile_options ce = co;
    ce.eager = true;
    if (!rc && eager && !co.eager) rc = measure_one(g, b, ce, warmup, ws, iters, profile, 0, &r->eager), r->has_eager = !rc;
    portc_compile_options cr = co;
    cr.rules_only = true;
    if (!rc && r->fused.info.tuned_kernels > 0 && !co.rules_only) rc = measure_one(g, b, cr, warmup, ws, iters, profile, 0, &r->rules), r->has_rules = !rc;
    r->half = half_dtype(g, ga.autocast);
    if (!rc && svg) measure_peaks(r->target, ws, r->half, &r->peak_gbps, &r->peak_gflops, &r->peak_half_gflops);
    if (rc) break;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%s%s%s on %s (%s), %d runs after %d warm-up, timed with %s\n", portc_graph_name(g), ga.autocast != PORTC_F32 ? " under autocast " : "",
           ga.autocast != PORTC_F32 ? portc_dtype_name(ga.autocast) : "", r->fused.info.target, r->fused.info.device, iters, r->fused.warmed,
           r->fused.info.timer);
    print_measure(co.eager ? "eager" : "fused", &r->fused);
    if (r->has_eager) {
      print_measure("eager", &r->eager);
      printf("fused is %.2fx faster than eager\n", r->eager.med / r->fused.med);
    }
    if (r->has_rules) {
      print_measure("rules", &r->rules);
      printf("%d kernels from tune tables: %.2fx the speed of the rules alone\n", r->fused.info.tuned_kernels, r->rules.med / r->fused.med);
    }
    printf("memory: intermediates %lld bytes planned (%lld unplanned), inputs and outputs %lld bytes, process peak RSS %ld MiB\n",
           (long long)r->fused.info.arena_bytes, (long long)r->fused.info.intermediate_bytes, (long long)r->fused.info.io_bytes,
           ru.ru_maxrss / 1024);
    if (svg) {
      char path[4096];
      target_file(svg, ".svg", nt > 1 ? r->target : NULL, path, sizeof path);
      if (!write_chart(g, r, path)) {
        fprintf(stderr, "portc bench: cannot write %s\n", path);
        rc = EXIT_FAIL;
      } else {
        printf("chart: %s (peaks measured here: %.1f GB/s, %.1f GFLOP/s", path, r->peak_gbps, r->peak_gflops);
        if (r->peak_half_gflops > 0) printf(", %.1f GFLOP/s in %s matmuls", r->peak_half_gflops, portc_dtype_name(r->half));
        printf(")\n");
      }
    }
    if (tracef) {
      char path[4096];
      target_file(tracef, ".json", nt > 1 ? r->target : NULL, path, sizeof path);
      const measure *fm = &r->fused;
      trace t = {portc_graph_name(g), r->target, fm->info.device, fm->explain, fm->ks, fm->kb, fm->kf, fm->info.kernels};
      if (!trace_write(&t, path)) {
        fprintf(stderr, "portc bench: cannot write %s\n", path);
        rc = EXIT_FAIL;
      } else {
        printf("trace: %s (%d kernels; open it in chrome://tracing or Perfetto)\n", path, fm->info.kernels);
      }
    }
  }
  if (!rc && json) {
    FILE *f = fopen(json, "w");
    if (!f) {
      fprintf(stderr, "portc bench: cannot write %s\n", json);
      rc = EXIT_FAIL;
    } else {
      if (done > 1) fprintf(f, "{\"targets\": [");
      for (int t = 0; t < done; t++) {
        if (t) fprintf(f, ", ");
        json_result(f, g, &ga, &res[t], iters);
      }
      fprintf(f, done > 1 ? "]}\n" : "\n");
      fclose(f);
    }
  }
  if (!rc && csv) {
    FILE *f = fopen(csv, "w");
    if (!f) {
      fprintf(stderr, "portc bench: cannot write %s\n", csv);
      rc = EXIT_FAIL;
    } else {
      fprintf(f, "graph,target,device,series,kernels,median_s,min_s,max_s,spread,gbps,gflops,compile_cold_s,compile_warm_s,tuned_kernels\n");
      for (int t = 0; t < done; t++) {
        csv_measure(f, portc_graph_name(g), ga.co.eager ? "eager" : "fused", &res[t].fused);
        if (res[t].has_eager) csv_measure(f, portc_graph_name(g), "eager", &res[t].eager);
        if (res[t].has_rules) csv_measure(f, portc_graph_name(g), "rules", &res[t].rules);
      }
      fclose(f);
    }
  }
  for (int t = 0; res && t < nt; t++) measure_free(&res[t].fused), measure_free(&res[t].eager), measure_free(&res[t].rules);
  free(res);
  portc_bindings_free(b);
  portc_graph_free(g);
  return rc;
}
