/*
 * onnx_compare.c: runs an ONNX model on a target against PyTorch's own outputs.
 *
 *   onnx_compare MODEL.onnx TARGET [--explain] [--autocast f16|bf16] X1.npy Y1.npy [X2.npy Y2.npy ...]
 *
 * The model is compiled once, with its symbols kept symbolic (a dynamic batch), and that one
 * module runs every input; each output is compared with what PyTorch computed for it, under the
 * bounds of conformance/TOLERANCES.md ("Imported models against PyTorch"): every element within
 * atol + rtol*|ref| with atol = 1e-4 * max|ref|, rtol = 1e-3, and the relative norm of the error
 * under 1e-4. With --autocast, the model's mixed-precision copy (portc_graph_autocast_copy) runs,
 * under that section's autocast bounds (1e-2 for f16, 6e-2 for bf16, in place of 1e-4). Exit 0
 * when every pair matches.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portc/portc.h"

/* the relative norm bound of the comparison; each element within bound * max|ref| + 10 bound * |ref| */
static double NORM_BOUND = 1e-4;

static bool compare(const portc_tensor *out, const portc_tensor *ref, const char *what) {
  const double RTOL = 10 * NORM_BOUND, ATOL_SHARE = NORM_BOUND;
  if (out->rank != ref->rank || portc_tensor_numel(out) != portc_tensor_numel(ref)) {
    printf("  %s: shape differs (rank %d / %d, %lld / %lld elements)\n", what, out->rank, ref->rank, (long long)portc_tensor_numel(out),
           (long long)portc_tensor_numel(ref));
    return false;
  }
  int64_t n = portc_tensor_numel(ref), worst = 0, bad = 0;
  double amax = 0, err2 = 0, ref2 = 0, worst_excess = -1;
  for (int64_t i = 0; i < n; i++) amax = fmax(amax, fabs(portc_tensor_get(ref, i)));
  double atol = ATOL_SHARE * amax;
  for (int64_t i = 0; i < n; i++) {
    double o = portc_tensor_get(out, i), r = portc_tensor_get(ref, i), e = fabs(o - r);
    if (!(e <= atol + RTOL * fabs(r))) bad++;
    double excess = isnan(e) ? INFINITY : e / (atol + RTOL * fabs(r));
    if (excess > worst_excess) worst_excess = excess, worst = i;
    err2 += (o - r) * (o - r), ref2 += r * r;
  }
  double norm = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
  bool ok = !bad && norm <= NORM_BOUND;
  printf("  %s: %s  %lld elements, max|ref| %.4g, rel. norm %.3g (bound %.0e), %lld outside atol+rtol; worst [%lld] %.8g vs %.8g\n", what,
         ok ? "PASS" : "FAIL", (long long)n, amax, norm, NORM_BOUND, (long long)bad, (long long)worst, portc_tensor_get(out, worst),
         portc_tensor_get(ref, worst));
  return ok;
}

int main(int argc, char **argv) {
  static const char usage[] = "usage: onnx_compare MODEL.onnx TARGET [--explain] [--autocast f16|bf16] X1.npy Y1.npy [X2.npy Y2.npy ...]\n";
  if (argc < 5) return fputs(usage, stderr), 2;
  bool explain = false;
  portc_dtype autocast = PORTC_F32;
  int first = 3;
  for (; first < argc && !strncmp(argv[first], "--", 2); first++) {
    if (!strcmp(argv[first], "--explain")) explain = true;
    else if (!strcmp(argv[first], "--autocast") && first + 1 < argc && (!strcmp(argv[first + 1], "f16") || !strcmp(argv[first + 1], "bf16")))
      autocast = !strcmp(argv[++first], "f16") ? PORTC_F16 : PORTC_BF16;
    else return fputs(usage, stderr), 2;
  }
  if (first == argc || (argc - first) % 2) {
    fprintf(stderr, "onnx_compare: inputs and references come in pairs\n");
    return 2;
  }
  portc_graph *g;
  if (portc_graph_from_onnx(argv[1], &g) != PORTC_OK) {
    printf("%s\n", portc_last_error());
    return 1;
  }
  if (autocast != PORTC_F32) {
    portc_graph *copy;
    int n = 0;
    portc_status st = portc_graph_autocast_copy(g, autocast, &copy, &n);
    portc_graph_free(g);
    if (st) return printf("%s: autocast: %s\n", argv[1], portc_last_error()), 1;
    g = copy;
    NORM_BOUND = autocast == PORTC_F16 ? 1e-2 : 6e-2;
    printf("%s: autocast %s: %d matmul, conv2d and attention nodes compute in it\n", argv[1], portc_dtype_name(autocast), n);
  }
  if (portc_graph_input_count(g) != 1 || portc_graph_output_count(g) != 1) {
    printf("onnx_compare: %s has %d inputs and %d outputs; it compares one of each\n", argv[1], portc_graph_input_count(g), portc_graph_output_count(g));
    portc_graph_free(g);
    return 1;
  }
  const char *in_name = portc_node_name(g, portc_graph_input(g, 0));
  portc_compile_options o = {.target = argv[2], .dynamic = true};
  portc_module *m = NULL;
  int failures = 0;
  if (portc_compile(g, &o, NULL, &m) != PORTC_OK) {
    printf("%s: compile for %s: %s\n", argv[1], argv[2], portc_last_error());
    portc_graph_free(g);
    return 1;
  }
  if (explain) {
    char *e = portc_module_explain(m, NULL);
    printf("%s", e ? e : "");
    free(e);
  }
  for (int k = first; k < argc; k += 2) {
    portc_tensor *x = NULL, *ref = NULL, *out[1] = {NULL};
    portc_bindings *b = portc_bindings_new(g);
    char what[512];
    snprintf(what, sizeof what, "%s on %s, input %s", argv[1], argv[2], argv[k]);
    if (portc_tensor_load_npy(argv[k], &x) || portc_tensor_load_npy(argv[k + 1], &ref) || !b || portc_bindings_set(b, in_name, x) ||
        portc_module_run(m, b, out)) {
      printf("  %s: FAIL %s\n", what, portc_last_error());
      failures++;
    } else if (!compare(out[0], ref, what)) {
      failures++;
    }
    portc_tensor_free(x), portc_tensor_free(ref), portc_tensor_free(out[0]);
    portc_bindings_free(b);
  }
  portc_module_free(m);
  portc_graph_free(g);
  return failures ? 1 : 0;
}
