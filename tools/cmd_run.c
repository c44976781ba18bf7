/*
 * cmd_run.c: `portc run G.ptg` evaluates a graph and prints a line of statistics per output,
 * optionally writing each output as NAME.npy. Inputs come from .npy files or a seed; symbols
 * come from --set or from the shapes of the given inputs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static const char *const help =
    "usage: portc run G.ptg [-t TARGET] [--input NAME=FILE.npy]... [--seed S] [--set SYM=N]...\n"
    "                 [--out DIR] [--f64] [COMPILE OPTIONS]\n"
    "       portc run M.portc [-t TARGET] [--input NAME=FILE.npy]... [--seed S] [--set SYM=N]... [--out DIR]\n"
    "\n"
    "Runs the graph and prints, for each output, its shape and min, max, mean and std. A module file\n"
    "(portc compile -o M.portc) runs its compiled kernels, for TARGET or the first of its targets that\n"
    "runs here, with no compiler; its parameters are in the file.\n"
    "\n"
    "  -t TARGET            where to run: ref (the float64 reference evaluator, the default) or a\n"
    "                       compiled target (portc devices lists them)\n"
    "  --input NAME=FILE    bind input or parameter NAME to a NumPy .npy file\n"
    "  --seed S             fill inputs and run-time parameters left unbound from seed S\n"
    "                       (floats uniform in [-1, 1), integers in [0, 8), bools 0/1)\n"
    "  --set SYM=N          give symbolic dimension SYM the value N\n"
    "  --out DIR            write each output to DIR/NAME.npy in the output's dtype (bf16 as f32)\n"
    "  --f64                with --out, write floating outputs as the unrounded float64 reference\n"
    "%s";

typedef struct run_opts {
  graph_args g;
  const char *out_dir;
  bool f64;
} run_opts;

static int parse_args(int argc, char **argv, run_opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (is_help(a)) {
      printf(help, compile_options_help);
      return -1;
    }
    int took = parse_graph_arg("run", argc, argv, &i, &o->g, true);
    if (took < 0) return EXIT_USAGE;
    if (took) continue;
    if (!strcmp(a, "--out")) {
      if (i + 1 >= argc) return usage_error("run", "--out needs a value");
      o->out_dir = argv[++i];
    } else if (!strcmp(a, "--f64")) {
      o->f64 = true;
    } else {
      return usage_error("run", "unknown option '%s'", a);
    }
  }
  if (!o->g.path) return usage_error("run", "no graph file given");
  return 0;
}

/* the output as it would be stored in its graph dtype */
static portc_tensor *rounded(const portc_tensor *t, portc_dtype dt) {
  if (t->dtype == dt) return NULL;
  portc_tensor *r = portc_tensor_new(dt, t->rank, t->shape);
  if (!r) return NULL;
  for (int64_t i = 0; i < portc_tensor_numel(t); i++) portc_tensor_set(r, i, portc_tensor_get(t, i));
  return r;
}

static int write_outputs(const portc_graph *g, portc_tensor **outs, const run_opts *o) {
  if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "portc run: cannot create %s: %s\n", o->out_dir, strerror(errno));
    return EXIT_FAIL;
  }
  for (int k = 0; k < portc_graph_output_count(g); k++) {
    portc_node n = portc_graph_output(g, k);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.npy", o->out_dir, portc_node_name(g, n));
    portc_tensor *r = o->f64 ? NULL : rounded(outs[k], portc_node_dtype(g, n));
    portc_status st = portc_tensor_save_npy(r ? r : outs[k], path);
    portc_tensor_free(r);
    if (st != PORTC_OK) {
      fprintf(stderr, "portc run: %s\n", portc_last_error());
      return EXIT_FAIL;
    }
    printf("wrote %s\n", path);
  }
  return EXIT_OK;
}

static portc_status run_graph(const portc_graph *g, portc_bindings *b, const run_opts *o, portc_tensor **outs) {
  if (!o->g.target || strcmp(o->g.target, "ref") == 0) return portc_reference_run(g, b, outs);
  portc_compile_options co = o->g.co;
  co.target = o->g.target;
  portc_module *m;
  portc_status st = portc_compile(g, &co, b, &m);
  if (st) return st;
  st = portc_module_run(m, b, outs);
  portc_module_free(m);
  return st;
}

int cmd_run(int argc, char **argv) {
  run_opts o = {0};
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc < 0 ? EXIT_OK : rc;
  portc_graph *g = NULL;
  const portc_graph *rg;
  portc_bindings *b;
  portc_module *file = NULL;
  if (is_module_file(o.g.path)) {
    if (o.f64) return usage_error("run", "--f64 is the reference's, and a module file runs its own target");
    if ((rc = open_module_file("run", &o.g, &file, &b))) return rc;
    rg = portc_module_graph(file);
  } else {
    if ((rc = open_graph("run", &o.g, o.g.seeded, &g, &b))) return rc;
    rg = g;
  }
  int nout = portc_graph_output_count(rg);
  portc_tensor **outs = calloc((size_t)nout + 1, sizeof *outs);
  if (!outs) {
    fprintf(stderr, "portc run: out of memory\n");
    rc = EXIT_FAIL;
  } else {
    if ((file ? portc_module_run(file, b, outs) : run_graph(g, b, &o, outs)) != PORTC_OK) {
      fprintf(stderr, "portc run: %s: %s\n", o.g.path, portc_last_error());
      if (!o.g.seeded && strstr(portc_last_error(), "has no value")) fprintf(stderr, "(give --input NAME=FILE.npy or --seed S)\n");
      rc = EXIT_FAIL;
    } else {
      for (int k = 0; k < nout; k++) {
        portc_node n = portc_graph_output(rg, k);
        portc_dim dims[PORTC_MAX_RANK];
        portc_node_shape(rg, n, dims);
        print_summary(stdout, portc_node_name(rg, n), outs[k], portc_node_dtype(rg, n), dims);
      }
      if (o.out_dir) rc = write_outputs(rg, outs, &o);
    }
  }
  for (int k = 0; outs && k < nout; k++) portc_tensor_free(outs[k]);
  free(outs);
  portc_bindings_free(b);
  portc_module_free(file);
  portc_graph_free(g);
  return rc;
}
