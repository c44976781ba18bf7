// test_gpu.cpp: the GPU targets end to end on whatever device the machine has: results against
// the CPU target, modules that keep their device buffers between runs, reduce-overhead replays
// that still see new inputs, split-K convolutions, the kernel cache, a bad gather index reported
// after the run, an unknown device named. Vulkan must be there (Mesa's lavapipe in CI); CUDA's tests are skipped,
// and say why, on a machine without an NVIDIA driver. The conformance suite itself runs as the
// ctests verify_vulkan (and on a GPU machine, `portc verify -t cuda`).
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "helpers.h"

class Gpu : public ::testing::TestWithParam<const char *> {
 protected:
  void SetUp() override {
    target = GetParam();
    dir = testing::TempDir() + "/portc-gpu-cache-" + std::to_string(getpid()) + "-" + target;
    setenv("PORTC_CACHE_DIR", dir.c_str(), 1);
    char why[512] = "";
    for (int i = 0; i < portc_target_count(); i++)
      if (std::string(portc_target_name(i)) == target && !portc_target_available(i, why, sizeof why)) {
        if (std::string(target) == "vulkan") FAIL() << why; /* CI has lavapipe: Vulkan must run */
        GTEST_SKIP() << target << " is not available here: " << why;
      }
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir + "'";
    EXPECT_EQ(system(cmd.c_str()), 0);
    unsetenv("PORTC_CACHE_DIR");
  }
  std::string dir;
  const char *target = nullptr;
};

static portc_module *compile_on(const char *target, portc_graph *g, portc_bindings *b, portc_mode mode = PORTC_MODE_DEFAULT) {
  portc_compile_options o = {};
  o.target = target;
  o.mode = mode;
  portc_module *m = nullptr;
  EXPECT_EQ(portc_compile(g, &o, b, &m), PORTC_OK) << portc_last_error();
  return m;
}

static std::vector<double> values(const portc_tensor *t) {
  std::vector<double> v;
  for (int64_t i = 0; t && i < portc_tensor_numel(t); i++) v.push_back(portc_tensor_get(t, i));
  return v;
}

// binds `name` anew in b: c minus its current value, element by element
static void set_reflected(portc_bindings *b, const char *name, double c) {
  const portc_tensor *x = portc_bindings_get(b, name);
  ASSERT_TRUE(x) << name;
  portc_tensor *nx = portc_tensor_new(x->dtype, x->rank, x->shape);
  for (int64_t e = 0; e < portc_tensor_numel(nx); e++) portc_tensor_set(nx, e, c - portc_tensor_get(x, e));
  ASSERT_EQ(portc_bindings_set(b, name, nx), PORTC_OK) << portc_last_error();
  portc_tensor_free(nx);
}

// one output of a module run with inputs from `seed`
static std::vector<double> run_seed(portc_module *m, portc_graph *g, uint64_t seed, int64_t n) {
  portc_bindings *b = portc_bindings_new(g);
  portc_bindings_set_symbol(b, "N", n);
  portc_bindings_set_seed(b, seed);
  portc_tensor *out = nullptr;
  EXPECT_EQ(portc_module_run(m, b, &out), PORTC_OK) << portc_last_error();
  std::vector<double> v = values(out);
  portc_tensor_free(out);
  portc_bindings_free(b);
  return v;
}

static const char *const kModel =
    "input x: f32[N, 96]\ninput w: f32[96, 40]\ninput bias: f32[40]\nh = matmul(x, w)\nhb = add(h, bias)\n"
    "a = gelu(hb)\ny = layer_norm(a)\noutput y\n";

TEST_P(Gpu, MatchesTheCpuTarget) {
  Graph g = parse(kModel);
  portc_bindings *b = portc_bindings_new(g.get());
  portc_bindings_set_symbol(b, "N", 70);
  portc_module *vk = compile_on(target, g.get(), b), *cpu = compile_on("cpu", g.get(), b);
  ASSERT_TRUE(vk && cpu);
  std::vector<double> got = run_seed(vk, g.get(), 5, 70), want = run_seed(cpu, g.get(), 5, 70);
  ASSERT_EQ(got.size(), 70u * 40u);
  expect_near(got, want, 2e-5);
  portc_module_free(vk);
  portc_module_free(cpu);
  portc_bindings_free(b);
}

