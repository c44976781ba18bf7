/*
 * registry.c: the list of targets. A new target is a new folder and one line here.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "target.h"

extern const target cpu_target, vulkan_target, cuda_target, hip_target, hip_on_cuda_target, webgpu_target, cpu_partial_target;

static const target *const targets[] = {
    &cpu_target,
    &vulkan_target,
    &cuda_target,
    &hip_target,
    &hip_on_cuda_target,
    &webgpu_target,
    &cpu_partial_target, /* a test target: with PORTC_TEST_TARGETS=1 only */
};

static _Atomic int driver_pid; /* the process that started a GPU driver; 0 none */

void target_driver_started(void) {
  int none = 0;
  atomic_compare_exchange_strong(&driver_pid, &none, (int)getpid()); /* a child keeps its parent's: it may not start its own */
}

bool target_fork_check(const char *target, char *why, size_t len) {
  int p = atomic_load(&driver_pid);
  if (!p || p == (int)getpid()) return true;
  snprintf(why, len,
           "%s: this process was forked from process %d after that one started the GPU drivers, which do not survive fork(): "
           "use the GPU from a process that starts them itself (Python's multiprocessing: the 'spawn' or 'forkserver' start method)",
           target, p);
  return false;
}

int target_count(void) { return (int)(sizeof targets / sizeof *targets); }
const target *target_at(int i) { return i >= 0 && i < target_count() ? targets[i] : NULL; }

const target *target_find(const char *name, int *device) {
  size_t n = strcspn(name, ":");
  *device = -1;
  if (name[n]) {
    char *end;
    long d = strtol(name + n + 1, &end, 10);
    if (end == name + n + 1 || *end || d < 0 || d > 255) return NULL;
    *device = (int)d;
  }
  for (int i = 0; i < target_count(); i++)
    if (strlen(targets[i]->name) == n && strncmp(targets[i]->name, name, n) == 0) return targets[i];
  return NULL;
}

int device_pick(const char *target, int index, const char *env, int fallback, int n, char *why, size_t len) {
  if (index < 0) {
    const char *v = getenv(env);
    index = v && *v ? atoi(v) : fallback;
  }
  if (index >= 0 && index < n && index < 16) return index;
  if (n > 0) snprintf(why, len, "no device %s:%d (%d found: %s:0 to %s:%d)", target, index, n, target, target, n - 1);
  else snprintf(why, len, "no device %s:%d (none found)", target, index);
  return -1;
}

void *device_table_get(device_table *t, const char *target, int index, const char *env, int (*start)(char *why, size_t len),
                       void *(*make)(int index, char *why, size_t len), char *why, size_t len) {
  pthread_mutex_lock(&t->lock);
  void *c = NULL;
  int n = start(why, len);
  if (n >= 0 && (index = device_pick(target, index, env, 0, n, why, len)) >= 0) {
    if (!t->made[index]) t->made[index] = make(index, why, len);
    c = t->made[index];
  }
  pthread_mutex_unlock(&t->lock);
  return c;
}

/* the topics that log_line is called with; "all" turns each on */
static const char *const log_topics[] = {"cache", "fusion", "graph_breaks", "kernels", "memory", "recompiles", "shader_stats", "tune", NULL};

/* the first word of PORTC_LOG that is not a topic, into why; false when there is none */
static bool log_unknown(const char *v, char *why, size_t len) {
  for (const char *p = v; p && *p;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    bool known = n == 0 || (n == 3 && strncmp(p, "all", 3) == 0);
    for (int i = 0; log_topics[i] && !known; i++) known = strlen(log_topics[i]) == n && strncmp(p, log_topics[i], n) == 0;
    if (!known) {
      char list[128] = "all";
      for (int i = 0; log_topics[i]; i++) str_cut(list + strlen(list), sizeof list - strlen(list), ", %s", log_topics[i]);
      str_cut(why, len, "PORTC_LOG: unknown topic '%.*s' (known: %s)", (int)n, p, list);
      return true;
    }
    p += n + (end != NULL);
  }
  return false;
}

portc_status portc_log_check(void) {
  char why[256];
  return log_unknown(getenv("PORTC_LOG"), why, sizeof why) ? err_set(PORTC_ERR_INVALID, "%s", why) : PORTC_OK;
}

static void log_warn_once(void) {
  char why[256];
  if (log_unknown(getenv("PORTC_LOG"), why, sizeof why)) fprintf(stderr, "[portc log] %s\n", why);
}

bool log_enabled(const char *topic) {
  static pthread_once_t warned = PTHREAD_ONCE_INIT;
  const char *v = getenv("PORTC_LOG");
  if (!v || !*v) return false;
  pthread_once(&warned, log_warn_once);
  size_t n = strlen(topic);
  for (const char *p = v; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if ((len == n && strncmp(p, topic, n) == 0) || (len == 3 && strncmp(p, "all", 3) == 0)) return true;
    p += len + (end != NULL);
  }
  return false;
}

void log_line(const char *topic, const char *fmt, ...) {
  if (!log_enabled(topic)) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[portc %s] ", topic);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}
