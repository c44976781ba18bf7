/*
 * prebuilt.h: kernel binaries held in memory, by key, for module files (.portc, driver/artifact.c).
 * A compile that writes a module file records every binary its target loads; a module loaded
 * from a file hands the target those binaries, and the target runs them without building
 * anything, so that a deployment needs no C compiler, shaderc or NVRTC. The key is the kernel's
 * source and what else its target builds it with (macros), not the compiler's identity: the
 * machine that runs the file may have no compiler to name.
 */
#ifndef PORTC_TARGETS_PREBUILT_H
#define PORTC_TARGETS_PREBUILT_H

#include <pthread.h>
#include <stddef.h>

#include "../ir/graph.h"

typedef struct prebuilt_entry {
  char key[33];
  void *data;
  size_t bytes;
} prebuilt_entry;

typedef struct prebuilt {
  pthread_mutex_t lock; /* targets record from their build threads */
  prebuilt_entry *e;
  int n, cap;
} prebuilt;

#define PREBUILT_INIT {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0}
void prebuilt_free(prebuilt *p);
/* the key of a binary: the target's name, the source it builds, and its variant (macros; may be "") */
void prebuilt_key(const char *target, const char *source, const char *variant, char out[33]);
/* the entry for key, or NULL */
const prebuilt_entry *prebuilt_find(const prebuilt *p, const char *key);
/* keeps a copy of the bytes under key (a key already held is kept as it is) */
portc_status prebuilt_add(prebuilt *p, const char *key, const void *data, size_t bytes);
/* the error of a target asked for a kernel that a module file does not hold */
portc_status prebuilt_missing(const char *target, const char *graph, int kernel);

#endif
