/*
 * cache.c: the kernel cache on disk. Keys are XXH3-128 (Debian's libxxhash, header-only) over
 * length-prefixed parts, so no two part lists collide by concatenation. The folder is opened
 * once per use and checked (ours, private, its parents safe); entries are read, written, renamed
 * and removed relative to that descriptor. Each entry is one file with a trailer (size, checksum
 * seeded by the key) and appears by one rename. A hit marks the entry used (its mtime); the size
 * limit ($PORTC_CACHE_MAX, 2 GiB by default) evicts the least recently used entries as new ones
 * are stored. What killed processes leave behind (temporary files, build folders, run marks) is
 * swept once per process.
 */
#include "cache.h"
#include "target.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL /* the header alone: nothing to link, no symbol to export */
#include <xxhash.h>

/* ---- the folder ---- */

static portc_status folder_path(char *out, size_t len, bool *chosen) {
  const char *env = getenv("PORTC_CACHE_DIR"), *home = getenv("HOME");
  char cwd[2048];
  *chosen = (env && *env) || (home && *home);
  int n;
  if (env && *env && env[0] != '/' && getcwd(cwd, sizeof cwd)) n = snprintf(out, len, "%s/%s", cwd, env); /* absolute: never read as an option */
  else if (env && *env) n = snprintf(out, len, "%s", env);
  else if (home && *home) n = snprintf(out, len, "%s/.cache/portc", home);
  else n = snprintf(out, len, "/tmp/portc-cache-%d", (int)geteuid());
  if (n < 0 || (size_t)n >= len) return err_set(PORTC_ERR_IO, "kernel cache: the folder's path is longer than %zu bytes", len - 1);
  return PORTC_OK;
}

/* a folder above the cache: owned by root or by us, and if others can write to it, sticky */
static portc_status check_parent(const struct stat *st, const char *cache) {
  if (st->st_uid != 0 && st->st_uid != geteuid())
    return err_set(PORTC_ERR_IO,
                   "kernel cache %s: a folder above it belongs to user %d, who could replace the cache; refusing to load code from it "
                   "(set PORTC_CACHE_DIR to a folder under one only you and root can change)",
                   cache, (int)st->st_uid);
  if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
    return err_set(PORTC_ERR_IO,
                   "kernel cache %s: a folder above it can be written by others and is not sticky (mode %04o), so the cache could be "
                   "replaced; refusing to load code from it (set PORTC_CACHE_DIR elsewhere)",
                   cache, (unsigned)(st->st_mode & 07777));
  return PORTC_OK;
}

/* the folder behind fd and each one above it, found through "..", not through the path */
static portc_status check_folder(int fd, const char *path) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) return err_set(PORTC_ERR_IO, "kernel cache %s: not a folder", path);
  if (st.st_uid != geteuid())
    return err_set(PORTC_ERR_IO, "kernel cache %s: owned by another user; refusing to load code from it", path);
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return err_set(PORTC_ERR_IO, "kernel cache %s: others can write to it (mode %03o); refusing to load code from it (chmod 700 it)",
                   path, (unsigned)(st.st_mode & 0777));
  int at = fd;
  portc_status r = PORTC_OK;
  for (int depth = 0; depth < 256 && !r; depth++) {
    int up = openat(at, "..", O_PATH | O_DIRECTORY | O_CLOEXEC); /* O_PATH: a parent we may not list is still checked */
    if (at != fd) close(at);
    struct stat ps;
    if (up < 0 || fstat(up, &ps) != 0) {
      if (up >= 0) close(up);
      return err_set(PORTC_ERR_IO, "kernel cache %s: cannot inspect the folders above it: %s", path, strerror(errno));
    }
    bool root = ps.st_dev == st.st_dev && ps.st_ino == st.st_ino;
    r = check_parent(&ps, path);
    st = ps, at = up;
    if (root) break;
  }
  if (at != fd) close(at);
  return r;
}

