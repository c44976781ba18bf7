/*
 * dl.c: the one file that calls dlopen. Opens and closes take one lock: the dynamic loader
 * serializes them itself, but with a lock ThreadSanitizer cannot see, so threads loading and
 * unloading kernels at once read as a race in the loader's own memory; dlerror's message is
 * per thread but is read under the same lock all the same.
 */
#include "dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void *dl_open(const char *path, char *why, size_t len) {
  pthread_mutex_lock(&lock);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) snprintf(why, len, "%s", dlerror());
  pthread_mutex_unlock(&lock);
  return h;
}

#if defined(__SANITIZE_ADDRESS__)
#define PORTC_DEEPBIND 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PORTC_DEEPBIND 0
#endif
#endif
#ifndef PORTC_DEEPBIND
#define PORTC_DEEPBIND RTLD_DEEPBIND
#endif

void *dl_open_isolated(const char *path, char *why, size_t len) {
  pthread_mutex_lock(&lock);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | PORTC_DEEPBIND);
  if (!h) snprintf(why, len, "%s", dlerror());
  pthread_mutex_unlock(&lock);
  return h;
}

void *dl_sym(void *h, const char *name, char *why, size_t len) {
  void *s = dlsym(h, name);
  if (!s) snprintf(why, len, "symbol %s not found", name);
  return s;
}

void dl_keep_loaded(const char *soname) {
  pthread_mutex_lock(&lock);
  void *h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  if (h) dlclose(h); /* the mapping stays: RTLD_NODELETE */
  pthread_mutex_unlock(&lock);
}

void *dl_sym_loaded(const char *soname, const char *name) {
  pthread_mutex_lock(&lock);
  void *h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD), *f = h ? dlsym(h, name) : NULL;
  if (h) dlclose(h); /* loaded by someone else, it stays so */
  pthread_mutex_unlock(&lock);
  return f;
}

void dl_close(void *h) {
  if (!h) return;
  pthread_mutex_lock(&lock);
  dlclose(h);
  pthread_mutex_unlock(&lock);
}
