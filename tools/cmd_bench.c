/*
 * cmd_bench.c: `portc bench G.ptg -t cpu` measures a compiled graph: compile time cold (an
 * empty kernel cache) and warm (a cache hit); then, after warm-up, the median, min and max of
 * back-to-back runs, fused and eager on the same device, with bytes and FLOPs from the kernel
 * IR turned into GB/s and GFLOP/s, and peak memory.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"

static const char *const help =
    "usage: portc bench G.ptg [-t TARGET] [--set SYM=N]... [--input NAME=FILE.npy]... [--seed S]\n"
    "                   [--iters N] [--warmup N] [--json FILE] [--no-eager] [COMPILE OPTIONS]\n"
    "\n"
    "Compiles G.ptg twice (cold: an empty kernel cache; warm: a cache hit), runs --warmup runs, then\n"
    "times --iters runs (default 20) and prints median, min and max, bytes moved and FLOPs from the\n"
    "kernel IR as GB/s and GFLOP/s, peak memory, and the same for eager mode with the fused/eager\n"
    "ratio. Inputs without --input come from the seed (default 1).\n"
    "%s";

typedef struct measure {
  double cold, warm, med, min, max;
  portc_module_info info;
} measure;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* compile cold and warm, then time; fills m */
static int measure_one(const portc_graph *g, portc_bindings *b, portc_compile_options co, int warmup, int iters, measure *m) {
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
    fprintf(stderr, "portc bench: %s\n", portc_last_error());
    return EXIT_FAIL;
  }
  double *t = malloc(sizeof *t * (size_t)(warmup + iters));
  if (!t || portc_module_time(mod, b, warmup + iters, t) != PORTC_OK || portc_module_info_get(mod, b, &m->info) != PORTC_OK) {
    fprintf(stderr, "portc bench: %s\n", portc_last_error());
    free(t);
    portc_module_free(mod);
    return EXIT_FAIL;
  }
  m->warm = m->info.compile_seconds;
  if (!m->info.cache_hit) fprintf(stderr, "portc bench: warning: the second compile missed the kernel cache\n");
  qsort(t + warmup, (size_t)iters, sizeof *t, cmp_double);
  m->min = t[warmup], m->max = t[warmup + iters - 1], m->med = t[warmup + iters / 2];
  free(t);
  portc_module_free(mod);
  return EXIT_OK;
}

static void print_measure(const char *what, const measure *m) {
  printf("%-6s %3d kernels  median %9.3f ms  (min %.3f, max %.3f)  %7.2f GB/s  %8.2f GFLOP/s  compile cold %.3f s, warm %.4f s\n", what,
         m->info.kernels, m->med * 1e3, m->min * 1e3, m->max * 1e3, (double)m->info.bytes / m->med / 1e9,
         (double)m->info.flops / m->med / 1e9, m->cold, m->warm);
}

static void json_measure(FILE *f, const char *what, const measure *m) {
  fprintf(f,
          "\"%s\": {\"kernels\": %d, \"median_s\": %.9g, \"min_s\": %.9g, \"max_s\": %.9g, \"bytes\": %lld, \"flops\": %lld, "
          "\"gbps\": %.6g, \"gflops\": %.6g, \"compile_cold_s\": %.6g, \"compile_warm_s\": %.6g, \"arena_bytes\": %lld, "
          "\"intermediate_bytes\": %lld, \"io_bytes\": %lld}",
          what, m->info.kernels, m->med, m->min, m->max, (long long)m->info.bytes, (long long)m->info.flops,
          (double)m->info.bytes / m->med / 1e9, (double)m->info.flops / m->med / 1e9, m->cold, m->warm,
          (long long)m->info.arena_bytes, (long long)m->info.intermediate_bytes, (long long)m->info.io_bytes);
}

int cmd_bench(int argc, char **argv) {
  graph_args ga = {.seed = 1, .seeded = true};
  const char *json = NULL;
  int iters = 20, warmup = 3;
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
    bool takes = !strcmp(a, "--iters") || !strcmp(a, "--warmup") || !strcmp(a, "--json");
    if (takes && i + 1 >= argc) return usage_error("bench", "%s needs a value", a);
    if (!strcmp(a, "--iters") || !strcmp(a, "--warmup")) {
      if (!parse_u64(argv[++i], &v) || v > 100000 || (!strcmp(a, "--iters") && v == 0)) return usage_error("bench", "%s wants a count", a);
      if (!strcmp(a, "--iters")) iters = (int)v;
      else warmup = (int)v;
    } else if (!strcmp(a, "--json")) {
      json = argv[++i];
    } else if (!strcmp(a, "--no-eager")) {
      eager = false;
    } else {
      return usage_error("bench", "unknown option '%s'", a);
    }
  }
  if (!ga.path) return usage_error("bench", "no graph file given");
  portc_compile_options co = ga.co;
  co.target = ga.target ? ga.target : "cpu";
  portc_graph *g;
  portc_bindings *b;
  int rc = open_graph("bench", &ga, true, &g, &b);
  if (rc) return rc;
  measure fused = {0}, eag = {0};
  if (!rc) rc = measure_one(g, b, co, warmup, iters, &fused);
  portc_compile_options ce = co;
  ce.eager = true;
  if (!rc && eager && !co.eager) rc = measure_one(g, b, ce, warmup, iters, &eag);
  if (!rc) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%s on %s (%s), %d runs after %d warm-up, timed with %s\n", portc_graph_name(g), fused.info.target, fused.info.device, iters,
           warmup, fused.info.timer);
    print_measure(co.eager ? "eager" : "fused", &fused);
    if (eager && !co.eager) {
      print_measure("eager", &eag);
      printf("fused is %.2fx faster than eager\n", eag.med / fused.med);
    }
    printf("memory: intermediates %lld bytes planned (%lld unplanned), inputs and outputs %lld bytes, process peak RSS %ld MiB\n",
           (long long)fused.info.arena_bytes, (long long)fused.info.intermediate_bytes, (long long)fused.info.io_bytes, ru.ru_maxrss / 1024);
    if (json) {
      FILE *f = fopen(json, "w");
      if (!f) {
        fprintf(stderr, "portc bench: cannot write %s\n", json);
        rc = EXIT_FAIL;
      } else {
        fprintf(f, "{\"graph\": \"%s\", \"target\": \"%s\", \"device\": \"%s\", \"timer\": \"%s\", \"iters\": %d, \"warmup\": %d, ", portc_graph_name(g),
                fused.info.target, fused.info.device, fused.info.timer, iters, warmup);
        json_measure(f, co.eager ? "eager" : "fused", &fused);
        if (eager && !co.eager) {
          fprintf(f, ", ");
          json_measure(f, "eager", &eag);
          fprintf(f, ", \"speedup\": %.6g", eag.med / fused.med);
        }
        fprintf(f, ", \"peak_rss_bytes\": %ld}\n", ru.ru_maxrss * 1024L);
        fclose(f);
      }
    }
  }
  portc_bindings_free(b);
  portc_graph_free(g);
  return rc;
}
