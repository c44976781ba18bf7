/*
 * plan_memory.c: places every temporary buffer in one arena so that buffers whose lifetimes do
 * not overlap share bytes. A buffer lives from the kernel that stores it to the last kernel that
 * reads it; buffers are placed first-fit, once largest first and once in the order they are made,
 * and the smaller arena is kept (neither order wins everywhere: a long-lived big buffer placed
 * first leaves no hole; one placed after short-lived ones can). Sizes depend on symbol values, so
 * a dynamic module plans at launch.
 *
 *   kernels: k0 stores t0; k1 reads t0, stores t1; k2 reads t1, stores y
 *   plan:    t0 at 0, t1 at 0 + size(t0) (both live in k1); peak = size(t0) + size(t1)
 */
#include <stdlib.h>
#include <string.h>

#include "kir.h"

#define ALIGN 256 /* the largest minStorageBufferOffsetAlignment Vulkan allows: temps bind at their offsets */

typedef struct live {
  int buf, first, last;
  int64_t size;
} live;

static int by_size(const void *a, const void *b) {
  const live *x = a, *y = b;
  return x->size < y->size ? 1 : x->size > y->size ? -1 : x->buf - y->buf;
}

static int by_first(const void *a, const void *b) {
  const live *x = a, *y = b;
  return x->first != y->first ? x->first - y->first : by_size(a, b);
}

/* first fit in lv's order: each buffer at the lowest offset past every placed buffer it overlaps
 * in time and space; returns the arena's size */
static int64_t place(const live *lv, int n, int64_t *at_of) {
  int64_t arena = 0;
  for (int i = 0; i < n; i++) {
    int64_t at = 0;
    for (bool moved = true; moved;) { /* bump past every overlapping placed buffer */
      moved = false;
      for (int j = 0; j < i; j++) {
        bool overlap_time = lv[j].first <= lv[i].last && lv[i].first <= lv[j].last;
        int64_t o = at_of[lv[j].buf];
        bool overlap_space = o < at + lv[i].size && at < o + lv[j].size;
        if (overlap_time && overlap_space) {
          at = o + lv[j].size;
          moved = true;
        }
      }
    }
    at_of[lv[i].buf] = at;
    if (at + lv[i].size > arena) arena = at + lv[i].size;
  }
  return arena;
}

portc_status plan_memory(const kir_module *m, const int64_t *sym, mem_plan *plan, int64_t *offsets) {
  live *lv = calloc((size_t)m->nbuf + 1, sizeof *lv);
  int64_t *at_of = calloc((size_t)m->nbuf + 1, sizeof *at_of), *alt = calloc((size_t)m->nbuf + 1, sizeof *alt);
  if (!lv || !at_of || !alt) {
    free(lv);
    free(at_of);
    free(alt);
    return err_set(PORTC_ERR_NOMEM, "plan_memory: out of memory");
  }
  int n = 0;
  plan->kept_bytes = 0;
  for (int b = 0; b < m->nbuf; b++) {
    if (m->buf[b].role != BUF_TEMP) continue;
    if (m->buf[b].kept) { /* its own allocation, which lives as long as the module */
      plan->kept_bytes += shape_count(&m->buf[b].sh, sym) * (int64_t)portc_dtype_size(m->buf[b].dt);
      continue;
    }
    int first = -1, last = -1;
    for (int k = 0; k < m->nk; k++) {
      const kir_kernel *kk = &m->k[k];
      bool uses = false;
      for (int s = 0; s < kk->nstore; s++) uses = uses || kk->store[s].buf == b;
      if (uses && first < 0) first = k;
      for (int v = 0; v < kk->nval; v++) uses = uses || (kk->val[v].kind == KV_LOAD && kk->val[v].buf == b);
      for (int i = 0; i < kk->nin; i++) uses = uses || kk->in_buf[i] == b;
      if (uses) last = k;
    }
    if (last < 0) continue; /* no kernel uses it (concat_in_place's absorbed inputs): no bytes */
    int64_t bytes = shape_count(&m->buf[b].sh, sym) * (int64_t)portc_dtype_size(m->buf[b].dt);
    lv[n++] = (live){b, first < 0 ? 0 : first, last, (bytes + ALIGN - 1) / ALIGN * ALIGN};
  }
  plan->naive_bytes = 0;
  for (int i = 0; i < n; i++) plan->naive_bytes += lv[i].size;
  qsort(lv, (size_t)n, sizeof *lv, by_size);
  plan->arena_bytes = place(lv, n, at_of);
  qsort(lv, (size_t)n, sizeof *lv, by_first);
  int64_t by_time = place(lv, n, alt);
  if (by_time < plan->arena_bytes) {
    plan->arena_bytes = by_time;
    memcpy(at_of, alt, sizeof *at_of * (size_t)m->nbuf);
  }
  if (offsets) memcpy(offsets, at_of, sizeof *offsets * (size_t)m->nbuf);
  free(lv);
  free(at_of);
  free(alt);
  return PORTC_OK;
}
