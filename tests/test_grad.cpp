// test_grad.cpp: reverse-mode differentiation. The reference evaluator's gradients, over every
// f32 case of the gradient suite, against central finite differences of the loss; the errors a
// gradient or an optimizer step refuses with; and training state across runs (updates applied by
// the reference and by a compiled module alike, checkpoints saved and loaded).
#include <cstdio>
#include <cstring>
#include <string>

extern "C" {
#include "conformance/conformance.h"
}
#include "helpers.h"

namespace {

struct Bindings {
  portc_bindings *b;
  explicit Bindings(const portc_graph *g, uint64_t seed) : b(portc_bindings_new(g)) { portc_bindings_set_seed(b, seed); }
  ~Bindings() { portc_bindings_free(b); }
};

struct Outputs {
  std::vector<portc_tensor *> t;
  explicit Outputs(const portc_graph *g) : t(portc_graph_output_count(g) + 1, nullptr) {}
  ~Outputs() {
    for (auto *x : t) portc_tensor_free(x);
  }
  void clear() {
    for (auto *&x : t) portc_tensor_free(x), x = nullptr;
  }
};

portc_tensor *copy(const portc_tensor *t) {
  portc_tensor *c = portc_tensor_new(t->dtype, t->rank, t->shape);
  memcpy(c->data, t->data, (size_t)portc_tensor_numel(t) * portc_dtype_size(t->dtype));
  return c;
}

// the loss (output 0) of g on the reference with NAME bound to t, other sources from seed
double loss_with(const portc_graph *g, uint64_t seed, const char *name, const portc_tensor *t) {
  Bindings b(g, seed);
  EXPECT_EQ(portc_bindings_set(b.b, name, t), PORTC_OK) << portc_last_error();
  Outputs o(g);
  EXPECT_EQ(portc_reference_run(g, b.b, o.t.data()), PORTC_OK) << portc_last_error();
  return o.t[0] ? portc_tensor_get(o.t[0], 0) : NAN;
}

}  // namespace

// Every f32 case of the suite: for a few elements of each input differentiated for, the
// reference's gradient against (L(x + h) - L(x - h)) / (2h), h a power of two (both points exact
// in f32, the loss computed in float64).
TEST(Grad, ReferenceMatchesFiniteDifferences) {
  conf_cases cs;
  memset(&cs, 0, sizeof cs);
  conf_generate_grad(&cs, NULL);
  int checked = 0;
  const uint64_t seed = 11;
  for (int i = 0; i < cs.n; i++) {
    const conf_case *c = &cs.c[i];
    std::string name = c->name;
    if (name.find("f16") != std::string::npos || name.find("bf16") != std::string::npos || name.find("/step/") != std::string::npos) continue;
    Graph g = parse(c->text);
    ASSERT_TRUE(g) << name;
    Bindings b(g.get(), seed);
    Outputs o(g.get());
    ASSERT_EQ(portc_reference_run(g.get(), b.b, o.t.data()), PORTC_OK) << name << ": " << portc_last_error();
    for (int k = 1; k < portc_graph_output_count(g.get()); k++) {
      std::string gname = portc_node_name(g.get(), portc_graph_output(g.get(), k));
      ASSERT_EQ(gname.rfind("d_", 0), 0u) << name;
      std::string wrt = gname.substr(2);
      const portc_tensor *x = portc_bindings_get(b.b, wrt.c_str());
      ASSERT_NE(x, nullptr) << name << ": " << wrt;
      const portc_tensor *gr = o.t[k];
      int64_t n = portc_tensor_numel(x);
      ASSERT_EQ(n, portc_tensor_numel(gr)) << name << ": " << gname;
      double gmax = 0;
      for (int64_t e = 0; e < n; e++) gmax = std::fmax(gmax, std::fabs(portc_tensor_get(gr, e)));
      const int64_t picks[4] = {0, n / 3, (2 * n) / 3, n - 1};
      for (int64_t e : picks) {
        const double h = 0x1p-12, x0 = portc_tensor_get(x, e);
        portc_tensor *p = copy(x), *m = copy(x);
        portc_tensor_set(p, e, x0 + h);
        portc_tensor_set(m, e, x0 - h);
        double dx = portc_tensor_get(p, e) - portc_tensor_get(m, e);
        double fd = (loss_with(g.get(), seed, wrt.c_str(), p) - loss_with(g.get(), seed, wrt.c_str(), m)) / dx;
        double an = portc_tensor_get(gr, e);
        EXPECT_NEAR(fd, an, 2e-3 * std::fabs(an) + 2e-4 * std::fmax(1.0, gmax)) << name << ": d loss / d " << wrt << "[" << e << "]";
        portc_tensor_free(p);
        portc_tensor_free(m);
        checked++;
      }
    }
  }
  conf_free(&cs);
  EXPECT_GT(checked, 300);
}

