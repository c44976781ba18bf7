/*
 * ptr_set.h: a few pointers, each kept once, in a growable array: the bindings a module holds
 * values for (driver/resident.c), the modules that hold values of a bindings object
 * (ir/bindings.c). Callers lock around it as they need.
 */
#ifndef PORTC_IR_PTR_SET_H
#define PORTC_IR_PTR_SET_H

#include <stdbool.h>
#include <stdlib.h>

typedef struct ptr_set {
  void **p;
  int n;
} ptr_set;

/* x added unless it is there already; false when out of memory (the set as it was) */
static inline bool ptr_set_add(ptr_set *s, void *x) {
  for (int i = 0; i < s->n; i++)
    if (s->p[i] == x) return true;
  void **p = (void **)realloc(s->p, sizeof *p * (size_t)(s->n + 1)); /* the cast: C++ tests include it */
  if (!p) return false;
  (s->p = p)[s->n++] = x;
  return true;
}

static inline void ptr_set_remove(ptr_set *s, const void *x) {
  int k = 0;
  for (int i = 0; i < s->n; i++)
    if (s->p[i] != x) s->p[k++] = s->p[i];
  s->n = k;
}

static inline void ptr_set_free(ptr_set *s) {
  free(s->p);
  s->p = NULL;
  s->n = 0;
}

#endif
