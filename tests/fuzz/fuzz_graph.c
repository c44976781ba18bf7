/*
 * fuzz_graph.c: libFuzzer target for the C API's graph builder and the compiler behind it. The
 * input bytes are a program: inputs of random dtypes and small shapes, then up to 24 ops through
 * portc_op with attributes written from the bytes (extreme values included), then outputs.
 * Checked for every input:
 *   - a refused op returns a failure with a message, and the graph stays usable;
 *   - a graph the builder accepted verifies, prints to text that parses to the same hash;
 *   - the reference evaluator runs it or refuses with a message;
 *   - the compiler lowers it (fused and eager) and renders the CPU target's C, or refuses with
 *     a message: never a crash, a leak or a sanitizer report.
 * With PORTC_FUZZ_CPU=1 each graph the reference ran is also compiled by the system C compiler
 * and run on the CPU target, and its outputs must match the reference within the conformance
 * suite's bounds, unless an op jumps at a rounding boundary (floor, comparisons, casts to
 * integers: then it must only run). Slow: one compile per input (tests/fuzz/README.md).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portc/portc.h"
#include "../../codegen/emit.h"
#include "../../conformance/conformance.h"
#include "../../cpu/cpu.h"
#include "../../lower/pipeline.h"

typedef struct reader {
  const uint8_t *p;
  size_t n;
} reader;

static unsigned take(reader *r) {
  if (!r->n) return 0;
  r->n--;
  return *r->p++;
}

/* a small integer mostly, an extreme one sometimes */
static long long take_int(reader *r) {
  unsigned b = take(r);
  switch (b >> 5) {
  case 0: return -(long long)(b & 7);
  case 1: return (long long)INT64_MAX - (b & 3);
  case 2: return 1LL << (b & 63);
  default: return b & 7;
  }
}

static const char *const unary[] = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "relu",
                                    "gelu", "silu", "erf", "sin", "cos", "floor", "ceil", "sign", "not"};
static const char *const binary[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "and", "or"};
static const char *const reduce[] = {"sum", "mean", "max", "min", "prod"};
static const portc_dtype dtypes[] = {PORTC_F32, PORTC_F32, PORTC_F32, PORTC_I32, PORTC_F16, PORTC_BOOL, PORTC_I64, PORTC_F64};

enum { MAX_NODES = 40 };

/* a list attribute "[a, b, ...]" of n values from the bytes */
static void int_list(reader *r, int n, char *out, size_t len) {
  size_t at = (size_t)snprintf(out, len, "[");
  for (int i = 0; i < n && at < len; i++) at += (size_t)snprintf(out + at, len - at, "%s%lld", i ? ", " : "", take_int(r));
  if (at < len) snprintf(out + at, len - at, "]");
}

