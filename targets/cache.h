/*
 * cache.h: the on-disk kernel cache, content-addressed by everything that determines the binary:
 * kernel source, target, device, compiler identity and version, its exact options, and the
 * environment variables that change its output (build_key). Entries are code that gets
 * loaded, so the folder is created 0700 and one that others can write to is refused.
 */
#ifndef PORTC_TARGETS_CACHE_H
#define PORTC_TARGETS_CACHE_H

#include "../ir/graph.h"

/* The cache folder, opened once and checked: every operation on its entries goes through the
 * descriptor (openat, O_NOFOLLOW), so renaming or replacing the folder's path while portc works
 * changes nothing it reads or loads. The folder must be ours, not writable by others, and so
 * must every folder above it be (or be sticky, like /tmp): another user who could rename a
 * parent could swap the folder before it is opened. */
typedef struct cache_folder {
  int fd;
  char path[4096]; /* for messages, and for compilers that take a path */
} cache_folder;

/* opens $PORTC_CACHE_DIR, else ~/.cache/portc (else /tmp/portc-cache-UID), creating it 0700 */
portc_status cache_open(cache_folder *cf);
void cache_close(cache_folder *cf);
/* the folder's path, created and checked */
portc_status cache_dir(char *out, size_t len);
/* the hex key (XXH3-128) of the parts (NULL-terminated list), for files that are not builds */
void cache_key(const char *const *parts, char out[33]);
/* the folder, its entries and their bytes (not tune.txt) */
portc_status cache_stats(char *dir, size_t len, int64_t *entries, int64_t *bytes);
/* removes every entry and what dead processes left behind (the measured tune table stays) */
portc_status cache_clear(int64_t *removed);

/* An entry is one file, KEY.EXT: the artifact's bytes, then a 32-byte trailer (a magic, the
 * size, a checksum seeded by the key), written under a temporary name and renamed into place
 * once, so a reader sees a whole entry or none. An ELF artifact keeps working with the trailer
 * after it (loaders read what its headers point to). */
/* entry's bytes (malloc'd, *bytes its size, the trailer left off) when present and intact, else
 * NULL; a damaged entry, or anything else at its name (a folder, a FIFO), is removed */
void *cache_read(const cache_folder *cf, const char *key, const char *ext, size_t *bytes);
/* writes bytes as the entry, replacing any, atomically, then applies the size limit */
portc_status cache_write(const cache_folder *cf, const char *key, const char *ext, const void *data, size_t bytes);
/* removes an entry (name: "KEY.EXT") */
void cache_drop(const cache_folder *cf, const char *name);
/* a path through which a program can open the entry (name: "KEY.EXT") without naming the
 * folder's path again: /proc/self/fd/N/NAME where /proc is mounted */
void cache_entry_path(const cache_folder *cf, const char *name, char *out, size_t len);

/* Code that crashed its process. Before a process first runs code loaded from an entry it marks
 * it (NAME.run holding its PID) and removes the mark once a run has finished. A mark left by a
 * process that no longer exists means the code may have killed it: the next lookup removes the
 * entry and it is built again, instead of crashing every run. */
void cache_trial_begin(const cache_folder *cf, const char *name);
void cache_trial_end(const char *name);

/* A compiler's options, exactly as it gets them (argv without the file names), kept in the
 * struct: what the build uses and what the cache key covers are the same list. v[] points into
 * text[]: fill the struct where it lives ({0}, then build_args_add); a copy would point into
 * the original. */
enum { BUILD_MAX_ARGS = 40 };
typedef struct build_args {
  int n;
  const char *v[BUILD_MAX_ARGS + 1]; /* NULL-terminated */
  char text[4096];
  size_t used;
} build_args;
/* appends one option (printf format); a list that overflows is cut short, and the key says so */
void build_args_add(build_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Everything that determines a compiled artifact's bytes. */
typedef struct build_key {
  const char *target;     /* "cuda" */
  const char *source;     /* the generated source */
  const build_args *args; /* the compiler's options */
  const char *compiler;   /* its identity and version ("nvrtc 13.0", gcc's version line) */
  const char *device;     /* what the code is built for: the architecture, the driver, or for the
                           * CPU the instruction-set flags that -march=native stands for */
  /* environment variables that change what the compiler makes: each one's value is part of the
   * key (NULL-terminated; NULL: none) */
  const char *const *env;
} build_key;

/* the hex key (XXH3-128) of a build: every field, each option, and the listed variables' values */
void build_key_hash(const build_key *k, char out[33]);

/* builds the artifact into *data (malloc'd) and *bytes */
typedef portc_status (*build_fn)(void *ctx, void **data, size_t *bytes);

/* The one cache-or-build call: the entry for k (intact, starting with magic), else build() and
 * keep its result, a failure to store being logged and not returned (the kernels still run, and
 * the cache misses next time). cf: an opened folder to use (the caller keeps it open, to load
 * the entry through it), or NULL; entry (may be NULL; 80 bytes) gets the entry's name when
 * there is one on disk. name is for log lines. */
portc_status cache_or_build(const build_key *k, const char *ext, const void *magic, size_t magic_len, const char *name, build_fn build,
                            void *ctx, void **data, size_t *bytes, bool *hit, const cache_folder *cf, char *entry);

#endif
