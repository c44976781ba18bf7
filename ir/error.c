/*
 * error.c: the library's one error channel for bad input. Every failing call leaves a message in
 * a thread-local buffer (portc_last_error) and returns a status; nothing here exits or aborts.
 * The growable string buffer used to build longer messages and printed graphs lives here too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

static _Thread_local char last_error[4096];

const char *portc_last_error(void) { return last_error; }

/* PORTC_VERSION_STRING comes from the build (CMakeLists.txt's project version) */
const char *portc_version(void) { return PORTC_VERSION_STRING; }

const char *portc_status_name(portc_status s) {
  static const char *const names[] = {"ok", "invalid argument", "wrong dtype", "wrong shape",
                                      "parse error", "i/o error", "out of memory", "runtime error"};
  return (unsigned)s < sizeof names / sizeof *names ? names[s] : "unknown status";
}

portc_status err_setv(portc_status s, const char *fmt, va_list ap) {
  char tmp[sizeof last_error];
  vsnprintf(tmp, sizeof tmp, fmt, ap); /* fmt may print last_error itself */
  memcpy(last_error, tmp, sizeof tmp);
  return s;
}

portc_status err_set(portc_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  err_setv(s, fmt, ap);
  va_end(ap);
  return s;
}

portc_node err_node(portc_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  err_setv(s, fmt, ap);
  va_end(ap);
  return -(portc_node)s;
}

void sb_vprintf(strbuf *b, const char *fmt, va_list ap) {
  if (b->oom) return;
  va_list ap2;
  va_copy(ap2, ap);
  int need = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (need < 0) return;
  if (b->len + (size_t)need + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + (size_t)need + 1) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->oom = true;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
  vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
  b->len += (size_t)need;
}

void str_cut(char *dst, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(dst, len, fmt, ap);
  va_end(ap);
}

void sb_printf(strbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(b, fmt, ap);
  va_end(ap);
}

char *sb_take(strbuf *b) {
  char *s = b->oom ? NULL : b->s ? b->s : strdup("");
  if (b->oom) free(b->s);
  *b = (strbuf){0};
  return s;
}

portc_node build_ok(build_ctx *c, portc_node n) {
  if (n < 0 && !c->st) {
    c->st = portc_node_status(n);
    snprintf(c->why, sizeof c->why, "%s", portc_last_error());
  }
  return n;
}