/* one op from the bytes on the nodes so far; its node, or a failure */
static portc_node add_op(portc_graph *g, reader *r, const portc_node *nodes, int n) {
  portc_node a = nodes[take(r) % n], b = nodes[take(r) % n], c = nodes[take(r) % n];
  portc_node in[3] = {a, b, c};
  char attrs[256] = "", list[160];
  unsigned kind = take(r) % 16;
  switch (kind) {
  case 0: case 1: case 2: return portc_op(g, unary[take(r) % (sizeof unary / sizeof *unary)], 1, in, "");
  case 3: case 4: case 5: return portc_op(g, binary[take(r) % (sizeof binary / sizeof *binary)], 2, in, "");
  case 6:
    int_list(r, (int)(take(r) % 3), list, sizeof list);
    snprintf(attrs, sizeof attrs, "axes=%s, keepdim=%s", list, take(r) & 1 ? "true" : "false");
    return portc_op(g, reduce[take(r) % (sizeof reduce / sizeof *reduce)], 1, in, attrs);
  case 7: return portc_op(g, "matmul", 2, in, "");
  case 8: return portc_op(g, "where", 3, (portc_node[]){portc_op(g, "gt", 2, in, ""), b, c}, "");
  case 9: {
    static const char *const to[] = {"f32", "f16", "i32", "i64", "bool", "bf16", "f64"};
    snprintf(attrs, sizeof attrs, "to=%s", to[take(r) % 7]);
    return portc_op(g, "cast", 1, in, attrs);
  }
  case 10:
    int_list(r, (int)(take(r) % 4), list, sizeof list);
    snprintf(attrs, sizeof attrs, "shape=%s", list);
    return portc_op(g, take(r) & 1 ? "reshape" : "expand", 1, in, attrs);
  case 11:
    int_list(r, (int)(take(r) % 4), list, sizeof list);
    snprintf(attrs, sizeof attrs, "perm=%s", list);
    return portc_op(g, "permute", 1, in, attrs);
  case 12:
    snprintf(attrs, sizeof attrs, "axis=%lld, start=%lld, stop=%lld, step=%lld", take_int(r), take_int(r), take_int(r), take_int(r));
    return portc_op(g, "slice", 1, in, attrs);
  case 13:
    snprintf(attrs, sizeof attrs, "axis=%lld", take_int(r));
    return portc_op(g, "concat", 1 + (int)(take(r) % 3), in, attrs);
  case 14:
    int_list(r, 2 * (int)(take(r) % 3), list, sizeof list);
    snprintf(attrs, sizeof attrs, "pads=%s, value=%d", list, (int)take(r) - 128);
    return portc_op(g, "pad", 1, in, attrs);
  default: {
    static const char *const comp[] = {"softmax", "log_softmax", "layer_norm", "rms_norm", "argmax", "causal_mask", "gather", "attention"};
    const char *op = comp[take(r) % 8];
    int k = strcmp(op, "gather") == 0 ? 2 : strcmp(op, "attention") == 0 ? 3 : 1;
    if (strcmp(op, "softmax") == 0 || strcmp(op, "log_softmax") == 0 || strcmp(op, "argmax") == 0 || strcmp(op, "gather") == 0)
      snprintf(attrs, sizeof attrs, "axis=%lld", take_int(r));
    return portc_op(g, op, k, in, attrs);
  }
  }
}

/* elements of a node's shape with the symbol N = 3; -1 when more than 4096 (which bounds the
 * reference's work: an attention or a matmul of operands that size stays under 2^24 steps) */
static int64_t node_elements(const portc_graph *g, portc_node n) {
  portc_dim d[PORTC_MAX_RANK];
  portc_node_shape(g, n, d);
  int64_t e = 1;
  for (int i = 0; i < portc_node_rank(g, n); i++) {
    int64_t v = d[i].symbol ? 3 : d[i].size;
    if (v > 4096 || (e *= v) > 4096) return -1;
  }
  return e;
}

static void lower_and_render(const portc_graph *g, bool eager) {
  int64_t symvals[8] = {3, 3, 3, 3, 3, 3, 3, 3};
  lower_options lo = {.eager = eager, .symvals = symvals};
  kir_module *km = NULL;
  if (lower_graph(g, &lo, &km) != PORTC_OK) {
    if (km || !*portc_last_error()) abort();
    return;
  }
  for (int i = 0; i < km->nk; i++) cpu_schedule(km, i, -1);
  char *src = emit_module(&cpu_dialect, km);
  if (!src && !*portc_last_error()) abort();
  free(src);
  kir_module_free(km);
}

/* whether an op of the graph jumps where its input crosses a rounding boundary (floor, a
 * comparison, a cast to an integer, ...): the CPU target's f32 or f16 and the reference's f64 may
 * then land on different sides, so such graphs must run on both but are not compared */
static bool discontinuous(const portc_graph *g) {
  static const char *const jumps[] = {"floor", "ceil", "sign", "eq", "ne", "lt", "le", "gt", "ge", "argmax", "cast", "pow", "not", "and", "or"};
  for (int i = 0; i < portc_graph_node_count(g); i++)
    for (size_t k = 0; k < sizeof jumps / sizeof *jumps; k++)
      if (strcmp(portc_node_op(g, i), jumps[k]) == 0) return true;
  return false;
}

