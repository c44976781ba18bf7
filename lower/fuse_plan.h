/*
 * fuse_plan.h: what fusion decided, handed from fuse.c to kir_build.c: which values live in
 * memory (materialized), and which nodes each kernel computes.
 */
#ifndef PORTC_LOWER_FUSE_PLAN_H
#define PORTC_LOWER_FUSE_PLAN_H

#include "kir.h"

typedef enum { C_SRC, C_PW, C_VIEW, C_RED, C_MM, C_CONV, C_OPQ } nclass;

typedef struct kplan {
  kir_kind kind;
  int anchor;     /* the reduction that starts a ROW kernel, the matmul/conv/opaque node, or the stored node */
  int end;        /* MATMUL, CONV: the last node of the epilogue, stored first (casts of it stored beside it follow) */
  int32_t *members;
  int nmembers;
  int x_node;     /* ROW: the node whose shape is the row space (the first reduction's input) */
  bool red_mask[PORTC_MAX_RANK];
  char why[160];
} kplan;

typedef struct fplan {
  portc_graph *g;
  nclass *cls;
  bool *mat;
  int *group;     /* per node: the kernel plan computing it, or -1 */
  char **why_mat; /* per node: why it is materialized (static strings or NULL) */
  kplan *k;
  int nk;
} fplan;

nclass node_class(const node *n);
portc_status kir_build(fplan *p, bool eager, kir_module **out);
/* concat_in_place.c: concats whose inputs are made only for them become stores into their slabs */
portc_status concat_in_place(kir_module *m);

#endif
