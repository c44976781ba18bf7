/*
 * fault_test.c: fault injection in the spirit of SQLite's. Linked with libportc.a and
 * -Wl,--wrap for the allocation functions and a few I/O calls, so every allocation and every
 * cache write libportc makes itself goes through the wrappers below (the C library's own and the
 * compiled kernels' do not).
 *
 *   fault_test alloc GRAPH.ptg N=8 ...   fails the 1st, 2nd, ... allocation of a load, a reference
 *                                        run, a CPU compile and a CPU run of the graph, one
 *                                        failure per pass, until a pass sees no failure
 *   fault_test io GRAPH.ptg N=8 ...      fails the 1st, 2nd, ... write, rename and folder creation
 *                                        of a cold compile (the kernel cache's stores, the
 *                                        compiler's source)
 *
 * After each failing pass: the call that failed returned an error (or, where portc could do
 * without the memory, the right result), every byte it allocated is freed, nothing half written
 * stays in the cache folder, and the next pass without a failure works and gives the same
 * outputs. With PORTC_FAULT_STRIDE=K only every K-th site is failed (for the biggest graphs);
 * PORTC_FAULT_TRACE=K prints the call stack of site K (build with -rdynamic names, or addr2line).
 */
#include <dirent.h>
#include <errno.h>
#include <execinfo.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "portc/portc.h"

/* ---- the wrappers: count, fail the armed one, and keep the live blocks ---- */

void *__real_malloc(size_t);
void *__real_calloc(size_t, size_t);
void *__real_realloc(void *, size_t);
void __real_free(void *);
char *__real_strdup(const char *);
char *__real_strndup(const char *, size_t);
ssize_t __real_write(int, const void *, size_t);
int __real_renameat(int, const char *, int, const char *);
int __real_mkdirat(int, const char *, mode_t);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool counting;     /* count sites (and fail the armed one) only inside a pass */
static long sites, armed; /* sites seen in this pass; the one to fail (0: none) */
static bool failed;       /* the armed site was reached */

static long trace_site; /* $PORTC_FAULT_TRACE: print where this site is */
static bool io_mode;     /* fail I/O calls, not allocations */

static bool fail_here(void) {
  pthread_mutex_lock(&lock);
  bool f = counting && ++sites == armed;
  if (f) failed = true;
  pthread_mutex_unlock(&lock);
  if (f && armed == trace_site) {
    void *frames[16];
    fprintf(stderr, "site %ld is:\n", armed);
    backtrace_symbols_fd(frames, backtrace(frames, 16), 2);
  }
  return f;
}

/* live blocks: an open-addressing set of pointers (deleted slots marked) */
enum { SLOTS = 1 << 22 };
static void **slot;
static long live;
#define TOMB ((void *)1)