static portc_status open_folder(cache_folder *cf) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s", cf->path);
  for (char *p = tmp + 1; *p; p++) { /* parents as needed */
    if (*p != '/') continue;
    *p = 0;
    mkdir(tmp, 0700);
    *p = '/';
  }
  if (mkdir(cf->path, 0700) != 0 && errno != EEXIST)
    return err_set(PORTC_ERR_IO, "kernel cache %s: cannot create: %s", cf->path, strerror(errno));
  cf->fd = open(cf->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* a link is fine: what it leads to is checked */
  if (cf->fd < 0)
    return err_set(PORTC_ERR_IO, "kernel cache %s: cannot open%s: %s", cf->path, errno == ENOTDIR ? " (not a folder)" : "",
                   strerror(errno));
  portc_status st = check_folder(cf->fd, cf->path);
  if (st) close(cf->fd), cf->fd = -1;
  return st;
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

static void sweep(const cache_folder *cf);

portc_status cache_open(cache_folder *cf) {
  bool chosen;
  cf->fd = -1;
  portc_status st = folder_path(cf->path, sizeof cf->path, &chosen);
  if (!st && (st = open_folder(cf)) && !chosen) {
    char why[512];
    snprintf(why, sizeof why, "%s", portc_last_error());
    if (!(st = fallback_dir(cf->path, sizeof cf->path, why))) st = open_folder(cf);
  }
  if (!st) sweep(cf);
  return st;
}

void cache_close(cache_folder *cf) {
  if (cf->fd >= 0) close(cf->fd);
  cf->fd = -1;
}

portc_status cache_dir(char *out, size_t len) {
  cache_folder cf;
  portc_status st = cache_open(&cf);
  if (!st) snprintf(out, len, "%s", cf.path);
  cache_close(&cf);
  return st;
}

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
  hash_part(&h, "portc cache 3");
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
  hash_part(&h, "portc build 3");
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

/* ---- files inside the folder ---- */

/* removes whatever is at name: a file, a link, or a folder and what it holds. A folder is
 * emptied again while files keep appearing in it: the compiler of a process killed mid-build
 * outlives it and may still write its output into the build folder being swept (once the
 * folder is gone, nothing can be created in it). */
static void remove_any(int at, const char *name, int depth) {
  if (unlinkat(at, name, 0) == 0 || errno == ENOENT) return;
  if (depth > 16) return;
  for (int pass = 0; pass < 8; pass++) {
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
      if (fd >= 0) close(fd);
      return;
    }
    for (struct dirent *e; (e = readdir(d));)
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) remove_any(dirfd(d), e->d_name, depth + 1);
    closedir(d);
    if (unlinkat(at, name, AT_REMOVEDIR) == 0 || errno != ENOTEMPTY) return;
  }
}

/* opens an entry for reading: a regular file of ours that others cannot write (else -1) */
static int open_entry(const cache_folder *cf, const char *name, struct stat *st) {
  int fd = openat(cf->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC); /* a FIFO does not block */
  if (fd < 0) return -1;
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_uid != geteuid() || (st->st_mode & (S_IWGRP | S_IWOTH))) {
    close(fd);
    errno = EPERM;
    return -1;
  }
  return fd;
}

enum { TRAILER = 32 };
static const char trailer_magic[8] = {'p', 'o', 'r', 't', 'c', 'e', 'n', 't'};

static uint64_t entry_seed(const char *name) { return XXH3_64bits(name, strlen(name)); }

static void make_trailer(const char *name, const void *data, size_t bytes, unsigned char out[TRAILER]) {
  uint64_t size = bytes, sum = XXH3_64bits_withSeed(data, bytes, entry_seed(name)), zero = 0;
  memcpy(out, trailer_magic, 8);
  memcpy(out + 8, &size, 8);
  memcpy(out + 16, &sum, 8);
  memcpy(out + 24, &zero, 8);
}

