// test_reference.cpp: the reference evaluator's result for every op on small hand-checked cases,
// NaN and Inf inputs, exact integer arithmetic, and the runtime errors it reports.
#include <cstdio>

#include "helpers.h"

extern "C" {
#include "conformance/reference.h"
}

static std::string list(const std::vector<double> &v, bool as_bool = false) {
  std::string s = "[";
  char buf[40];
  for (size_t i = 0; i < v.size(); i++) {
    if (as_bool) snprintf(buf, sizeof buf, v[i] ? "true" : "false");
    else if (std::isnan(v[i])) snprintf(buf, sizeof buf, "nan");
    else if (std::isinf(v[i])) snprintf(buf, sizeof buf, v[i] < 0 ? "-inf" : "inf");
    else snprintf(buf, sizeof buf, "%.17g", v[i]);
    s += (i ? ", " : "") + std::string(buf);
  }
  return s + "]";
}

static std::vector<double> unary(const char *op, std::vector<double> x, const char *dt = "f64ish") {
  std::string t = std::string(dt) == "f64ish" ? "f32" : dt;
  return eval("const x: " + t + "[" + std::to_string(x.size()) + "] = " + list(x, t == "bool") + "\ny = " + op + "(x)\noutput y\n");
}

static std::vector<double> binary(const char *op, std::vector<double> a, std::vector<double> b, const char *dt = "f32") {
  bool bl = std::string(dt) == "bool";
  return eval(std::string("const a: ") + dt + "[" + std::to_string(a.size()) + "] = " + list(a, bl) + "\nconst b: " + dt + "[" +
              std::to_string(b.size()) + "] = " + list(b, bl) + "\ny = " + op + "(a, b)\noutput y\n");
}

const double inf = INFINITY, nan_ = NAN;

TEST(Reference, UnaryFloat) {
  expect_near(unary("neg", {1, -2, 0}), {-1, 2, -0.0});
  expect_near(unary("abs", {-1.5, 2, -inf}), {1.5, 2, inf});
  expect_near(unary("exp", {0, 1, -inf, inf, nan_}), {1, 2.718281828459045, 0, inf, nan_});
  expect_near(unary("log", {1, 0, -1, 0.5}), {0, -inf, nan_, -0.6931471805599453});
  expect_near(unary("sqrt", {4, 2, -1}), {2, 1.4142135623730951, nan_});
  expect_near(unary("rsqrt", {4, 0}), {0.5, inf});
  expect_near(unary("reciprocal", {4, -0.5, 0}), {0.25, -2, inf});
  expect_near(unary("tanh", {0, 0.5, inf}), {0, 0.46211715726000974, 1});
  expect_near(unary("sigmoid", {0, 1, -inf, inf, -1000}), {0.5, 0.7310585786300049, 0, 1, 0});
  expect_near(unary("relu", {-1, 0, 2, nan_}), {0, 0, 2, nan_});
  expect_near(unary("gelu", {0, 1, -1, 3}), {0, 0.8413447460685429, -0.15865525393145707, 2.99595030590511});
  expect_near(unary("gelu_tanh", {0, 1, -1}), {0, 0.8411919906082768, -0.15880800939172324});
  expect_near(unary("silu", {0, 1, -inf}), {0, 0.7310585786300049, nan_});
  expect_near(unary("erf", {0, 0.5, 1, -inf}), {0, 0.5204998778130465, 0.8427007929497149, -1});
  expect_near(unary("sin", {0, 0.5}), {0, 0.479425538604203});
  expect_near(unary("cos", {0, 0.5, inf}), {1, 0.8775825618903728, nan_});
  expect_near(unary("floor", {1.5, -1.5, 2}), {1, -2, 2});
  expect_near(unary("ceil", {1.5, -1.5, 2}), {2, -1, 2});
  expect_near(unary("sign", {-3, 0, 2, nan_}), {-1, 0, 1, nan_});
}

TEST(Reference, InputsAreRoundedToTheirDtype) {
  // 0.1 is held as the nearest f32 / f16, and float64 arithmetic starts from that value
  expect_near(unary("neg", {0.1}), {-(double)0.1f}, 0);
  expect_near(unary("neg", {0.1}, "f16"), {-0.0999755859375}, 0);
  expect_near(unary("neg", {0.1}, "bf16"), {-0.10009765625}, 0);
}

