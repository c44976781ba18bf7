/*
 * cache.c: the kernel cache on disk. Each entry KEY.EXT has a sidecar KEY.EXT.sum holding its
 * size and a 64-bit checksum; both are written to temporary names and renamed into place, so a
 * reader sees a whole entry or none. An entry whose sidecar is missing or does not match is
 * deleted and rebuilt.
 */
#include "cache.h"
#include "target.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static portc_status make_private_dir(const char *path) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) { /* parents as needed */
    if (*p != '/') continue;
    *p = 0;
    mkdir(tmp, 0700);
    *p = '/';
  }
  if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return err_set(PORTC_ERR_IO, "kernel cache %s: cannot create: %s", path, strerror(errno));
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return err_set(PORTC_ERR_IO, "kernel cache %s: not a folder", path);
  if (st.st_uid != geteuid())
    return err_set(PORTC_ERR_IO, "kernel cache %s: owned by another user; refusing to load code from it", path);
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return err_set(PORTC_ERR_IO, "kernel cache %s: others can write to it (mode %03o); refusing to load code from it (chmod 700 it)",
                   path, (unsigned)(st.st_mode & 0777));
  return PORTC_OK;
}

portc_status cache_dir(char *out, size_t len) {
  const char *env = getenv("PORTC_CACHE_DIR"), *home = getenv("HOME");
  if (env && *env) snprintf(out, len, "%s", env);
  else if (home && *home) snprintf(out, len, "%s/.cache/portc", home);
  else snprintf(out, len, "/tmp/portc-cache-%d", (int)geteuid());
  return make_private_dir(out);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

void cache_key(const char *const *parts, char out[33]) {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  for (int i = 0; parts[i]; i++) {
    size_t n = strlen(parts[i]) + 1;
    a = fnv(a, parts[i], n);
    b = fnv(b ^ (uint64_t)i, parts[i], n);
  }
  snprintf(out, 33, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

/* size and checksum of a file; false when it cannot be read */
static bool file_sum(const char *path, long long *size, unsigned long long *sum) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  uint64_t h = 0xcbf29ce484222325ull;
  long long n = 0;
  char buf[65536];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
    h = fnv(h, buf, got);
    n += (long long)got;
  }
  bool ok = !ferror(f);
  fclose(f);
  *size = n;
  *sum = h;
  return ok;
}

bool cache_lookup(const char *dir, const char *key, const char *ext, char *path, size_t len) {
  char sumpath[4200];
  snprintf(path, len, "%s/%s.%s", dir, key, ext);
  snprintf(sumpath, sizeof sumpath, "%s.sum", path);
  if (access(path, R_OK) != 0) return false;
  long long want_size = -1, size;
  unsigned long long want_sum = 0, sum;
  FILE *f = fopen(sumpath, "r");
  bool ok = f && fscanf(f, "%lld %llx", &want_size, &want_sum) == 2;
  if (f) fclose(f);
  ok = ok && file_sum(path, &size, &sum) && size == want_size && sum == want_sum;
  if (!ok) {
    log_line("cache", "entry %s is corrupt or truncated: removed, rebuilding", path);
    unlink(path);
    unlink(sumpath);
  }
  return ok;
}

void *cache_read(const char *dir, const char *key, const char *ext, size_t *bytes) {
  char path[4200];
  *bytes = 0;
  if (!cache_lookup(dir, key, ext, path, sizeof path)) return NULL;
  FILE *f = fopen(path, "rb");
  long sz = -1;
  void *data = NULL;
  if (f && fseek(f, 0, SEEK_END) == 0 && (sz = ftell(f)) > 0 && (data = malloc((size_t)sz))) {
    rewind(f);
    if (fread(data, 1, (size_t)sz, f) == (size_t)sz) *bytes = (size_t)sz;
    else free(data), data = NULL;
  }
  if (f) fclose(f);
  return data;
}

portc_status cache_write(const char *dir, const char *key, const char *ext, const void *data, size_t bytes) {
  char tmp[4200], path[4200];
  snprintf(tmp, sizeof tmp, "%s/%s.%s.XXXXXX", dir, key, ext);
  int fd = mkstemp(tmp);
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
  bool ok = f && fwrite(data, 1, bytes, f) == bytes;
  if (f && fclose(f) != 0) ok = false;
  portc_status st = ok ? cache_store(dir, key, ext, tmp, path, sizeof path) : err_set(PORTC_ERR_IO, "kernel cache: cannot write in %s", dir);
  if (st && fd >= 0) unlink(tmp);
  return st;
}

portc_status cache_store(const char *dir, const char *key, const char *ext, const char *built, char *path, size_t len) {
  long long size;
  unsigned long long sum;
  if (!file_sum(built, &size, &sum)) return err_set(PORTC_ERR_IO, "kernel cache: cannot read %s", built);
  char sumpath[4200], tmpsum[4300];
  snprintf(path, len, "%s/%s.%s", dir, key, ext);
  snprintf(sumpath, sizeof sumpath, "%s.sum", path);
  snprintf(tmpsum, sizeof tmpsum, "%s.XXXXXX", sumpath);
  int fd = mkstemp(tmpsum);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) return err_set(PORTC_ERR_IO, "kernel cache: cannot write in %s: %s", dir, strerror(errno));
  fprintf(f, "%lld %llx\n", size, sum);
  if (fclose(f) != 0 || rename(built, path) != 0 || rename(tmpsum, sumpath) != 0) {
    unlink(tmpsum);
    return err_set(PORTC_ERR_IO, "kernel cache: cannot store %s: %s", path, strerror(errno));
  }
  return PORTC_OK;
}

portc_status cache_fetch(const char *const *parts, const char *ext, const void *magic, size_t magic_len, const char *name, char key[33],
                         void **data, size_t *bytes) {
  char dir[4096];
  portc_status st = cache_dir(dir, sizeof dir);
  if (st) return st;
  cache_key(parts, key);
  *data = cache_read(dir, key, ext, bytes);
  if (*data && (*bytes <= magic_len || memcmp(*data, magic, magic_len) != 0)) free(*data), *data = NULL; /* not this kind: build it again */
  if (!*data) log_line("cache", "miss %s/%s.%s (%s)", dir, key, ext, name);
  return PORTC_OK;
}

void cache_keep(const char *key, const char *ext, const void *data, size_t bytes) {
  char dir[4096];
  if (cache_dir(dir, sizeof dir) != PORTC_OK || cache_write(dir, key, ext, data, bytes) != PORTC_OK)
    log_line("cache", "could not store %s.%s: %s", key, ext, portc_last_error());
}
