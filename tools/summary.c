/*
 * summary.c: the one-line statistics that `portc run` prints for each output, so a result can
 * be judged at a glance without opening the .npy file.
 */
#include <math.h>

#include "cli.h"

void print_summary(FILE *f, const char *name, const portc_tensor *t, portc_dtype graph_dtype, const portc_dim *dims) {
  int64_t n = portc_tensor_numel(t), nan = 0, inf = 0, finite = 0;
  double lo = INFINITY, hi = -INFINITY, sum = 0, sq = 0;
  for (int64_t i = 0; i < n; i++) {
    double v = portc_tensor_get(t, i);
    if (isnan(v)) nan++;
    else if (isinf(v)) inf++;
    if (isnan(v)) continue;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    if (isinf(v)) continue;
    finite++;
    sum += v;
    sq += v * v;
  }
  fprintf(f, "%s: %s[", name, portc_dtype_name(graph_dtype));
  for (int i = 0; i < t->rank; i++) {
    fprintf(f, "%s", i ? ", " : "");
    if (dims && dims[i].symbol) fprintf(f, "%s=", dims[i].symbol);
    fprintf(f, "%lld", (long long)t->shape[i]);
  }
  fprintf(f, "]");
  if (n == 0) {
    fprintf(f, "  (empty)\n");
    return;
  }
  double mean = finite ? sum / (double)finite : NAN;
  double var = finite ? sq / (double)finite - mean * mean : NAN;
  fprintf(f, "  min %.6g  max %.6g  mean %.6g  std %.6g", lo, hi, mean, sqrt(var > 0 ? var : 0));
  if (nan || inf) fprintf(f, "  nan %lld  inf %lld", (long long)nan, (long long)inf);
  fprintf(f, "\n");
}