/* the whole file at fd (malloc'd), or NULL */
static void *read_all(int fd, size_t size) {
  char *buf = malloc(size ? size : 1);
  size_t got = 0;
  while (buf && got < size) {
    ssize_t n = read(fd, buf + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) free(buf), buf = NULL;
    else got += (size_t)n;
  }
  return buf;
}

static bool write_all(int fd, const void *data, size_t bytes) {
  const char *p = data;
  while (bytes) {
    ssize_t n = write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n, bytes -= (size_t)n;
  }
  return true;
}

static bool alive(long pid) { return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH); }

/* the PID in a run mark, or 0 */
static long mark_pid(const cache_folder *cf, const char *mark) {
  struct stat st;
  int fd = open_entry(cf, mark, &st);
  if (fd < 0) return 0;
  char text[32] = "";
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  return n > 0 ? strtol(text, NULL, 10) : 0;
}

void cache_drop(const cache_folder *cf, const char *name) {
  char mark[120];
  snprintf(mark, sizeof mark, "%s.run", name);
  remove_any(cf->fd, name, 0);
  unlinkat(cf->fd, mark, 0);
}

void *cache_read(const cache_folder *cf, const char *key, const char *ext, size_t *bytes) {
  char name[80], mark[96];
  *bytes = 0;
  snprintf(name, sizeof name, "%s.%s", key, ext);
  snprintf(mark, sizeof mark, "%s.run", name);
  long pid = mark_pid(cf, mark);
  if (pid && pid != (long)getpid() && !alive(pid)) {
    log_line("cache", "entry %s/%s: process %ld ended while running its code (it may have crashed it): removed, rebuilding", cf->path, name, pid);
    cache_drop(cf, name);
    return NULL;
  }
  struct stat st;
  int fd = open_entry(cf, name, &st);
  if (fd < 0) {
    if (errno != ENOENT) { /* a folder, a FIFO, a link, someone else's file */
      log_line("cache", "%s/%s is not an entry portc wrote: removed", cf->path, name);
      remove_any(cf->fd, name, 0);
    }
    return NULL;
  }
  unsigned char *data = st.st_size > TRAILER ? read_all(fd, (size_t)st.st_size) : NULL;
  size_t n = data ? (size_t)st.st_size - TRAILER : 0;
  unsigned char want[TRAILER];
  if (data) make_trailer(name, data, n, want);
  if (!data || memcmp(data + n, want, TRAILER) != 0) {
    log_line("cache", "entry %s/%s is damaged or truncated: removed, rebuilding", cf->path, name);
    free(data);
    close(fd);
    cache_drop(cf, name);
    return NULL;
  }
  futimens(fd, NULL); /* its last use, for the size limit's eviction */
  close(fd);
  *bytes = n;
  return data;
}

