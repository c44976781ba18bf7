/*
 * cache.h: the on-disk kernel cache, content-addressed by everything that determines the binary:
 * kernel source, target, device, compiler identity and version, its exact options, and the
 * environment variables that change its output (build_key). Entries are code that gets
 * loaded, so the folder is created 0700 and one that others can write to is refused.
 */
#ifndef PORTC_TARGETS_CACHE_H
#define PORTC_TARGETS_CACHE_H

#include "../ir/graph.h"

/* the cache folder ($PORTC_CACHE_DIR, else ~/.cache/portc), created if missing and checked */
portc_status cache_dir(char *out, size_t len);
/* the hex key (XXH3-128) of the parts (NULL-terminated list), for files that are not builds */
void cache_key(const char *const *parts, char out[33]);
/* the folder, its entries and their bytes (entries with their sidecars; not tune.txt) */
portc_status cache_stats(char *dir, size_t len, int64_t *entries, int64_t *bytes);
/* removes every entry (the measured tune table stays) */
portc_status cache_clear(int64_t *removed);
/* removes an entry and its checksum (path: the entry's file) */
void cache_drop(const char *path);
/* an entry's whole contents (malloc'd, *bytes its size) when present and intact (size and
 * checksum match), else NULL; a corrupt or truncated entry is removed and reported as absent */
void *cache_read(const char *dir, const char *key, const char *ext, size_t *bytes);
/* writes bytes as the entry, replacing any, atomically and with its checksum */
portc_status cache_write(const char *dir, const char *key, const char *ext, const void *data, size_t bytes);

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

/* The one cache-or-build call: the entry for k (an intact file that starts with magic), else
 * build() and keep its result, a failure to store being logged and not returned (the kernels
 * still run, and the cache misses next time). path (may be NULL) gets the entry's file when
 * there is one. name is for log lines. */
portc_status cache_or_build(const build_key *k, const char *ext, const void *magic, size_t magic_len, const char *name, build_fn build,
                            void *ctx, void **data, size_t *bytes, bool *hit, char *path, size_t path_len);

#endif
