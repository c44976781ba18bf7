/*
 * cache.c: the kernel cache on disk. Keys are XXH3-128 (Debian's libxxhash, header-only) over
 * length-prefixed parts, so no two part lists collide by concatenation. Each entry KEY.EXT has a
 * sidecar KEY.EXT.sum holding its size and a 64-bit XXH3 checksum; both are written to temporary
 * names and renamed into place, so a reader sees a whole entry or none. An entry whose sidecar
 * is missing or does not match is deleted and rebuilt. A hit marks the entry used (its mtime);
 * with $PORTC_CACHE_MAX the least recently used entries are evicted as new ones are stored.
 */
#include "cache.h"
#include "target.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL /* the header alone: nothing to link, no symbol to export */
#include <xxhash.h>

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

/* without $HOME, when /tmp/portc-cache-UID is not ours (another user made it first): a fresh
 * private folder for this process, made once */
static portc_status fallback_dir(char *out, size_t len, const char *why) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static char made[64];
  pthread_mutex_lock(&lock);
  if (!made[0]) {
    snprintf(made, sizeof made, "/tmp/portc-cache-%d-XXXXXX", (int)geteuid());
    if (!mkdtemp(made)) made[0] = 0;
    else log_line("cache", "%s; this process caches in %s instead", why, made);
  }
  snprintf(out, len, "%s", made);
  pthread_mutex_unlock(&lock);
  return made[0] ? PORTC_OK : err_set(PORTC_ERR_IO, "%s, and no private folder could be made in /tmp", why);
}

portc_status cache_dir(char *out, size_t len) {
  const char *env = getenv("PORTC_CACHE_DIR"), *home = getenv("HOME");
  char cwd[2048];
  if (env && *env && env[0] != '/' && getcwd(cwd, sizeof cwd)) snprintf(out, len, "%s/%s", cwd, env); /* absolute: never read as an option */
  else if (env && *env) snprintf(out, len, "%s", env);
  else if (home && *home) snprintf(out, len, "%s/.cache/portc", home);
  else snprintf(out, len, "/tmp/portc-cache-%d", (int)geteuid());
  portc_status st = make_private_dir(out);
  if (st && !(env && *env) && !(home && *home)) {
    char why[512];
    snprintf(why, sizeof why, "%s", portc_last_error());
    return fallback_dir(out, len, why);
  }
  return st;
}

static portc_status cache_store(const char *dir, const char *key, const char *ext, const char *built, char *path, size_t len);
static void cache_evict(const char *dir, const char *keep);

/* one part: its length, then its bytes (NULL is length -1) */
static void hash_part(XXH3_state_t *h, const char *part) {
  int64_t n = part ? (int64_t)strlen(part) : -1;
  XXH3_128bits_update(h, &n, sizeof n);
  if (part) XXH3_128bits_update(h, part, (size_t)n);
}

static void hash_hex(XXH3_state_t *h, char out[33]) {
  XXH128_hash_t d = XXH3_128bits_digest(h);
  snprintf(out, 33, "%016llx%016llx", (unsigned long long)d.high64, (unsigned long long)d.low64);
}

void cache_key(const char *const *parts, char out[33]) {
  XXH3_state_t h;
  XXH3_128bits_reset(&h);
  hash_part(&h, "portc cache 2");
  for (int i = 0; parts[i]; i++) hash_part(&h, parts[i]);
  hash_hex(&h, out);
}

void build_args_add(build_args *a, const char *fmt, ...) {
  if (a->n >= BUILD_MAX_ARGS) {
    a->v[BUILD_MAX_ARGS - 1] = "(options cut short)";
    return;
  }
  char *at = a->text + a->used;
  size_t room = sizeof a->text - a->used;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(at, room, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= room) {
    a->v[a->n++] = "(options cut short)";
    a->v[a->n] = NULL;
    return;
  }
  a->used += (size_t)n + 1;
  a->v[a->n++] = at;
  a->v[a->n] = NULL;
}

void build_key_hash(const build_key *k, char out[33]) {
  XXH3_state_t h;
  XXH3_128bits_reset(&h);
  hash_part(&h, "portc build 2");
  hash_part(&h, k->target);
  hash_part(&h, k->source);
  hash_part(&h, k->compiler);
  hash_part(&h, k->device);
  int64_t n = k->args ? k->args->n : 0;
  XXH3_128bits_update(&h, &n, sizeof n);
  for (int i = 0; i < n; i++) hash_part(&h, k->args->v[i]);
  for (int i = 0; k->env && k->env[i]; i++) {
    hash_part(&h, k->env[i]);
    hash_part(&h, getenv(k->env[i])); /* unset and empty differ */
  }
  hash_hex(&h, out);
}

