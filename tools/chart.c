/*
 * chart.c: `portc bench --chart FILE.svg`: one point per kernel per series (fused, eager, the
 * untuned rules) in two panels a browser shows without anything else: on the left a roofline,
 * GFLOP/s against arithmetic intensity (FLOPs per byte, both axes logarithmic) under the
 * device's measured bandwidth and FLOP rate (and, dashed, a 16-bit matmul's where the graph
 * computes in f16 or bf16: tensor cores run those far faster than f32); on the right every kernel's GB/s against the bytes
 * it moves, under the measured bandwidth (kernels that compute nothing appear only there).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

enum { W = 1100, H = 480, PW = 460, PH = 360, TOP = 60, LEFT1 = 80, LEFT2 = 620 };

static const struct { const char *name, *color; } series[] = {{"fused", "#1f77b4"}, {"eager", "#ff7f0e"}, {"rules", "#2ca02c"}};

static const char *color_of(const char *s) {
  for (size_t i = 0; i < sizeof series / sizeof *series; i++)
    if (strcmp(series[i].name, s) == 0) return series[i].color;
  return "#7f7f7f";
}

typedef struct axis {
  double lo, hi; /* log10 of the range */
  bool log;
} axis;

static double place(const axis *a, double v, double px) {
  double x = a->log ? log10(v > 0 ? v : 1e-30) : v;
  double f = (x - a->lo) / (a->hi - a->lo);
  return (f < 0 ? 0 : f > 1 ? 1 : f) * px;
}

/* a log axis that holds [lo, hi] with whole decades */
static axis log_axis(double lo, double hi) {
  if (!(lo > 0)) lo = 1e-3;
  if (!(hi > lo)) hi = lo * 10;
  return (axis){floor(log10(lo)), ceil(log10(hi)), true};
}

static void frame(FILE *f, int left, const axis *x, const axis *y, const char *xlabel, const char *ylabel) {
  fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#444'/>\n", left, TOP, PW, PH);
  for (double d = x->lo; d <= x->hi + 1e-9; d += 1) {
    double px = left + place(x, pow(10, d), PW);
    fprintf(f, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#ddd'/><text x='%.1f' y='%d' font-size='11' text-anchor='middle'>1e%g</text>\n",
            px, TOP, px, TOP + PH, px, TOP + PH + 16, d);
  }
  for (double d = y->lo; d <= y->hi + 1e-9; d += y->log ? 1 : (y->hi - y->lo) / 5) {
    double v = y->log ? pow(10, d) : d, py = TOP + PH - place(y, v, PH);
    fprintf(f, "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#ddd'/><text x='%d' y='%.1f' font-size='11' text-anchor='end'>%.3g</text>\n",
            left, py, left + PW, py, left - 4, py + 4, v);
  }
  fprintf(f, "<text x='%d' y='%d' font-size='12' text-anchor='middle'>%s</text>\n", left + PW / 2, TOP + PH + 34, xlabel);
  fprintf(f, "<text x='%d' y='%d' font-size='12' text-anchor='middle' transform='rotate(-90 %d %d)'>%s</text>\n", left - 52, TOP + PH / 2,
          left - 52, TOP + PH / 2, ylabel);
}

