/*
 * load_bind.c: what run, explain and bench share: load a graph (or a module file), and bind
 * --set symbols, --input files and --seed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

bool parse_u64(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || *s == '-') return false;
  *out = v;
  return true;
}

/* binds --set SYM=N, --input NAME=FILE.npy and --seed; an exit code */
static int bind_args(const char *verb, portc_bindings *b, char *const *sets, int nsets, char *const *inputs, int ninputs, bool seeded,
                     uint64_t seed) {
  for (int i = 0; i < nsets; i++) {
    char name[128];
    const char *eq = strchr(sets[i], '=');
    snprintf(name, sizeof name, "%.*s", (int)(eq - sets[i]), sets[i]);
    uint64_t v;
    if (!parse_u64(eq + 1, &v)) return usage_error(verb, "--set %s: '%s' is not a size", name, eq + 1);
    if (portc_bindings_set_symbol(b, name, (int64_t)v) != PORTC_OK) {
      fprintf(stderr, "portc %s: --set %s: %s\n", verb, name, portc_last_error());
      return EXIT_FAIL;
    }
  }
  for (int i = 0; i < ninputs; i++) {
    char name[128];
    const char *eq = strchr(inputs[i], '=');
    snprintf(name, sizeof name, "%.*s", (int)(eq - inputs[i]), inputs[i]);
    portc_tensor *t;
    if (portc_tensor_load_npy(eq + 1, &t) != PORTC_OK) {
      fprintf(stderr, "portc %s: --input %s: %s\n", verb, name, portc_last_error());
      return EXIT_FAIL;
    }
    portc_status st = portc_bindings_set(b, name, t);
    portc_tensor_free(t);
    if (st != PORTC_OK) {
      fprintf(stderr, "portc %s: --input %s: %s\n", verb, name, portc_last_error());
      return EXIT_FAIL;
    }
  }
  if (seeded) portc_bindings_set_seed(b, seed);
  return EXIT_OK;
}

int open_graph(const char *verb, graph_args *ga, bool seeded, portc_graph **g, portc_bindings **b) {
  *b = NULL;
  if (portc_graph_load(ga->path, g) != PORTC_OK) {
    fprintf(stderr, "%s\n", portc_last_error());
    return EXIT_FAIL;
  }
  if (ga->autocast != PORTC_F32) {
    portc_graph *copy;
    portc_status st = portc_graph_autocast_copy(*g, ga->autocast, &copy, &ga->autocast_nodes);
    portc_graph_free(*g);
    *g = copy;
    if (st) {
      fprintf(stderr, "portc %s: --autocast: %s\n", verb, portc_last_error());
      return EXIT_FAIL;
    }
  }
  if (!(*b = portc_bindings_new(*g))) {
    fprintf(stderr, "portc %s: %s\n", verb, portc_last_error());
    portc_graph_free(*g);
    return EXIT_FAIL;
  }
  int rc = bind_args(verb, *b, ga->sets, ga->nsets, ga->inputs, ga->ninputs, seeded, ga->seed);
  if (rc) {
    portc_bindings_free(*b);
    portc_graph_free(*g);
  }
  return rc;
}

bool is_module_file(const char *path) {
  size_t n = strlen(path);
  return n > 6 && !strcmp(path + n - 6, ".portc");
}

int open_module_file(const char *verb, const graph_args *ga, portc_module **m, portc_bindings **b) {
  *b = NULL;
  if (ga->autocast != PORTC_F32) return usage_error(verb, "--autocast changes a graph; %s is a compiled module", ga->path);
  const char *t = ga->target && strcmp(ga->target, "ref") ? ga->target : NULL;
  if (portc_module_load(ga->path, t, m) != PORTC_OK) {
    fprintf(stderr, "portc %s: %s\n", verb, portc_last_error());
    return EXIT_FAIL;
  }
  if (!(*b = portc_bindings_new(portc_module_graph(*m)))) {
    fprintf(stderr, "portc %s: %s\n", verb, portc_last_error());
    portc_module_free(*m);
    return EXIT_FAIL;
  }
  int rc = bind_args(verb, *b, ga->sets, ga->nsets, ga->inputs, ga->ninputs, ga->seeded, ga->seed);
  if (rc) {
    portc_bindings_free(*b);
    portc_module_free(*m);
  }
  return rc;
}
