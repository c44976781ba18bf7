/*
 * regional.c: one source per kernel, identical kernels found once, distinct ones built on every
 * core (regional.h). Compilers are the cost of a cold compile (gcc, shaderc and the driver's
 * own pipeline compiler take tens to hundreds of milliseconds a kernel), so a model of repeated
 * blocks costs about what one block costs.
 */
#include "regional.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char marker[] = "//@kernel ";

/* the start of the line after p's line (or the string's end) */
static const char *next_line(const char *p) {
  const char *eol = strchr(p, '\n');
  return eol ? eol + 1 : p + strlen(p);
}

portc_status kernel_pieces(const char *src, int nk, const char *target, kernel_piece **out) {
  *out = NULL;
  kernel_piece *p = calloc((size_t)nk + 1, sizeof *p);
  if (!p) return err_set(PORTC_ERR_NOMEM, "%s: out of memory", target);
  if (!strncmp(src, "//@module ", 10)) src = next_line(src); /* names the graph and counts its kernels */
  const char *first = strstr(src, marker);
  size_t prelude = first ? (size_t)(first - src) : strlen(src);
  const char *at = first;
  for (int i = 0; i < nk; i++) {
    if (!at) {
      kernel_pieces_free(p, nk);
      return err_set(PORTC_ERR_INTERNAL, "%s: the module source has no kernel %d", target, i);
    }
    const char *next = strstr(at + 1, marker);
    const char *end = next ? next : at + strlen(at);
    const char *body = next_line(at);
    const char *words = at + sizeof marker - 1;
    words += strspn(words, "0123456789");
    snprintf(p[i].needs, sizeof p[i].needs, "%.*s", (int)(body - words - (body > words && body[-1] == '\n')), words);
    if (strncmp(body, "// ", 3) == 0) body = next_line(body);
    if (body > end) body = end;
    size_t n = (size_t)(end - body);
    if (!(p[i].source = malloc(prelude + n + 1))) {
      kernel_pieces_free(p, nk);
      return err_set(PORTC_ERR_NOMEM, "%s: out of memory", target);
    }
    memcpy(p[i].source, src, prelude);
    memcpy(p[i].source + prelude, body, n);
    p[i].source[prelude + n] = 0;
    p[i].same_as = i;
    for (int j = 0; j < i; j++)
      if (p[j].same_as == j && !strcmp(p[j].needs, p[i].needs) && !strcmp(p[j].source, p[i].source)) {
        p[i].same_as = j;
        break;
      }
    at = next;
  }
  *out = p;
  return PORTC_OK;
}

void kernel_pieces_free(kernel_piece *p, int nk) {
  for (int i = 0; p && i < nk; i++) free(p[i].source);
  free(p);
}

typedef struct pool {
  portc_status (*job)(void *, int);
  void *ctx;
  int n, next;
  pthread_mutex_t lock;
  portc_status *st;
  char (*why)[1024];
} pool;

static void *worker(void *arg) {
  pool *P = arg;
  for (;;) {
    pthread_mutex_lock(&P->lock);
    int i = P->next < P->n ? P->next++ : -1;
    pthread_mutex_unlock(&P->lock);
    if (i < 0) return NULL;
    if ((P->st[i] = P->job(P->ctx, i))) snprintf(P->why[i], sizeof P->why[i], "%s", portc_last_error());
  }
}

static int thread_count(int n) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const char *cap = getenv("PORTC_COMPILE_THREADS");
  if (cap && *cap && atol(cap) > 0 && atol(cap) < cores) cores = atol(cap);
  if (cores < 1) cores = 1;
  if (cores > 64) cores = 64;
  return n < cores ? n : (int)cores;
}

portc_status run_parallel(int n, portc_status (*job)(void *ctx, int i), void *ctx) {
  int threads = thread_count(n);
  if (threads <= 1) {
    for (int i = 0; i < n; i++) {
      portc_status st = job(ctx, i);
      if (st) return st;
    }
    return PORTC_OK;
  }
  pool P = {.job = job, .ctx = ctx, .n = n, .lock = PTHREAD_MUTEX_INITIALIZER};
  P.st = calloc((size_t)n, sizeof *P.st);
  P.why = calloc((size_t)n, sizeof *P.why);
  if (!P.st || !P.why) {
    free(P.st);
    free(P.why);
    return err_set(PORTC_ERR_NOMEM, "compile: out of memory");
  }
  pthread_t th[64];
  int started = 0;
  for (int t = 0; t < threads; t++) started += pthread_create(&th[started], NULL, worker, &P) == 0;
  if (!started) worker(&P); /* no threads to be had: this one does it all */
  for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
  portc_status st = PORTC_OK;
  for (int i = 0; i < n && !st; i++)
    if ((st = P.st[i])) err_set(st, "%s", P.why[i]);
  free(P.st);
  free(P.why);
  return st;
}
