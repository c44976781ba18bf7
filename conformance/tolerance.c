/*
 * tolerance.c: the bounds a target's result must meet, derived from the graph: which ops it
 * computes (each with its documented error in ulps of the f32 compute type), how many times a
 * value can be rounded to its storage dtype on the way, and how long its reductions are. The
 * numbers and their sources are in TOLERANCES.md; this file is that table as code.
 */
#include <math.h>
#include <string.h>

#include "../ir/bindings.h"
#include "../ir/dtype.h"
#include "conformance.h"

static const double U_COMPUTE = 0x1p-24; /* f32: every float op computes in f32 */

/* Vulkan: the SPIR-V precision table of the Vulkan specification for the built-ins portc uses
 * (division 2.5 ulp, inversesqrt 2 ulp, sqrt inherited from 1/inversesqrt), and portc's own
 * functions for the rest (vulkan/prelude.h), per TOLERANCES.md; NAN when the op has no entry */
static double vulkan_ulps(enum op op) {
  switch (op) {
  case OP_div: case OP_reciprocal: return 3;
  case OP_sqrt: return 5;
  case OP_rsqrt: return 2;
  case OP_exp: return 2;
  case OP_log: case OP_sin: case OP_cos: return 4;
  case OP_tanh: return 8;
  case OP_pow: return 32;
  case OP_erf: case OP_gelu: return 12;
  case OP_gelu_tanh: return 16;
  case OP_sigmoid: case OP_silu: return 6;
  case OP_mean: return 3;
  case OP_softmax: case OP_log_softmax: return 10;
  case OP_layer_norm: case OP_rms_norm: return 12;
  case OP_attention: return 16;
  default: return NAN;
  }
}

/* Vulkan, in a graph with f16 or bf16 values: a kernel whose floats are all stored in 16 bits
 * computes exp as the device's exp2 of x log2(e) (pc_exp16): 3 + 2|t| ulp by the specification
 * plus |t| ln 2 for rounding t = x log2(e), |t| <= 150 where the result is a nonzero finite f32;
 * every exp of such a graph is counted so (conservative for its f32 kernels). 408 ulps of f32
 * are a twentieth of an f16 ulp, so the bound still rests on the 16-bit roundings. */
static double vulkan_exp16_ulps(enum op op) {
  switch (op) {
  case OP_exp: case OP_sigmoid: case OP_silu: case OP_softmax: case OP_log_softmax: case OP_attention: return 3 + 2.7 * 150;
  default: return 0;
  }
}

/* CUDA: the CUDA C++ Programming Guide's maximum ulp errors of the single-precision functions
 * (default flags), row kernels' division by a row-invariant value as a multiply by the
 * reciprocal, and f32 matmuls as three TF32 products on Hopper; every op not listed is within
 * the CPU's entry (TOLERANCES.md) */
static double cuda_ulps(enum op op) { return op == OP_pow ? 5 : op == OP_div ? 2 : op == OP_matmul ? 14 : NAN; }

/* error of each op in ulps of f32, per TOLERANCES.md (glibc's documented float bounds, plus the
 * extra roundings of ops spelled as several operations) */
static double op_ulps(enum op op, bool vulkan, bool cuda) {
  if (vulkan && !isnan(vulkan_ulps(op))) return vulkan_ulps(op);
  if (cuda && !isnan(cuda_ulps(op))) return cuda_ulps(op);
  switch (op) {
  case OP_exp: case OP_log: case OP_sin: case OP_cos: case OP_erf: case OP_pow: return 2;
  case OP_tanh: return 3;
  case OP_sqrt: case OP_add: case OP_sub: case OP_mul: case OP_div: case OP_reciprocal: return 1;
  case OP_rsqrt: return 2;
  case OP_sigmoid: case OP_silu: return 4;
  case OP_gelu: return 12; /* the CPU's fast erf: 4.7e-7 absolute, about 8 ulps of 1 + erf */
  case OP_gelu_tanh: return 8;
  case OP_softmax: case OP_log_softmax: return 6;
  case OP_layer_norm: case OP_rms_norm: return 8;
  case OP_attention: return 12;
  case OP_conv2d: case OP_matmul: return 2;
  case OP_mean: case OP_sum: case OP_prod: return 1;
  default: return 0; /* exact: comparisons, selection, views, max/min, neg, abs, casts... */
  }
}