// A process forked after its parent started the GPU driver cannot use it (the driver's threads
// stay in the parent; lavapipe's run waited for them forever): its runs and compiles for the GPU
// fail at once and say why, its CPU compiles work, and freeing the parent's module returns. An
// alarm turns a hang into a failure.
TEST_P(Gpu, AForkedChildIsToldItCannotUseItsParentsGpu) {
  Graph g = parse(kModel);
  portc_bindings *b = portc_bindings_new(g.get());
  portc_bindings_set_symbol(b, "N", 20);
  portc_bindings_set_seed(b, 3);
  portc_module *m = compile_on(target, g.get(), b);
  ASSERT_NE(m, nullptr);
  portc_tensor *out = nullptr;
  ASSERT_EQ(portc_module_run(m, b, &out), PORTC_OK) << portc_last_error();
  portc_tensor_free(out);
  fflush(nullptr);
  pid_t p = fork();
  if (p == 0) {
    alarm(60);
    portc_tensor *o = nullptr;
    if (portc_module_run(m, b, &o) != PORTC_ERR_DEVICE || !strstr(portc_last_error(), "fork")) _exit(10);
    portc_compile_options opt = {};
    opt.target = target;
    portc_module *again = nullptr;
    if (portc_compile(g.get(), &opt, b, &again) != PORTC_ERR_DEVICE || !strstr(portc_last_error(), "fork()")) _exit(11);
    char why[512] = "";
    for (int i = 0; i < portc_target_count(); i++)
      if (strcmp(portc_target_name(i), target) == 0 && (portc_target_available(i, why, sizeof why) || !strstr(why, "fork()"))) _exit(13);
    opt.target = "cpu";
    if (portc_compile(g.get(), &opt, b, &again) != PORTC_OK || portc_module_run(again, b, &o) != PORTC_OK) _exit(12);
    portc_module_free(m);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(p, &status, 0), p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << child_ended(status)
      << " (10: its run, 11: its GPU compile did not fail as they should; 12: its CPU compile failed; 13: the target said it was available)";
  out = nullptr; /* the parent's own device still works */
  EXPECT_EQ(portc_module_run(m, b, &out), PORTC_OK) << portc_last_error();
  portc_tensor_free(out);
  portc_module_free(m);
  portc_bindings_free(b);
}

TEST_P(Gpu, ReduceOverheadReplaysWithNewInputs) {
  Graph g = parse(kModel);
  portc_bindings *b = portc_bindings_new(g.get());
  portc_bindings_set_symbol(b, "N", 33);
  portc_module *ro = compile_on(target, g.get(), b, PORTC_MODE_REDUCE_OVERHEAD), *cpu = compile_on("cpu", g.get(), b);
  ASSERT_TRUE(ro && cpu);
  for (uint64_t seed : {1, 2, 3}) { /* the same recording, new data each time */
    std::vector<double> got = run_seed(ro, g.get(), seed, 33), want = run_seed(cpu, g.get(), seed, 33);
    expect_near(got, want, 2e-5);
  }
  double t[4] = {0, 0, 0, 0};
  portc_bindings_set_seed(b, 4);
  EXPECT_EQ(portc_module_time(ro, b, 4, t), PORTC_OK) << portc_last_error();
  for (double s : t) EXPECT_GT(s, 0.0);
  portc_module_info info = {};
  ASSERT_EQ(portc_module_info_get(ro, b, &info), PORTC_OK);
  EXPECT_STRNE(info.timer, "host clock");
  portc_module_free(ro);
  portc_module_free(cpu);
  portc_bindings_free(b);
}

TEST_P(Gpu, DynamicModuleRunsEverySize) {
  Graph g = parse("input x: f32[N, 300]\ny = softmax(x, axis=-1)\noutput y\n");
  portc_compile_options o = {};
  o.target = target;
  o.dynamic = true;
  portc_module *vk = nullptr, *cpu = nullptr;
  ASSERT_EQ(portc_compile(g.get(), &o, nullptr, &vk), PORTC_OK) << portc_last_error();
  o.target = "cpu";
  ASSERT_EQ(portc_compile(g.get(), &o, nullptr, &cpu), PORTC_OK) << portc_last_error();
  for (int64_t n : {1, 7, 300, 2})
    expect_near(run_seed(vk, g.get(), 9, n), run_seed(cpu, g.get(), 9, n), 1e-6);
  portc_module_free(vk);
  portc_module_free(cpu);
}

// a convolution that a site tune table splits into 3 slices of its reduction (2 work groups of
// tiles: only tables split it on the CI's software device): its partial sums pass through the
// module's scratch buffer, which grows with the batch of a dynamic module and is reused after
TEST_P(Gpu, SplitKConvolutionRunsEveryBatchSize) {
  std::string table = dir + "-split.tune";
  FILE *f = fopen(table.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fprintf(f, "api=%s kind=conv split_k=3 prov=heuristic source=\"a test: every convolution in 3 slices\"\n", target);
  fclose(f);
  setenv("PORTC_TUNE_PATH", table.c_str(), 1);
  Graph g = parse("input x: f32[N, 24, 9, 9]\nparam w: f32[40, 24, 3, 3] = normal(mean=0, std=0.2, seed=3)\n"
                  "param c: f32[40] = normal(mean=0, std=0.2, seed=4)\ny0 = conv2d(x, w, c, padding=[1, 1])\ny = relu(y0)\noutput y\n");
  portc_compile_options o = {};
  o.target = target;
  o.dynamic = true;
  portc_module *gpu = nullptr, *cpu = nullptr;
  ASSERT_EQ(portc_compile(g.get(), &o, nullptr, &gpu), PORTC_OK) << portc_last_error();
  unsetenv("PORTC_TUNE_PATH");
  unlink(table.c_str());
  char *text = portc_module_explain(gpu, nullptr);
  ASSERT_NE(text, nullptr);
  EXPECT_NE(std::string(text).find("the reduction in 3 slices"), std::string::npos) << text;
  free(text);
  o.target = "cpu";
  ASSERT_EQ(portc_compile(g.get(), &o, nullptr, &cpu), PORTC_OK) << portc_last_error();
  for (int64_t n : {1, 5, 2}) expect_near(run_seed(gpu, g.get(), 7, n), run_seed(cpu, g.get(), 7, n), 1e-5);
  portc_module_free(gpu);
  portc_module_free(cpu);
}

TEST_P(Gpu, SecondCompileHitsTheKernelCache) {
  Graph g = parse(kModel);
  portc_bindings *b = portc_bindings_new(g.get());
  portc_bindings_set_symbol(b, "N", 4);
  portc_module *m = compile_on(target, g.get(), b);
  portc_module_info info = {};
  ASSERT_EQ(portc_module_info_get(m, b, &info), PORTC_OK);
  EXPECT_FALSE(info.cache_hit);
  portc_module_free(m);
  m = compile_on(target, g.get(), b);
  ASSERT_EQ(portc_module_info_get(m, b, &info), PORTC_OK);
  EXPECT_TRUE(info.cache_hit);
  EXPECT_NE(std::string(info.device).find(std::string(target) + ":"), std::string::npos) << info.device;
  portc_module_free(m);
  portc_bindings_free(b);
}

// an integer division by zero is an error, as on the reference (issue 18, defect 5); the module
// still works with other divisors
TEST_P(Gpu, IntegerDivisionByZeroIsAnError) {
  Graph g = parse("input a: i32[4]\ninput d: i32[4]\nq = div(a, d)\ny = add(q, a)\noutput y\n");
  portc_module *m = compile_on(target, g.get(), nullptr);
  ASSERT_NE(m, nullptr);
  portc_bindings *b = portc_bindings_new(g.get());
  int64_t s4[] = {4};
  portc_tensor *a = portc_tensor_new(PORTC_I32, 1, s4), *d = portc_tensor_new(PORTC_I32, 1, s4);
  const double av[] = {7, -9, 8, 5}, zero[] = {2, 0, 4, 1}, good[] = {2, 3, 4, 1};
  for (int k = 0; k < 4; k++) portc_tensor_set(a, k, av[k]), portc_tensor_set(d, k, zero[k]);
  portc_bindings_set(b, "a", a);
  portc_bindings_set(b, "d", d);
  portc_tensor *out = nullptr;
  EXPECT_EQ(portc_module_run(m, b, &out), PORTC_ERR_RUNTIME);
  EXPECT_NE(std::string(portc_last_error()).find("integer division by zero"), std::string::npos) << portc_last_error();
  EXPECT_EQ(out, nullptr);
  for (int k = 0; k < 4; k++) portc_tensor_set(d, k, good[k]);
  portc_bindings_set(b, "d", d);
  ASSERT_EQ(portc_module_run(m, b, &out), PORTC_OK) << portc_last_error();
  expect_near(values(out), {10, -12, 10, 10});
  portc_tensor_free(out);
  portc_tensor_free(a);
  portc_tensor_free(d);
  portc_bindings_free(b);
  portc_module_free(m);
}

TEST_P(Gpu, BadGatherIndexIsAnErrorAndTheModuleStillWorks) {
  Graph g = parse("input x: f32[5, 3]\ninput i: i64[4]\ny = gather(x, i, axis=0)\noutput y\n");
  portc_module *m = compile_on(target, g.get(), nullptr);
  ASSERT_NE(m, nullptr);
  portc_bindings *b = portc_bindings_new(g.get());
  int64_t xs[] = {5, 3}, is[] = {4};
  portc_tensor *x = portc_tensor_new(PORTC_F32, 2, xs), *idx = portc_tensor_new(PORTC_I64, 1, is);
  for (int k = 0; k < 15; k++) portc_tensor_set(x, k, k);
  int64_t bad[] = {0, 7, -1, 2}, good[] = {4, 0, -1, 2};
  memcpy(idx->data, bad, sizeof bad);
  portc_bindings_set(b, "x", x);
  portc_bindings_set(b, "i", idx);
  portc_tensor *out = nullptr;
  EXPECT_EQ(portc_module_run(m, b, &out), PORTC_ERR_RUNTIME);
  EXPECT_NE(std::string(portc_last_error()).find("an index is out of range"), std::string::npos) << portc_last_error();
  EXPECT_EQ(out, nullptr);
  memcpy(idx->data, good, sizeof good);
  portc_bindings_set(b, "i", idx);
  ASSERT_EQ(portc_module_run(m, b, &out), PORTC_OK) << portc_last_error();
  expect_near(values(out), {12, 13, 14, 0, 1, 2, 12, 13, 14, 6, 7, 8});
  portc_tensor_free(out);
  portc_tensor_free(x);
  portc_tensor_free(idx);
  portc_bindings_free(b);
  portc_module_free(m);
}

TEST_P(Gpu, UnknownDeviceIndexSaysWhichExist) {
  Graph g = parse("input x: f32[4]\ny = neg(x)\noutput y\n");
  portc_compile_options o = {};
  std::string bad = std::string(target) + ":99", good = std::string(target) + ":0";
  o.target = bad.c_str();
  portc_module *m = nullptr;
  EXPECT_EQ(portc_compile(g.get(), &o, nullptr, &m), PORTC_ERR_DEVICE);
  std::string want = "no device " + std::string(target) + ":99";
  EXPECT_NE(std::string(portc_last_error()).find(want), std::string::npos) << portc_last_error();
  o.target = good.c_str();
  EXPECT_EQ(portc_compile(g.get(), &o, nullptr, &m), PORTC_OK) << portc_last_error();
  portc_module_free(m);
}

// the CUDA target's two ways to run a matmul, portc's tensor-core kernel and cuBLASLt with the
// epilogue after it, agree with the CPU; `portc explain` says which one runs
class Cuda : public Gpu {};

// A kernel that reads only parameters (here w's exp; under autocast, every weight's cast) runs in
// the first run and then not, its result kept on the device, until a parameter is set anew; in
// both modes, the replayed recording of reduce-overhead too.
TEST_P(Gpu, KernelsOfParametersAloneRunAgainOnlyWhenAParameterChanges) {
  Graph g = parse("input x: f32[8, 6]\nparam w: f32[6, 4] = normal(std=0.5, seed=1)\nv = exp(w)\ny = matmul(x, v)\noutput y\n");
  for (portc_mode mode : {PORTC_MODE_DEFAULT, PORTC_MODE_REDUCE_OVERHEAD}) {
    portc_bindings *b = portc_bindings_new(g.get());
    portc_bindings_set_seed(b, 3);
    portc_module *m = compile_on(target, g.get(), b, mode), *cpu = compile_on("cpu", g.get(), b);
    ASSERT_TRUE(m && cpu);
    portc_module_info info = {};
    info.size = sizeof info;
    ASSERT_EQ(portc_module_info_get(m, b, &info), PORTC_OK);
    ASSERT_EQ(info.derived_kernels, 1) << "exp(w): a kernel of its own, since a matmul operand is stored";
    EXPECT_EQ(info.kept_bytes, 6 * 4 * 4);
    const int all = info.kernels;
    auto check = [&](int launched, const char *when) {
      portc_tensor *got = nullptr, *want = nullptr;
      ASSERT_EQ(portc_module_run(m, b, &got), PORTC_OK) << portc_last_error();
      ASSERT_EQ(portc_module_run(cpu, b, &want), PORTC_OK) << portc_last_error();
      expect_near(values(got), values(want), 2e-5);
      portc_tensor_free(got), portc_tensor_free(want);
      ASSERT_EQ(portc_module_info_get(m, b, &info), PORTC_OK);
      EXPECT_EQ(info.last_run_kernels, launched) << when << " (mode " << mode << ")";
    };
    check(all, "the first run computes exp(w)");
    check(all - 1, "the second keeps it");
    check(all - 1, "and the third");
    set_reflected(b, "w", 0.25);
    check(all, "a new w: exp(w) again");
    check(all - 1, "then kept again");
    double t[3] = {0, 0, 0}; /* timed runs after a run: nothing to compute again */
    EXPECT_EQ(portc_module_time(m, b, 3, t), PORTC_OK) << portc_last_error();
    check(all - 1, "after timed runs");
    portc_module_free(m);
    portc_module_free(cpu);
    portc_bindings_free(b);
  }
  setenv("PORTC_DERIVED", "rerun", 1); /* the A/B baseline: every kernel every run */
  portc_module *m = compile_on(target, g.get(), nullptr);
  portc_module_info info = {};
  info.size = sizeof info;
  ASSERT_TRUE(m);
  ASSERT_EQ(portc_module_info_get(m, nullptr, &info), PORTC_OK);
  EXPECT_EQ(info.derived_kernels, 0);
  portc_module_free(m);
  setenv("PORTC_DERIVED", "sometimes", 1);
  portc_compile_options o = {};
  o.target = target;
  EXPECT_EQ(portc_compile(g.get(), &o, nullptr, &m), PORTC_ERR_INVALID);
  EXPECT_NE(std::string(portc_last_error()).find("PORTC_DERIVED is 'sometimes'"), std::string::npos) << portc_last_error();
  unsetenv("PORTC_DERIVED");
}

// A training step keeps the parameters and the optimizer state on the device: portc_module_step
// uploads them once, reads back only the loss, and computes exactly what portc_module_run
// computes; the bindings read the newest values back when asked (get, a checkpoint, a run of
// another module), and a module freed first hands them over.
TEST_P(Gpu, TrainingStepKeepsParametersOnTheDevice) {
  const char *text =
      "input x: f32[16, 6]\ninput y: i64[16]\nparam w: f32[6, 4] = normal(std=0.5, seed=1)\nparam b: f32[4] = zeros\n"
      "h = matmul(x, w)\nlogits = add(h, b)\nloss = cross_entropy(logits, y)\nstep adamw(lr=0.05, weight_decay=0.01): w, b by loss\noutput loss\n";
  portc_graph *g = nullptr;
  ASSERT_EQ(portc_graph_parse(text, "train.ptg", &g), PORTC_OK) << portc_last_error();
  const int nout = portc_graph_output_count(g);
  int li = 0;
  while (strcmp(portc_node_name(g, portc_graph_output(g, li)), "loss") != 0) li++;
  portc_bindings *ran = portc_bindings_new(g), *stepped = portc_bindings_new(g);
  portc_bindings_set_seed(ran, 5), portc_bindings_set_seed(stepped, 5);
  portc_module *mr = compile_on(target, g, ran), *ms = compile_on(target, g, stepped);
  ASSERT_TRUE(mr && ms);
  std::vector<portc_tensor *> a(nout), c(nout);
  auto loss_of = [&](std::vector<portc_tensor *> &o) {
    double l = portc_tensor_get(o[li], 0);
    for (auto *&t : o) portc_tensor_free(t), t = nullptr;
    return l;
  };
  portc_module_info first = {}, later = {}, ran_first = {}, ran_later = {};
  for (portc_module_info *i : {&first, &later, &ran_first, &ran_later}) i->size = sizeof *i;
  for (int step = 0; step < 4; step++) {
    ASSERT_EQ(portc_module_run(mr, ran, a.data()), PORTC_OK) << portc_last_error();
    ASSERT_EQ(portc_module_step(ms, stepped, c.data()), PORTC_OK) << portc_last_error();
    int given = 0;
    for (auto *t : c) given += t != nullptr;
    EXPECT_EQ(given, 1) << "a step gives the loss alone";
    ASSERT_EQ(portc_module_info_get(ms, stepped, step ? &later : &first), PORTC_OK);
    ASSERT_EQ(portc_module_info_get(mr, ran, step ? &ran_later : &ran_first), PORTC_OK);
    EXPECT_EQ(loss_of(a), loss_of(c)) << "step " << step;
  }
  const int64_t params = (6 * 4 + 4) * 4 * 3; // w, b and two moments each, f32
  EXPECT_GE(first.uploaded_bytes, params);
  EXPECT_EQ(later.uploaded_bytes, 4) << "after the first step only the loss's poison goes up (x and y did not change)";
  EXPECT_EQ(later.downloaded_bytes, 4) << "a step reads back its loss alone";
  EXPECT_LE(ran_later.uploaded_bytes, ran_first.uploaded_bytes - params) << "a run uploads no unchanged parameter";
  EXPECT_GE(ran_later.downloaded_bytes, params) << "a run reads every output";
  for (const char *p : {"w", "b", "w.exp_avg", "optimizer.step"}) EXPECT_EQ(values(portc_bindings_get(stepped, p)), values(portc_bindings_get(ran, p))) << p;
  EXPECT_EQ(portc_tensor_get(portc_bindings_get(stepped, "optimizer.step"), 0), 4);
  // a new batch goes up, and nothing else
  for (portc_bindings *bb : {ran, stepped}) set_reflected(bb, "x", 0.5);
  ASSERT_EQ(portc_module_step(ms, stepped, c.data()), PORTC_OK);
  ASSERT_EQ(portc_module_run(mr, ran, a.data()), PORTC_OK);
  EXPECT_EQ(loss_of(a), loss_of(c));
  ASSERT_EQ(portc_module_info_get(ms, stepped, &later), PORTC_OK);
  EXPECT_EQ(later.uploaded_bytes, 16 * 6 * 4 + 4);
  // a checkpoint of the stepped bindings holds the newest values
  std::string path = dir + "-ckpt.npz";
  ASSERT_EQ(portc_module_step(ms, stepped, c.data()), PORTC_OK);
  ASSERT_EQ(portc_module_run(mr, ran, a.data()), PORTC_OK);
  loss_of(a), loss_of(c);
  ASSERT_EQ(portc_bindings_save_npz(stepped, path.c_str()), PORTC_OK) << portc_last_error();
  portc_bindings *restored = portc_bindings_new(g);
  ASSERT_EQ(portc_bindings_load_npz(restored, path.c_str()), PORTC_OK) << portc_last_error();
  EXPECT_EQ(values(portc_bindings_get(restored, "w.exp_avg_sq")), values(portc_bindings_get(ran, "w.exp_avg_sq")));
  portc_bindings_free(restored);
  remove(path.c_str());
  // a CPU module steps the same bindings from the device's newest values, and the GPU step after
  // it starts from the CPU's (uploaded again, since they changed)
  portc_module *cpu = compile_on("cpu", g, stepped);
  ASSERT_TRUE(cpu);
  ASSERT_EQ(portc_module_step(ms, stepped, c.data()), PORTC_OK);
  ASSERT_EQ(portc_module_run(mr, ran, a.data()), PORTC_OK);
  loss_of(a), loss_of(c);
  ASSERT_EQ(portc_module_step(cpu, stepped, c.data()), PORTC_OK) << portc_last_error();
  ASSERT_EQ(portc_module_run(mr, ran, a.data()), PORTC_OK);
  double lr = loss_of(a), lc = loss_of(c);
  EXPECT_NEAR(lc, lr, 1e-5 * std::fabs(lr));
  ASSERT_EQ(portc_module_step(ms, stepped, c.data()), PORTC_OK);
  ASSERT_EQ(portc_module_run(mr, ran, a.data()), PORTC_OK);
  lr = loss_of(a), lc = loss_of(c);
  EXPECT_NEAR(lc, lr, 1e-5 * std::fabs(lr));
  ASSERT_EQ(portc_module_info_get(ms, stepped, &later), PORTC_OK);
  EXPECT_GE(later.uploaded_bytes, params) << "the CPU changed them: uploaded again";
  // bindings freed while the module holds their values, then a module freed first: both safe,
  // and the second hands the values back
  portc_bindings *brief = portc_bindings_new(g);
  portc_bindings_set_seed(brief, 5);
  ASSERT_EQ(portc_module_step(ms, brief, c.data()), PORTC_OK);
  loss_of(c);
  portc_bindings_free(brief);
  ASSERT_EQ(portc_module_step(ms, stepped, c.data()), PORTC_OK);
  ASSERT_EQ(portc_module_run(mr, ran, a.data()), PORTC_OK);
  loss_of(a), loss_of(c);
  portc_module_free(ms);
  portc_module_free(cpu);
  std::vector<double> w = values(portc_bindings_get(stepped, "w")), wr = values(portc_bindings_get(ran, "w"));
  ASSERT_EQ(w.size(), wr.size());
  for (size_t e = 0; e < w.size(); e++) EXPECT_NEAR(w[e], wr[e], 1e-5) << e;
  EXPECT_EQ(portc_tensor_get(portc_bindings_get(stepped, "optimizer.step"), 0), 10);
  portc_module_free(mr);
  portc_bindings_free(ran);
  portc_bindings_free(stepped);
  portc_graph_free(g);
}

TEST_P(Cuda, MatmulBothPathsMatchTheCpu) {
  /* an epilogue cuBLASLt cannot do (bias + gelu: an epilogue kernel after it, in place where the
   * output has the operands' dtype, else from an f32 product), and one it can (a bias) */
  const struct { const char *tail, *blaslt; } cases[] = {
      {"z = add(h, c)\ny = gelu(z)\n", "cuBLASLt into the output, finished in place by an epilogue kernel"},
      {"z = add(h, c)\nw = gelu(z)\ny = cast(w, to=f32)\n", "cuBLASLt + epilogue kernel"},
      {"y = add(c, h)\n", "cuBLASLt with its bias epilogue"}};
  for (const auto &c : cases) {
    Graph g = parse((std::string("input a: f16[96, 64]\ninput b: f16[64, 136]\ninput c: f16[136]\nh = matmul(a, b)\n") + c.tail +
                     "output y\n").c_str());
    portc_module *cpu = compile_on("cpu", g.get(), nullptr);
    std::vector<double> want = run_seed(cpu, g.get(), 3, 0);
    for (const char *how : {"own", "cublaslt"}) {
      setenv("PORTC_CUDA_MATMUL", how, 1);
      portc_module *m = compile_on(target, g.get(), nullptr);
      ASSERT_NE(m, nullptr);
      expect_near(run_seed(m, g.get(), 3, 0), want, 2e-3);
      char *text = portc_module_explain(m, nullptr);
      ASSERT_NE(text, nullptr);
      /* the own kernel: mma.sync's, or on Hopper its own */
      const std::string t(text);
      if (how[0] == 'o')
        EXPECT_TRUE(t.find("runs:   portc's tensor-core kernel") != std::string::npos ||
                    t.find("runs:   portc's Hopper tensor-core kernel") != std::string::npos)
            << t;
      else
        EXPECT_NE(t.find(std::string("runs:   ") + c.blaslt), std::string::npos) << t;
      free(text);
      portc_module_free(m);
    }
    unsetenv("PORTC_CUDA_MATMUL");
    portc_module_free(cpu);
  }
}

// Hopper's f32 matmul (PORTC_CUDA_KERNELS=...,tf32x3) splits its B into TF32 parts before it runs;
// where B is a parameter the parts are kept and split again only when the parameter is set anew,
// in the default mode and when a CUDA graph replays the run.
TEST_P(Cuda, HoppersF32MatmulSplitsAParameterAgainOnlyWhenItChanges) {
  Graph g = parse("input x: f32[96, 64]\nparam w: f32[64, 136] = normal(std=0.5, seed=1)\ny = matmul(x, w)\noutput y\n");
  setenv("PORTC_CUDA_KERNELS", "tf32x3", 1);
  setenv("PORTC_CUDA_MATMUL", "own", 1);
  for (portc_mode mode : {PORTC_MODE_DEFAULT, PORTC_MODE_REDUCE_OVERHEAD}) {
    portc_bindings *b = portc_bindings_new(g.get());
    portc_bindings_set_seed(b, 3);
    portc_module *m = compile_on(target, g.get(), b, mode), *cpu = compile_on("cpu", g.get(), b);
    ASSERT_TRUE(m && cpu);
    char *text = portc_module_explain(m, b);
    ASSERT_NE(text, nullptr);
    bool hopper = std::string(text).find("three TF32 products") != std::string::npos;
    free(text);
    if (!hopper) {
      portc_module_free(m), portc_module_free(cpu), portc_bindings_free(b);
      unsetenv("PORTC_CUDA_KERNELS"), unsetenv("PORTC_CUDA_MATMUL");
      GTEST_SKIP() << "the device is not Hopper (compute capability 9.0)";
    }
    auto check = [&](const char *when) {
      SCOPED_TRACE(std::string(when) + ", mode " + std::to_string(mode));
      portc_tensor *got = nullptr, *want = nullptr;
      ASSERT_EQ(portc_module_run(m, b, &got), PORTC_OK) << portc_last_error();
      ASSERT_EQ(portc_module_run(cpu, b, &want), PORTC_OK) << portc_last_error();
      expect_near(values(got), values(want), 2e-5);
      portc_tensor_free(got), portc_tensor_free(want);
    };
    check("the first run splits w");
    check("the second keeps its parts");
    set_reflected(b, "w", 0.25);
    check("a new w: split again");
    check("then kept again");
    portc_module_free(m);
    portc_module_free(cpu);
    portc_bindings_free(b);
  }
  unsetenv("PORTC_CUDA_KERNELS");
  unsetenv("PORTC_CUDA_MATMUL");
}

// The threading contract (portc.h): a module and a bindings object may be shared between threads;
// calls on one object run one after the other. Four threads run one module, half of them through
// one shared bindings object, and every result is the single-threaded one.
class Threads : public Gpu {};

TEST_P(Threads, OneModuleAndOneBindingsSharedBetweenThreads) {
  Graph g = parse("input x: f32[N, 300]\nt = tanh(x)\ny = softmax(t, axis=-1)\noutput y\n");
  portc_compile_options o = {};
  o.target = target;
  o.dynamic = true;
  portc_module *m = nullptr;
  ASSERT_EQ(portc_compile(g.get(), &o, nullptr, &m), PORTC_OK) << portc_last_error();
  std::vector<double> want = run_seed(m, g.get(), 5, 33);
  ASSERT_EQ(want.size(), 33u * 300u);
  portc_bindings *shared = portc_bindings_new(g.get());
  portc_bindings_set_symbol(shared, "N", 33);
  portc_bindings_set_seed(shared, 5);
  std::vector<int> wrong(4, 0), failed(4, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; t++)
    pool.emplace_back([&, t] {
      for (int rep = 0; rep < 15; rep++) {
        std::vector<double> got;
        if (t % 2) {
          got = run_seed(m, g.get(), 5, 33);
        } else {
          portc_tensor *out = nullptr;
          if (portc_module_run(m, shared, &out) != PORTC_OK) failed[t]++;
          got = values(out);
          portc_tensor_free(out);
          if (!portc_bindings_get(shared, "x")) failed[t]++;
        }
        if (got != want) wrong[t]++;
      }
    });
  for (auto &th : pool) th.join();
  for (int t = 0; t < 4; t++) {
    EXPECT_EQ(failed[t], 0) << "thread " << t;
    EXPECT_EQ(wrong[t], 0) << "thread " << t;
  }
  portc_bindings_free(shared);
  portc_module_free(m);
}

INSTANTIATE_TEST_SUITE_P(Targets, Threads, ::testing::Values("cpu", "vulkan", "cuda"), [](const auto &info) { return std::string(info.param); });
INSTANTIATE_TEST_SUITE_P(Targets, Gpu, ::testing::Values("vulkan", "cuda"), [](const auto &info) { return std::string(info.param); });
INSTANTIATE_TEST_SUITE_P(Target, Cuda, ::testing::Values("cuda"), [](const auto &info) { return std::string(info.param); });
