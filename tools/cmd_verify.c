/*
 * cmd_verify.c: `portc verify` runs the conformance suite (portc_verify).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *const help =
    "usage: portc verify [-t TARGETS] [--filter REGEX] [--json FILE] [--junit FILE] [--seed S]\n"
    "                    [--no-eager] [--examples DIR] [--quiet] [--model FILE [--set SYM=N]...]...\n"
    "                    [--autocast f16|bf16]\n"
    "\n"
    "Runs every conformance case on each selected target, fused and eager, against the float64\n"
    "reference, and prints a table of suites by target, every failure with its seed, and a last\n"
    "line 'N passed, N failed, N skipped'. Exit code 1 on any failure.\n"
    "\n"
    "  -t TARGETS       comma-separated targets (default: all; unavailable ones are skipped)\n"
    "  --filter REGEX   only cases whose name matches (POSIX extended regex)\n"
    "  --json FILE      every result as JSON\n"
    "  --junit FILE     every result as JUnit XML\n"
    "  --seed S         replay a run with its seed (default: a fresh seed, printed)\n"
    "  --no-eager       do not check eager mode\n"
    "  --examples DIR   where the example models are (default: examples)\n"
    "  --model FILE     verify this model (.ptg or .onnx) instead of the suite; repeatable. Its\n"
    "                   symbols take --set SYM=N values (default 2); inputs are seeded at random\n"
    "  --autocast T     verify the models' mixed-precision copies (portc_graph_autocast_copy: their\n"
    "                   matmuls, convolutions and attention in T, f16 or bf16), each against the\n"
    "                   float64 reference of that copy\n";

int cmd_verify(int argc, char **argv) {
  portc_verify_options o = {.size = sizeof o, .examples_dir = "examples"};
  const char *models[64], *sets[64];
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (is_help(a)) {
      fputs(help, stdout);
      return EXIT_OK;
    }
    bool takes = !strcmp(a, "-t") || !strcmp(a, "--filter") || !strcmp(a, "--json") || !strcmp(a, "--junit") || !strcmp(a, "--seed") ||
                 !strcmp(a, "--examples") || !strcmp(a, "--model") || !strcmp(a, "--set") || !strcmp(a, "--autocast");
    if (takes && i + 1 >= argc) return usage_error("verify", "%s needs a value", a);
    if (!strcmp(a, "-t")) o.targets = argv[++i];
    else if (!strcmp(a, "--filter")) o.filter = argv[++i];
    else if (!strcmp(a, "--json")) o.json = argv[++i];
    else if (!strcmp(a, "--junit")) o.junit = argv[++i];
    else if (!strcmp(a, "--examples")) o.examples_dir = argv[++i];
    else if (!strcmp(a, "--autocast")) {
      if (!parse_autocast(argv[++i], &o.autocast)) return usage_error("verify", "--autocast takes f16, bf16 or off, not '%s'", argv[i]);
    }
    else if (!strcmp(a, "--model") || !strcmp(a, "--set")) {
      bool model = !strcmp(a, "--model");
      int *n = model ? &o.nmodels : &o.nsets;
      if (*n == 64) return usage_error("verify", "more than 64 of %s", a);
      if (!model && !strchr(argv[i + 1], '=')) return usage_error("verify", "--set wants SYM=N, got '%s'", argv[i + 1]);
      (model ? models : sets)[(*n)++] = argv[++i];
    }
    else if (!strcmp(a, "--seed")) {
      char *end;
      o.seed = strtoull(argv[++i], &end, 10);
      if (*end || argv[i][0] == '-') return usage_error("verify", "--seed wants a non-negative integer, got '%s'", argv[i]);
      o.seed_given = true;
    } else if (!strcmp(a, "--no-eager")) o.no_eager = true;
    else if (!strcmp(a, "--quiet")) o.quiet = true;
    else return usage_error("verify", "unknown argument '%s'", a);
  }
  if (o.targets) {
    char list[512];
    snprintf(list, sizeof list, "%s", o.targets);
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
      if (!known_target(t)) return usage_error("verify", "unknown target '%s' (known:%s)", t, target_names() + 1);
  }
  if (o.autocast != PORTC_F32 && !o.nmodels) return usage_error("verify", "--autocast applies to the models given with --model");
  o.models = models, o.sets = sets;
  int fails = portc_verify(&o, stdout);
  if (fails < 0) return EXIT_USAGE;
  return fails ? EXIT_FAIL : EXIT_OK;
}