TEST(Grad, RefusesWhatHasNoGradient) {
  // a loss of more than one element
  Graph g = parse("input x: f32[7]\ny = exp(x)\noutput y\n");
  portc_node x = portc_graph_find(g.get(), "x"), y = portc_graph_find(g.get(), "y"), d;
  int before = portc_graph_node_count(g.get());
  EXPECT_EQ(portc_graph_grad(g.get(), y, 1, &x, &d), PORTC_ERR_SHAPE);
  EXPECT_NE(std::string(portc_last_error()).find("a loss is a scalar"), std::string::npos) << portc_last_error();
  EXPECT_EQ(portc_graph_node_count(g.get()), before);
  // a path through argmax only
  g = parse("input x: f32[7, 5]\na = argmax(x)\nc = cast(a, to=f32)\nl = sum(c)\noutput l\n");
  x = portc_graph_find(g.get(), "x");
  before = portc_graph_node_count(g.get());
  EXPECT_EQ(portc_graph_grad(g.get(), portc_graph_find(g.get(), "l"), 1, &x, &d), PORTC_ERR_INVALID);
  EXPECT_NE(std::string(portc_last_error()).find("a (argmax), which is not differentiable"), std::string::npos) << portc_last_error();
  EXPECT_EQ(portc_graph_node_count(g.get()), before);
  // a value the loss does not use
  g = parse("input x: f32[3]\ninput z: f32[3]\nl = sum(x)\noutput l\n");
  portc_node z = portc_graph_find(g.get(), "z");
  EXPECT_EQ(portc_graph_grad(g.get(), portc_graph_find(g.get(), "l"), 1, &z, &d), PORTC_ERR_INVALID);
  EXPECT_NE(std::string(portc_last_error()).find("does not depend on z"), std::string::npos) << portc_last_error();
  // the text format reports it at the statement
  portc_graph *bad = nullptr;
  EXPECT_NE(portc_graph_parse("input x: f32[7]\ny = exp(x)\nd = grad(y, x)\noutput d\n", "t.ptg", &bad), PORTC_OK);
  EXPECT_NE(std::string(portc_last_error()).find("t.ptg:3:5"), std::string::npos) << portc_last_error();
  EXPECT_NE(portc_graph_parse("input x: f32[3]\nl = sum(x)\nd, e = grad(l, x)\noutput d\n", "t.ptg", &bad), PORTC_OK);
  EXPECT_NE(std::string(portc_last_error()).find("grad names 2 results for 1 value"), std::string::npos) << portc_last_error();
}

TEST(Grad, OptimizerAndUpdateErrors) {
  Graph g = parse("input x: f32[4, 3]\nparam w: f32[3] = ones\ny = mul(x, w)\nl = sum(y)\noutput l\n");
  portc_node x = portc_graph_find(g.get(), "x"), w = portc_graph_find(g.get(), "w"), l = portc_graph_find(g.get(), "l"), d[2];
  portc_node both[2] = {x, w};
  ASSERT_EQ(portc_graph_grad(g.get(), l, 2, both, d), PORTC_OK) << portc_last_error();
  EXPECT_STREQ(portc_node_name(g.get(), d[1]), "w.grad");
  portc_optimizer o = {sizeof o, PORTC_OPT_SGD, 0.1, 0, 0, 0, 0, 0};
  int before = portc_graph_node_count(g.get());
  EXPECT_EQ(portc_optimizer_step(g.get(), &o, 1, &x, &d[0]), PORTC_ERR_INVALID);
  EXPECT_NE(std::string(portc_last_error()).find("x is an input, not a parameter"), std::string::npos) << portc_last_error();
  o.lr = -1;
  EXPECT_EQ(portc_optimizer_step(g.get(), &o, 1, &w, &d[1]), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_graph_node_count(g.get()), before);
  EXPECT_EQ(portc_update(g.get(), x, d[0]), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_update(g.get(), w, l), PORTC_ERR_SHAPE);
  ASSERT_EQ(portc_update(g.get(), w, d[1]), PORTC_OK);
  EXPECT_EQ(portc_update(g.get(), w, d[1]), PORTC_ERR_INVALID); // one update per parameter
  // printed and parsed again, the update survives
  char *text = portc_graph_print(g.get());
  EXPECT_NE(std::string(text).find("update w = w.grad"), std::string::npos) << text;
  Graph again = parse(text);
  ASSERT_TRUE(again);
  EXPECT_EQ(portc_graph_hash(again.get()), portc_graph_hash(g.get()));
  free(text);
  portc_graph *bad = nullptr;
  EXPECT_NE(portc_graph_parse("input x: f32[3]\nparam w: f32[3] = ones\ny = mul(x, w)\nl = sum(y)\nstep rmsprop(lr=1): w by l\noutput l\n", "t.ptg", &bad),
            PORTC_OK);
  EXPECT_NE(std::string(portc_last_error()).find("'rmsprop' is not an optimizer"), std::string::npos) << portc_last_error();
  // a value named like a statement word is still a value
  Graph named = parse("input x: f32[3]\nstep = neg(x)\nupdate = exp(step)\noutput update\n");
  EXPECT_TRUE(named);
}