void cache_entry_path(const cache_folder *cf, const char *name, char *out, size_t len) {
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", cf->fd);
  struct stat a, b;
  if (stat(proc, &a) == 0 && fstat(cf->fd, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) snprintf(out, len, "%s/%s", proc, name);
  else snprintf(out, len, "%s/%s", cf->path, name);
}

static void apply_limit(const cache_folder *cf, const char *keep, int64_t added);

/* a name no other writer uses: NAME.tmp-PID-N */
static int create_temp(const cache_folder *cf, const char *name, char *tmp, size_t len) {
  static _Atomic unsigned counter;
  for (int tries = 0; tries < 100; tries++) {
    snprintf(tmp, len, "%s.tmp-%d-%u%04x", name, (int)getpid(), counter++, (unsigned)rand() & 0xffff);
    int fd = openat(cf->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

/* name's contents (head, then tail), written under a temporary name and renamed into place, so a
 * reader sees all of it or none; something that is not an entry at name (a folder) is removed */
static portc_status write_whole(const cache_folder *cf, const char *name, const void *head, size_t nhead, const void *tail, size_t ntail) {
  char tmp[160];
  int fd = create_temp(cf, name, tmp, sizeof tmp);
  if (fd < 0) return err_set(PORTC_ERR_IO, "kernel cache: cannot write in %s: %s", cf->path, strerror(errno));
  bool ok = write_all(fd, head, nhead) && write_all(fd, tail, ntail);
  int err = errno;
  if (close(fd) != 0 && ok) ok = false, err = errno;
  for (int tries = 0; ok && tries < 2; tries++) {
    if (renameat(cf->fd, tmp, cf->fd, name) == 0) return PORTC_OK;
    err = errno;
    if (err != EISDIR && err != ENOTEMPTY && err != EEXIST) break;
    log_line("cache", "%s/%s is a folder, not an entry: removed", cf->path, name);
    remove_any(cf->fd, name, 0); /* something that is not an entry sits at its name */
  }
  unlinkat(cf->fd, tmp, 0);
  return err_set(PORTC_ERR_IO, "kernel cache: cannot store %s/%s: %s", cf->path, name, strerror(err ? err : EIO));
}

portc_status cache_write(const cache_folder *cf, const char *key, const char *ext, const void *data, size_t bytes) {
  char name[80];
  snprintf(name, sizeof name, "%s.%s", key, ext);
  unsigned char trailer[TRAILER];
  make_trailer(name, data, bytes, trailer);
  portc_status st = write_whole(cf, name, data, bytes, trailer, TRAILER);
  if (!st) apply_limit(cf, name, (int64_t)(bytes + TRAILER));
  return st;
}

/* ---- run marks ---- */

void cache_trial_begin(const cache_folder *cf, const char *name) {
  char mark[96], text[32];
  snprintf(mark, sizeof mark, "%s.run", name);
  if (alive(mark_pid(cf, mark))) return; /* a running process is trying it: its mark stays */
  int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
  write_whole(cf, mark, text, (size_t)n, NULL, 0); /* best effort: without a mark, a crash is not traced */
}

void cache_trial_end(const char *name) {
  cache_folder cf;
  char mark[96];
  snprintf(mark, sizeof mark, "%s.run", name);
  if (cache_open(&cf) != PORTC_OK) return;
  if (mark_pid(&cf, mark) == (long)getpid()) unlinkat(cf.fd, mark, 0);
  cache_close(&cf);
}

/* ---- the folder as a whole: what `portc cache` shows and clears, the size limit, the sweep ---- */

typedef struct cache_entry {
  char name[80]; /* KEY.EXT */
  int64_t bytes;
  struct timespec used;
} cache_entry;

/* KEY.EXT: 32 hex digits, a dot, an extension of letters and digits */
static bool entry_name(const char *n) {
  size_t h = strspn(n, "0123456789abcdef");
  if (h != 32 || n[32] != '.' || !n[33]) return false;
  const char *ext = n + 33;
  return strspn(ext, "abcdefghijklmnopqrstuvwxyz0123456789") == strlen(ext) && strlen(n) < 80;
}

/* the folder's names from the start, through a copy of its descriptor (closedir closes the copy) */
static DIR *open_listing(const cache_folder *cf) {
  int fd = dup(cf->fd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d && fd >= 0) close(fd);
  if (d) rewinddir(d);
  return d;
}

/* the folder's entries (malloc'd), oldest use first */
static int by_use(const void *a, const void *b) {
  const struct timespec *x = &((const cache_entry *)a)->used, *y = &((const cache_entry *)b)->used;
  return x->tv_sec != y->tv_sec ? (x->tv_sec < y->tv_sec ? -1 : 1) : (x->tv_nsec > y->tv_nsec) - (x->tv_nsec < y->tv_nsec);
}

static int list_entries(const cache_folder *cf, cache_entry **out) {
  *out = NULL;
  DIR *d = open_listing(cf);
  if (!d) return 0;
  int n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    struct stat st;
    if (!entry_name(e->d_name) || fstatat(cf->fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (n == cap) {
      cache_entry *m = realloc(*out, sizeof *m * (size_t)(cap = cap ? 2 * cap : 64));
      if (!m) break;
      *out = m;
    }
    cache_entry *ce = &(*out)[n++];
    snprintf(ce->name, sizeof ce->name, "%s", e->d_name);
    ce->bytes = (int64_t)st.st_size;
    ce->used = st.st_mtim;
  }
  closedir(d);
  if (n) qsort(*out, (size_t)n, sizeof **out, by_use);
  return n;
}

/* "512M", "2G", "100000": bytes; "unlimited": -2; -1 when malformed */
static int64_t size_limit(const char *v) {
  if (strcmp(v, "unlimited") == 0) return -2;
  char *end;
  double x = strtod(v, &end);
  int64_t mul = *end == 'K' || *end == 'k' ? 1 << 10 : *end == 'M' || *end == 'm' ? 1 << 20 : *end == 'G' || *end == 'g' ? 1 << 30 : 1;
  if (end == v || x < 0 || x > 1e18 || (mul > 1 ? end[1] != 0 && strcmp(end + 1, "iB") != 0 && strcmp(end + 1, "B") != 0 : *end != 0))
    return -1;
  return (int64_t)(x * (double)mul);
}

enum { DEFAULT_LIMIT_MIB = 2048 };

/* the folder's size as this process last counted it, plus what it stored since */
static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;
static char counted_path[4096];
static int64_t counted_bytes = -1;

/* $PORTC_CACHE_MAX (2 GiB by default): when the folder outgrows it, the least recently used
 * entries go until it is back under 90% of it (never `keep`, the entry just stored). The folder
 * is counted once per process and then followed by what the process adds, so a store does not
 * list the folder each time. */
static void apply_limit(const cache_folder *cf, const char *keep, int64_t added) {
  const char *v = getenv("PORTC_CACHE_MAX");
  int64_t max = v && *v ? size_limit(v) : (int64_t)DEFAULT_LIMIT_MIB << 20;
  if (max == -1) {
    log_line("cache", "PORTC_CACHE_MAX=%s is not a size (bytes, or with K, M or G, or unlimited): the default %d MiB applies", v,
             DEFAULT_LIMIT_MIB);
    max = (int64_t)DEFAULT_LIMIT_MIB << 20;
  }
  if (max == -2) return;
  pthread_mutex_lock(&limit_lock);
  bool recount = counted_bytes < 0 || strcmp(counted_path, cf->path) != 0;
  if (!recount) counted_bytes += added;
  if (recount || counted_bytes > max) {
    cache_entry *e;
    int n = list_entries(cf, &e);
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += e[i].bytes;
    for (int i = 0; i < n && total > max - max / 10; i++) {
      if (strcmp(e[i].name, keep) == 0 || total <= max - max / 10) continue;
      cache_drop(cf, e[i].name);
      total -= e[i].bytes;
      log_line("cache", "evicted %s/%s (the size limit is %lld bytes)", cf->path, e[i].name, (long long)max);
    }
    free(e);
    snprintf(counted_path, sizeof counted_path, "%s", cf->path);
    counted_bytes = total;
  }
  pthread_mutex_unlock(&limit_lock);
}

/* what a leftover's name says about it: the PID in NAME.tmp-PID-N, build-PID-N; 0 if none */
static long leftover_pid(const char *n) {
  const char *p = strstr(n, ".tmp-");
  if (p) return strtol(p + 5, NULL, 10);
  if (strncmp(n, "build-", 6) == 0) return strtol(n + 6, NULL, 10);
  return 0;
}

/* Once per process and folder: temporary files and build folders of processes that are gone,
 * run marks whose entry is gone, folders of failed builds older than a week, and the two-file
 * entries of earlier versions (KEY.EXT with KEY.EXT.sum). */
static void sweep_now(const cache_folder *cf) {
  DIR *d = open_listing(cf);
  if (!d) return;
  time_t now = time(NULL);
  int removed = 0;
  for (struct dirent *e; (e = readdir(d));) {
    const char *n = e->d_name;
    size_t len = strlen(n);
    struct stat st;
    if (n[0] == '.' || fstatat(cf->fd, n, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    bool gone = false;
    long pid = leftover_pid(n);
    if (pid) gone = !alive(pid);
    else if (strncmp(n, "failed-", 7) == 0) gone = now - st.st_mtime > 7 * 24 * 3600;
    else if (len > 4 && strcmp(n + len - 4, ".run") == 0) {
      char entry[256];
      snprintf(entry, sizeof entry, "%.*s", (int)(len - 4), n);
      gone = faccessat(cf->fd, entry, F_OK, AT_SYMLINK_NOFOLLOW) != 0;
    } else if (len > 4 && strcmp(n + len - 4, ".sum") == 0 && len - 4 < 200) {
      char entry[256];
      snprintf(entry, sizeof entry, "%.*s", (int)(len - 4), n);
      unlinkat(cf->fd, entry, 0);
      gone = true;
    }
    if (!gone) continue;
    remove_any(cf->fd, n, 0);
    removed++;
  }
  closedir(d);
  if (removed) log_line("cache", "swept %d leftovers of ended processes from %s", removed, cf->path);
}

static void sweep(const cache_folder *cf) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static char swept[4096];
  pthread_mutex_lock(&lock);
  bool now = strcmp(swept, cf->path) != 0;
  if (now) snprintf(swept, sizeof swept, "%s", cf->path);
  pthread_mutex_unlock(&lock);
  if (now) sweep_now(cf);
}

portc_status cache_stats(char *dir, size_t len, int64_t *entries, int64_t *bytes) {
  cache_folder cf;
  portc_status st = cache_open(&cf);
  if (st) return st;
  snprintf(dir, len, "%s", cf.path);
  cache_entry *e;
  int n = list_entries(&cf, &e);
  *entries = n, *bytes = 0;
  for (int i = 0; i < n; i++) *bytes += e[i].bytes;
  free(e);
  cache_close(&cf);
  return PORTC_OK;
}

portc_status cache_clear(int64_t *removed) {
  cache_folder cf;
  portc_status st = cache_open(&cf);
  if (st) return st;
  cache_entry *e;
  int n = list_entries(&cf, &e);
  *removed = 0;
  for (int i = 0; i < n; i++) {
    cache_drop(&cf, e[i].name);
    ++*removed;
  }
  free(e);
  pthread_mutex_lock(&limit_lock);
  counted_bytes = -1;
  pthread_mutex_unlock(&limit_lock);
  cache_close(&cf);
  return PORTC_OK;
}

portc_status cache_or_build(const build_key *k, const char *ext, const void *magic, size_t magic_len, const char *name, build_fn build,
                            void *ctx, void **data, size_t *bytes, bool *hit, const cache_folder *given, char *entry) {
  char key[33];
  cache_folder own;
  const cache_folder *cf = given ? given : &own;
  *data = NULL, *bytes = 0, *hit = false;
  if (entry) entry[0] = 0;
  portc_status st = given ? PORTC_OK : cache_open(&own);
  if (st) return st;
  build_key_hash(k, key);
  *data = cache_read(cf, key, ext, bytes);
  if (*data && (*bytes <= magic_len || memcmp(*data, magic, magic_len) != 0)) free(*data), *data = NULL; /* not this kind: build it again */
  if (*data) {
    *hit = true;
    if (entry) snprintf(entry, 80, "%s.%s", key, ext);
    log_line("cache", "hit %s/%s.%s (%s)", cf->path, key, ext, name);
  } else {
    log_line("cache", "miss %s/%s.%s (%s)", cf->path, key, ext, name);
    if (!(st = build(ctx, data, bytes))) {
      if (cache_write(cf, key, ext, *data, *bytes) != PORTC_OK) log_line("cache", "could not store %s.%s: %s", key, ext, portc_last_error());
      else if (entry) snprintf(entry, 80, "%s.%s", key, ext);
    }
  }
  if (!given) cache_close(&own);
  return st;
}