TEST(Reference, IntegerArithmeticIsExact) {
  expect_near(binary("add", {2147483647, 5}, {1, -7}, "i32"), {-2147483648.0, -2});
  expect_near(binary("mul", {65536, -3}, {65536, 7}, "i32"), {0, -21});
  expect_near(binary("div", {7, -7, 6}, {2, 2, -4}, "i64"), {3, -3, -1});
  expect_near(binary("maximum", {3, -5}, {4, -6}, "i32"), {4, -5});
  expect_near(unary("abs", {-4, 4}, "i64"), {4, 4});
  expect_near(unary("sign", {-4, 0, 9}, "i32"), {-1, 0, 1});
  // 2^53 + 1 is not a double, but i64 arithmetic keeps it
  Graph g = parse("const a: i64[] = 9007199254740993\nconst b: i64[] = 1\ny = add(a, b)\noutput y\n");
  portc_bindings *bnd = portc_bindings_new(g.get());
  portc_tensor *out;
  ASSERT_EQ(portc_reference_run(g.get(), bnd, &out), PORTC_OK) << portc_last_error();
  EXPECT_EQ(out->dtype, PORTC_I64);
  EXPECT_EQ(((int64_t *)out->data)[0], 9007199254740994LL);
  portc_tensor_free(out);
  portc_bindings_free(bnd);
}

TEST(Reference, BinaryFloatWithSpecialValues) {
  expect_near(binary("add", {1, inf, inf}, {2, -inf, 1}), {3, nan_, inf});
  expect_near(binary("sub", {1, 2}, {3, 0.5}), {-2, 1.5});
  expect_near(binary("div", {1, -1, 0}, {0, 0, 0}), {inf, -inf, nan_});
  expect_near(binary("pow", {2, 4, -8, 0}, {10, 0.5, 1.0 / 3, 0}), {1024, 2, nan_, 1});
  expect_near(binary("maximum", {1, nan_, 3}, {2, 1, nan_}), {2, nan_, nan_});
  expect_near(binary("minimum", {1, -inf}, {2, 0}), {1, -inf});
}

TEST(Reference, ComparisonsAndLogic) {
  expect_near(binary("eq", {1, nan_, 2}, {1, nan_, 3}), {1, 0, 0});
  expect_near(binary("ne", {1, nan_}, {1, nan_}), {0, 1});
  expect_near(binary("lt", {1, 2, 3}, {2, 2, 2}), {1, 0, 0});
  expect_near(binary("le", {1, 2, 3}, {2, 2, 2}), {1, 1, 0});
  expect_near(binary("gt", {1, 2, 3}, {2, 2, 2}), {0, 0, 1});
  expect_near(binary("ge", {1, 2, nan_}, {2, 2, 2}), {0, 1, 0});
  expect_near(binary("and", {1, 1, 0}, {1, 0, 0}, "bool"), {1, 0, 0});
  expect_near(binary("or", {1, 1, 0}, {1, 0, 0}, "bool"), {1, 1, 0});
  expect_near(unary("not", {1, 0}, "bool"), {0, 1});
}

TEST(Reference, BroadcastWhereCast) {
  std::vector<int64_t> shape;
  auto y = eval("const a: f32[2, 1] = [1, 2]\nconst b: f32[3] = [10, 20, 30]\ny = add(a, b)\noutput y\n", &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3}));
  expect_near(y, {11, 21, 31, 12, 22, 32});
  expect_near(eval("const c: bool[3] = [true, false, true]\nconst a: f32[3] = [1, 2, 3]\nconst b: f32[] = -1\n"
                   "y = where(c, a, b)\noutput y\n"),
              {1, -1, 3});
  expect_near(eval("const a: f32[4] = [1.7, -1.7, nan, 3e10]\ny = cast(a, to=i32)\noutput y\n"), {1, -1, 0, 2147483647});
  expect_near(eval("const a: f32[2] = [0.1, 70000]\ny = cast(a, to=f16)\noutput y\n"), {0.0999755859375, inf}, 0);
  expect_near(eval("const a: i32[3] = [0, 2, -1]\ny = cast(a, to=bool)\noutput y\n"), {0, 1, 1});
  expect_near(eval("const a: i64[1] = [4294967297]\ny = cast(a, to=i32)\noutput y\n"), {1});
}