static size_t hash_ptr(const void *p) { return ((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 42; }

static void track(void *p) {
  if (!p) return;
  pthread_mutex_lock(&lock);
  if (!slot) slot = __real_calloc(SLOTS, sizeof *slot);
  size_t i = hash_ptr(p) & (SLOTS - 1);
  while (slot[i] && slot[i] != TOMB) i = (i + 1) & (SLOTS - 1);
  slot[i] = p;
  live++;
  pthread_mutex_unlock(&lock);
}

static void untrack(void *p) {
  if (!p) return;
  pthread_mutex_lock(&lock);
  size_t i = hash_ptr(p) & (SLOTS - 1);
  for (size_t n = 0; slot && slot[i] && n < SLOTS; i = (i + 1) & (SLOTS - 1), n++)
    if (slot[i] == p) {
      slot[i] = TOMB;
      live--;
      break;
    }
  pthread_mutex_unlock(&lock);
}

void *__wrap_malloc(size_t n) {
  if (!io_mode && fail_here()) return NULL;
  void *p = __real_malloc(n);
  track(p);
  return p;
}

void *__wrap_calloc(size_t a, size_t b) {
  if (!io_mode && fail_here()) return NULL;
  void *p = __real_calloc(a, b);
  track(p);
  return p;
}

void *__wrap_realloc(void *old, size_t n) {
  if (!io_mode && fail_here()) return NULL; /* the old block stays, as realloc promises */
  void *p = __real_realloc(old, n);
  if (p || n == 0) untrack(old);
  track(p);
  return p;
}

void __wrap_free(void *p) {
  untrack(p);
  __real_free(p);
}

char *__wrap_strdup(const char *s) {
  if (!io_mode && fail_here()) return NULL;
  char *p = __real_strdup(s);
  track(p);
  return p;
}

char *__wrap_strndup(const char *s, size_t n) {
  if (!io_mode && fail_here()) return NULL;
  char *p = __real_strndup(s, n);
  track(p);
  return p;
}


ssize_t __wrap_write(int fd, const void *p, size_t n) {
  if (io_mode && fd > 2 && fail_here()) {
    errno = ENOSPC;
    return -1;
  }
  return __real_write(fd, p, n);
}

int __wrap_renameat(int a, const char *from, int b, const char *to) {
  if (io_mode && fail_here()) {
    errno = EIO;
    return -1;
  }
  return __real_renameat(a, from, b, to);
}

int __wrap_mkdirat(int fd, const char *path, mode_t mode) {
  if (io_mode && fail_here()) {
    errno = ENOSPC;
    return -1;
  }
  return __real_mkdirat(fd, path, mode);
}

/* ---- one pass: what a user does with a graph ---- */

static const char *graph_path;
static char *sym_name[8];
static int64_t sym_value[8];
static int nsyms;
static bool with_reference = true;

typedef struct outputs {
  int n;
  portc_tensor *t[8];
} outputs;

static void outputs_free(outputs *o) {
  for (int i = 0; i < o->n; i++) portc_tensor_free(o->t[i]);
  o->n = 0;
}

/* load, bind, reference run (alloc mode), compile for the CPU, run; the first error's status */
static portc_status pass(outputs *ref, outputs *cpu) {
  portc_graph *g = NULL;
  portc_bindings *b = NULL;
  portc_module *m = NULL;
  portc_status st = portc_graph_load(graph_path, &g);
  if (!st && !(b = portc_bindings_new(g))) st = PORTC_ERR_NOMEM;
  for (int i = 0; !st && i < nsyms; i++) st = portc_bindings_set_symbol(b, sym_name[i], sym_value[i]);
  if (!st) portc_bindings_set_seed(b, 7);
  int n = g ? portc_graph_output_count(g) : 0;
  if (!st && with_reference && (st = portc_reference_run(g, b, ref->t)) == PORTC_OK) ref->n = n;
  portc_compile_options o = PORTC_COMPILE_OPTIONS_INIT;
  o.target = "cpu";
  if (!st) st = portc_compile(g, &o, b, &m);
  if (!st && (st = portc_module_run(m, b, cpu->t)) == PORTC_OK) cpu->n = n;
  portc_module_free(m);
  portc_bindings_free(b);
  portc_graph_free(g);
  return st;
}

static bool same(const outputs *a, const outputs *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++) {
    int64_t n = portc_tensor_numel(a->t[i]);
    if (n != portc_tensor_numel(b->t[i])) return false;
    for (int64_t k = 0; k < n; k++) {
      double x = portc_tensor_get(a->t[i], k), y = portc_tensor_get(b->t[i], k);
      if (!(x == y || (isnan(x) && isnan(y)))) return false;
    }
  }
  return true;
}

/* files in the cache folder that a finished process must not leave: temporary names and
 * build folders */
static int leftovers(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (strstr(e->d_name, ".tmp-") || strncmp(e->d_name, "build-", 6) == 0) {
      fprintf(stderr, "  left in the cache: %s\n", e->d_name);
      n++;
    }
  if (d) closedir(d);
  return n;
}

static void clear_cache(const char *dir) {
  DIR *d = opendir(dir);
  char path[4200];
  for (struct dirent *e; d && (e = readdir(d));)
    if (e->d_name[0] != '.' && strcmp(e->d_name, "tune.txt") != 0 && strncmp(e->d_name, "failed-", 7) != 0) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
  if (d) closedir(d);
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "alloc") != 0 && strcmp(argv[1], "io") != 0)) {
    fprintf(stderr, "usage: fault_test alloc|io GRAPH.ptg [SYM=VALUE ...]\n");
    return 2;
  }
  io_mode = strcmp(argv[1], "io") == 0;
  graph_path = argv[2];
  for (int i = 3; i < argc && nsyms < 8; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq) return 2;
    *eq = 0;
    sym_name[nsyms] = argv[i];
    sym_value[nsyms++] = atoll(eq + 1);
  }
  const char *dir = getenv("PORTC_CACHE_DIR");
  const char *stride_env = getenv("PORTC_FAULT_STRIDE"), *trace_env = getenv("PORTC_FAULT_TRACE");
  trace_site = trace_env ? atol(trace_env) : 0;
  long stride = stride_env ? atol(stride_env) : 1;
  if (!dir || !*dir || stride < 1) {
    fprintf(stderr, "fault_test: set PORTC_CACHE_DIR to a folder of its own (and PORTC_FAULT_STRIDE >= 1)\n");
    return 2;
  }
  with_reference = !io_mode;

  /* the clean pass: the outputs every later pass must give, the sites it has, and what stays
   * allocated for the process's lifetime (the baseline of the leak check) */
  outputs ref0 = {0}, cpu0 = {0};
  if (pass(&ref0, &cpu0) != PORTC_OK) {
    fprintf(stderr, "fault_test: the clean pass failed: %s\n", portc_last_error());
    return 1;
  }
  if (io_mode) clear_cache(dir);
  long base = live;
  counting = true, sites = 0, armed = 0;
  outputs r = {0}, c = {0};
  portc_status st = pass(&r, &c);
  counting = false;
  long total = sites;
  outputs_free(&r), outputs_free(&c);
  if (st) {
    fprintf(stderr, "fault_test: the counting pass failed: %s\n", portc_last_error());
    return 1;
  }
  printf("%s: %ld %s sites in one pass%s\n", graph_path, total, io_mode ? "I/O" : "allocation", io_mode ? " (cold cache)" : "");

  int bad = 0, errors = 0, recovered = 0;
  for (long k = 1; k <= total + 1; k += stride) {
    if (io_mode) clear_cache(dir);
    long before = live;
    counting = true, sites = 0, armed = k, failed = false;
    st = pass(&r, &c);
    counting = false;
    char err[512];
    snprintf(err, sizeof err, "%s", portc_last_error());
    bool right = st == PORTC_OK && same(&r, &ref0) && same(&c, &cpu0);
    outputs_free(&r), outputs_free(&c);
    if (!failed) break; /* past the last site */
    if (st) errors++;
    else if (right) recovered++;
    else {
      fprintf(stderr, "site %ld: the pass succeeded with wrong outputs\n", k);
      bad++;
    }
    if (st && !err[0]) {
      fprintf(stderr, "site %ld: status %d without a message\n", k, (int)st);
      bad++;
    }
    if (!io_mode && live != before) {
      fprintf(stderr, "site %ld: %ld blocks leaked (error: %s)\n", k, live - before, err);
      bad++;
    }
    if (leftovers(dir)) {
      fprintf(stderr, "site %ld: leftovers in the cache folder (error: %s)\n", k, err);
      bad++;
    }
    /* the next call works */
    st = pass(&r, &c);
    if (st || !same(&r, &ref0) || !same(&c, &cpu0)) {
      fprintf(stderr, "site %ld: the pass after the failure %s: %s\n", k, st ? "failed" : "gave other outputs", portc_last_error());
      bad++;
    }
    outputs_free(&r), outputs_free(&c);
    if (bad > 20) break;
  }
  outputs_free(&ref0), outputs_free(&cpu0);
  if (!io_mode && live != base) fprintf(stderr, "note: %ld blocks more than after the clean pass\n", live - base);
  printf("%s: %d failed passes returned an error, %d did without the failed %s, %d problems\n", graph_path, errors, recovered,
         io_mode ? "call" : "allocation", bad);
  return bad ? 1 : 0;
}