// A training step run three times: the reference and a compiled CPU module carry the same
// parameters from run to run, the loss falls, and a checkpoint restores the state exactly.
TEST(Grad, TrainingStateAcrossRuns) {
  const char *text =
      "input x: f32[16, 6]\ninput y: i64[16]\nparam w: f32[6, 4] = normal(std=0.5, seed=1)\nparam b: f32[4] = zeros\n"
      "h = matmul(x, w)\nlogits = add(h, b)\nloss = cross_entropy(logits, y)\nstep adamw(lr=0.05, weight_decay=0.01): w, b by loss\noutput loss\n";
  Graph g = parse(text);
  ASSERT_TRUE(g);
  portc_compile_options co = {};
  co.target = "cpu";
  Bindings ref(g.get(), 5), dev(g.get(), 5);
  portc_module *m = nullptr;
  ASSERT_EQ(portc_compile(g.get(), &co, dev.b, &m), PORTC_OK) << portc_last_error();
  Outputs ro(g.get()), mo(g.get());
  std::vector<double> losses;
  int li = 0; // the updates came first: they are the first outputs
  while (strcmp(portc_node_name(g.get(), portc_graph_output(g.get(), li)), "loss") != 0) li++;
  for (int step = 0; step < 3; step++) {
    ro.clear(), mo.clear();
    ASSERT_EQ(portc_reference_run(g.get(), ref.b, ro.t.data()), PORTC_OK) << portc_last_error();
    ASSERT_EQ(portc_module_run(m, dev.b, mo.t.data()), PORTC_OK) << portc_last_error();
    double lr = portc_tensor_get(ro.t[li], 0), lm = portc_tensor_get(mo.t[li], 0);
    EXPECT_NEAR(lm, lr, 1e-5 * std::fabs(lr)) << "step " << step;
    losses.push_back(lr);
  }
  EXPECT_LT(losses[2], losses[0]);
  const portc_tensor *wr = portc_bindings_get(ref.b, "w"), *wm = portc_bindings_get(dev.b, "w");
  ASSERT_TRUE(wr && wm);
  for (int64_t e = 0; e < portc_tensor_numel(wr); e++) EXPECT_NEAR(portc_tensor_get(wm, e), portc_tensor_get(wr, e), 1e-5) << e;
  EXPECT_NEAR(portc_tensor_get(portc_bindings_get(dev.b, "optimizer.step"), 0), 3, 0);
  // checkpoint: saved, then loaded into fresh bindings, the next step is the same
  std::string path = ::testing::TempDir() + "portc_ckpt.npz";
  ASSERT_EQ(portc_bindings_save_npz(dev.b, path.c_str()), PORTC_OK) << portc_last_error();
  Bindings fresh(g.get(), 5);
  ASSERT_EQ(portc_bindings_load_npz(fresh.b, path.c_str()), PORTC_OK) << portc_last_error();
  Outputs a(g.get()), c(g.get());
  ASSERT_EQ(portc_module_run(m, dev.b, a.t.data()), PORTC_OK);
  ASSERT_EQ(portc_module_run(m, fresh.b, c.t.data()), PORTC_OK);
  EXPECT_EQ(portc_tensor_get(a.t[li], 0), portc_tensor_get(c.t[li], 0));
  EXPECT_EQ(portc_bindings_load_npz(fresh.b, "/nonexistent/ckpt.npz"), PORTC_ERR_IO);
  remove(path.c_str());
  portc_module_free(m);
}

