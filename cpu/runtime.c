/*
 * runtime.c: the CPU target: find the compiled kernels in the cache or build them, load them,
 * and launch them. OpenMP inside the generated code spreads each kernel over the cores.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../targets/cache.h"
#include "../targets/dl.h"
#include "../codegen/emit.h"
#include "cpu.h"

typedef struct cpu_module {
  void *dl;
  int (*run)(int, void *const *, const int64_t *);
} cpu_module;

static bool available(char *why, size_t len) {
  char cc[256], ver[256];
  if (cpu_compiler(cc, sizeof cc, ver, sizeof ver)) return true;
  snprintf(why, len, "C compiler '%s' not found: install gcc or set PORTC_CC", cc);
  return false;
}

static char device_name[256];

/* once per process: a buffer written while another thread reads it is a race */
static void name_device(void) {
  char model[200] = "unknown CPU";
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "model name", 10) == 0) {
      char *c = strchr(line, ':');
      if (c) snprintf(model, sizeof model, "%s", c + 2);
      model[strcspn(model, "\n")] = 0;
      break;
    }
  if (f) fclose(f);
  snprintf(device_name, sizeof device_name, "%s, %ld threads", model, sysconf(_SC_NPROCESSORS_ONLN));
}

static const char *device(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, name_device);
  return device_name;
}

static portc_status open_module(const char *path, cpu_module *m) {
  char why[512];
  if (!(m->dl = dl_open(path, why, sizeof why))) return err_set(PORTC_ERR_IO, "cpu: cannot load %s: %s", path, why);
  dl_keep_loaded("libgomp.so.1"); /* an application without OpenMP of its own would unload it with m->dl */
  dl_keep_loaded("libomp.so.5");
  if (!(m->run = (int (*)(int, void *const *, const int64_t *))dl_sym(m->dl, "portc_kernel_run", why, sizeof why))) {
    dl_close(m->dl);
    return err_set(PORTC_ERR_IO, "cpu: %s: %s", path, why);
  }
  return PORTC_OK;
}

typedef struct so_build {
  const char *source, *dir;
} so_build;

/* builds the shared object into a file of the cache folder, and takes its bytes */
static portc_status build_so(void *ctx, void **data, size_t *bytes) {
  const so_build *b = ctx;
  char built[4200];
  snprintf(built, sizeof built, "%s/build-%d.so.XXXXXX", b->dir, (int)getpid()); /* unique: builds of one key may race */
  int fd = mkstemp(built);
  if (fd < 0) return err_set(PORTC_ERR_IO, "cpu: cannot create a file in %s", b->dir);
  close(fd);
  portc_status st = cpu_compile(b->source, b->dir, built);
  if (!st) {
    FILE *f = fopen(built, "rb");
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && (*data = malloc((size_t)n))) {
      rewind(f);
      if (fread(*data, 1, (size_t)n, f) == (size_t)n) *bytes = (size_t)n;
      else free(*data), *data = NULL;
    }
    if (f) fclose(f);
    if (!*data) st = err_set(PORTC_ERR_IO, "cpu: cannot read the built %s", built);
  }
  unlink(built);
  return st;
}

static portc_status load(const load_request *r, void **handle, bool *hit) {
  if (r->device > 0) return err_set(PORTC_ERR_INVALID, "cpu: there is one CPU device (cpu or cpu:0), not cpu:%d", r->device);
  char dir[4096], cc[256], ver[256], path[4200];
  portc_status st = cache_dir(dir, sizeof dir);
  if (st) return st;
  if (!cpu_compiler(cc, sizeof cc, ver, sizeof ver))
    return err_set(PORTC_ERR_IO, "cpu: C compiler '%s' not found: install gcc (apt-get install gcc) or set PORTC_CC", cc);
  build_args args = {0};
  cpu_compile_options(&args);
  build_key k = {.target = "cpu", .source = r->source, .args = &args, .compiler = ver, .device = cpu_isa_flags(), .env = cpu_compiler_env};
  so_build b = {r->source, dir};
  cpu_module *m = calloc(1, sizeof *m);
  if (!m) return err_set(PORTC_ERR_NOMEM, "cpu: out of memory");
  for (int attempt = 0; attempt < 2; attempt++) {
    void *data = NULL;
    size_t bytes = 0;
    st = cache_or_build(&k, "so", "\177ELF", 4, r->graph_name, build_so, &b, &data, &bytes, hit, path, sizeof path);
    free(data);
    if (!st && !path[0]) st = err_set(PORTC_ERR_IO, "cpu: cannot store the kernels in the kernel cache %s", dir);
    if (st || (st = open_module(path, m)) == PORTC_OK || !*hit) break;
    cache_drop(path); /* intact on disk but unloadable: build it again */
  }
  if (st) {
    free(m);
    return st;
  }
  *handle = m;
  return PORTC_OK;
}

static portc_status launch(void *handle, int i, void *const *bufs, const int64_t *S) {
  cpu_module *m = handle;
  int rc = m->run(i, bufs, S);
  if (rc == 0) return PORTC_OK;
  if (rc >= 2 && rc <= 4) return err_set(PORTC_ERR_RUNTIME, "%s", status_message((unsigned)(rc - 1)));
  if (rc == 1) return err_set(PORTC_ERR_NOMEM, "out of memory for a kernel's work buffers");
  return err_set(PORTC_ERR_RUNTIME, "kernel %d failed (%d)", i, rc);
}

static void unload(void *handle) {
  cpu_module *m = handle;
  if (!m) return;
  dl_close(m->dl);
  free(m);
}

const target cpu_target = {
    .name = "cpu",
    .summary = "C with OpenMP, built by the system C compiler",
    .dialect = &cpu_dialect,
    .available = available,
    .device = device,
    .schedule = cpu_schedule,
    .device_key = cpu_device_key,
    .schedule_check = cpu_schedule_check,
    .tune_space = cpu_tune_space,
    .load = load,
    .launch = launch,
    .unload = unload,
};
