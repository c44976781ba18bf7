/*
 * registry.c: the list of targets. A new target is a new folder and one line here.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target.h"

extern const target cpu_target, vulkan_target, cuda_target, hip_target, hip_on_cuda_target;

static const target *const targets[] = {
    &cpu_target,
    &vulkan_target,
    &cuda_target,
    &hip_target,
    &hip_on_cuda_target,
};

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

bool log_enabled(const char *topic) {
  const char *v = getenv("PORTC_LOG");
  if (!v || !*v) return false;
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