/* size and checksum of a file; false when it cannot be read */
static bool file_sum(const char *path, long long *size, unsigned long long *sum) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  XXH3_state_t h;
  XXH3_64bits_reset(&h);
  long long n = 0;
  char buf[65536];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
    XXH3_64bits_update(&h, buf, got);
    n += (long long)got;
  }
  bool ok = !ferror(f);
  fclose(f);
  *size = n;
  *sum = XXH3_64bits_digest(&h);
  return ok;
}

static bool cache_lookup(const char *dir, const char *key, const char *ext, char *path, size_t len) {
  char sumpath[4400];
  snprintf(path, len, "%s/%s.%s", dir, key, ext);
  snprintf(sumpath, sizeof sumpath, "%s.sum", path);
  if (access(path, R_OK) != 0) return false;
  long long want_size = -1, size;
  unsigned long long want_sum = 0, sum;
  FILE *f = fopen(sumpath, "r");
  bool ok = f && fscanf(f, "%lld %llx", &want_size, &want_sum) == 2;
  if (f) fclose(f);
  ok = ok && file_sum(path, &size, &sum) && size == want_size && sum == want_sum;
  if (ok) utimensat(AT_FDCWD, path, NULL, 0); /* its last use, for the size limit's eviction */
  if (!ok) {
    log_line("cache", "entry %s is corrupt or truncated: removed, rebuilding", path);
    unlink(path);
    unlink(sumpath);
  }
  return ok;
}

void cache_drop(const char *path) {
  char sumpath[4400];
  snprintf(sumpath, sizeof sumpath, "%s.sum", path);
  unlink(path);
  unlink(sumpath);
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

static portc_status cache_store(const char *dir, const char *key, const char *ext, const char *built, char *path, size_t len) {
  long long size;
  unsigned long long sum;
  if (!file_sum(built, &size, &sum)) return err_set(PORTC_ERR_IO, "kernel cache: cannot read %s", built);
  char sumpath[4400], tmpsum[4500];
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
  char kept[80];
  snprintf(kept, sizeof kept, "%s.%s", key, ext);
  cache_evict(dir, kept);
  return PORTC_OK;
}

/* ---- the folder as a whole: what `portc cache` shows and clears, and the size limit ---- */

typedef struct cache_entry {
  char name[80]; /* KEY.EXT */
  int64_t bytes; /* with its sidecar */
  struct timespec used;
} cache_entry;

/* KEY.EXT: 32 hex digits, a dot, an extension of letters and digits (not .sum) */
static bool entry_name(const char *n) {
  size_t h = strspn(n, "0123456789abcdef");
  if (h != 32 || n[32] != '.' || !n[33]) return false;
  const char *ext = n + 33;
  return strspn(ext, "abcdefghijklmnopqrstuvwxyz0123456789") == strlen(ext) && strcmp(ext, "sum") != 0;
}

static int64_t file_bytes(const char *dir, const char *name, struct timespec *mtime) {
  char path[4400];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
  if (mtime) *mtime = st.st_mtim;
  return (int64_t)st.st_size;
}

/* the folder's entries (malloc'd), oldest use first */
static int by_use(const void *a, const void *b) {
  const struct timespec *x = &((const cache_entry *)a)->used, *y = &((const cache_entry *)b)->used;
  return x->tv_sec != y->tv_sec ? (x->tv_sec < y->tv_sec ? -1 : 1) : (x->tv_nsec > y->tv_nsec) - (x->tv_nsec < y->tv_nsec);
}

static int list_entries(const char *dir, cache_entry **out) {
  *out = NULL;
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (!entry_name(e->d_name) || strlen(e->d_name) >= sizeof(*out)->name) continue;
    cache_entry ce = {0};
    snprintf(ce.name, sizeof ce.name, "%s", e->d_name);
    char sum[96];
    snprintf(sum, sizeof sum, "%s.sum", e->d_name);
    if ((ce.bytes = file_bytes(dir, e->d_name, &ce.used)) < 0) continue;
    int64_t sb = file_bytes(dir, sum, NULL);
    ce.bytes += sb > 0 ? sb : 0;
    if (n == cap) {
      cache_entry *m = realloc(*out, sizeof *m * (size_t)(cap = cap ? 2 * cap : 64));
      if (!m) break;
      *out = m;
    }
    (*out)[n++] = ce;
  }
  closedir(d);
  if (n) qsort(*out, (size_t)n, sizeof **out, by_use);
  return n;
}

