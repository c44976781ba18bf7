/*
 * pipeline.h: from a user's graph to a kernel module, through the flat list of passes.
 */
#ifndef PORTC_LOWER_PIPELINE_H
#define PORTC_LOWER_PIPELINE_H

#include <stdio.h>

#include "kir.h"

typedef struct lower_options {
  bool eager;               /* one kernel per op, no fusion */
  const int64_t *symvals;   /* per graph symbol: specialize to these values; NULL keeps symbols (dynamic) */
  const char *dump_after;   /* print the graph (or, for "fuse", the kernels) after this pass */
  FILE *dump;               /* where; stderr when NULL */
  unsigned attention;       /* dtypes (bit 1 << portc_dtype) whose attention is one kernel (target.h) */
  unsigned channels_last;   /* dtypes whose convolutions run channels-last where they fit (target.h) */
  int max_loads;            /* the most buffers a fused expression reads (0: fusion's own bound; target.h) */
  unsigned copy_merged_rows; /* dtypes whose weight matmul's rows, where the reduction merges axes lying apart, are copied first (target.h) */
} lower_options;

portc_status lower_graph(const portc_graph *g, const lower_options *o, kir_module **out);
/* the pass names, in order, for --dump-after and its help */
extern const char *const lower_pass_names[];
/* the kernels of a module, readably (for --dump-after fuse and explain) */
void kir_print(const kir_module *m, FILE *f);

#endif
