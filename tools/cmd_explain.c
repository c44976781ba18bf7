/*
 * cmd_explain.c: `portc explain G.ptg -t cpu` compiles a graph and prints its fusion groups;
 * `portc devices` lists the targets and whether each can run here.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *const help =
    "usage: portc explain G.ptg [-t TARGET] [--set SYM=N]... [COMPILE OPTIONS]\n"
    "\n"
    "Compiles G.ptg and prints the fusion groups: for each kernel its kind, the nodes fused into it,\n"
    "what it reads and writes, bytes moved and FLOPs (when symbol values are known), and why the\n"
    "kernel ends where it does; then the memory plan.\n"
    "%s";

int cmd_explain(int argc, char **argv) {
  graph_args ga = {0};
  for (int i = 1; i < argc; i++) {
    if (is_help(argv[i])) {
      printf(help, compile_options_help);
      return EXIT_OK;
    }
    int took = parse_graph_arg("explain", argc, argv, &i, &ga, false);
    if (took < 0) return EXIT_USAGE;
    if (!took) return usage_error("explain", "unknown option '%s'", argv[i]);
  }
  if (!ga.path) return usage_error("explain", "no graph file given");
  portc_compile_options co = ga.co;
  co.target = ga.target ? ga.target : "cpu";
  portc_graph *g;
  portc_bindings *b;
  int rc = open_graph("explain", &ga, false, &g, &b);
  if (rc) return rc;
  if (rc == EXIT_OK) {
    if (!ga.nsets && !ga.ninputs) co.dynamic = true; /* without symbol values: explain the module that runs for any */
    portc_module *m;
    if (portc_compile(g, &co, b, &m) != PORTC_OK) {
      fprintf(stderr, "portc explain: %s\n", portc_last_error());
      rc = EXIT_FAIL;
    } else {
      char *text = portc_module_explain(m, b);
      if (ga.autocast != PORTC_F32)
        printf("autocast %s: %d matmul, conv2d and attention nodes of f32 operands compute in %s (operands cast, sums in f32, results cast back to f32, additions of two results in %s)\n",
               portc_dtype_name(ga.autocast), ga.autocast_nodes, portc_dtype_name(ga.autocast), portc_dtype_name(ga.autocast));
      fputs(text ? text : "", stdout);
      free(text);
      portc_module_free(m);
    }
  }
  portc_bindings_free(b);
  portc_graph_free(g);
  return rc;
}

int cmd_devices(int argc, char **argv) {
  if (argc > 1 && is_help(argv[1])) {
    fputs("usage: portc devices\n\nLists the targets built into portc, and for each whether it can run here and on what.\n", stdout);
    return EXIT_OK;
  }
  if (argc > 1) return usage_error("devices", "takes no arguments");
  printf("ref       available: the float64 reference evaluator\n");
  for (int i = 0; i < portc_target_count(); i++) {
    char why[512] = "";
    bool ok = portc_target_available(i, why, sizeof why);
    if (ok) printf("%-9s available: %s\n", portc_target_name(i), portc_target_device(i));
    else printf("%-9s not available: %s\n", portc_target_name(i), why);
    portc_target_describe(i, stdout); /* what a target can say without its device, or more with it */
    if (ok) portc_target_tune_describe(i, stdout);
  }
  return EXIT_OK;
}