bool chart_write(const chart *c, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return false;
  double imin = 1e30, imax = 0, gmin = 1e30, gmax = 0, bmin = 1e30, bmax = 0, bwmax = c->peak_gbps;
  for (int i = 0; i < c->n; i++) {
    const chart_point *p = &c->p[i];
    if (p->seconds <= 0 || p->bytes <= 0) continue;
    double gbps = p->bytes / p->seconds / 1e9;
    bmin = fmin(bmin, p->bytes), bmax = fmax(bmax, p->bytes), bwmax = fmax(bwmax, gbps);
    if (p->flops <= 0) continue;
    double in = p->flops / p->bytes, gf = p->flops / p->seconds / 1e9;
    imin = fmin(imin, in), imax = fmax(imax, in), gmin = fmin(gmin, gf), gmax = fmax(gmax, gf);
  }
  gmax = fmax(gmax, fmax(c->peak_gflops, c->peak_half_gflops));
  axis xi = log_axis(fmin(imin, 0.1), fmax(imax, 100)), yg = log_axis(fmin(gmin, 1), gmax * 1.5);
  axis xb = log_axis(bmin, bmax), yb = {0, bwmax > 0 ? bwmax * 1.1 : 1, false};
  fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-family='sans-serif'>\n<rect width='100%%' height='100%%' fill='white'/>\n", W, H);
  fprintf(f, "<text x='%d' y='24' font-size='15' text-anchor='middle'>%s</text>\n", W / 2, c->title);
  char half[96] = "";
  if (c->peak_half_gflops > 0) snprintf(half, sizeof half, " (%s matmuls: %.1f, the dashed roof)", c->half_name, c->peak_half_gflops);
  fprintf(f, "<text x='%d' y='42' font-size='11' text-anchor='middle'>peaks measured by portc on this device: %.1f GB/s, %.1f GFLOP/s%s (%s)</text>\n",
          W / 2, c->peak_gbps, c->peak_gflops, half, c->peak_how ? c->peak_how : "");
  frame(f, LEFT1, &xi, &yg, "FLOPs per byte", "GFLOP/s");
  frame(f, LEFT2, &xb, &yb, "bytes moved by the kernel", "GB/s");
  for (int r = 0; r < 2 && c->peak_gbps > 0; r++) { /* the rooflines: min(peak bandwidth x intensity, peak FLOP rate) */
    const double top = r ? c->peak_half_gflops : c->peak_gflops;
    if (top <= 0) continue;
    fprintf(f, "<polyline fill='none' stroke='#000' stroke-width='1.5'%s points='", r ? " stroke-dasharray='6 4'" : "");
    for (int s = 0; s <= 100; s++) {
      double in = pow(10, xi.lo + (xi.hi - xi.lo) * s / 100.0), roof = fmin(c->peak_gbps * in, top);
      fprintf(f, "%.1f,%.1f ", LEFT1 + place(&xi, in, PW), TOP + PH - place(&yg, roof, PH));
    }
    fprintf(f, "'/>\n");
  }
  if (c->peak_gbps > 0) {
    double py = TOP + PH - place(&yb, c->peak_gbps, PH);
    fprintf(f, "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#000' stroke-width='1.5'/>\n", LEFT2, py, LEFT2 + PW, py);
  }
  for (int i = 0; i < c->n; i++) {
    const chart_point *p = &c->p[i];
    if (p->seconds <= 0 || p->bytes <= 0) continue;
    const char *col = color_of(p->series);
    double gbps = p->bytes / p->seconds / 1e9;
    fprintf(f, "<circle cx='%.1f' cy='%.1f' r='4' fill='%s' fill-opacity='0.7'><title>%s: %.3g bytes, %.1f GB/s, %.3f ms</title></circle>\n",
            LEFT2 + place(&xb, p->bytes, PW), TOP + PH - place(&yb, gbps, PH), col, p->series, p->bytes, gbps, p->seconds * 1e3);
    if (p->flops <= 0) continue;
    double in = p->flops / p->bytes, gf = p->flops / p->seconds / 1e9;
    fprintf(f, "<circle cx='%.1f' cy='%.1f' r='4' fill='%s' fill-opacity='0.7'><title>%s: %.3g FLOPs per byte, %.1f GFLOP/s, %.3f ms</title></circle>\n",
            LEFT1 + place(&xi, in, PW), TOP + PH - place(&yg, gf, PH), col, p->series, in, gf, p->seconds * 1e3);
  }
  for (size_t s = 0; s < sizeof series / sizeof *series; s++)
    fprintf(f, "<circle cx='%d' cy='%d' r='5' fill='%s'/><text x='%d' y='%d' font-size='12'>%s</text>\n", LEFT1 + 20 + 110 * (int)s, H - 14,
            series[s].color, LEFT1 + 30 + 110 * (int)s, H - 10, series[s].name);
  fprintf(f, "</svg>\n");
  return fclose(f) == 0;
}
