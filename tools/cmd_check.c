/*
 * cmd_check.c: `portc check G.ptg` parses and verifies a graph, then prints its normalized text,
 * which is also the way to format a .ptg file. `portc ops` lists the op table.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *const help =
    "usage: portc check G.ptg [--quiet]\n"
    "\n"
    "Parses and verifies G.ptg. On success prints the normalized graph (every value with its\n"
    "inferred type) and a line with the node count and structural hash; with --quiet only that\n"
    "line. On failure prints every problem with its line and column and exits 1.\n";

int cmd_check(int argc, char **argv) {
  const char *path = NULL;
  bool quiet = false;
  for (int i = 1; i < argc; i++) {
    if (is_help(argv[i])) {
      fputs(help, stdout);
      return EXIT_OK;
    }
    if (strcmp(argv[i], "--quiet") == 0) quiet = true;
    else if (argv[i][0] == '-') return usage_error("check", "unknown option '%s'", argv[i]);
    else if (path) return usage_error("check", "one graph at a time ('%s' and '%s')", path, argv[i]);
    else path = argv[i];
  }
  if (!path) return usage_error("check", "no graph file given");
  portc_graph *g;
  if (portc_graph_load(path, &g) != PORTC_OK) {
    fprintf(stderr, "%s\n", portc_last_error());
    return EXIT_FAIL;
  }
  char *report = NULL;
  if (portc_graph_verify(g, &report) != PORTC_OK) {
    fprintf(stderr, "%s: %s", path, report ? report : portc_last_error());
    free(report);
    portc_graph_free(g);
    return EXIT_FAIL;
  }
  if (!quiet) {
    char *text = portc_graph_print(g);
    fputs(text ? text : "", stdout);
    free(text);
  }
  printf("# ok: %s, %d nodes, %d outputs, hash %016llx\n", portc_graph_name(g), portc_graph_node_count(g),
         portc_graph_output_count(g), (unsigned long long)portc_graph_hash(g));
  portc_graph_free(g);
  return EXIT_OK;
}

int cmd_ops(int argc, char **argv) {
  if (argc > 1 && is_help(argv[1])) {
    fputs("usage: portc ops\n\nLists every op with its input count, kind and attributes (NAME:KIND=DEFAULT).\n", stdout);
    return EXIT_OK;
  }
  if (argc > 1) return usage_error("ops", "takes no arguments");
  char *table = portc_ops_describe();
  if (!table) {
    fprintf(stderr, "portc ops: %s\n", portc_last_error());
    return EXIT_FAIL;
  }
  fputs(table, stdout);
  free(table);
  return EXIT_OK;
}
