/*
 * cli.h: the verbs of the portc command. Each verb parses its own arguments and returns the
 * process exit code: 0 success, 1 failure, 2 usage error.
 */
#ifndef PORTC_TOOLS_CLI_H
#define PORTC_TOOLS_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "portc/portc.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_ops(int argc, char **argv);
int cmd_verify(int argc, char **argv);

bool is_help(const char *arg);
int usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* compile options shared by run, explain, bench and verify: --eager --dynamic --fullgraph
 * --mode M --dump DIR --dump-after PASS. Returns how many arguments it used at argv[i] (0: not a
 * compile option), or -1 after a usage error. */
int parse_compile_option(int argc, char **argv, int i, portc_compile_options *o);
extern const char compile_options_help[];
bool known_target(const char *name);
const char *target_names(void); /* ", cpu" ... for messages */

bool parse_u64(const char *s, uint64_t *out);

/* What run, explain and bench share: the graph file, -t TARGET, --set SYM=N, --input NAME=FILE,
 * --seed S, and the compile options. */
typedef struct graph_args {
  const char *path;
  const char *target; /* NULL: the verb's default */
  portc_compile_options co;
  char *sets[64], *inputs[64];
  int nsets, ninputs;
  bool seeded;
  uint64_t seed;
  bool several; /* set by the verb: -t may name several targets, comma-separated */
  portc_dtype autocast; /* --autocast f16|bf16: the graph is replaced by its autocast copy (F32: not) */
  int autocast_nodes;   /* set by open_graph: the nodes the copy changed */
} graph_args;
/* Takes argv[*i] (and its value, advancing *i) when it is one of those: returns 1; 0 when the
 * argument is the verb's own; -1 after a usage error. allow_ref: "-t ref" is accepted. */
int parse_graph_arg(const char *verb, int argc, char **argv, int *i, graph_args *a, bool allow_ref);
/* "f16", "bf16" or "off" (PORTC_F32) into *t; false for anything else */
bool parse_autocast(const char *v, portc_dtype *t);
/* loads ga->path (its autocast copy with --autocast) and binds its arguments; on failure prints
 * why, frees both and returns the exit code */
int open_graph(const char *verb, graph_args *ga, bool seeded, portc_graph **g, portc_bindings **b);
/* a module file (M.portc): loaded for ga->target (NULL or "ref": the first that runs here), with
 * bindings for its graph; as open_graph otherwise */
bool is_module_file(const char *path);
int open_module_file(const char *verb, const graph_args *ga, portc_module **m, portc_bindings **b);
int cmd_explain(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_export(int argc, char **argv);

/* an SVG chart of kernel rates against the device's peaks (chart.c) */
typedef struct chart_point {
  const char *series; /* "fused", "eager", "rules" */
  double bytes, flops, seconds;
} chart_point;
typedef struct chart {
  const char *title;
  double peak_gbps, peak_gflops; /* measured (0: unknown) */
  double peak_half_gflops;       /* a 16-bit matmul's, drawn as a second roof where measured (0: not) */
  const char *half_name;         /* its dtype: "f16" or "bf16" */
  const char *peak_how;
  const chart_point *p;
  int n;
} chart;
/* writes c as an SVG file a browser opens; false when the file cannot be written */
bool chart_write(const chart *c, const char *path);

/* a run's kernels as a Chrome trace (trace.c): per kernel its median time alone, bytes and FLOPs
 * (n entries each), and `portc explain`'s text for the names */
typedef struct trace {
  const char *graph, *target, *device, *explain;
  const double *seconds;
  const int64_t *bytes, *flops;
  int n;
} trace;
/* writes t as JSON that chrome://tracing and Perfetto open; false when the file cannot be written */
bool trace_write(const trace *t, const char *path);
/* s as a JSON string, quoted and escaped (cmd_bench.c) */
void json_string(FILE *f, const char *s);

/* one line of statistics: shape, min, max, mean, std, NaN and Inf counts */
void print_summary(FILE *f, const char *name, const portc_tensor *t, portc_dtype graph_dtype, const portc_dim *dims);

#endif
