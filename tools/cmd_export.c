/*
 * cmd_export.c: `portc export G.ptg -t webgpu -o DIR` writes a web bundle (portc_export_web): the
 * graph's WGSL kernels, its weights, the dispatches of one run and a page that runs them in a
 * browser through WebGPU, with a sample input and the reference's outputs the page checks.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *const help =
    "usage: portc export G.ptg -t webgpu -o DIR [--set SYM=N]... [--input NAME=FILE.npy]... [--seed S]\n"
    "                    [COMPILE OPTIONS]\n"
    "\n"
    "Compiles the whole graph for WebGPU (an op the target cannot run is an error: a browser has no\n"
    "CPU fallback), specialized to the symbol values --set gives, and writes a web bundle in DIR:\n"
    "index.html and runner.js, manifest.json (buffers, kernels, dispatches, the limits the device\n"
    "must grant), kernels/kN.wgsl, weights.bin, and a sample: inputs.bin (--input, else --seed's\n"
    "values) with expected.bin (the float64 reference's outputs), which the page checks the\n"
    "browser's results against. Serve DIR over HTTP (file:// pages cannot fetch) and open\n"
    "index.html in a browser with WebGPU; runner.js is an ES module a page of your own can import.\n"
    "%s";

int cmd_export(int argc, char **argv) {
  graph_args ga = {0};
  const char *out = NULL;
  for (int i = 1; i < argc; i++) {
    if (is_help(argv[i])) {
      printf(help, compile_options_help);
      return EXIT_OK;
    }
    int took = parse_graph_arg("export", argc, argv, &i, &ga, false);
    if (took < 0) return EXIT_USAGE;
    if (took) continue;
    if (!strcmp(argv[i], "-o")) {
      if (i + 1 >= argc) return usage_error("export", "-o needs a value");
      out = argv[++i];
    } else {
      return usage_error("export", "unknown option '%s'", argv[i]);
    }
  }
  if (!ga.path || !out) return usage_error("export", "needs a graph and -o DIR");
  if (!ga.target) return usage_error("export", "needs -t webgpu (the target whose kernels a browser runs)");
  portc_graph *g;
  portc_bindings *b;
  int rc = open_graph("export", &ga, true, &g, &b);
  if (rc) return rc;
  portc_compile_options co = ga.co;
  co.target = ga.target;
  if (portc_export_web(g, &co, b, out) != PORTC_OK) {
    fprintf(stderr, "portc export: %s: %s\n", ga.path, portc_last_error());
    rc = EXIT_FAIL;
  } else {
    printf("wrote %s/ (graph %s for %s): serve the folder and open index.html\n", out, portc_graph_name(g), co.target);
  }
  portc_bindings_free(b);
  portc_graph_free(g);
  return rc;
}