TEST(Reference, Reductions) {
  const std::string x = "const x: f32[2, 3] = [1, 2, 3, 4, 5, 6]\n";
  std::vector<int64_t> shape;
  expect_near(eval(x + "y = sum(x)\noutput y\n", &shape), {21});
  EXPECT_TRUE(shape.empty());
  expect_near(eval(x + "y = sum(x, axes=[0])\noutput y\n"), {5, 7, 9});
  expect_near(eval(x + "y = sum(x, axes=[-1], keepdim=true)\noutput y\n", &shape), {6, 15});
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 1}));
  expect_near(eval(x + "y = mean(x, axes=[1])\noutput y\n"), {2, 5});
  expect_near(eval(x + "y = max(x, axes=[0])\noutput y\n"), {4, 5, 6});
  expect_near(eval(x + "y = min(x, axes=[1])\noutput y\n"), {1, 4});
  expect_near(eval(x + "y = prod(x, axes=[1])\noutput y\n"), {6, 120});
  expect_near(eval(x + "y = argmax(x, axis=0)\noutput y\n"), {1, 1, 1});
  expect_near(eval("const x: f32[4] = [1, 3, 3, 2]\ny = argmax(x)\noutput y\n"), {1});  // first of equal maxima
  expect_near(eval("const x: f32[3] = [1, nan, 3]\ny = argmax(x)\noutput y\n"), {1}); // NaN counts as the max
  expect_near(eval("const x: f32[3] = [1, nan, 3]\ny = max(x)\noutput y\n"), {nan_});
  expect_near(eval("const x: f32[2] = [inf, -inf]\ny = sum(x)\noutput y\n"), {nan_});
  expect_near(eval("const x: f32[0, 2] = []\ny = sum(x, axes=[0])\noutput y\n"), {0, 0});
  expect_near(eval("const x: f32[0, 2] = []\ny = mean(x, axes=[0])\noutput y\n"), {nan_, nan_});
  expect_near(eval("const x: i32[3] = [2147483647, 1, 1]\ny = sum(x)\noutput y\n"), {-2147483647});
  // a reduction over a symbol bound to 0 at run time has no max
  Graph g = parse("input x: f32[N]\ny = max(x)\noutput y\n");
  RunResult r = run(g.get(), 1, {{"N", 0}});
  EXPECT_EQ(r.status, PORTC_ERR_RUNTIME);
  EXPECT_NE(r.error.find("node 'y' (max): max over an empty axis"), std::string::npos) << r.error;
}

TEST(Reference, Matmul) {
  expect_near(eval("const a: f32[2, 3] = [1, 2, 3, 4, 5, 6]\nconst b: f32[3, 2] = [7, 8, 9, 10, 11, 12]\n"
                   "y = matmul(a, b)\noutput y\n"),
              {58, 64, 139, 154});
  expect_near(eval("const a: f32[3] = [1, 2, 3]\nconst b: f32[3] = [4, 5, 6]\ny = matmul(a, b)\noutput y\n"), {32});
  // batch broadcast: [2,1,2,2] @ [3,2,1] -> [2,3,2,1]
  std::vector<int64_t> shape;
  auto y = eval("const a: f32[2, 1, 2, 2] = [1, 0, 0, 1, 2, 0, 0, 2]\nconst b: f32[3, 2, 1] = [1, 2, 3, 4, 5, 6]\n"
                "y = matmul(a, b)\noutput y\n",
                &shape);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3, 2, 1}));
  expect_near(y, {1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12});
  expect_near(eval("const a: i32[1, 2] = [65536, 1]\nconst b: i32[2, 1] = [65536, 5]\ny = matmul(a, b)\noutput y\n"), {5});
}