static void run_on_cpu(const portc_graph *g, portc_bindings *b, portc_tensor **refs, int nout) {
  portc_compile_options o = PORTC_COMPILE_OPTIONS_INIT;
  o.target = "cpu";
  portc_module *m = NULL;
  portc_tensor *outs[8] = {0};
  if (portc_compile(g, &o, b, &m) != PORTC_OK || portc_module_run(m, b, outs) != PORTC_OK) {
    char *text = portc_graph_print(g);
    fprintf(stderr, "the reference ran the graph, the cpu target refused it: %s\n%s", portc_last_error(), text ? text : "");
    abort();
  }
  tolerance t;
  conf_tolerance(g, b, "cpu", false, &t);
  double scale = conf_input_scale(g, b);
  bool compare = !discontinuous(g);
  for (int k = 0; k < nout; k++) {
    char msg[512];
    if (compare && !conf_compare(outs[k], refs[k], &t, scale, msg, sizeof msg)) {
      char *text = portc_graph_print(g);
      fprintf(stderr, "output %d: cpu and reference differ: %s\n%s", k, msg, text ? text : "");
      abort();
    }
    portc_tensor_free(outs[k]);
  }
  portc_module_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = {data, size};
  portc_graph *g = portc_graph_new("fuzz");
  if (!g) return 0;
  portc_node nodes[MAX_NODES];
  int n = 0;
  int inputs = 1 + (int)(take(&r) % 3);
  for (int i = 0; i < inputs; i++) {
    portc_dim d[4];
    int rank = (int)(take(&r) % 4);
    for (int k = 0; k < rank; k++) {
      unsigned v = take(&r);
      d[k] = v % 7 == 0 ? (portc_dim){.symbol = "N"} : (portc_dim){.size = 1 + v % 4};
    }
    char name[8];
    snprintf(name, sizeof name, "x%d", i);
    portc_node x = portc_input(g, name, dtypes[take(&r) % 8], rank, d);
    if (x < 0) {
      if (!*portc_last_error()) abort();
      continue;
    }
    nodes[n++] = x;
  }
  for (int i = 0; n && n < MAX_NODES && r.n && i < 24; i++) {
    portc_node y = add_op(g, &r, nodes, n);
    if (y < 0) {
      if (!*portc_last_error()) abort();
      continue;
    }
    nodes[n++] = y;
  }
  if (!n) { /* no input was accepted: nothing to check past the builder's messages */
    portc_graph_free(g);
    return 0;
  }
  portc_output(g, nodes[n - 1]);
  if (n > 1 && (take(&r) & 1)) portc_output(g, nodes[take(&r) % (unsigned)(n - 1)]);
  char *report = NULL;
  if (portc_graph_verify(g, &report) != PORTC_OK) {
    fprintf(stderr, "the builder accepted a graph that does not verify:\n%s\n", report ? report : "");
    abort();
  }
  free(report);
  char *text = portc_graph_print(g);
  portc_graph *again = NULL;
  if (!text || portc_graph_parse(text, "printed", &again) != PORTC_OK || portc_graph_hash(again) != portc_graph_hash(g)) {
    fprintf(stderr, "print and parse do not round-trip: %s\n%s", portc_last_error(), text ? text : "");
    abort();
  }
  free(text);
  portc_graph_free(again);

  bool small = portc_graph_output_count(g) > 0;
  for (int i = 0; i < portc_graph_node_count(g) && small; i++) small = node_elements(g, i) >= 0;
  if (small) {
    lower_and_render(g, false);
    lower_and_render(g, true);
    portc_bindings *b = portc_bindings_new(g);
    portc_tensor *refs[8] = {0};
    int nout = portc_graph_output_count(g);
    portc_bindings_set_symbol(b, "N", 3);
    portc_bindings_set_seed(b, 1);
    portc_status st = portc_reference_run(g, b, refs);
    if (st != PORTC_OK && !*portc_last_error()) abort();
    static int cpu = -1;
    if (cpu < 0) cpu = getenv("PORTC_FUZZ_CPU") && atoi(getenv("PORTC_FUZZ_CPU")) > 0;
    if (st == PORTC_OK && cpu) run_on_cpu(g, b, refs, nout);
    for (int k = 0; k < nout && st == PORTC_OK; k++) portc_tensor_free(refs[k]);
    portc_bindings_free(b);
  }
  portc_graph_free(g);
  return 0;
}
