/*
 * cases.c: the conformance cases, generated: every op over dtypes, odd shapes (1, 7, 33, 1000,
 * 4097), broadcasting and ranks up to 5; special values (zeros, infinities, NaN, subnormals);
 * fusion patterns; the example models; and dynamic shapes (one module, several sizes).
 * Inputs come from the run's seed, uniform in [-1, 1); ops with a restricted domain get their
 * input mapped into it inside the graph.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

static conf_case *vadd(conf_cases *cs, const char *suite, const char *fmt, va_list ap) {
  if (cs->n == cs->cap) {
    int cap = cs->cap ? cs->cap * 2 : 256;
    conf_case *c = realloc(cs->c, sizeof *c * (size_t)cap);
    if (!c) return NULL;
    cs->c = c;
    cs->cap = cap;
  }
  conf_case *c = &cs->c[cs->n++];
  memset(c, 0, sizeof *c);
  c->suite = suite;
  c->nruns = 1;
  vsnprintf(c->name, sizeof c->name, fmt, ap);
  return c;
}

static conf_case *add(conf_cases *cs, const char *suite, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static conf_case *add(conf_cases *cs, const char *suite, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  conf_case *c = vadd(cs, suite, fmt, ap);
  va_end(ap);
  return c;
}

static void vtext(conf_case *c, const char *fmt, va_list ap) {
  if (c && vasprintf(&c->text, fmt, ap) < 0) c->text = NULL;
}

static void text(conf_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text(conf_case *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vtext(c, fmt, ap);
  va_end(ap);
}

conf_case *conf_case_new(conf_cases *cs, const char *suite, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  conf_case *c = vadd(cs, suite, fmt, ap);
  va_end(ap);
  return c;
}

void conf_case_text(conf_case *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vtext(c, fmt, ap);
  va_end(ap);
}

static const char *const FLOATS[] = {"f32", "f16", "bf16"};
static const char *const SHAPES1[] = {"1", "7", "33", "1000", "4097", "3, 5, 7"};

/* unary ops and how their input is mapped into their domain (the gradient suite's too) */
const conf_unary CONF_UNARY[] = {
    {"neg", NULL}, {"abs", NULL}, {"exp", "mul(x, four)"}, {"log", "add(ax, tenth)"}, {"sqrt", "add(ax, tenth)"},
    {"rsqrt", "add(ax, tenth)"}, {"reciprocal", "add(ax, tenth)"}, {"tanh", "mul(x, four)"}, {"sigmoid", "mul(x, four)"},
    {"relu", NULL}, {"gelu", "mul(x, four)"}, {"gelu_tanh", "mul(x, four)"}, {"silu", "mul(x, four)"}, {"erf", "mul(x, four)"},
    {"sin", "mul(x, four)"}, {"cos", "mul(x, four)"}, {"floor", "mul(x, four)"}, {"ceil", "mul(x, four)"}, {"sign", NULL},
};
const int CONF_NUNARY = sizeof CONF_UNARY / sizeof *CONF_UNARY;

static void unary_cases(conf_cases *cs) {
  for (int o = 0; o < CONF_NUNARY; o++)
    for (int d = 0; d < 3; d++)
      for (int s = 0; s < 6; s++) {
        const char *dt = FLOATS[d];
        conf_case *c = add(cs, "ops", "unary/%s/%s/[%s]", CONF_UNARY[o].op, dt, SHAPES1[s]);
        if (!CONF_UNARY[o].prep) text(c, "input x: %s[%s]\ny = %s(x)\noutput y\n", dt, SHAPES1[s], CONF_UNARY[o].op);
        else
          text(c, "input x: %s[%s]\nconst four: %s[] = 4\nconst tenth: %s[] = 0.1\nax = abs(x)\np = %s\ny = %s(p)\noutput y\n", dt,
               SHAPES1[s], dt, dt, CONF_UNARY[o].prep, CONF_UNARY[o].op);
      }
  static const char *const iops[] = {"neg", "abs", "relu", "sign"};
  static const char *const ints[] = {"i32", "i64"};
  for (int o = 0; o < 4; o++)
    for (int d = 0; d < 2; d++)
      for (int s = 0; s < 3; s++)
        text(add(cs, "ops", "unary/%s/%s/[%s]", iops[o], ints[d], SHAPES1[s]),
             "input x: %s[%s]\nconst four: %s[] = 4\np = sub(x, four)\ny = %s(p)\noutput y\n", ints[d], SHAPES1[s], ints[d], iops[o]);
  text(add(cs, "ops", "unary/not/bool/[33]"), "input x: bool[33]\ny = not(x)\noutput y\n");
}

static void special_cases(conf_cases *cs) {
  static const char *const vals = "[0, -0, inf, -inf, nan, 1e-40, 3e-39, 80, -100, 0.5, -0.5, 1, -1, 65504, 1e30]";
  for (int o = 0; o < CONF_NUNARY; o++)
    for (int d = 0; d < 2; d++)
      text(add(cs, "special", "special/%s/%s", CONF_UNARY[o].op, FLOATS[d]), "const x: %s[15] = %s\ny = %s(x)\noutput y\n", FLOATS[d], vals,
           CONF_UNARY[o].op);
  /* padding with -inf: what max pooling with asymmetric or ceil-mode padding imports as */
  for (int d = 0; d < 2; d++)
    text(add(cs, "special", "special/pad-with-infinity/%s", FLOATS[d]),
         "input x: %s[2, 3, 3]\np = pad(x, pads=[0, 0, 1, 0, 0, 2], value=-inf)\nr = reshape(p, shape=[1, 2, 4, 5])\ny = max_pool2d(r, kernel=[2, 2])\noutput p, y\n",
         FLOATS[d]);
  static const char *const bins[] = {"add", "sub", "mul", "div", "maximum", "minimum", "pow"};
  for (int o = 0; o < 7; o++)
    text(add(cs, "special", "special/%s/f32", bins[o]),
         "const a: f32[6] = [inf, -inf, nan, 0, 1, -0]\nconst b: f32[6] = [inf, inf, 1, 0, nan, 0]\ny = %s(a, b)\noutput y\n", bins[o]);
  static const char *const reds[] = {"sum", "max", "min", "prod", "mean"};
  for (int o = 0; o < 5; o++)
    text(add(cs, "special", "special/%s/rows-with-nan-inf", reds[o]),
         "const x: f32[3, 4] = [1, nan, 2, 3, inf, 1, 2, 3, -inf, inf, 0, 1]\ny = %s(x, axes=[1])\noutput y\n", reds[o]);
  text(add(cs, "special", "special/softmax/inf-row"), "const x: f32[2, 3] = [1, inf, 2, -inf, 0, 1]\ny = softmax(x)\noutput y\n");
  text(add(cs, "special", "special/f16-cast-is-not-elided"),
       "const x: f32[4] = [0.1, 1.0009765625, 65519, 70000]\nh = cast(x, to=f16)\ny = cast(h, to=f32)\noutput y\n");
  text(add(cs, "special", "special/bf16-cast-is-not-elided"),
       "const x: f32[3] = [0.1, 1.00390625, 3.14159]\nh = cast(x, to=bf16)\ny = cast(h, to=f32)\noutput y\n");
  /* rows of one element: the row's values and the row's outer values are the same elements */
  text(add(cs, "special", "special/sum-of-one-element"), "input x: f32[1]\ninput z: f32[1]\na = mul(x, z)\ny = sum(a)\noutput y\n");
  /* a row of a broadcast constant, no load (the count a mean's gradient divides by): 8192 ones */
  text(add(cs, "special", "special/sum-of-a-broadcast-constant"),
       "const one: f32[] = 1\ne = expand(one, shape=[2, 16, 256])\ny = sum(e, axes=[0, 1, 2], keepdim=true)\noutput y\n");
  text(add(cs, "special", "special/softmax-rows-of-one"), "input x: f32[7, 1]\nd = add(x, x)\ny = softmax(d)\noutput y\n");
  text(add(cs, "special", "special/int-wrap"),
       "const a: i32[3] = [2147483647, -2147483648, 65536]\nconst b: i32[3] = [1, -1, 65536]\ns = add(a, b)\nm = mul(a, b)\noutput s, m\n");
}

