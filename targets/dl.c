/*
 * dl.c: the one file that calls dlopen.
 */
#include "dl.h"

#include <dlfcn.h>
#include <stdio.h>

void *dl_open(const char *path, char *why, size_t len) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) snprintf(why, len, "%s", dlerror());
  return h;
}

void *dl_sym(void *h, const char *name, char *why, size_t len) {
  void *s = dlsym(h, name);
  if (!s) snprintf(why, len, "symbol %s not found", name);
  return s;
}

void dl_keep_loaded(const char *soname) {
  void *h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  if (h) dlclose(h); /* the mapping stays: RTLD_NODELETE */
}

void dl_close(void *h) {
  if (h) dlclose(h);
}
