/*
 * cmd_convert.c: `portc convert M.onnx -o M.ptg` writes a model as .ptg text, with its weights in
 * an .npz archive beside it (M.npz unless --weights names another in the same folder).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *const help =
    "usage: portc convert MODEL.onnx -o OUT.ptg [--weights OUT.npz]\n"
    "\n"
    "Imports MODEL (any file portc can load: .onnx or .ptg) and writes its text form to OUT.ptg.\n"
    "Weights go to an .npz archive (numpy.savez's format; numpy.load reads it) in the same folder,\n"
    "OUT.npz by default, and the text declares each as file(\"OUT.npz\", key=\"NAME\").\n";

int cmd_convert(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *weights = NULL;
  for (int i = 1; i < argc; i++) {
    if (is_help(argv[i])) {
      fputs(help, stdout);
      return EXIT_OK;
    }
    if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--weights")) && i + 1 >= argc) return usage_error("convert", "%s needs a value", argv[i]);
    if (!strcmp(argv[i], "-o")) out = argv[++i];
    else if (!strcmp(argv[i], "--weights")) weights = argv[++i];
    else if (argv[i][0] == '-') return usage_error("convert", "unknown argument '%s'", argv[i]);
    else if (in) return usage_error("convert", "one model at a time ('%s' and '%s')", in, argv[i]);
    else in = argv[i];
  }
  if (!in || !out) return usage_error("convert", "needs a model and -o OUT.ptg");
  size_t len = strlen(out);
  if (len < 5 || strcmp(out + len - 4, ".ptg")) return usage_error("convert", "the output '%s' must end in .ptg", out);
  char npz[4096];
  snprintf(npz, sizeof npz, "%.*s.npz", (int)(len - 4), out);
  if (weights) {
    const char *a = strrchr(out, '/'), *b = strrchr(weights, '/');
    size_t da = a ? (size_t)(a - out) : 0, db = b ? (size_t)(b - weights) : 0;
    if (da != db || strncmp(out, weights, da)) return usage_error("convert", "--weights must be in the folder of %s", out);
    snprintf(npz, sizeof npz, "%s", weights);
  }
  portc_graph *g;
  if (portc_graph_load(in, &g) != PORTC_OK) {
    fprintf(stderr, "%s\n", portc_last_error());
    return EXIT_FAIL;
  }
  int rc = EXIT_OK;
  if (portc_graph_save(g, out, npz) != PORTC_OK) {
    fprintf(stderr, "portc convert: %s\n", portc_last_error());
    rc = EXIT_FAIL;
  } else {
    printf("wrote %s (%d nodes) and its weights to %s\n", out, portc_graph_node_count(g), npz);
  }
  portc_graph_free(g);
  return rc;
}
