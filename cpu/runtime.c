/*
 * runtime.c: the CPU target: find the compiled kernels in the cache or build them, load them,
 * and launch them. OpenMP inside the generated code spreads each kernel over the cores.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../targets/cache.h"
#include "../targets/dl.h"
#include "../codegen/emit.h"
#include "cpu.h"

typedef struct cpu_module {
  void *dl;
  int (*run)(int, void *const *, const int64_t *);
  int kernels;
  char entry[80]; /* its cache entry, while marked as being tried (cache_trial_begin) */
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
  const char *source;
  const cache_folder *cf;
} so_build;

/* the bytes of a built file, read relative to the folder's descriptor */
static void *read_built(int dirfd, const char *name, size_t *bytes) {
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  void *data = NULL;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (data = malloc((size_t)st.st_size))) {
    if (read(fd, data, (size_t)st.st_size) == (ssize_t)st.st_size) *bytes = (size_t)st.st_size;
    else free(data), data = NULL;
  }
  if (fd >= 0) close(fd);
  return data;
}

/* builds the shared object in a folder of its own inside the cache folder (build-PID-N: builds
 * of one key may race, and what a killed build leaves is swept by its PID), takes its bytes and
 * removes the folder; a failed build's folder stays a week as failed-PID-N, for the report */
static portc_status build_so(void *ctx, void **data, size_t *bytes) {
  const so_build *b = ctx;
  static _Atomic unsigned counter;
  char name[64], work[4200], out[4300], built[80];
  snprintf(name, sizeof name, "build-%d-%u", (int)getpid(), counter++);
  if (mkdirat(b->cf->fd, name, 0700) != 0) return err_set(PORTC_ERR_IO, "cpu: cannot make a build folder in %s: %s", b->cf->path, strerror(errno));
  snprintf(work, sizeof work, "%s/%s", b->cf->path, name);
  snprintf(out, sizeof out, "%s/kernels.so", work);
  portc_status st = cpu_compile(b->source, work, out);
  if (!st) {
    snprintf(built, sizeof built, "%s/kernels.so", name);
    if (!(*data = read_built(b->cf->fd, built, bytes))) st = err_set(PORTC_ERR_IO, "cpu: cannot read the built %s", out);
  }
  char log[80];
  snprintf(log, sizeof log, "%s/kernels.log", name);
  if (st == PORTC_OK || faccessat(b->cf->fd, log, F_OK, AT_SYMLINK_NOFOLLOW) != 0) { /* kept only when the compiler ran */
    cache_drop(b->cf, name);
    return st;
  }
  char failed[80], why[3000];
  snprintf(failed, sizeof failed, "failed-%s", name + 6);
  snprintf(why, sizeof why, "%s", portc_last_error());
  if (renameat(b->cf->fd, name, b->cf->fd, failed) != 0) return st;
  return err_set(st, "%s\n(the source and the compiler's log are kept in %s/%s)", why, b->cf->path, failed);
}

static portc_status load(const load_request *r, void **handle, bool *hit) {
  if (r->device > 0) return err_set(PORTC_ERR_INVALID, "cpu: there is one CPU device (cpu or cpu:0), not cpu:%d", r->device);
  char cc[256], ver[256], path[4300];
  if (!cpu_compiler(cc, sizeof cc, ver, sizeof ver))
    return err_set(PORTC_ERR_IO, "cpu: C compiler '%s' not found: install gcc (apt-get install gcc) or set PORTC_CC", cc);
  cache_folder cf;
  portc_status st = cache_open(&cf);
  if (st) return st;
  build_args args = {0};
  cpu_compile_options(&args);
  build_key k = {.target = "cpu", .source = r->source, .args = &args, .compiler = ver, .device = cpu_isa_flags(), .env = cpu_compiler_env};
  so_build b = {r->source, &cf};
  cpu_module *m = calloc(1, sizeof *m);
  if (!m) {
    cache_close(&cf);
    return err_set(PORTC_ERR_NOMEM, "cpu: out of memory");
  }
  m->kernels = r->km ? r->km->nk : 0;
  for (int attempt = 0; attempt < 2; attempt++) {
    void *data = NULL;
    size_t bytes = 0;
    st = cache_or_build(&k, "so", "\177ELF", 4, r->graph_name, build_so, &b, &data, &bytes, hit, &cf, m->entry);
    free(data);
    if (!st && !m->entry[0]) { /* built, but the store failed (a full disk): the library is loaded from the cache */
      char why[1024];
      snprintf(why, sizeof why, "%s", portc_last_error());
      st = err_set(PORTC_ERR_IO, "cpu: the kernels were built but cannot be kept in the kernel cache, where they are loaded from: %s", why);
    }
    if (st) break;
    /* loaded through the folder's descriptor: the path cannot be swapped between check and load */
    cache_entry_path(&cf, m->entry, path, sizeof path);
    cache_trial_begin(&cf, m->entry);
    if ((st = open_module(path, m)) == PORTC_OK || !*hit) break;
    cache_drop(&cf, m->entry); /* intact on disk but unloadable: build it again */
  }
  cache_close(&cf);
  if (st) {
    if (m->entry[0]) cache_trial_end(m->entry);
    free(m);
    return st;
  }
  *handle = m;
  return PORTC_OK;
}

static portc_status launch(void *handle, int i, void *const *bufs, const int64_t *S) {
  cpu_module *m = handle;
  int rc = m->run(i, bufs, S);
  if (m->entry[0] && i == m->kernels - 1) { /* one whole run finished: the code did not crash the process */
    cache_trial_end(m->entry);
    m->entry[0] = 0;
  }
  if (rc == 0) return PORTC_OK;
  if (rc >= 2 && rc <= 4) return err_set(PORTC_ERR_RUNTIME, "%s", status_message((unsigned)(rc - 1)));
  if (rc == 1) return err_set(PORTC_ERR_NOMEM, "out of memory for a kernel's work buffers");
  return err_set(PORTC_ERR_RUNTIME, "kernel %d failed (%d)", i, rc);
}

static void unload(void *handle) {
  cpu_module *m = handle;
  if (!m) return;
  dl_close(m->dl);
  if (m->entry[0]) cache_trial_end(m->entry);
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