static const struct { const char *a, *b; } BSHAPES[] = {
    {"7", "7"}, {"33, 1", "1, 5"}, {"2, 3, 4", "4"}, {"1000", ""}, {"3, 1, 5, 1, 2", "5, 4, 1"},
};

static void binary_cases(conf_cases *cs) {
  static const struct { const char *op, *bprep; } bins[] = {
      {"add", NULL}, {"sub", NULL}, {"mul", NULL}, {"div", "add(bb, half)"}, {"pow", NULL}, {"maximum", NULL}, {"minimum", NULL}};
  for (int o = 0; o < 7; o++)
    for (int d = 0; d < 3; d++)
      for (int s = 0; s < 5; s++) {
        const char *dt = FLOATS[d];
        bool pw = strcmp(bins[o].op, "pow") == 0;
        text(add(cs, "ops", "binary/%s/%s/[%s]x[%s]", bins[o].op, dt, BSHAPES[s].a, BSHAPES[s].b),
             "input a: %s[%s]\ninput b: %s[%s]\nconst half: %s[] = 0.5\nconst zero2: %s[] = 0\naa = abs(a)\nbb = abs(b)\n"
             "l = %s\nr = %s\ny = %s(l, r)\noutput y\n",
             dt, BSHAPES[s].a, dt, BSHAPES[s].b, dt, dt, pw ? "add(aa, half)" : "add(a, zero2)", bins[o].bprep ? bins[o].bprep : "add(b, zero2)",
             bins[o].op);
      }
  static const char *const cmps[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  static const char *const cdt[] = {"f32", "i32", "f16"};
  for (int o = 0; o < 6; o++)
    for (int d = 0; d < 3; d++)
      for (int s = 0; s < 2; s++)
        text(add(cs, "ops", "compare/%s/%s/[%s]x[%s]", cmps[o], cdt[d], BSHAPES[s].a, BSHAPES[s].b),
             "input a: %s[%s]\ninput b: %s[%s]\ny = %s(a, b)\noutput y\n", cdt[d], BSHAPES[s].a, cdt[d], BSHAPES[s].b, cmps[o]);
  static const char *const iops[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
  static const char *const ints[] = {"i32", "i64"};
  for (int o = 0; o < 6; o++)
    for (int d = 0; d < 2; d++)
      for (int s = 0; s < 3; s++)
        text(add(cs, "ops", "binary/%s/%s/[%s]x[%s]", iops[o], ints[d], BSHAPES[s].a, BSHAPES[s].b),
             "input a: %s[%s]\ninput b: %s[%s]\nconst one: %s[] = 1\nconst three: %s[] = 3\nl = sub(a, three)\nr = add(b, one)\n"
             "y = %s(l, r)\noutput y\n",
             ints[d], BSHAPES[s].a, ints[d], BSHAPES[s].b, ints[d], ints[d], iops[o]);
  text(add(cs, "ops", "binary/and/bool"), "input a: bool[7, 3]\ninput b: bool[3]\ny = and(a, b)\noutput y\n");
  text(add(cs, "ops", "binary/or/bool"), "input a: bool[7, 3]\ninput b: bool[7, 1]\ny = or(a, b)\noutput y\n");
  for (int d = 0; d < 3; d++)
    text(add(cs, "ops", "where/%s", FLOATS[d]),
         "input a: %s[33, 5]\ninput b: %s[5]\nc = gt(a, b)\ny = where(c, a, b)\noutput y\n", FLOATS[d], FLOATS[d]);
}

static void cast_cases(conf_cases *cs) {
  static const char *const all[] = {"f32", "f16", "bf16", "i32", "i64", "bool"};
  for (int a = 0; a < 6; a++)
    for (int b = 0; b < 6; b++) {
      conf_case *c = add(cs, "ops", "cast/%s->%s", all[a], all[b]);
      if (a >= 3) {
        text(c, "input x: %s[33, 7]\ny = cast(x, to=%s)\noutput y\n", all[a], all[b]);
        continue;
      }
      /* floats: scale by 64 (exact) so that casts to integers see a range of values */
      text(c, "input x: %s[33, 7]\nconst s: f32[] = 64\nxf = cast(x, to=f32)\nm = mul(xf, s)\nms = cast(m, to=%s)\ny = cast(ms, to=%s)\noutput y\n",
           all[a], all[a], all[b]);
    }
}

static void reduction_cases(conf_cases *cs) {
  static const struct { const char *shape, *axes; } R[] = {
      {"4097", "[]"}, {"33, 1000", "[1]"}, {"33, 1000", "[0]"}, {"7, 33, 5", "[0, 2]"}, {"3, 4, 5, 6, 2", "[1, -1]"}, {"1", "[0]"}};
  static const char *const ops[] = {"sum", "mean", "max", "min", "prod"};
  for (int o = 0; o < 5; o++)
    for (int d = 0; d < 2; d++)
      for (int s = 0; s < 6; s++)
        text(add(cs, "ops", "reduce/%s/%s/[%s]/%s%s", ops[o], FLOATS[d], R[s].shape, R[s].axes, s % 2 ? "/keepdim" : ""),
             "input x: %s[%s]\ny = %s(x, axes=%s%s)\noutput y\n", FLOATS[d], R[s].shape, ops[o], R[s].axes, s % 2 ? ", keepdim=true" : "");
  for (int s = 1; s < 5; s++)
    text(add(cs, "ops", "argmax/f32/[%s]", R[s].shape), "input x: f32[%s]\ny = argmax(x, axis=%d)\noutput y\n", R[s].shape, s == 2 ? 0 : -1);
  text(add(cs, "ops", "reduce/sum/i32"), "input x: i32[33, 1000]\ny = sum(x, axes=[1])\noutput y\n");
  text(add(cs, "ops", "reduce/max/i64"), "input x: i64[33, 7]\ny = max(x, axes=[0], keepdim=true)\noutput y\n");
  text(add(cs, "ops", "reduce/prod/i64"), "input x: i64[5, 7]\ny = prod(x, axes=[1])\noutput y\n");
}

static void contraction_cases(conf_cases *cs) {
  static const struct { const char *a, *b; } MM[] = {
      {"7, 33", "33, 5"}, {"1, 1", "1, 1"}, {"65, 127", "127, 33"}, {"2, 1, 7, 9", "3, 9, 5"}, {"33", "33, 7"}, {"7, 33", "33"}, {"100, 300", "300, 200"}};
  for (int m = 0; m < 7; m++)
    for (int d = 0; d < 3; d++)
      text(add(cs, "ops", "matmul/%s/[%s]x[%s]", FLOATS[d], MM[m].a, MM[m].b), "input a: %s[%s]\ninput b: %s[%s]\ny = matmul(a, b)\noutput y\n",
           FLOATS[d], MM[m].a, FLOATS[d], MM[m].b);
  text(add(cs, "ops", "matmul/transposed-operand"), "input a: f32[33, 7]\ninput b: f32[5, 33]\nat = permute(a, perm=[1, 0])\nbt = permute(b, perm=[1, 0])\ny = matmul(at, bt)\noutput y\n");
  /* whole tiles of f16: the shape GPU targets run on matrix units (Vulkan: cooperative matrices in
   * k-steps of 32: three steps, so both halves of its double buffer and the odd end) */
  text(add(cs, "ops", "matmul/f16-whole-tiles-bias-gelu"),
       "input a: f16[128, 96]\ninput b: f16[96, 256]\ninput bias: f16[256]\nh = matmul(a, b)\nhb = add(h, bias)\ny = gelu(hb)\noutput y\n");
  text(add(cs, "ops", "matmul/f16-whole-tiles-transposed-b"),
       "input a: f16[64, 256]\ninput b: f16[128, 256]\nbt = permute(b, perm=[1, 0])\ny = matmul(a, bt)\noutput y\n");
  /* Vulkan's matmul on a work group's matrices (128x128 tiles, k-steps of 32) moves its last row
   * and column tiles back inside the matrix: each stores only what the tile before it does not */
  text(add(cs, "ops", "matmul/f16-tiles-moved-inside"), "input a: f16[200, 96]\ninput b: f16[96, 328]\ny = matmul(a, b)\noutput y\n");
  text(add(cs, "ops", "matmul/f16-tiles-moved-inside-bias-gelu"),
       "input a: f16[200, 96]\ninput b: f16[96, 328]\ninput bias: f16[328]\nh = matmul(a, b)\nhb = add(h, bias)\ny = gelu(hb)\noutput y\n");
  /* an output that does not lie as the product (bf16 sums of f16 operands): Vulkan's work-group
   * matmul passes its sums through shared memory */
  text(add(cs, "ops", "matmul/f16-tiles-moved-inside-to-bf16"),
       "input a: f16[200, 96]\ninput b: f16[96, 328]\nh = matmul(a, b)\ny = cast(h, to=bf16)\noutput y\n");
  /* a residual read at every output: the work-group matmul stores its sums and a second dispatch
   * finishes them (a bias alone is added on the matrices' elements) */
  text(add(cs, "ops", "matmul/f16-residual"),
       "input a: f16[256, 96]\ninput b: f16[96, 256]\ninput r: f16[256, 256]\nh = matmul(a, b)\ny = add(h, r)\noutput y\n");
  /* f32 sums of f16 operands with a bias, as autocast leaves them: the work-group matmul's sums
   * start from the f32 bias */
  text(add(cs, "ops", "matmul/f16-to-f32-bias"),
       "input a: f16[256, 96]\ninput b: f16[96, 256]\ninput c: f32[256]\nh = matmul(a, b)\nh32 = cast(h, to=f32)\ny = add(h32, c)\noutput y\n");
  /* tensor-core GEMMs of the CUDA target with partial tiles: wide (1040 columns: 256-column
   * tiles), bf16, and a rank-3 left operand whose leading dims fold into the rows */
  text(add(cs, "ops", "matmul/f16-wide-partial-tiles"),
       "input a: f16[33, 40]\ninput b: f16[40, 1040]\ninput bias: f16[1040]\nh = matmul(a, b)\ny = add(h, bias)\noutput y\n");
  /* Vulkan's cooperative-matrix tiles (128x128) cut at every edge: rows, columns, and a last
   * k-step of one 16-byte word */
  text(add(cs, "ops", "matmul/f16-partial-tiles-relu"),
       "input a: f16[200, 104]\ninput b: f16[104, 136]\nh = matmul(a, b)\ny = relu(h)\noutput y\n");
  /* Vulkan's f32 word matmul cut at every edge: 64x64 tiles (rows, columns, and a last k-step
   * of one word), and 128x128 tiles over batches folded into rows */
  text(add(cs, "ops", "matmul/f32-partial-tiles-bias"),
       "input a: f32[200, 36]\ninput b: f32[36, 140]\ninput bias: f32[140]\nh = matmul(a, b)\ny = add(h, bias)\noutput y\n");
  text(add(cs, "ops", "matmul/f32-batched-rows-wide"), "input a: f32[4, 512, 20]\ninput b: f32[20, 1028]\ny = matmul(a, b)\noutput y\n");
  /* the f32 word matmul, batched, its operands read through views: A permuted, B permuted with
   * its runs along k (q k^T) and along n (p v), with partial tiles */
  text(add(cs, "ops", "matmul/f32-batched-views"),
       "input x: f32[2, 36, 3, 8]\ninput kx: f32[2, 36, 3, 8]\ninput vx: f32[2, 36, 3, 8]\nq = permute(x, perm=[0, 2, 1, 3])\n"
       "kt = permute(kx, perm=[0, 2, 3, 1])\nv = permute(vx, perm=[0, 2, 1, 3])\ns = matmul(q, kt)\nz = matmul(s, v)\noutput s\noutput z\n");
  /* Hopper's f32 matmul (three TF32 products, PORTC_CUDA_KERNELS=...,tf32x3): partial 128x256
   * tiles, more k-steps of 32 than its two stages and a partial last one, a bias and GELU */
  text(add(cs, "ops", "matmul/f32-k-steps-bias-gelu"),
       "input a: f32[2, 100, 228]\ninput b: f32[228, 300]\ninput bias: f32[300]\nh = matmul(a, b)\nz = add(h, bias)\ny = gelu(z)\noutput y\n");
  text(add(cs, "ops", "matmul/bf16-partial-tiles"), "input a: bf16[130, 24]\ninput b: bf16[24, 72]\ny = matmul(a, b)\noutput y\n");
  text(add(cs, "ops", "matmul/f16-batched-rows-relu"),
       "input a: f16[3, 50, 16]\ninput b: f16[16, 48]\nh = matmul(a, b)\ny = relu(h)\noutput y\n");
  text(add(cs, "ops", "matmul/i32"), "input a: i32[7, 9]\ninput b: i32[9, 5]\ny = matmul(a, b)\noutput y\n");
  static const char *const conv[] = {"", ", padding=[1, 1]", ", stride=[2, 2], padding=[1, 1]", ", dilation=[2, 2]", ", groups=2"};
  for (int k = 0; k < 5; k++)
    text(add(cs, "ops", "conv2d/f32/%d", k), "input x: f32[2, 4, 9, 9]\ninput w: f32[6, %d, 3, 3]\ninput b: f32[6]\ny = conv2d(x, w, b%s)\noutput y\n",
         k == 4 ? 2 : 4, conv[k]);
  text(add(cs, "ops", "conv2d/f16"), "input x: f16[1, 3, 8, 8]\ninput w: f16[4, 3, 3, 3]\ny = conv2d(x, w, padding=[1, 1])\noutput y\n");
  /* wide enough for the GPU targets' implicit-GEMM kernel; sizes that fill no tile evenly */
  for (int k = 0; k < 4; k++)
    text(add(cs, "ops", "conv2d/implicit-gemm/%d", k),
         "input x: f32[3, 20, 11, 13]\ninput w: f32[24, 20, 3, 3]\ninput b: f32[24]\ny = conv2d(x, w, b%s)\noutput y\n", conv[k]);
  text(add(cs, "ops", "conv2d/implicit-gemm/f16-1x1"), "input x: f16[2, 32, 7, 7]\ninput w: f16[40, 32, 1, 1]\ny = conv2d(x, w)\noutput y\n");
  /* the shapes CUDA's tensor-core convolution takes (f16/bf16, reductions of multiples of 8):
   * output channels past one 128-row tile, stride and padding with a fused bias and relu,
   * dilation */
  text(add(cs, "ops", "conv2d/tensor-core-shapes/f16-stride2-bias-relu"),
       "input x: f16[2, 16, 13, 11]\ninput w: f16[136, 16, 3, 3]\ninput b: f16[136]\nc = conv2d(x, w, b, stride=[2, 2], padding=[1, 1])\n"
       "y = relu(c)\noutput y\n");
  text(add(cs, "ops", "conv2d/tensor-core-shapes/bf16-dilation"),
       "input x: bf16[3, 24, 9, 10]\ninput w: bf16[20, 24, 3, 3]\ny = conv2d(x, w, dilation=[2, 2], padding=[2, 1])\noutput y\n");
  /* channels-last: as written (every target; those without an NHWC kernel compute it NCHW
   * between permutes), and NCHW chains a target with one runs NHWC from one convolution to the
   * next (lower/channels_last.c): relu and a residual add between them, a broadcast scale, f32
   * and a grouped convolution that stay NCHW beside them */
  text(add(cs, "ops", "conv2d/channels-last/f16-stride2-bias"),
       "input x: f16[2, 13, 11, 16]\ninput w: f16[3, 3, 16, 40]\ninput b: f16[40]\n"
       "y = conv2d(x, w, b, stride=[2, 2], padding=[1, 1], channels_last=true)\noutput y\n");
  text(add(cs, "ops", "conv2d/channels-last/f16-1x1-relu"),
       "input x: f16[2, 7, 9, 32]\ninput w: f16[1, 1, 32, 24]\ninput b: f16[24]\nc = conv2d(x, w, b, channels_last=true)\ny = relu(c)\noutput y\n");
  text(add(cs, "ops", "conv2d/channels-last/f16-rgb-stem"),
       "input x: f16[2, 3, 19, 17]\ninput w: f16[16, 3, 7, 7]\nc = conv2d(x, w, stride=[2, 2], padding=[3, 3])\ny = relu(c)\n"
       "m = max_pool2d(y, kernel=[3, 3], stride=[2, 2], padding=[1, 1])\noutput m\n");
  /* ResNet's stem: the pooling between two convolutions pools their NHWC values as they lie */
  text(add(cs, "ops", "conv2d/channels-last/f16-stem-pool-conv"),
       "input x: f16[2, 3, 19, 17]\ninput w: f16[16, 3, 7, 7]\ninput v: f16[24, 16, 1, 1]\nc = conv2d(x, w, stride=[2, 2], padding=[3, 3])\n"
       "r = relu(c)\nm = max_pool2d(r, kernel=[3, 3], stride=[2, 2], padding=[1, 1])\nd = conv2d(m, v)\n"
       "a = avg_pool2d(d, kernel=[2, 2])\ny = relu(a)\noutput y\n");
  text(add(cs, "ops", "conv2d/channels-last/f32-groups"),
       "input x: f32[2, 7, 9, 8]\ninput w: f32[3, 3, 4, 6]\ny = conv2d(x, w, padding=[1, 1], groups=2, channels_last=true)\noutput y\n");
  text(add(cs, "ops", "conv2d/channels-last/f16-chain-residual"),
       "input x: f16[2, 16, 9, 7]\ninput w: f16[24, 16, 3, 3]\ninput v: f16[16, 24, 3, 3]\ninput b: f16[16]\ninput g: f16[16, 1, 1]\n"
       "c = conv2d(x, w, padding=[1, 1])\nr = relu(c)\nd = conv2d(r, v, b, padding=[1, 1])\ns = add(d, x)\nt = relu(s)\n"
       "u = mul(t, g)\ne = conv2d(u, w, stride=[2, 2])\nm = max_pool2d(e, kernel=[2, 2])\noutput m\noutput t\n");
  text(add(cs, "ops", "conv2d/channels-last/bf16-autocast-chain"),
       "input x: f32[2, 8, 10, 10]\ninput w: f32[16, 8, 3, 3]\ninput v: f32[16, 16, 1, 1]\ninput q: f32[16, 4, 3, 3]\n"
       "autocast bf16\nc = conv2d(x, w, padding=[1, 1])\nr = relu(c)\nd = conv2d(r, v)\nautocast off\ns = add(d, c)\n"
       "h = conv2d(s, q, padding=[1, 1], groups=4)\ny = sum(h, axes=[2, 3])\noutput y\n");
  /* autocast's residual stream: a block's f32 output, and its f16 cast for the next convolution
   * stored beside it by the convolution that computes it (fuse.c) */
  text(add(cs, "ops", "conv2d/channels-last/f16-autocast-residual-stream"),
       "input x: f32[2, 16, 9, 7]\ninput w: f32[16, 16, 3, 3]\ninput v: f32[16, 16, 1, 1]\n"
       "autocast f16\nc = conv2d(x, w, padding=[1, 1])\nautocast off\ns = add(c, x)\ny = relu(s)\n"
       "autocast f16\nd = conv2d(y, v)\nautocast off\nz = add(d, y)\noutput z\n");
  /* autocast's residual stream in f16 (cast_sink.c): additions of two autocast results add in
   * f16, as torch.autocast's; one of an autocast result and an f32 input stays f32 */
  text(add(cs, "ops", "conv2d/channels-last/f16-autocast-f16-stream"),
       "input x: f32[2, 16, 9, 7]\ninput w: f32[16, 16, 3, 3]\ninput v: f32[16, 16, 1, 1]\ninput b: f32[16]\n"
       "autocast f16\nc = conv2d(x, w, padding=[1, 1])\nr = relu(c)\nd = conv2d(r, v, b)\ns = add(d, r)\nt = relu(s)\n"
       "e = conv2d(t, w, padding=[1, 1])\ny = add(e, t)\nz = add(e, x)\noutput y\noutput z\n");
  text(add(cs, "ops", "conv2d/implicit-gemm/residual-relu"),
       "input x: f32[2, 16, 10, 10]\ninput w: f32[16, 16, 3, 3]\ninput b: f32[16]\nc = conv2d(x, w, b, padding=[1, 1])\nr = add(c, x)\n"
       "y = relu(r)\noutput y\n");
  /* depthwise (the GPU targets' direct kernel, in runs of a row's outputs): rows that no run of 4
   * fills evenly, stride 2, dilation, two outputs per group, a fused residual, and f16 */
  text(add(cs, "ops", "conv2d/depthwise/residual-relu"),
       "input x: f32[2, 8, 11, 13]\ninput w: f32[8, 1, 3, 3]\ninput b: f32[8]\nc = conv2d(x, w, b, padding=[1, 1], groups=8)\n"
       "r = add(c, x)\ny = relu(r)\noutput y\n");
  text(add(cs, "ops", "conv2d/depthwise/stride2"),
       "input x: f32[2, 8, 11, 13]\ninput w: f32[8, 1, 3, 3]\ny = conv2d(x, w, stride=[2, 2], padding=[1, 1], groups=8)\noutput y\n");
  text(add(cs, "ops", "conv2d/depthwise/dilation-multiplier"),
       "input x: f32[1, 4, 12, 17]\ninput w: f32[8, 1, 3, 3]\ny = conv2d(x, w, padding=[2, 2], dilation=[2, 2], groups=4)\noutput y\n");
  text(add(cs, "ops", "conv2d/depthwise/f16-5x5"),
       "input x: f16[2, 6, 10, 9]\ninput w: f16[6, 1, 5, 5]\ny = conv2d(x, w, padding=[2, 2], groups=6)\noutput y\n");
  static const char *const pools[] = {"kernel=[2, 2]", "kernel=[3, 3], stride=[1, 1], padding=[1, 1]", "kernel=[3, 3], stride=[2, 2]"};
  for (int p = 0; p < 3; p++) {
    text(add(cs, "ops", "max_pool2d/%d", p), "input x: f32[2, 3, 9, 9]\ny = max_pool2d(x, %s)\noutput y\n", pools[p]);
    text(add(cs, "ops", "avg_pool2d/%d", p), "input x: f32[2, 3, 9, 9]\ny = avg_pool2d(x, %s)\noutput y\n", pools[p]);
    text(add(cs, "ops", "max_pool2d/channels-last/%d", p), "input x: f32[2, 9, 9, 3]\ny = max_pool2d(x, %s, channels_last=true)\noutput y\n",
         pools[p]);
    text(add(cs, "ops", "avg_pool2d/channels-last/%d", p), "input x: f32[2, 9, 9, 3]\ny = avg_pool2d(x, %s, channels_last=true)\noutput y\n",
         pools[p]);
  }
}

static void view_cases(conf_cases *cs) {
  for (int d = 0; d < 3; d++) {
    const char *t = FLOATS[d];
    text(add(cs, "ops", "reshape/%s", t), "input x: %s[6, 35]\nr = reshape(x, shape=[5, 7, 6])\ny = neg(r)\noutput y\n", t);
    text(add(cs, "ops", "permute/%s", t), "input x: %s[3, 4, 5, 6, 7]\np = permute(x, perm=[4, 2, 0, 3, 1])\ny = neg(p)\noutput y\n", t);
    text(add(cs, "ops", "expand/%s", t), "input x: %s[3, 1, 5]\ne = expand(x, shape=[2, 3, 4, 5])\ny = neg(e)\noutput y\n", t);
    text(add(cs, "ops", "slice/%s", t), "input x: %s[33, 40]\ns = slice(x, axis=1, start=3, stop=-2, step=3)\ny = neg(s)\noutput y\n", t);
    text(add(cs, "ops", "concat/%s", t), "input a: %s[7, 3]\ninput b: %s[7, 5]\ny = concat(a, b, a, axis=1)\noutput y\n", t, t);
    /* every slab a run of whole 16-byte vectors: Vulkan moves them so */
    text(add(cs, "ops", "concat/%s-vectors", t), "input a: %s[3, 4, 5, 6]\ninput b: %s[3, 8, 5, 6]\ny = concat(a, b, a, axis=1)\noutput y\n", t, t);
    text(add(cs, "ops", "pad/%s", t), "input x: %s[7, 5]\ny = pad(x, pads=[1, 2, 0, 3], value=0.5)\noutput y\n", t);
    text(add(cs, "ops", "gather/%s", t), "input x: %s[10, 7]\ninput i: i64[5, 2]\ny = gather(x, i, axis=0)\noutput y\n", t);
  }
  text(add(cs, "ops", "gather/i32-indices-axis1"), "input x: f32[3, 9]\ninput i: i32[4]\ny = gather(x, i, axis=1)\noutput y\n");
  text(add(cs, "ops", "concat/i64"), "input a: i64[2, 3]\ninput b: i64[1, 3]\ny = concat(a, b, axis=0)\noutput y\n");
  text(add(cs, "ops", "causal_mask"), "input x: f32[2, 5, 7]\ny = causal_mask(x)\noutput y\n");
}

static void composite_cases(conf_cases *cs) {
  static const char *const shapes[] = {"1000", "33, 1000", "7, 4097", "2, 3, 33"};
  for (int d = 0; d < 3; d++)
    for (int s = 0; s < 4; s++) {
      const char *t = FLOATS[d], *sh = shapes[s];
      text(add(cs, "ops", "softmax/%s/[%s]", t, sh), "input x: %s[%s]\ny = softmax(x)\noutput y\n", t, sh);
      text(add(cs, "ops", "log_softmax/%s/[%s]", t, sh), "input x: %s[%s]\ny = log_softmax(x)\noutput y\n", t, sh);
      const char *last = strrchr(sh, ' ') ? strrchr(sh, ' ') + 1 : sh;
      text(add(cs, "ops", "layer_norm/%s/[%s]", t, sh), "input x: %s[%s]\ninput w: %s[%s]\ninput b: %s[%s]\ny = layer_norm(x, w, b)\noutput y\n", t, sh,
           t, last, t, last);
      text(add(cs, "ops", "rms_norm/%s/[%s]", t, sh), "input x: %s[%s]\ninput w: %s[%s]\ny = rms_norm(x, w)\noutput y\n", t, sh, t, last);
    }
  text(add(cs, "ops", "softmax/axis0"), "input x: f32[33, 7]\ny = softmax(x, axis=0)\noutput y\n");
  text(add(cs, "ops", "softmax/middle-axis"), "input x: f32[3, 33, 7]\ny = log_softmax(x, axis=1)\noutput y\n");
  for (int causal = 0; causal < 2; causal++)
    for (int d = 0; d < 2; d++) {
      text(add(cs, "ops", "attention/%s/%s", FLOATS[d], causal ? "causal" : "full"),
           "input q: %s[2, 3, 9, 16]\ninput k: %s[2, 3, 9, 16]\ninput v: %s[2, 3, 9, 8]\ny = attention(q, k, v, causal=%s)\noutput y\n", FLOATS[d],
           FLOATS[d], FLOATS[d], causal ? "true" : "false");
    }
  text(add(cs, "ops", "attention/cross-broadcast"),
       "input q: f32[2, 4, 5, 8]\ninput k: f32[4, 7, 8]\ninput v: f32[4, 7, 3]\ny = attention(q, k, v, scale=0.5)\noutput y\n");
  text(add(cs, "ops", "attention/bf16/causal"),
       "input q: bf16[2, 3, 9, 16]\ninput k: bf16[2, 3, 9, 16]\ninput v: bf16[2, 3, 9, 8]\ny = attention(q, k, v, causal=true)\noutput y\n");
  /* keys past one block of the attention kernel, uneven lengths and head sizes */
  text(add(cs, "ops", "attention/many-keys"),
       "input q: f32[2, 37, 24]\ninput k: f32[2, 301, 24]\ninput v: f32[2, 301, 40]\ny = attention(q, k, v)\noutput y\n");
  text(add(cs, "ops", "attention/causal/more-keys"),
       "input q: f16[3, 5, 32]\ninput k: f16[3, 40, 32]\ninput v: f16[3, 40, 16]\ny = attention(q, k, v, causal=true)\noutput y\n");
  /* heads of 96: on a device of 32 KiB of shared memory (lavapipe) the attention kernel's
   * smallest tiles, 32 rows over 16 keys a step */
  text(add(cs, "ops", "attention/heads-of-96"),
       "input q: f16[2, 40, 96]\ninput k: f16[2, 75, 96]\ninput v: f16[2, 75, 96]\ny = attention(q, k, v, causal=true)\noutput y\n");
  /* heads too wide for the attention kernel (its smallest tiles past 32 KiB): the decomposition runs */
  text(add(cs, "ops", "attention/wide-heads"),
       "input q: f32[2, 17, 128]\ninput k: f32[2, 19, 128]\ninput v: f32[2, 19, 96]\ny = attention(q, k, v)\noutput y\n");
  /* additive masks: a padding mask (-inf on the keys past each sequence's length) per batch, a
   * bias over queries and keys with the causal mask, a per-key bias */
  text(add(cs, "ops", "attention/mask/padding"),
       "input q: f32[2, 4, 13, 16]\ninput k: f32[2, 4, 21, 16]\ninput v: f32[2, 4, 21, 8]\ninput r: f32[2, 1, 1, 21]\n"
       "const zero: f32[] = 0\nconst ninf: f32[] = -inf\nkeep = gt(r, zero)\nm = where(keep, zero, ninf)\n"
       "y = attention(q, k, v, m)\noutput y\n");
  for (int d = 0; d < 3; d++)
    text(add(cs, "ops", "attention/mask/bias-causal/%s", FLOATS[d]),
         "input q: %s[3, 2, 19, 16]\ninput k: %s[3, 2, 19, 16]\ninput v: %s[3, 2, 19, 24]\ninput m: %s[19, 19]\n"
         "y = attention(q, k, v, m, causal=true, scale=0.3)\noutput y\n", FLOATS[d], FLOATS[d], FLOATS[d], FLOATS[d]);
  text(add(cs, "ops", "attention/mask/per-key"),
       "input q: f32[5, 7, 8]\ninput k: f32[5, 9, 8]\ninput v: f32[5, 9, 8]\ninput m: f32[1, 9]\ny = attention(q, k, v, m)\noutput y\n");
  /* the shapes CUDA's tensor-core attention takes (f16/bf16, head sizes multiples of 16): query and
   * key counts past one 64-row tile and short of the next, a bias with the causal mask, keys and
   * values shared by every batch */
  text(add(cs, "ops", "attention/tensor-core-shapes/f16-bias-causal"),
       "input q: f16[2, 2, 70, 64]\ninput k: f16[2, 2, 131, 64]\ninput v: f16[2, 2, 131, 32]\ninput m: f16[70, 131]\n"
       "y = attention(q, k, v, m, causal=true, scale=0.2)\noutput y\n");
  text(add(cs, "ops", "attention/tensor-core-shapes/bf16-shared-keys"),
       "input q: bf16[3, 65, 64]\ninput k: bf16[1, 200, 64]\ninput v: bf16[1, 200, 64]\ny = attention(q, k, v)\noutput y\n");
  /* every key hidden for some rows: 0/0 (NaN), as the softmax over them gives */
  text(add(cs, "ops", "attention/mask/all-hidden"),
       "input q: f32[2, 6, 8]\ninput k: f32[2, 10, 8]\ninput v: f32[2, 10, 4]\ninput r: f32[2, 6, 1]\n"
       "const zero: f32[] = 0\nconst ninf: f32[] = -inf\nkeep = gt(r, zero)\nm = where(keep, zero, ninf)\n"
       "y = attention(q, k, v, m)\noutput y\n");
}

static void fusion_cases(conf_cases *cs) {
  { /* 16 views in a row: past a kernel's index maps (KIR_MAX_STEPS), so the chain is cut */
    char body[2048] = "input x: f32[2, 3, 4, 5]\n", prev[8] = "x";
    for (int i = 0; i < 16; i++) {
      size_t at = strlen(body);
      snprintf(body + at, sizeof body - at, i % 2 ? "v%d = reshape(%s, shape=[3, 2, 5, 4])\n" : "v%d = permute(%s, perm=[1, 0, 3, 2])\n", i, prev);
      snprintf(prev, sizeof prev, "v%d", i);
    }
    text(add(cs, "fusion", "fusion/chain-of-16-views"), "%sy = exp(%s)\noutput y\n", body, prev);
  }
  text(add(cs, "fusion", "fusion/chain-of-12"),
       "input x: f32[33, 100]\nconst c: f32[] = 0.75\na = mul(x, c)\nb = tanh(a)\nd = add(b, x)\ne = mul(d, d)\nf = neg(e)\ng = exp(f)\nh = add(g, c)\n"
       "i = abs(h)\nj = sqrt(i)\nk = sigmoid(j)\nl = gelu(k)\ny = silu(l)\noutput y\n");
  text(add(cs, "fusion", "fusion/views-into-elementwise"),
       "input x: f32[8, 6]\ninput z: f32[3, 8]\nt = permute(x, perm=[1, 0])\ns = slice(t, axis=0, start=1, step=2)\nr = reshape(s, shape=[3, 8])\n"
       "y = add(r, z)\noutput y\n");
  text(add(cs, "fusion", "fusion/expand-broadcast-chain"),
       "input x: f32[5, 1]\ninput b: f32[1, 7]\ne = expand(x, shape=[5, 7])\nm = mul(e, b)\ny = relu(m)\noutput y\n");
  text(add(cs, "fusion", "fusion/reduce-with-prologue-and-epilogue"),
       "input x: f32[33, 1000]\nconst c: f32[] = 0.5\nsq = mul(x, x)\ns = sum(sq, axes=[1], keepdim=true)\nr = sqrt(s)\ny = mul(r, c)\noutput y\n");
  /* a batched x^T dy summed over the batch: one matmul over B*S rows (lower/fold_batch_sum.c) */
  text(add(cs, "fusion", "fusion/weight-gradient-over-a-batch"),
       "input x: f32[3, 40, 24]\ninput dy: f32[3, 40, 16]\nxt = permute(x, perm=[0, 2, 1])\np = matmul(xt, dy)\n"
       "dw = sum(p, axes=[0])\nk = sum(p, axes=[0], keepdim=true)\noutput dw, k\n");
  /* a weight matmul of sequence-first rows from a batch-first input, as ONNX exporters write an
   * attention's in-projection: the rows as they lie, permuted after, bias and relu moved with it
   * (lower/matmul_rows.c); h, an output, keeps its order; f16 for the tensor-core kernels */
  text(add(cs, "fusion", "fusion/matmul-of-permuted-rows"),
       "input x: f32[4, 33, 40]\ninput w: f32[40, 24]\ninput b: f32[24]\nt = permute(x, perm=[1, 0, 2])\nh = matmul(t, w)\n"
       "hb = add(h, b)\ny = relu(hb)\noutput y, h\n");
  text(add(cs, "fusion", "fusion/matmul-of-permuted-rows-f16"),
       "input x: f16[2, 64, 3, 32]\ninput w: f16[32, 48]\nt = permute(x, perm=[2, 0, 1, 3])\nh = matmul(t, w)\nconst c: f16[] = 0.5\n"
       "y = mul(h, c)\noutput y\n");
  /* attention's heads merged for the output projection: copied into a matrix first where the
   * target's vendor library wants one (cuda; lower/matmul_rows.c), the bias fused either way */
  text(add(cs, "fusion", "fusion/heads-merged-projection"),
       "input a: f32[2, 4, 33, 16]\ninput w: f32[64, 40]\ninput b: f32[40]\nt = permute(a, perm=[0, 2, 1, 3])\n"
       "m = reshape(t, shape=[2, 33, 64])\nh = matmul(m, w)\ny = add(h, b)\noutput y\n");
  text(add(cs, "fusion", "fusion/heads-merged-projection-f16"),
       "input a: f16[2, 4, 64, 32]\ninput w: f16[128, 64]\nt = permute(a, perm=[0, 2, 1, 3])\nm = reshape(t, shape=[128, 128])\n"
       "h = matmul(m, w)\noutput h\n");
  text(add(cs, "fusion", "fusion/matmul-bias-gelu"),
       "input x: f32[65, 127]\ninput w: f32[127, 96]\ninput b: f32[96]\nh = matmul(x, w)\nhb = add(h, b)\ny = gelu(hb)\noutput y\n");
  text(add(cs, "fusion", "fusion/matmul-residual"),
       "input x: f32[33, 64]\ninput w: f32[64, 64]\nh = matmul(x, w)\nt = tanh(h)\ny = add(t, x)\noutput y\n");
  text(add(cs, "fusion", "fusion/conv-bias-relu"),
       "input x: f32[2, 3, 9, 9]\ninput w: f32[8, 3, 3, 3]\ninput b: f32[8]\nc = conv2d(x, w, b, padding=[1, 1])\ny = relu(c)\noutput y\n");
  text(add(cs, "fusion", "fusion/multi-consumer-cheap-and-costly"),
       "input x: f32[33, 50]\na = exp(x)\nb = mul(a, a)\nc = tanh(b)\nd = sin(c)\ne = cos(d)\nf = erf(e)\ng = sigmoid(f)\nh = gelu(g)\ni = silu(h)\n"
       "j = tanh(i)\nk = exp(j)\ny1 = add(k, a)\ny2 = mul(k, x)\noutput y1, y2\n");
  text(add(cs, "fusion", "fusion/two-outputs-of-one-row-kernel"),
       "input x: f32[7, 33]\nm = max(x, axes=[1], keepdim=true)\nd = sub(x, m)\ne = exp(d)\ns = sum(e, axes=[1], keepdim=true)\ny = div(e, s)\noutput y, s\n");
  text(add(cs, "fusion", "fusion/mean-variance-by-hand"),
       "input x: f32[9, 257]\nmu = mean(x, axes=[-1], keepdim=true)\nc = sub(x, mu)\nsq = mul(c, c)\nv = mean(sq, axes=[-1])\noutput v\n");
  text(add(cs, "fusion", "fusion/intermediate-output"),
       "input x: f32[16, 16]\na = exp(x)\nb = add(a, x)\nc = sum(b, axes=[0])\noutput a, c\n");
  text(add(cs, "fusion", "fusion/row-kernel-reads-other-reduction"),
       "input x: f32[7, 40]\ns = sum(x, axes=[0], keepdim=true)\nm = mul(x, s)\ny = softmax(m)\noutput y\n");
  text(add(cs, "fusion", "fusion/f16-chain-stays-f32-inside"),
       "input x: f16[33, 100]\na = exp(x)\nb = mul(a, a)\nc = log(b)\ny = sub(c, x)\noutput y\n");
  text(add(cs, "fusion", "fusion/causal-mask-into-softmax"), "input x: f32[2, 5, 7]\nm = causal_mask(x)\ny = softmax(m)\noutput y\n");
  text(add(cs, "fusion", "fusion/causal-mask-into-softmax-axis0"),
       "input x: f32[5, 7]\nm = causal_mask(x)\ny = log_softmax(m, axis=0)\noutput y\n");
  text(add(cs, "fusion", "fusion/output-is-input"), "input x: f32[3, 4]\ny = neg(x)\noutput x, y\n");
  /* a transformer's residual: a matmul's [S*B, E] result seen as [S, B, E] inside the row kernel */
  text(add(cs, "fusion", "fusion/row-kernel-reads-through-view"),
       "input a: f32[24, 64]\ninput r: f32[6, 4, 64]\nv = reshape(a, shape=[6, 4, 64])\ns = add(r, v)\ny = layer_norm(s)\noutput y\n");
  text(add(cs, "fusion", "fusion/row-kernel-reads-through-permute"),
       "input a: f32[4, 6, 48]\ninput r: f32[6, 4, 48]\nv = permute(a, perm=[1, 0, 2])\ns = mul(r, v)\ny = softmax(s)\noutput y\n");
  /* wider than a GPU binds per shader stage: a sum of 40 tensors is cut into kernels that read at
   * most 24 buffers, a concat of 40 into concats of 16 (DenseNet's dense blocks) */
  char sum40[4096], cat40[4096];
  int a = 0, b = 0;
  for (int i = 0; i < 40; i++) {
    a += snprintf(sum40 + a, sizeof sum40 - (size_t)a, "input x%d: f32[5, 9]\n", i);
    b += snprintf(cat40 + b, sizeof cat40 - (size_t)b, "input x%d: f32[2, %d, 3]\n", i, 1 + i % 3);
  }
  a += snprintf(sum40 + a, sizeof sum40 - (size_t)a, "s1 = add(x0, x1)\n");
  for (int i = 2; i < 40; i++) a += snprintf(sum40 + a, sizeof sum40 - (size_t)a, "s%d = %s(s%d, x%d)\n", i, i % 2 ? "add" : "sub", i - 1, i);
  snprintf(sum40 + a, sizeof sum40 - (size_t)a, "output s39\n");
  b += snprintf(cat40 + b, sizeof cat40 - (size_t)b, "c = concat(");
  for (int i = 0; i < 40; i++) b += snprintf(cat40 + b, sizeof cat40 - (size_t)b, "%sx%d", i ? ", " : "", i);
  snprintf(cat40 + b, sizeof cat40 - (size_t)b, ", axis=1)\ny = relu(c)\noutput y\n");
  text(add(cs, "fusion", "fusion/sum-of-40-inputs"), "%s", sum40);
  /* whole-tensor reductions large enough to run in two stages (lower/split_reduce.c) */
  text(add(cs, "fusion", "fusion/full-mean-split"), "input x: f32[300, 1000]\nm = mul(x, x)\ny = mean(m)\noutput y\n");
  text(add(cs, "fusion", "fusion/full-sum-split-keepdim"), "input x: f32[8, 128, 77]\ny = sum(x, axes=[0, 1, 2], keepdim=true)\noutput y\n");
  text(add(cs, "fusion", "fusion/full-max-split"), "input x: f16[65536, 3]\ny = max(x)\noutput y\n");
  /* per-channel reductions over the batch and the pixels, pixels first (lower/split_reduce.c) */
  text(add(cs, "fusion", "fusion/per-channel-mean-split"),
       "input x: f32[8, 16, 64, 64]\nm = mean(x, axes=[0, 2, 3], keepdim=true)\nd = sub(x, m)\nq = mul(d, d)\n"
       "v = mean(q, axes=[0, 2, 3], keepdim=true)\ny = mul(d, v)\noutput y, v\n");
  text(add(cs, "fusion", "fusion/per-channel-sum-split-dropped"), "input x: f32[16, 4, 4096, 2]\ny = sum(x, axes=[0, 2])\noutput y\n");
  text(add(cs, "fusion", "fusion/per-channel-max-split-f16"), "input x: f16[4, 8, 128, 130]\ny = max(x, axes=[0, 2, 3])\noutput y\n");
  text(add(cs, "fusion", "fusion/concat-of-40-inputs"), "%s", cat40);
  /* concats whose inputs are made for them alone: each input's kernel stores into its slab
   * (lower/concat_in_place.c). A fire module (convolutions of a symbolic batch); a matmul, a row
   * kernel and a pointwise one; f16 slabs that start inside a 32-bit word; and inputs that
   * something else reads too, which stay a copy (a batch of any size: the dynamic suite) */
  text(add(cs, "fusion", "fusion/concat-in-place-fire"),
       "input x: f32[2, 8, 9, 9]\nparam ws: f32[4, 8, 1, 1]\nparam w1: f32[6, 4, 1, 1]\nparam w3: f32[5, 4, 3, 3]\n"
       "q = conv2d(x, ws)\ns = relu(q)\np1 = conv2d(s, w1)\ne1 = relu(p1)\np3 = conv2d(s, w3, padding=[1, 1])\ne3 = relu(p3)\n"
       "c = concat(e1, e3, axis=1)\ny = max_pool2d(c, kernel=[3, 3], stride=[2, 2])\noutput y\n");
  text(add(cs, "fusion", "fusion/concat-in-place-matmul-row-pointwise"),
       "input a: f32[6, 8]\ninput w: f32[8, 5]\nm = matmul(a, w)\ns = softmax(a)\nr = relu(a)\nc = concat(m, s, r, axis=1)\n"
       "y = neg(c)\noutput y\n");
  text(add(cs, "fusion", "fusion/concat-in-place-f16"),
       "input a: f16[3, 5]\ninput b: f16[3, 3]\ninput e: f16[3, 7]\nx = relu(a)\nz = neg(b)\nv = exp(e)\nc = concat(x, z, v, axis=1)\n"
       "output c\n");
  text(add(cs, "fusion", "fusion/concat-inputs-read-elsewhere"),
       "input a: f32[4, 6]\ninput b: f32[4, 2]\nx = relu(a)\nz = exp(b)\nc = concat(x, z, axis=1)\nt = sum(z, axes=[1])\n"
       "output c, x, t\n");
}

/* a case of the models suite named for the model file, run as its autocast copy unless F32 */
static conf_case *model_case(conf_cases *cs, const char *file, portc_dtype autocast) {
  conf_case *c = autocast != PORTC_F32 ? add(cs, "models", "model/%s/autocast-%s", file, portc_dtype_name(autocast)) : add(cs, "models", "model/%s", file);
  if (c) c->autocast = autocast;
  return c;
}

static void model_cases(conf_cases *cs, const char *dir) {
  static const struct { const char *file, *sym[2]; int64_t v[2]; portc_dtype autocast; } M[] = {
      {"mlp", {"N", NULL}, {16, 0}, PORTC_F32}, {"transformer", {"B", "S"}, {2, 9}, PORTC_F32}, {"cnn", {"N", NULL}, {3, 0}, PORTC_F32},
      {"softmax", {"N", NULL}, {33, 0}, PORTC_F32}, {"layer_norm", {"N", NULL}, {33, 0}, PORTC_F32},
      /* mixed-precision copies of models written in f32 (portc_graph_autocast_copy) */
      {"mlp", {"N", NULL}, {16, 0}, PORTC_F16}, {"transformer", {"B", "S"}, {2, 9}, PORTC_BF16}, {"cnn", {"N", NULL}, {3, 0}, PORTC_F16}};
  for (unsigned m = 0; m < sizeof M / sizeof *M; m++) {
    conf_case *c = model_case(cs, M[m].file, M[m].autocast);
    if (!c || asprintf(&c->path, "%s/%s.ptg", dir, M[m].file) < 0) continue;
    for (int k = 0; k < 2 && M[m].sym[k]; k++) {
      snprintf(c->sym[k], sizeof c->sym[k], "%s", M[m].sym[k]);
      c->symval[0][k] = M[m].v[k];
      c->nsyms = k + 1;
    }
  }
}

static void dynamic_cases(conf_cases *cs) {
  static const char *const g[] = {
      "input x: f32[N, 33]\ny = softmax(x)\noutput y\n",
      "input x: f32[N, 16]\ninput w: f32[16, 8]\nh = matmul(x, w)\ny = relu(h)\noutput y\n",
      "input x: f32[N]\ninput z: f32[N]\na = mul(x, z)\ny = sum(a)\noutput y\n",
      "input x: f32[B, S, 8]\ny = layer_norm(x)\noutput y\n",
      /* rows of any number: GPU targets pick their widest matmul tiles for it */
      "input x: f32[N, 40]\ninput w: f32[40, 136]\ninput c: f32[136]\nh = matmul(x, w)\nz = add(h, c)\ny = tanh(z)\noutput y\n",
      /* attention heads split out of a dynamic batch: the derived symbol 4*N (ONNX import makes these) */
      "input x: f32[6, N, 32]\nr = reshape(x, shape=[6, -1, 8])\np = permute(r, perm=[1, 0, 2])\ns = softmax(p)\nq = permute(s, perm=[1, 0, 2])\n"
      "y = reshape(q, shape=[6, N, 32])\noutput y\n",
      /* a convolution over a batch of any size (the implicit GEMM's pixel count is symbolic) */
      "input x: f32[N, 18, 9, 9]\ninput w: f32[20, 18, 3, 3]\nc = conv2d(x, w, stride=[2, 2], padding=[1, 1])\ny = relu(c)\noutput y\n",
      /* an intermediate whose size does not follow N (exp(w)) beside one that does: when the sizes
       * shrink and grow again, devices must rebind both (a reallocated buffer may reuse an address) */
      "input x: f32[N, 24]\ninput w: f32[24, 40]\nv = exp(w)\nh = matmul(x, v)\ny = softmax(h)\noutput y\n",
      /* padding a batch of any size (the input's extent along each dim, N included, bounds the copy) */
      "input x: f32[N, 3, 5, 6]\ny = pad(x, pads=[0, 0, 1, 0, 2, 1, 0, 3], value=0.5)\noutput y\n",
      /* causal attention over sequences of any length */
      "input q: f32[2, N, 16]\ninput k: f32[2, N, 16]\ninput v: f32[2, N, 8]\ny = attention(q, k, v, causal=true)\noutput y\n",
      /* a fire module's concat over a batch of any size, its inputs stored in place */
      "input x: f32[N, 8, 9, 9]\nparam w1: f32[6, 8, 1, 1]\nparam w3: f32[5, 8, 3, 3]\np1 = conv2d(x, w1)\ne1 = relu(p1)\n"
      "p3 = conv2d(x, w3, padding=[1, 1])\ne3 = relu(p3)\nc = concat(e1, e3, axis=1)\ny = sigmoid(c)\noutput y\n",
  };
  for (int i = 0; i < (int)(sizeof g / sizeof *g); i++) {
    conf_case *c = add(cs, "dynamic", "dynamic/%d", i);
    if (!c) continue;
    text(c, "%s", g[i]);
    snprintf(c->sym[0], sizeof c->sym[0], "%s", i == 3 ? "B" : "N");
    c->nsyms = 1;
    if (i == 3) {
      snprintf(c->sym[1], sizeof c->sym[1], "S");
      c->nsyms = 2;
    }
    static const int64_t vals[3] = {7, 1, 33}; /* down, then up */
    c->nruns = 3;
    for (int r = 0; r < 3; r++) c->symval[r][0] = c->symval[r][1] = vals[r];
  }
}

void conf_generate(conf_cases *cs, const char *examples_dir) {
  memset(cs, 0, sizeof *cs);
  unary_cases(cs);
  special_cases(cs);
  binary_cases(cs);
  cast_cases(cs);
  reduction_cases(cs);
  contraction_cases(cs);
  view_cases(cs);
  composite_cases(cs);
  fusion_cases(cs);
  model_cases(cs, examples_dir);
  dynamic_cases(cs);
  conf_generate_grad(cs, examples_dir);
}

void conf_generate_models(conf_cases *cs, int n, const char *const *paths, int nsets, const char *const *sets, portc_dtype autocast) {
  memset(cs, 0, sizeof *cs);
  for (int m = 0; m < n; m++) {
    const char *base = strrchr(paths[m], '/');
    conf_case *c = model_case(cs, base ? base + 1 : paths[m], autocast);
    if (!c || !(c->path = strdup(paths[m]))) continue;
    portc_graph *g;
    if (portc_graph_load(paths[m], &g) != PORTC_OK) continue; /* the runner reports why */
    /* every symbol of the model's inputs: its --set value, else 2 */
    for (int i = 0; i < portc_graph_input_count(g) && c->nsyms < 4; i++) {
      portc_dim d[PORTC_MAX_RANK];
      portc_node x = portc_graph_input(g, i);
      portc_node_shape(g, x, d);
      for (int k = 0; k < portc_node_rank(g, x) && c->nsyms < 4; k++) {
        if (!d[k].symbol) continue;
        bool seen = false;
        for (int j = 0; j < c->nsyms; j++) seen = seen || !strcmp(c->sym[j], d[k].symbol);
        if (seen) continue;
        snprintf(c->sym[c->nsyms], sizeof c->sym[0], "%s", d[k].symbol);
        c->symval[0][c->nsyms] = 2;
        for (int j = 0; j < nsets; j++) {
          const char *eq = strchr(sets[j], '=');
          if (eq && (size_t)(eq - sets[j]) == strlen(d[k].symbol) && !strncmp(sets[j], d[k].symbol, (size_t)(eq - sets[j])))
            c->symval[0][c->nsyms] = strtoll(eq + 1, NULL, 10);
        }
        c->nsyms++;
      }
    }
    portc_graph_free(g);
  }
}

void conf_free(conf_cases *cs) {
  for (int i = 0; i < cs->n; i++) {
    free(cs->c[i].text);
    free(cs->c[i].path);
  }
  free(cs->c);
  memset(cs, 0, sizeof *cs);
}