portc_status cache_stats(char *dir, size_t len, int64_t *entries, int64_t *bytes) {
  portc_status st = cache_dir(dir, len);
  if (st) return st;
  cache_entry *e;
  int n = list_entries(dir, &e);
  *entries = n, *bytes = 0;
  for (int i = 0; i < n; i++) *bytes += e[i].bytes;
  free(e);
  return PORTC_OK;
}

portc_status cache_clear(int64_t *removed) {
  char dir[4096];
  portc_status st = cache_dir(dir, sizeof dir);
  if (st) return st;
  cache_entry *e;
  int n = list_entries(dir, &e);
  *removed = 0;
  for (int i = 0; i < n; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%.80s", dir, e[i].name);
    cache_drop(path);
    ++*removed;
  }
  free(e);
  return PORTC_OK;
}

/* "512M", "2G", "100000": bytes; -1 when malformed or absent */
static int64_t size_limit(const char *v) {
  if (!v || !*v) return -1;
  char *end;
  double x = strtod(v, &end);
  int64_t mul = *end == 'K' || *end == 'k' ? 1 << 10 : *end == 'M' || *end == 'm' ? 1 << 20 : *end == 'G' || *end == 'g' ? 1 << 30 : 1;
  if (end == v || x < 0 || (mul > 1 ? end[1] != 0 && strcmp(end + 1, "iB") != 0 && strcmp(end + 1, "B") != 0 : *end != 0)) return -1;
  return (int64_t)(x * (double)mul);
}

/* $PORTC_CACHE_MAX: the least recently used entries go until the folder fits (never `keep`, the
 * entry just stored) */
static void cache_evict(const char *dir, const char *keep) {
  const char *v = getenv("PORTC_CACHE_MAX");
  int64_t max = size_limit(v);
  if (max < 0) {
    if (v && *v) log_line("cache", "PORTC_CACHE_MAX=%s is not a size (bytes, or with K, M or G): no limit", v);
    return;
  }
  cache_entry *e;
  int n = list_entries(dir, &e);
  int64_t total = 0;
  for (int i = 0; i < n; i++) total += e[i].bytes;
  for (int i = 0; i < n && total > max; i++) {
    if (strcmp(e[i].name, keep) == 0) continue;
    char path[4200];
    snprintf(path, sizeof path, "%s/%.80s", dir, e[i].name);
    cache_drop(path);
    total -= e[i].bytes;
    log_line("cache", "evicted %s (PORTC_CACHE_MAX=%s)", path, v);
  }
  free(e);
}

portc_status cache_or_build(const build_key *k, const char *ext, const void *magic, size_t magic_len, const char *name, build_fn build,
                            void *ctx, void **data, size_t *bytes, bool *hit, char *path, size_t path_len) {
  char dir[4096], key[33];
  *data = NULL, *bytes = 0, *hit = false;
  if (path) path[0] = 0;
  portc_status st = cache_dir(dir, sizeof dir);
  if (st) return st;
  build_key_hash(k, key);
  *data = cache_read(dir, key, ext, bytes);
  if (*data && (*bytes <= magic_len || memcmp(*data, magic, magic_len) != 0)) free(*data), *data = NULL; /* not this kind: build it again */
  if (*data) {
    *hit = true;
    if (path) snprintf(path, path_len, "%s/%s.%s", dir, key, ext);
    log_line("cache", "hit %s/%s.%s (%s)", dir, key, ext, name);
    return PORTC_OK;
  }
  log_line("cache", "miss %s/%s.%s (%s)", dir, key, ext, name);
  if ((st = build(ctx, data, bytes))) return st;
  if (cache_write(dir, key, ext, *data, *bytes) != PORTC_OK) log_line("cache", "could not store %s.%s: %s", key, ext, portc_last_error());
  else if (path) snprintf(path, path_len, "%s/%s.%s", dir, key, ext);
  return PORTC_OK;
}
