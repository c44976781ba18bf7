/*
 * cmd_tune.c: `portc tune G.ptg -t TARGET` times candidate schedules for the graph's kernels on
 * the device and stores the winners as measured entries in the user's tune table (or --table
 * FILE), which later compiles read; `portc tune --check [FILE]` lints tune tables.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char *const help =
    "usage: portc tune G.ptg [-t TARGET] [--budget SECONDS] [--export FILE] [--table FILE] [--reps N]\n"
    "                  [--missing] [--set SYM=N]... [--seed S] [--eager] [--dynamic]\n"
    "       portc tune --check [FILE]\n"
    "\n"
    "Times candidate schedules (tiles, work-group sizes, blocking, the vendor library or not) for\n"
    "each kernel of G.ptg on the target's device, with seeded random inputs, and keeps for each\n"
    "kernel key the fastest one whose outputs match the default schedule's; a candidate that is\n"
    "slower, wrong or fails is never kept. The winners are stored as measured entries in the tune\n"
    "table of the kernel cache folder (tune.txt), which every later compile on this device reads,\n"
    "and with --export also in FILE (a site table to share: PORTC_TUNE_PATH). --budget bounds the\n"
    "whole search (default 600 s); --missing skips kernels that have a measured entry already.\n"
    "--check lints FILE, or every table a compile reads, and fails when a line is not an entry.\n";

static int check(const char *path) {
  int problems = portc_tune_check(path, stdout);
  if (problems < 0) fprintf(stderr, "portc tune: %s\n", portc_last_error());
  return problems ? EXIT_FAIL : EXIT_OK;
}

int cmd_tune(int argc, char **argv) {
  graph_args ga = {0};
  portc_tune_options o = PORTC_TUNE_OPTIONS_INIT;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (is_help(a)) {
      fputs(help, stdout);
      return EXIT_OK;
    }
    if (strcmp(a, "--check") == 0) {
      if (argc > i + 2) return usage_error("tune", "--check takes at most one file");
      return check(i + 1 < argc ? argv[i + 1] : NULL);
    }
    bool valued = strcmp(a, "--budget") == 0 || strcmp(a, "--export") == 0 || strcmp(a, "--table") == 0 || strcmp(a, "--reps") == 0;
    if (valued && i + 1 >= argc) return usage_error("tune", "%s needs a value", a);
    if (strcmp(a, "--budget") == 0) {
      char *end;
      o.budget_seconds = strtod(argv[++i], &end);
      if (*end || o.budget_seconds <= 0) return usage_error("tune", "--budget %s: expected seconds > 0", argv[i]);
    } else if (strcmp(a, "--reps") == 0) {
      o.reps = atoi(argv[++i]);
      if (o.reps < 1 || o.reps > 1000) return usage_error("tune", "--reps %s: expected 1 to 1000", argv[i]);
    } else if (strcmp(a, "--export") == 0) {
      o.export_path = argv[++i];
    } else if (strcmp(a, "--table") == 0) {
      o.table_path = argv[++i];
    } else if (strcmp(a, "--missing") == 0) {
      o.missing_only = true;
    } else {
      int took = parse_graph_arg("tune", argc, argv, &i, &ga, false);
      if (took < 0) return EXIT_USAGE;
      if (!took) return usage_error("tune", "unknown option '%s'", a);
    }
  }
  if (!ga.path) return usage_error("tune", "no graph file given");
  if (ga.co.mode != PORTC_MODE_DEFAULT) return usage_error("tune", "--mode: tune measures the default mode's kernels");
  portc_graph *g;
  portc_bindings *b;
  int rc = open_graph("tune", &ga, true, &g, &b);
  if (rc) return rc;
  o.target = ga.target ? ga.target : "cpu";
  o.dynamic = ga.co.dynamic, o.eager = ga.co.eager, o.seed = ga.seeded ? ga.seed : 1;
  o.progress = isatty(2);
  char *report = NULL;
  if (portc_tune(g, &o, b, &report) != PORTC_OK) {
    fprintf(stderr, "portc tune: %s\n", portc_last_error());
    rc = EXIT_FAIL;
  } else {
    fputs(report ? report : "", stdout);
  }
  free(report);
  portc_bindings_free(b);
  portc_graph_free(g);
  return rc;
}
