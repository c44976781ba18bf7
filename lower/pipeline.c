/*
 * pipeline.c: the lowering pipeline, top to bottom in one function. After every graph pass the
 * verifier runs in debug builds (or with PORTC_VERIFY_PASSES=1), so a pass that breaks an
 * invariant is named at once; --dump-after PASS prints the graph there.
 */
#include "pipeline.h"

#include <stdlib.h>
#include <string.h>

#include "passes.h"

const char *const lower_pass_names[] = {"specialize", "form_attention", "decompose", "cast_sink", "channels_last", "split_concat", "split_reduce", "fold_batch_sum", "matmul_rows", "matmul_merged_rows", "fold", "cse", "dce", "fuse", NULL};

static bool verify_each_pass(void) {
#ifndef NDEBUG
  return true;
#else
  const char *e = getenv("PORTC_VERIFY_PASSES");
  return e && *e && strcmp(e, "0") != 0;
#endif
}

/* verification and dumping after the pass called name */
static portc_status after(const lower_options *o, const char *name, const portc_graph *g) {
  if (verify_each_pass()) {
    char *report = NULL;
    if (portc_graph_verify(g, &report) != PORTC_OK) {
      portc_status s = err_set(PORTC_ERR_INVALID, "internal error: the graph is invalid after pass %s:\n%s", name, report ? report : "");
      free(report);
      return s;
    }
  }
  if (o->dump_after && strcmp(o->dump_after, name) == 0) {
    char *text = portc_graph_print(g);
    fprintf(o->dump ? o->dump : stderr, "# after %s\n%s", name, text ? text : "");
    free(text);
  }
  return PORTC_OK;
}

/* "opt_cse" is called "cse" on the command line */
static const char *pass_name(const char *fn) { return strncmp(fn, "opt_", 4) == 0 ? fn + 4 : fn; }

#define RUN(pass, ...)                                                                              \
  do {                                                                                              \
    bool changed;                                                                                   \
    if ((st = pass(__VA_ARGS__, &changed)) || (st = after(o, pass_name(#pass), g))) goto fail;      \
  } while (0)

portc_status lower_graph(const portc_graph *src, const lower_options *o, kir_module **out) {
  portc_graph *g = NULL;
  portc_status st = graph_copy(src, o->symvals, &g);
  if (st || (st = after(o, "specialize", g))) goto fail;
  if (!o->eager && o->attention) RUN(form_attention, &g, o->attention); /* only where a target keeps it whole */
  RUN(decompose, &g, o->attention);
  if (!o->eager) RUN(cast_sink, &g); /* autocast's f16 values stay f16 through relu, pooling, views */
  RUN(channels_last, &g, o->channels_last, !o->eager); /* NHWC between convolutions where the target wants it */
  RUN(split_concat, &g);
  RUN(split_reduce, &g);
  RUN(fold_batch_sum, &g);
  RUN(matmul_rows, &g); /* a weight matmul of permuted rows reads them as they lie */
  if (!o->eager && o->copy_merged_rows) RUN(matmul_merged_rows, g, o->copy_merged_rows); /* ... or copied into a matrix where heads merge */
  RUN(opt_fold, g);
  RUN(opt_cse, g);
  RUN(opt_dce, g);
  if ((st = fuse(g, o->eager, o->max_loads, out))) goto fail; /* the module now owns g */
  if (!o->eager) remat(out, o->max_loads);
  if (o->dump_after && strcmp(o->dump_after, "fuse") == 0) kir_print(*out, o->dump ? o->dump : stderr);
  return PORTC_OK;
fail:
  portc_graph_free(g);
  return st;
}
