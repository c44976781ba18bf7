/*
 * regional.h: regional compilation, for the targets that build one binary per kernel (cpu,
 * vulkan). A module's source is cut into one source per kernel (the prelude, then the kernel's
 * own text); kernels name their buffers by their place among their own buffers (emit.h), so the
 * 24 identical blocks of a transformer give 24 identical texts, which are built once, here and
 * in the kernel cache. The distinct ones are built on the host's cores at once.
 */
#ifndef PORTC_TARGETS_REGIONAL_H
#define PORTC_TARGETS_REGIONAL_H

#include "../ir/graph.h"

typedef struct kernel_piece {
  char *source;    /* the prelude and the kernel's text, without its "//@kernel" header (malloc'd) */
  char needs[128]; /* what the header line says after "//@kernel N" (" needs int64 row") */
  int same_as;     /* the first kernel whose source and header are the same (itself when none is) */
} kernel_piece;

/* Cuts a module source whose kernels each start with a line "//@kernel N ...", optionally
 * followed by one "// ..." line (why the kernel ends there: it names graph nodes, so it is left
 * out of the source that is built and keyed); the module's first line, "//@module ..." (the
 * graph's name and kernel count), is left out too. *out gets nk pieces; errors name the target. */
portc_status kernel_pieces(const char *module_source, int nk, const char *target, kernel_piece **out);
void kernel_pieces_free(kernel_piece *p, int nk);

/* Runs job(ctx, i) for every i in [0, n) on up to as many threads as the host has cores
 * ($PORTC_COMPILE_THREADS caps them; 1: one at a time, on the calling thread). Returns the status
 * of the lowest i that failed, with its message as portc_last_error, or PORTC_OK. */
portc_status run_parallel(int n, portc_status (*job)(void *ctx, int i), void *ctx);

#endif
