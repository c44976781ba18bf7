/*
 * kir_print.c: the kernels of a module as text, for --dump-after fuse and PORTC_LOG=fusion.
 */
#include <stdio.h>

#include "pipeline.h"

static const char *const kinds[] = {"pointwise", "row", "matmul", "conv", "opaque"};

void kir_print(const kir_module *m, FILE *f) {
  fprintf(f, "# %d kernels\n", m->nk);
  for (int i = 0; i < m->nk; i++) {
    const kir_kernel *k = &m->k[i];
    char dom[256], red[256];
    shape_str(m->g, &k->dom, dom, sizeof dom);
    shape_str(m->g, &k->red, red, sizeof red);
    fprintf(f, "kernel %d: %s over %s", i, kinds[k->kind], dom);
    if (k->kind == KK_ROW) fprintf(f, " x %s, %d phase%s", red, k->nphase, k->nphase == 1 ? "" : "s");
    fprintf(f, ", %d values\n  nodes:", k->nval);
    for (int j = 0; j < k->nnodes; j++) fprintf(f, " %s", m->g->nodes[k->nodes[j]].name);
    fprintf(f, "\n  stores:");
    for (int s = 0; s < k->nstore; s++) fprintf(f, " %s", m->g->nodes[m->buf[k->store[s].buf].node].name);
    fprintf(f, "\n  why: %s\n", k->why);
  }
}