// Mixed precision: under autocast the matmul computes in f16 between casts, the parameter and its
// gradient stay f32, and the result is close to the f32 graph's.
TEST(Grad, AutocastComputesInHalfWithF32MasterWeights) {
  const char *body = "input x: f32[8, 16]\nparam w: f32[16, 4] = normal(std=0.5, seed=1)\ny = matmul(x, w)\nl = sum(y)\ndw = grad(l, w)\noutput l, dw\n";
  Graph half = parse(std::string("autocast f16\n") + body), full = parse(body);
  ASSERT_TRUE(half && full);
  EXPECT_STREQ(portc_dtype_name(portc_node_dtype(half.get(), portc_graph_find(half.get(), "y"))), "f32");
  EXPECT_STREQ(portc_dtype_name(portc_node_dtype(half.get(), portc_graph_find(half.get(), "dw"))), "f32");
  char *text = portc_graph_print(half.get());
  EXPECT_NE(std::string(text).find("f16[8, 4] = matmul("), std::string::npos) << text;
  free(text);
  RunResult a = run(half.get(), 3), b = run(full.get(), 3);
  ASSERT_EQ(a.status, PORTC_OK) << a.error;
  for (size_t e = 0; e < b.outputs[1].size(); e++) EXPECT_NEAR(a.outputs[1][e], b.outputs[1][e], 2e-2 * (1 + std::fabs(b.outputs[1][e])));
  portc_graph *g = portc_graph_new("t");
  EXPECT_EQ(portc_graph_autocast(g, PORTC_I32), PORTC_ERR_DTYPE);
  portc_graph_free(g);
  portc_graph *bad = nullptr;
  EXPECT_NE(portc_graph_parse("autocast f64\n", "t.ptg", &bad), PORTC_OK);
  EXPECT_NE(std::string(portc_last_error()).find("autocast takes f16, bf16 or off"), std::string::npos) << portc_last_error();
}

// A graph written in f32 (an imported model): its autocast copy computes the matmul, the
// convolution and the attention in f16 or bf16 under the nodes' own names, cast back to f32, and
// leaves what is not f32 alone; the original is untouched, a training graph is refused.
TEST(Grad, AutocastCopyConvertsAGraphBuiltWithoutIt) {
  const char *body = "input x: f32[2, 4, 9, 9]\nparam w: f32[6, 4, 3, 3] = normal(std=0.5, seed=1)\nc = conv2d(x, w)\n"
                     "input q: f32[2, 5, 8]\ninput k: f32[2, 7, 8]\ninput v: f32[2, 7, 4]\na = attention(q, k, v)\n"
                     "input m: f32[3, 8]\ninput n: f32[8, 2]\ny = matmul(m, n)\n"
                     "input h: f16[3, 8]\ninput hw: f16[8, 2]\nz = matmul(h, hw)\noutput c, a, y, z\n";
  Graph full = parse(body);
  ASSERT_TRUE(full);
  for (portc_dtype t : {PORTC_F16, PORTC_BF16}) {
    portc_graph *copy = nullptr;
    int converted = -1;
    ASSERT_EQ(portc_graph_autocast_copy(full.get(), t, &copy, &converted), PORTC_OK) << portc_last_error();
    Graph half(copy);
    EXPECT_EQ(converted, 3);
    for (const char *name : {"c", "a", "y"}) {
      portc_node n = portc_graph_find(half.get(), name);
      ASSERT_GE(n, 0) << name;
      EXPECT_STREQ(portc_node_op(half.get(), n), "cast") << name;
      EXPECT_EQ(portc_node_dtype(half.get(), n), PORTC_F32) << name;
    }
    char *text = portc_graph_print(half.get());
    const std::string h = portc_dtype_name(t);
    EXPECT_NE(std::string(text).find(h + "[3, 2] = matmul("), std::string::npos) << text;
    EXPECT_NE(std::string(text).find(h + "[2, 6, 7, 7] = conv2d("), std::string::npos) << text;
    EXPECT_NE(std::string(text).find(h + "[2, 5, 4] = attention("), std::string::npos) << text;
    EXPECT_STREQ(portc_node_op(half.get(), portc_graph_find(half.get(), "z")), "matmul"); // f16 already
    EXPECT_EQ(portc_graph_output_count(half.get()), 4);
    free(text);
    RunResult a = run(half.get(), 3), b = run(full.get(), 3);
    ASSERT_EQ(a.status, PORTC_OK) << a.error;
    for (size_t e = 0; e < b.outputs[2].size(); e++) EXPECT_NEAR(a.outputs[2][e], b.outputs[2][e], 5e-2 * (1 + std::fabs(b.outputs[2][e])));
  }
  EXPECT_STREQ(portc_node_op(full.get(), portc_graph_find(full.get(), "y")), "matmul"); // the original as it was
  portc_graph *out = nullptr;
  EXPECT_EQ(portc_graph_autocast_copy(full.get(), PORTC_F32, &out, nullptr), PORTC_ERR_DTYPE);
  EXPECT_EQ(out, nullptr);
  Graph train = parse("input x: f32[4, 8]\nparam w: f32[8, 2] = normal(std=0.5, seed=1)\ny = matmul(x, w)\nloss = mean(y)\n"
                      "step sgd(lr=0.01): w by loss\noutput loss\n");
  ASSERT_TRUE(train);
  EXPECT_EQ(portc_graph_autocast_copy(train.get(), PORTC_F16, &out, nullptr), PORTC_ERR_INVALID);
  EXPECT_NE(std::string(portc_last_error()).find("the graph trains"), std::string::npos) << portc_last_error();
}

