/*
 * cache.h: the on-disk kernel cache, content-addressed by everything that determines the binary:
 * kernel source, target, device, compiler version and options. Entries are code that gets
 * loaded, so the folder is created 0700 and one that others can write to is refused.
 */
#ifndef PORTC_TARGETS_CACHE_H
#define PORTC_TARGETS_CACHE_H

#include "../ir/graph.h"

/* the cache folder ($PORTC_CACHE_DIR, else ~/.cache/portc), created if missing and checked */
portc_status cache_dir(char *out, size_t len);
/* the hex key of the parts (NULL-terminated list) */
void cache_key(const char *const *parts, char out[33]);
/* the entry's path if present and intact (size and checksum match); a corrupt or truncated entry
 * is removed and reported as absent */
bool cache_lookup(const char *dir, const char *key, const char *ext, char *path, size_t len);
/* moves a freshly built file into the cache atomically, with its checksum */
portc_status cache_store(const char *dir, const char *key, const char *ext, const char *built, char *path, size_t len);
/* an entry's whole contents (malloc'd, *bytes its size) when present and intact, else NULL */
void *cache_read(const char *dir, const char *key, const char *ext, size_t *bytes);
/* writes bytes as the entry, replacing any, atomically and with its checksum */
portc_status cache_write(const char *dir, const char *key, const char *ext, const void *data, size_t bytes);

/* What the GPU targets do with a compiled module: fetch it by its key parts (NULL-terminated),
 * taking an entry only if it is intact and starts with magic (else *data is NULL: a miss, logged
 * with `name`, and key[] says where cache_keep stores the fresh build). A failure to store is
 * logged, not returned: the kernels still run, and the cache misses next time. */
portc_status cache_fetch(const char *const *parts, const char *ext, const void *magic, size_t magic_len, const char *name, char key[33],
                         void **data, size_t *bytes);
void cache_keep(const char *key, const char *ext, const void *data, size_t bytes);

#endif
