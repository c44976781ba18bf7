/*
 * runtime.c: the CPU target: find each distinct kernel's shared object in the cache or build it
 * (all of them at once, targets/regional.h), load them, and launch them. OpenMP inside the
 * generated code spreads each kernel over the cores.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../targets/cache.h"
#include "../targets/dl.h"
#include "../targets/regional.h"
#include "../codegen/emit.h"
#include "cpu.h"

/* the most buffers a kernel takes: an op's inputs and the kernel's stores */
enum { CPU_MAX_ARGS = KIR_MAX_IN + KIR_MAX_STORES };

/* one distinct kernel: its shared object, its entry point, and its cache entry while marked as
 * being tried (cache_trial_begin) */
typedef struct cpu_lib {
  void *dl;
  int memfd; /* a module file's kernel: the memory file it was loaded from (else -1) */
  int (*run)(void *const *, const int64_t *);
  char entry[80];
} cpu_lib;

typedef struct cpu_module {
  int nk;
  cpu_lib *lib;   /* per kernel; identical kernels share the first one's (lib[i].dl NULL, uses[i] names it) */
  int *uses;      /* per kernel: which kernel's library it runs */
  int (*bind)[CPU_MAX_ARGS]; /* per kernel: the module's buffers it takes, in kernel_buffers order */
  int *nbind;
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

/* OpenMP's worker threads do not survive fork(): in a child of a process that ran kernels, a
 * kernel's parallel loop would wait for them forever (libgomp). Such a child runs its kernels on
 * the launching thread alone; OpenMP's thread count is a per-thread setting, so each launch sets it. */
static atomic_bool omp_ran, forked_after_omp;

static void child_after_fork(void) {
  if (omp_ran) forked_after_omp = true;
}

static void watch_forks(void) { pthread_atfork(NULL, NULL, child_after_fork); }

static void one_thread_after_fork(void) {
  static const char *const runtimes[] = {"libgomp.so.1", "libomp.so.5"};
  for (int r = 0; r < 2; r++) {
    void (*set)(int) = (void (*)(int))dl_sym_loaded(runtimes[r], "omp_set_num_threads");
    if (set) set(1);
  }
  static atomic_bool told;
  if (!atomic_exchange(&told, true)) log_line("cpu", "cpu: this process was forked after kernels ran: OpenMP's threads are gone, so kernels run on one thread");
}

static portc_status open_lib(const char *path, cpu_lib *l) {
  char why[512];
  if (!(l->dl = dl_open(path, why, sizeof why))) return err_set(PORTC_ERR_IO, "cpu: cannot load %s: %s", path, why);
  dl_keep_loaded("libgomp.so.1"); /* an application without OpenMP of its own would unload it with l->dl */
  dl_keep_loaded("libomp.so.5");
  if (!(l->run = (int (*)(void *const *, const int64_t *))dl_sym(l->dl, "portc_kernel", why, sizeof why))) {
    dl_close(l->dl);
    l->dl = NULL;
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

typedef struct cpu_load {
  cpu_module *m;
  kernel_piece *pc;
  int *distinct;
  bool *hit;
  const char *graph_name, *version;
  const cache_folder *cf;
  const load_request *req;
} cpu_load;

/* distinct kernel i from a module file's binaries: the shared object goes into an anonymous
 * memory file, which the loader opens by its /proc/self/fd path (nothing is written to disk) */
static portc_status open_prebuilt(cpu_load *L, int i) {
  char key[33], path[64];
  prebuilt_key("cpu", L->pc[i].source, "", key);
  const prebuilt_entry *e = prebuilt_find(L->req->from, key);
  if (!e) return prebuilt_missing("cpu", L->graph_name, i);
  int fd = memfd_create("portc-kernel", MFD_CLOEXEC);
  if (fd < 0) return err_set(PORTC_ERR_IO, "cpu: cannot make a memory file for kernel %d: %s", i, strerror(errno));
  size_t done = 0;
  while (done < e->bytes) {
    ssize_t w = write(fd, (const char *)e->data + done, e->bytes - done);
    if (w <= 0) {
      close(fd);
      return err_set(PORTC_ERR_IO, "cpu: cannot write kernel %d to a memory file: %s", i, w < 0 ? strerror(errno) : "short write");
    }
    done += (size_t)w;
  }
  /* the descriptor stays open while the library is loaded: the loader knows a library by the path
   * it was opened by, and a number freed and taken again would name the loaded one */
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  portc_status st = open_lib(path, &L->m->lib[i]);
  if (st) close(fd);
  else L->m->lib[i].memfd = fd;
  L->hit[i] = true;
  return st;
}

/* distinct kernel j: its shared object from the cache or the compiler, loaded through the
 * folder's descriptor (the path cannot be swapped between check and load); an entry intact on
 * disk that does not load is built again */
static portc_status build_one(void *ctx, int j) {
  cpu_load *L = ctx;
  int i = L->distinct[j];
  if (L->req->from) return open_prebuilt(L, i);
  cpu_lib *l = &L->m->lib[i];
  build_args args = {0};
  cpu_compile_options(&args);
  const char *src = L->pc[i].source;
  build_key k = {.target = "cpu", .source = src, .args = &args, .compiler = L->version, .device = cpu_isa_flags(), .env = cpu_compiler_env};
  so_build b = {src, L->cf};
  char name[160], path[4300];
  snprintf(name, sizeof name, "%s.kernel%d", L->graph_name, i);
  portc_status st = PORTC_OK;
  for (int attempt = 0; attempt < 2; attempt++) {
    void *data = NULL;
    size_t bytes = 0;
    st = cache_or_build(&k, "so", "\177ELF", 4, name, build_so, &b, &data, &bytes, &L->hit[i], L->cf, l->entry);
    if (!st && !l->entry[0]) { /* built, but the store failed (a full disk): the library is loaded from the cache */
      char why[1024];
      snprintf(why, sizeof why, "%s", portc_last_error());
      st = err_set(PORTC_ERR_IO, "cpu: the kernels were built but cannot be kept in the kernel cache, where they are loaded from: %s", why);
    }
    if (st) {
      free(data);
      break;
    }
    cache_entry_path(L->cf, l->entry, path, sizeof path);
    cache_trial_begin(L->cf, l->entry);
    if ((st = open_lib(path, l)) == PORTC_OK) {
      if (L->req->record) { /* what loaded is what a module file gets */
        char key[33];
        prebuilt_key("cpu", src, "", key);
        st = prebuilt_add(L->req->record, key, data, bytes);
      }
      free(data);
      break;
    }
    free(data);
    if (!L->hit[i]) break;
    cache_trial_end(l->entry);
    cache_drop(L->cf, l->entry); /* intact on disk but unloadable: build it again */
    l->entry[0] = 0;
  }
  return st;
}

static void unload(void *handle) {
  cpu_module *m = handle;
  if (!m) return;
  for (int i = 0; m->lib && i < m->nk; i++) {
    dl_close(m->lib[i].dl);
    if (m->lib[i].memfd >= 0) close(m->lib[i].memfd);
    if (m->lib[i].entry[0]) cache_trial_end(m->lib[i].entry);
  }
  free(m->lib);
  free(m->uses);
  free(m->bind);
  free(m->nbind);
  free(m);
}

static portc_status load(const load_request *r, void **handle, bool *hit) {
  if (r->device > 0) return err_set(PORTC_ERR_INVALID, "cpu: there is one CPU device (cpu or cpu:0), not cpu:%d", r->device);
  char cc[256], ver[256] = "";
  if (!r->from && !cpu_compiler(cc, sizeof cc, ver, sizeof ver))
    return err_set(PORTC_ERR_IO, "cpu: C compiler '%s' not found: install gcc (apt-get install gcc) or set PORTC_CC", cc);
  int nk = r->km->nk;
  cpu_module *m = calloc(1, sizeof *m);
  cpu_load L = {.m = m, .graph_name = r->graph_name, .version = ver, .req = r};
  if (!m || !(m->lib = calloc((size_t)nk + 1, sizeof *m->lib)) || !(m->uses = calloc((size_t)nk + 1, sizeof *m->uses)) ||
      !(m->bind = calloc((size_t)nk + 1, sizeof *m->bind)) || !(m->nbind = calloc((size_t)nk + 1, sizeof *m->nbind)) ||
      !(L.distinct = calloc((size_t)nk + 1, sizeof *L.distinct)) || !(L.hit = calloc((size_t)nk + 1, sizeof *L.hit))) {
    unload(m);
    free(L.distinct);
    return err_set(PORTC_ERR_NOMEM, "cpu: out of memory");
  }
  m->nk = nk;
  for (int i = 0; i < nk; i++) m->lib[i].memfd = -1;
  portc_status st = PORTC_OK;
  for (int i = 0; i < nk && !st; i++)
    if ((m->nbind[i] = kernel_buffers(r->km, i, m->bind[i], CPU_MAX_ARGS)) > CPU_MAX_ARGS)
      st = err_set(PORTC_ERR_INVALID, "cpu: kernel %d reads or writes more than %d buffers", i, CPU_MAX_ARGS);
  cache_folder cf;
  if (!st) st = kernel_pieces(r->source, nk, "cpu", &L.pc);
  bool opened = false;
  if (!st && (r->from || !(st = cache_open(&cf)))) { /* a module file's kernels need no cache */
    opened = !r->from;
    L.cf = opened ? &cf : NULL;
    int nd = 0;
    for (int i = 0; i < nk; i++) {
      m->uses[i] = L.pc[i].same_as;
      if (L.pc[i].same_as == i) L.distinct[nd++] = i;
    }
    st = run_parallel(nd, build_one, &L);
    *hit = true;
    for (int j = 0; j < nd; j++) *hit = *hit && L.hit[L.distinct[j]];
    if (!st && nd < nk) log_line("cache", "cpu: graph %s: %d kernels, %d distinct: each built once", r->graph_name, nk, nd);
    if (opened) cache_close(&cf);
  }
  kernel_pieces_free(L.pc, nk);
  free(L.distinct);
  free(L.hit);
  if (st) {
    unload(m);
    return st;
  }
  *handle = m;
  return PORTC_OK;
}

/* prebuilt kernels need no compiler: only a loader */
static bool runs_prebuilt(char *why, size_t len) {
  (void)why, (void)len;
  return true;
}

static portc_status launch(void *handle, int i, void *const *bufs, const int64_t *S) {
  cpu_module *m = handle;
  void *B[CPU_MAX_ARGS];
  for (int j = 0; j < m->nbind[i]; j++) B[j] = bufs[m->bind[i][j]];
  cpu_lib *l = &m->lib[m->uses[i]];
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, watch_forks);
  if (forked_after_omp) one_thread_after_fork();
  omp_ran = true;
  int rc = l->run(B, S);
  if (l->entry[0]) { /* it ran once to the end: the code did not crash the process */
    cache_trial_end(l->entry);
    l->entry[0] = 0;
  }
  if (rc == 0) return PORTC_OK;
  if (rc >= 2 && rc <= 4) return err_set(PORTC_ERR_RUNTIME, "%s", status_message((unsigned)(rc - 1)));
  if (rc == 1) return err_set(PORTC_ERR_NOMEM, "out of memory for a kernel's work buffers");
  return err_set(PORTC_ERR_RUNTIME, "kernel %d failed (%d)", i, rc);
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
    .artifacts = true,
    .runs_prebuilt = runs_prebuilt,
    /* no attention kernel: a C version (a query row per thread, since removed) ran the transformer
     * example (B=4, S=256) 2.6x slower than matmul, softmax, matmul on the CPU's blocked matmuls */
};
