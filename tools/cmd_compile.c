/*
 * cmd_compile.c: `portc compile G.ptg -t TARGET -o M.portc` writes a module file: the compiled
 * kernels for one target or several, the graph, its parameters and its guards, which `portc run
 * M.portc` (and portc_module_load) runs on a machine with no compiler.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *const help =
    "usage: portc compile G.ptg -t TARGET[,TARGET...] -o M.portc [--set SYM=N]... [--input NAME=FILE.npy]...\n"
    "                     [COMPILE OPTIONS]\n"
    "\n"
    "Compiles the graph for each target named (cpu unless -t says otherwise) and writes one module\n"
    "file: the kernels as built for this machine's device, their schedules, the graph, the values of\n"
    "its parameters (--input binds one from a file) and the symbol values a module without --dynamic\n"
    "is specialized to. `portc run M.portc [-t TARGET]` runs it without a C compiler, shaderc or NVRTC\n"
    "on a machine with the same device; inputs come from --input or --seed as for a graph.\n"
    "%s";

int cmd_compile(int argc, char **argv) {
  graph_args ga = {.several = true};
  const char *out = NULL;
  for (int i = 1; i < argc; i++) {
    if (is_help(argv[i])) {
      printf(help, compile_options_help);
      return EXIT_OK;
    }
    int took = parse_graph_arg("compile", argc, argv, &i, &ga, false);
    if (took < 0) return EXIT_USAGE;
    if (took) continue;
    if (!strcmp(argv[i], "-o")) {
      if (i + 1 >= argc) return usage_error("compile", "-o needs a value");
      out = argv[++i];
    } else {
      return usage_error("compile", "unknown option '%s'", argv[i]);
    }
  }
  if (!ga.path || !out) return usage_error("compile", "needs a graph and -o M.portc");
  size_t len = strlen(out);
  if (len < 7 || strcmp(out + len - 6, ".portc")) return usage_error("compile", "the output '%s' must end in .portc", out);
  portc_graph *g;
  portc_bindings *b;
  int rc = open_graph("compile", &ga, false, &g, &b);
  if (rc) return rc;
  portc_compile_options co = ga.co;
  co.target = ga.target ? ga.target : "cpu";
  if (portc_compile_file(g, &co, b, out) != PORTC_OK) {
    fprintf(stderr, "portc compile: %s: %s\n", ga.path, portc_last_error());
    rc = EXIT_FAIL;
  } else {
    printf("wrote %s (graph %s for %s)\n", out, portc_graph_name(g), co.target);
  }
  portc_bindings_free(b);
  portc_graph_free(g);
  return rc;
}