// Dynamic loss scaling: a step whose gradients are not finite changes nothing and halves the
// scale (an inf among the inputs makes them so on every target and on the float64 reference,
// where f16 overflow alone would only happen on the targets); good steps move the parameters and
// count towards growing the scale, on the reference and a compiled module alike.
TEST(Grad, LossScalingSkipsStepsWithInfOrNaN) {
  const char *text =
      "autocast f16\ninput x: f32[4, 8]\nparam w: f32[8, 2] = normal(std=0.5, seed=1)\ny = matmul(x, w)\nloss = mean(y)\n"
      "step sgd(lr=0.01, loss_scale=1024): w by loss\noutput loss\n";
  Graph g = parse(text);
  ASSERT_TRUE(g);
  portc_compile_options co = {};
  co.target = "cpu";
  Bindings ref(g.get(), 1), dev(g.get(), 1);
  portc_module *m = nullptr;
  ASSERT_EQ(portc_compile(g.get(), &co, dev.b, &m), PORTC_OK) << portc_last_error();
  int64_t xs[2] = {4, 8};
  portc_tensor *x = portc_tensor_new(PORTC_F32, 2, xs);
  for (int step = 0; step < 4; step++) {
    for (int64_t e = 0; e < 32; e++) portc_tensor_set(x, e, step < 2 && e == 5 ? INFINITY : 0.25);
    double w_before = portc_tensor_get(portc_bindings_get(ref.b, "w") ? portc_bindings_get(ref.b, "w") : x, 0);
    for (Bindings *b : {&ref, &dev}) {
      ASSERT_EQ(portc_bindings_set(b->b, "x", x), PORTC_OK);
      Outputs o(g.get());
      portc_status st = b == &ref ? portc_reference_run(g.get(), b->b, o.t.data()) : portc_module_run(m, b->b, o.t.data());
      ASSERT_EQ(st, PORTC_OK) << portc_last_error();
    }
    double scale = portc_tensor_get(portc_bindings_get(ref.b, "amp.scale"), 0), growth = portc_tensor_get(portc_bindings_get(ref.b, "amp.growth"), 0);
    EXPECT_EQ(portc_tensor_get(portc_bindings_get(dev.b, "amp.scale"), 0), scale) << "step " << step;
    EXPECT_EQ(portc_tensor_get(portc_bindings_get(dev.b, "amp.growth"), 0), growth) << "step " << step;
    double w_after = portc_tensor_get(portc_bindings_get(ref.b, "w"), 0);
    EXPECT_NEAR(portc_tensor_get(portc_bindings_get(dev.b, "w"), 0), w_after, 1e-6) << "step " << step;
    if (step < 2) { // skipped: the scale halves, w stays
      EXPECT_EQ(scale, 1024.0 / (2 << step)) << "step " << step;
      EXPECT_EQ(growth, 0);
      if (step) {
        EXPECT_EQ(w_after, w_before);
      }
    } else { // taken: w moves by lr * x^T gy (0.25 / 8 per element of x), the count grows
      EXPECT_EQ(scale, 256);
      EXPECT_EQ(growth, step - 1);
      EXPECT_NEAR(w_after - w_before, -0.01 * 4 * 0.25 / 8, 1e-5) << "step " << step;
    }
  }
  portc_tensor_free(x);
  portc_module_free(m);
}