TEST(Reference, Conv2dAndPools) {
  // 1x1x3x3 input, 1x1x2x2 kernel of ones: sums of 2x2 windows
  const std::string x = "const x: f32[1, 1, 3, 3] = [1, 2, 3, 4, 5, 6, 7, 8, 9]\nconst w: f32[1, 1, 2, 2] = 1\n";
  expect_near(eval(x + "y = conv2d(x, w)\noutput y\n"), {12, 16, 24, 28});
  expect_near(eval(x + "const b: f32[1] = [0.5]\ny = conv2d(x, w, b, padding=[1, 1], stride=[2, 2])\noutput y\n"),
              {1.5, 5.5, 11.5, 28.5});
  expect_near(eval(x + "y = conv2d(x, w, dilation=[2, 2])\noutput y\n"), {20});
  // groups=2: each output channel sees only its own input channel
  expect_near(eval("const x: f32[1, 2, 1, 1] = [3, 5]\nconst w: f32[2, 1, 1, 1] = [2, 10]\ny = conv2d(x, w, groups=2)\noutput y\n"),
              {6, 50});
  expect_near(eval(x + "y = max_pool2d(x, kernel=[2, 2], stride=[1, 1])\noutput y\n"), {5, 6, 8, 9});
  expect_near(eval(x + "y = max_pool2d(x, kernel=[2, 2], padding=[1, 1])\noutput y\n"), {1, 3, 7, 9});
  expect_near(eval(x + "y = avg_pool2d(x, kernel=[2, 2], stride=[1, 1])\noutput y\n"), {3, 4, 6, 7});
  expect_near(eval(x + "y = avg_pool2d(x, kernel=[2, 2], padding=[1, 1])\noutput y\n"), {0.25, 1.25, 2.75, 7});
}

