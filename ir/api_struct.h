/*
 * api_struct.h: reading and writing the public API's sized structs (portc.h: option and info
 * structs start with `size`; 0 means the layout they had when the field came in). The library
 * works on a whole struct of its own version and copies across only what the caller's covers.
 */
#ifndef PORTC_IR_API_STRUCT_H
#define PORTC_IR_API_STRUCT_H

#include <stddef.h>
#include <string.h>

/* the caller's struct `src` (may be NULL) into dst, a zeroed whole struct of `full` bytes;
 * first: the size of the first sized layout */
static inline void api_struct_in(void *dst, size_t full, const void *src, size_t first) {
  memset(dst, 0, full);
  if (!src) return;
  size_t n = *(const size_t *)src;
  if (n == 0) n = first;
  memcpy(dst, src, n < full ? n : full);
}

/* a whole struct `src` of `full` bytes out to the caller's dst, as far as dst's size reaches
 * (its size field is kept) */
static inline void api_struct_out(void *dst, const void *src, size_t full, size_t first) {
  size_t n = *(const size_t *)dst;
  if (n == 0) n = first;
  if (n > full) n = full;
  if (n > sizeof(size_t)) memcpy((char *)dst + sizeof(size_t), (const char *)src + sizeof(size_t), n - sizeof(size_t));
}

/* the size of a struct's first sized layout: up to and including its field `last` */
#define API_FIRST_SIZE(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))

#endif
