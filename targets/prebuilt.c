/*
 * prebuilt.c: the table of kernel binaries a module file carries (prebuilt.h). A module has tens
 * of distinct kernels: a list searched in order is enough.
 */
#include "prebuilt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"

void prebuilt_free(prebuilt *p) {
  for (int i = 0; i < p->n; i++) free(p->e[i].data);
  free(p->e);
  p->e = NULL;
  p->n = p->cap = 0;
}

void prebuilt_key(const char *target, const char *source, const char *variant, char out[33]) {
  const char *parts[] = {"portc prebuilt kernel", target, source, variant ? variant : "", NULL};
  cache_key(parts, out);
}

static const prebuilt_entry *find(const prebuilt *p, const char *key) {
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->e[i].key, key)) return &p->e[i];
  return NULL;
}

const prebuilt_entry *prebuilt_find(const prebuilt *p, const char *key) {
  pthread_mutex_lock((pthread_mutex_t *)&p->lock);
  const prebuilt_entry *e = find(p, key);
  pthread_mutex_unlock((pthread_mutex_t *)&p->lock);
  return e;
}

portc_status prebuilt_add(prebuilt *p, const char *key, const void *data, size_t bytes) {
  portc_status st = PORTC_OK;
  pthread_mutex_lock(&p->lock);
  if (!find(p, key)) {
    if (p->n == p->cap) {
      int cap = p->cap ? 2 * p->cap : 16;
      prebuilt_entry *e = realloc(p->e, sizeof *e * (size_t)cap);
      if (e) p->e = e, p->cap = cap;
    }
    void *copy = malloc(bytes ? bytes : 1);
    if (p->n < p->cap && copy) {
      memcpy(copy, data, bytes);
      prebuilt_entry *e = &p->e[p->n++];
      snprintf(e->key, sizeof e->key, "%s", key);
      e->data = copy, e->bytes = bytes;
    } else {
      free(copy);
      st = err_set(PORTC_ERR_NOMEM, "module file: out of memory for the kernels");
    }
  }
  pthread_mutex_unlock(&p->lock);
  return st;
}

portc_status prebuilt_missing(const char *target, const char *graph, int kernel) {
  return err_set(PORTC_ERR_INVALID,
                 "%s: kernel %d of graph %s is not in the module file: the file was written by a portc that lowers this graph "
                 "differently; compile it again with this one",
                 target, kernel, graph);
}