TEST(Reference, Views) {
  const std::string x = "const x: f32[2, 3] = [1, 2, 3, 4, 5, 6]\n";
  expect_near(eval(x + "y = reshape(x, shape=[3, 2])\noutput y\n"), {1, 2, 3, 4, 5, 6});
  expect_near(eval(x + "y = permute(x, perm=[1, 0])\noutput y\n"), {1, 4, 2, 5, 3, 6});
  expect_near(eval("const x: f32[2, 1] = [1, 2]\ny = expand(x, shape=[2, 2, 3])\noutput y\n"), {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2});
  expect_near(eval(x + "y = slice(x, axis=1, start=1)\noutput y\n"), {2, 3, 5, 6});
  expect_near(eval(x + "y = slice(x, axis=-1, start=0, step=2)\noutput y\n"), {1, 3, 4, 6});
  expect_near(eval(x + "y = slice(x, axis=1, start=-1, stop=-4)\noutput y\n"), {});
  expect_near(eval(x + "const z: f32[2, 1] = [7, 8]\ny = concat(x, z, axis=1)\noutput y\n"), {1, 2, 3, 7, 4, 5, 6, 8});
  expect_near(eval(x + "y = concat(x, x, axis=0)\noutput y\n"), {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
  expect_near(eval("const x: f32[2] = [1, 2]\ny = pad(x, pads=[1, 2], value=-1)\noutput y\n"), {-1, 1, 2, -1, -1});
  expect_near(eval(x + "y = pad(x, pads=[0, 1, 1, 0])\noutput y\n"), {0, 1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0});
  expect_near(eval(x + "const i: i64[3] = [2, 0, -1]\ny = gather(x, i, axis=1)\noutput y\n"), {3, 1, 3, 6, 4, 6});
  expect_near(eval(x + "const i: i32[1] = [1]\ny = gather(x, i, axis=0)\noutput y\n"), {4, 5, 6});
}

// how near the reference's draw came to what the bounds do not describe (conf_draw)
static conf_draw draw_of(const std::string &text) {
  Graph g = parse(text);
  portc_bindings *b = portc_bindings_new(g.get());
  std::vector<portc_tensor *> out(portc_graph_output_count(g.get()) + 1, nullptr);
  conf_draw d = {-1, -1};
  EXPECT_EQ(conf_reference_run(g.get(), b, false, out.data(), &d), PORTC_OK) << portc_last_error();
  for (auto *t : out) portc_tensor_free(t);
  portc_bindings_free(b);
  return d;
}

// the closest call among a graph's comparisons of computed f32 values, relative to the RMS
static double closest_call(const std::string &text) { return draw_of(text).closest; }

TEST(Reference, ClosestCallAmongComparisonsOfComputedValues) {
  // 1 - f32(0.9999999) = 2^-23, beside 0.75: relative to their RMS, a call of 2.25e-7
  const char *sum = "const x: f32[2] = [1, 0.5]\nconst e: f32[2] = [-0.9999999, 0.25]\ns = add(x, e)\n";
  double rms = std::sqrt((0x1p-46 + 0.5625) / 2);
  EXPECT_NEAR(closest_call(std::string(sum) + "const z: f32[] = 0\ny = gt(s, z)\noutput y\n"), 0x1p-23 / rms, 1e-12);
  // against a broadcast operand of RMS sqrt((0.75^2 + 2^2) / 2); equal elements (a max pooling's
  // own maximum) are not close calls
  EXPECT_NEAR(closest_call(std::string(sum) + "const m: f32[2, 1] = [0.75, 2]\ny = eq(s, m)\noutput y\n"),
              (0.75 - 0x1p-23) / std::sqrt((0.5625 + 4) / 2), 1e-12);
  // sources compare exactly, and so do views of them; 16-bit values are left alone
  EXPECT_EQ(closest_call("const x: f32[2] = [1, 0.5]\nconst e: f32[2] = [0.9999999, 0.25]\ny = gt(x, e)\noutput y\n"), INFINITY);
  EXPECT_EQ(closest_call("const x: f32[1, 2] = [1, 0.5]\nconst e: f32[2] = [0.9999999, 0.25]\nr = reshape(x, shape=[2])\n"
                         "y = gt(r, e)\noutput y\n"),
            INFINITY);
  EXPECT_EQ(closest_call("const x: f16[2] = [1, 0.5]\nconst e: f16[2] = [-0.999, 0.25]\ns = add(x, e)\nconst z: f16[] = 0\ny = gt(s, z)\noutput y\n"),
            INFINITY);
}

// how far the graph's output sums cancelled: their RMS over sqrt(n) times their terms' RMS
static double cancelled(const std::string &text) { return draw_of(text).cancelled; }

TEST(Reference, HowFarOutputSumsCancelled) {
  // terms [3, -2.9, 1, -1.2]: RMS sqrt(19.85 / 4), a random-sign sum of them sqrt(19.85), the sum -0.1
  const std::string x = "const x: f32[4] = [3, -2.9, 1, -1.2]\n";
  EXPECT_NEAR(cancelled(x + "y = sum(x)\noutput y\n"), 0.1 / std::sqrt(19.85), 1e-6);
  // a mean is the same sum divided by n; a cast or a view of the sum is still the sum
  EXPECT_NEAR(cancelled(x + "y = mean(x)\noutput y\n"), 0.1 / std::sqrt(19.85), 1e-6);
  EXPECT_NEAR(cancelled(x + "s = sum(x, axes=[0], keepdim=true)\nh = cast(s, to=f16)\ny = reshape(h, shape=[])\noutput y\n"),
              0.1 / std::sqrt(19.85), 1e-6);
  // two rows: [3, -2.9] sums to 0.1, [1, -1.2] to -0.2; the least over outputs is taken
  const std::string rows = "const x: f32[2, 2] = [3, -2.9, 1, -1.2]\n";
  EXPECT_NEAR(cancelled(rows + "y = sum(x, axes=[1])\noutput y\n"), std::sqrt(0.05 / 2) / (std::sqrt(19.85 / 4) * std::sqrt(2.0)), 1e-6);
  EXPECT_NEAR(cancelled(rows + "y = sum(x, axes=[1])\nz = sum(x)\noutput y, z\n"), 0.1 / std::sqrt(19.85), 1e-6);
  // terms of one sign: the sum is sqrt(n) times a random-sign sum's scale or more
  EXPECT_GT(cancelled("const x: f32[4] = [1, 2, 3, 4]\ny = sum(x)\noutput y\n"), 1.0);
  // a sum that feeds other ops, or no sum at all, is not reported
  EXPECT_EQ(cancelled(x + "s = sum(x)\ny = exp(s)\noutput y\n"), INFINITY);
  EXPECT_EQ(cancelled(x + "y = neg(x)\noutput y\n"), INFINITY);
  // nor a sum of terms with an infinity or a NaN
  EXPECT_EQ(cancelled("const x: f32[4] = [3, inf, -inf, 1]\ny = sum(x)\noutput y\n"), INFINITY);
}

TEST(Reference, Composites) {
  expect_near(eval("const x: f32[2, 2] = [0, 0, 0, 0.6931471805599453]\ny = softmax(x)\noutput y\n"),
              {0.5, 0.5, 1.0 / 3, 2.0 / 3}, 1e-7);
  expect_near(eval("const x: f32[2, 2] = [1, 1, 1, 1]\ny = softmax(x, axis=0)\noutput y\n"), {0.5, 0.5, 0.5, 0.5});
  expect_near(eval("const x: f32[2] = [1000, 1000]\ny = log_softmax(x)\noutput y\n"), {-0.6931471805599453, -0.6931471805599453});
  expect_near(eval("const x: f32[2] = [1, inf]\ny = softmax(x)\noutput y\n"), {nan_, nan_});
  // layer_norm of [1, 2, 3]: mean 2, var 2/3
  double s = 1 / std::sqrt(2.0 / 3);
  expect_near(eval("const x: f32[3] = [1, 2, 3]\ny = layer_norm(x, eps=0)\noutput y\n"), {-s, 0, s});
  expect_near(eval("const x: f32[3] = [1, 2, 3]\nconst w: f32[3] = [1, 2, 3]\nconst b: f32[3] = 1\ny = layer_norm(x, w, b, eps=0)\noutput y\n"),
              {1 - s, 1, 1 + 3 * s});
  // rms_norm of [3, 4]: rms = sqrt(12.5)
  double r = std::sqrt(12.5);
  expect_near(eval("const x: f32[2] = [3, 4]\nconst w: f32[2] = [1, 2]\ny = rms_norm(x, w, eps=0)\noutput y\n"), {3 / r, 8 / r});
}

TEST(Reference, Attention) {
  // one query, two keys; scale 1: weights softmax([0, ln 3]) = [1/4, 3/4]
  const std::string d = "const q: f32[1, 1] = [1]\nconst k: f32[2, 1] = [0, 1.0986122886681098]\nconst v: f32[2, 2] = [4, 0, 0, 8]\n";
  expect_near(eval(d + "y = attention(q, k, v, scale=1)\noutput y\n"), {1, 6}, 1e-7);
  // causal, two queries over the same two keys: query 0 only sees key 0
  const std::string c = "const q: f32[2, 1] = [1, 1]\nconst k: f32[2, 1] = [0, 1.0986122886681098]\nconst v: f32[2, 2] = [4, 0, 0, 8]\n";
  expect_near(eval(c + "y = attention(q, k, v, causal=true, scale=1)\noutput y\n"), {4, 0, 1, 6}, 1e-7);
  // default scale is 1/sqrt(D): D = 4, q.k = 2 * 4 = 8 -> scaled 4 vs 0
  const std::string e = "const q: f32[1, 4] = 2\nconst k: f32[2, 4] = [1, 1, 1, 1, 0, 0, 0, 0]\nconst v: f32[2, 1] = [1, 0]\n";
  expect_near(eval(e + "y = attention(q, k, v)\noutput y\n"), {std::exp(4.0) / (std::exp(4.0) + 1)});
}

TEST(Reference, CausalMask) {
  expect_near(eval("const x: f32[2, 2, 3] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\ny = causal_mask(x)\noutput y\n"),
              {1, -inf, -inf, 4, 5, -inf, 7, -inf, -inf, 10, 11, -inf});
}

TEST(Reference, RuntimeErrorsNameTheNode) {
  EXPECT_NE(eval_error("const a: i32[2] = [1, 2]\nconst b: i32[2] = [1, 0]\nq = div(a, b)\noutput q\n").find("node 'q' (div): integer division by zero at element 1"),
            std::string::npos);
  EXPECT_NE(eval_error("const x: f32[3] = [1, 2, 3]\nconst i: i64[2] = [0, 3]\ng = gather(x, i)\noutput g\n")
                .find("node 'g' (gather): index 3 at position 1 is out of range for axis 0 of size 3"),
            std::string::npos);
  Graph g = parse("input x: f32[N]\ny = neg(x)\noutput y\n");
  RunResult r = run(g.get());
  EXPECT_EQ(r.status, PORTC_ERR_SHAPE);
  EXPECT_NE(r.error.find("symbol N has no value"), std::string::npos) << r.error;
}

TEST(Reference, SymbolsBindFromInputsAndClash) {
  Graph g = parse("input x: f32[N, 2]\ninput z: f32[N]\ny = sum(x, axes=[1])\nw = add(y, z)\noutput w\n");
  portc_bindings *b = portc_bindings_new(g.get());
  int64_t s3[] = {3, 2}, s4[] = {4};
  portc_tensor *x = portc_tensor_new(PORTC_F32, 2, s3), *z = portc_tensor_new(PORTC_F32, 1, s4);
  ASSERT_EQ(portc_bindings_set(b, "x", x), PORTC_OK);
  ASSERT_EQ(portc_bindings_set(b, "z", z), PORTC_OK);
  portc_tensor *out = nullptr;
  EXPECT_EQ(portc_reference_run(g.get(), b, &out), PORTC_ERR_SHAPE);
  EXPECT_NE(std::string(portc_last_error()).find("symbol N is 3, but z has 4 at dimension 0"), std::string::npos) << portc_last_error();
  // wrong dtype and wrong constant dimension are refused at bind time
  int64_t bad[] = {3, 5};
  portc_tensor *xb = portc_tensor_new(PORTC_F32, 2, bad), *xi = portc_tensor_new(PORTC_I32, 2, s3);
  EXPECT_EQ(portc_bindings_set(b, "x", xb), PORTC_ERR_SHAPE);
  EXPECT_NE(std::string(portc_last_error()).find("x: dimension 1 is 5, the graph wants 2"), std::string::npos);
  EXPECT_EQ(portc_bindings_set(b, "x", xi), PORTC_ERR_DTYPE);
  EXPECT_EQ(portc_bindings_set(b, "y", x), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_bindings_set_symbol(b, "Q", 1), PORTC_ERR_INVALID);
  for (portc_tensor *t : {x, z, xb, xi}) portc_tensor_free(t);
  portc_bindings_free(b);
}

TEST(Reference, SeededRunsRepeatAndParamsInit) {
  Graph g = parse("input x: f32[4]\nparam w: f32[4] = normal(mean=1, std=0, seed=3)\nparam u: f32[1000] = uniform(low=2, high=3, seed=9)\n"
                  "y = mul(x, w)\nm = min(u)\nM = max(u)\noutput y, m, M\n");
  RunResult a = run(g.get(), 5), b = run(g.get(), 5), c = run(g.get(), 6);
  ASSERT_EQ(a.status, PORTC_OK) << a.error;
  EXPECT_EQ(a.outputs[0], b.outputs[0]);
  EXPECT_NE(a.outputs[0], c.outputs[0]);
  for (double v : a.outputs[0]) EXPECT_TRUE(v >= -1 && v < 1);
  EXPECT_GE(a.outputs[1][0], 2.0);
  EXPECT_LT(a.outputs[2][0], 3.0);
  EXPECT_GT(a.outputs[2][0] - a.outputs[1][0], 0.9);
}

TEST(Reference, ParamFromFile) {
  std::string dir = testing::TempDir();
  int64_t shape[] = {3};
  portc_tensor *t = portc_tensor_new(PORTC_F32, 1, shape);
  for (int i = 0; i < 3; i++) portc_tensor_set(t, i, i + 0.5);
  ASSERT_EQ(portc_tensor_save_npy(t, (dir + "/w.npy").c_str()), PORTC_OK);
  portc_tensor_free(t);
  std::string text = "param w: f32[3] = file(\"" + dir + "/w.npy\")\ny = neg(w)\noutput y\n";
  expect_near(eval(text), {-0.5, -1.5, -2.5});
  std::string wrong = "param w: f32[4] = file(\"" + dir + "/w.npy\")\ny = neg(w)\noutput y\n";
  EXPECT_NE(eval_error(wrong).find("does not hold a f32 tensor of the declared shape"), std::string::npos);
  std::string missing = "param w: f32[3] = file(\"" + dir + "/none.npy\")\ny = neg(w)\noutput y\n";
  EXPECT_NE(eval_error(missing).find("param w: "), std::string::npos);
}
