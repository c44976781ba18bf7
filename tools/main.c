/*
 * main.c: the portc command: a verb, then its arguments. Every verb answers --help.
 */
#include <stdarg.h>
#include <string.h>

#include "cli.h"

static const char *const usage =
    "usage: portc VERB [ARGS]\n"
    "\n"
    "verbs (G.ptg: a .ptg file or an ONNX model, G.onnx):\n"
    "  run G.ptg     run a graph on the float64 reference and summarize its outputs\n"
    "  check G.ptg   verify a graph and print its normalized text\n"
    "  verify        the conformance suite: every case on every target against the reference\n"
    "  explain G.ptg compile and print the fusion groups, bytes, FLOPs and why each kernel ends\n"
    "  bench G.ptg   time a compiled graph, fused against eager, with compile times and memory\n"
    "  tune G.ptg    time candidate schedules on the device and keep the fastest in the tune table\n"
    "  compile G.ptg -o M.portc   a module file: compiled kernels, weights and guards, run where no compiler is\n"
    "  export G.ptg -t webgpu -o DIR   a web bundle: WGSL kernels, weights and a page that runs them in a browser\n"
    "  cache         where the kernel cache is and its size; --clear empties it\n"
    "  convert M.onnx -o M.ptg   write a model as .ptg text, its weights in an .npz beside it\n"
    "  devices       the targets and whether each can run here\n"
    "  ops           list the ops, their inputs and attributes\n"
    "\n"
    "'portc VERB --help' describes a verb; 'portc --version' prints the library's version.\n"
    "Exit codes: 0 success, 1 failure, 2 usage error.\n";

bool is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

int usage_error(const char *verb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "portc %s: ", verb);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(see 'portc %s --help')\n", verb);
  va_end(ap);
  return EXIT_USAGE;
}

int main(int argc, char **argv) {
  static const struct { const char *name; int (*fn)(int, char **); } verbs[] = {
      {"run", cmd_run}, {"check", cmd_check}, {"ops", cmd_ops}, {"verify", cmd_verify},
      {"explain", cmd_explain}, {"bench", cmd_bench}, {"devices", cmd_devices}, {"convert", cmd_convert}, {"tune", cmd_tune}, {"cache", cmd_cache},
      {"compile", cmd_compile}, {"export", cmd_export}};
  if (argc < 2) {
    fputs(usage, stderr);
    return EXIT_USAGE;
  }
  if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
    printf("portc %s\n", portc_version());
    return EXIT_OK;
  }
  if (is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
    if (argc > 2 && strcmp(argv[1], "help") == 0) {
      char *help[] = {argv[2], "--help", NULL};
      for (unsigned i = 0; i < sizeof verbs / sizeof *verbs; i++)
        if (strcmp(argv[2], verbs[i].name) == 0) return verbs[i].fn(2, help);
    }
    fputs(usage, stdout);
    return EXIT_OK;
  }
  if (portc_log_check() != PORTC_OK) {
    fprintf(stderr, "portc: %s\n", portc_last_error());
    return EXIT_USAGE;
  }
  for (unsigned i = 0; i < sizeof verbs / sizeof *verbs; i++)
    if (strcmp(argv[1], verbs[i].name) == 0) return verbs[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "portc: unknown verb '%s'\n\n%s", argv[1], usage);
  return EXIT_USAGE;
}