static double unit(portc_dtype t) {
  switch (t) {
  case PORTC_F16: return 0x1p-11;
  case PORTC_BF16: return 0x1p-8;
  default: return 0x1p-24;
  }
}

/* terms summed to make one element of the node's result */
static double terms(const portc_graph *g, const node *n, const int64_t *S) {
  const node *x = &g->nodes[n->in[0]];
  double len = 1;
  switch (n->op) {
  case OP_sum: case OP_mean: case OP_prod: {
    const attr *axes = attr_get(n, "axes");
    for (int d = 0; d < x->sh.rank; d++) {
      bool red = axes->n == 0;
      for (int k = 0; k < axes->n; k++) red = red || norm_axis(axes->v[k], x->sh.rank) == d;
      if (red) len *= (double)(x->sh.d[d].sym >= 0 ? S[x->sh.d[d].sym] : x->sh.d[d].c);
    }
    return len;
  }
  case OP_matmul: case OP_attention: case OP_softmax: case OP_log_softmax: case OP_layer_norm: case OP_rms_norm: {
    dim d = x->sh.d[x->sh.rank - 1];
    if (n->op == OP_softmax || n->op == OP_log_softmax) d = x->sh.d[norm_axis(attr_i(n, "axis"), x->sh.rank)];
    len = (double)(d.sym >= 0 ? S[d.sym] : d.c);
    if (n->op == OP_attention) {
      const node *k = &g->nodes[n->in[1]];
      dim l = k->sh.d[k->sh.rank - 2];
      len += (double)(l.sym >= 0 ? S[l.sym] : l.c);
    }
    return len;
  }
  case OP_conv2d: {
    const node *w = &g->nodes[n->in[1]];
    const conv_axes a = conv_axes_of(n);
    return (double)(w->sh.d[a.wc].c * w->sh.d[a.wh].c * w->sh.d[a.ww].c);
  }
  case OP_avg_pool2d: {
    const attr *k = attr_get(n, "kernel");
    return (double)(k->v[0] * k->v[1]);
  }
  default: return 1;
  }
}

void conf_tolerance(const portc_graph *g, portc_bindings *b, const char *target, bool eager, tolerance *t) {
  bool vulkan = target && strncmp(target, "vulkan", 6) == 0, cuda = target && (strncmp(target, "cuda", 4) == 0 || strncmp(target, "hip", 3) == 0);
  int64_t S[64] = {0};
  if (b && bindings_bind_symbols(g, b) == PORTC_OK)
    for (int k = 0; k < g->nsyms && k < 64; k++) S[k] = b->sym[k];
  double ulps = 0, us = 0x1p-24, longest = 1, roundings = 1;
  for (int i = 0; i < g->n; i++)
    if (dtype_is_float(g->nodes[i].dt) && unit(g->nodes[i].dt) > us) us = unit(g->nodes[i].dt);
  for (int i = 0; i < g->n; i++) {
    const node *n = &g->nodes[i];
    if (op_get(n->op)->kind == K_SOURCE) continue;
    ulps += op_ulps(n->op, vulkan, cuda) + (vulkan && us > U_COMPUTE ? vulkan_exp16_ulps(n->op) : 0);
    if (eager || op_get(n->op)->kind == K_CAST) roundings += 1; /* eager stores every value in its dtype */
    double len = terms(g, n, S);
    if (len > longest) longest = len;
  }
  if (!eager) roundings += 2; /* a fused graph still stores at each kernel boundary */
  /* per element: op errors, storage roundings, and summing `longest` terms on vector lanes
   * (Higham's bound for 16 lanes), relative to the element; the absolute part scales with the
   * output's RMS, and sums of `longest` terms of either sign reach sqrt(longest) times it */
  double sum_err = (longest / 16.0 + 4.0) * U_COMPUTE;
  t->rtol = 4 * (ulps * U_COMPUTE + roundings * us + sum_err);
  t->atol = sqrt(longest) + 1; /* times rtol and the output's RMS, applied by the runner */
  /* over the whole tensor errors average out: a statistical bound on the norm */
  t->norm = 8 * (ulps * U_COMPUTE + roundings * us + sqrt(longest) * U_COMPUTE);
}
