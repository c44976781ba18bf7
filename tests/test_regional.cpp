// test_regional.cpp: regional compilation on the targets that build one binary per kernel (cpu,
// and vulkan on whatever driver the machine has: lavapipe in CI). A model of identical blocks
// builds each distinct kernel once: its cold compile leaves as many kernel-cache entries as a
// one-block model does, a one-block model's compile makes every kernel of the four-block one a
// cache hit, and the results still match the reference.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>

#include "helpers.h"

namespace {

// n blocks of matmul, bias, gelu, residual and layer_norm over [N, 32], each with its weights
std::string blocks(int n) {
  std::string s = "graph blocks\ninput x0: f32[N, 32]\n";
  for (int i = 0; i < n; i++) {
    std::string k = std::to_string(i), k1 = std::to_string(i + 1);
    s += "param w" + k + ": f32[32, 32] = normal(mean=0, std=0.2, seed=" + std::to_string(10 + i) + ")\n";
    s += "param b" + k + ": f32[32] = normal(mean=0, std=0.1, seed=" + std::to_string(50 + i) + ")\n";
    s += "h" + k + " = matmul(x" + k + ", w" + k + ")\nhb" + k + " = add(h" + k + ", b" + k + ")\n";
    s += "a" + k + " = gelu(hb" + k + ")\nr" + k + " = add(x" + k + ", a" + k + ")\n";
    s += "x" + k1 + " = layer_norm(r" + k + ")\n";
  }
  return s + "output x" + std::to_string(n) + "\n";
}

class Regional : public ::testing::TestWithParam<const char *> {
 protected:
  void SetUp() override {
    target = GetParam();
    base = testing::TempDir() + "/portc-regional-" + std::to_string(getpid()) + "-" + target;
    mkdir(base.c_str(), 0700);
    char why[512] = "";
    for (int i = 0; i < portc_target_count(); i++)
      if (std::string(portc_target_name(i)) == target && !portc_target_available(i, why, sizeof why))
        FAIL() << target << " must run here (CI has a C compiler and lavapipe): " << why;
  }
  void TearDown() override {
    unsetenv("PORTC_CACHE_DIR");
    EXPECT_EQ(system(("rm -rf '" + base + "'").c_str()), 0);
  }
  // a fresh, empty cache folder
  std::string cache(const std::string &name) {
    std::string d = base + "/" + name;
    setenv("PORTC_CACHE_DIR", d.c_str(), 1);
    return d;
  }
  // the kernel binaries in a cache folder (shared objects, SPIR-V)
  static int kernel_entries(const std::string &dir) {
    int n = 0;
    DIR *d = opendir(dir.c_str());
    for (struct dirent *e; d && (e = readdir(d));) {
      std::string s = e->d_name;
      n += s.size() > 3 && (s.substr(s.size() - 3) == ".so" || s.substr(s.size() - 4) == ".spv");
    }
    if (d) closedir(d);
    return n;
  }
  // compiles g for N=3, runs it with inputs of seed 7; hit says whether every kernel was in the cache
  std::vector<double> compile_run(portc_graph *g, bool *hit, int *kernels) {
    portc_bindings *b = portc_bindings_new(g);
    portc_bindings_set_symbol(b, "N", 3);
    portc_bindings_set_seed(b, 7);
    portc_compile_options o = {};
    o.target = target;
    portc_module *m = nullptr;
    std::vector<double> v;
    EXPECT_EQ(portc_compile(g, &o, b, &m), PORTC_OK) << portc_last_error();
    portc_module_info info = {};
    portc_tensor *out = nullptr;
    if (m && portc_module_info_get(m, b, &info) == PORTC_OK && portc_module_run(m, b, &out) == PORTC_OK) {
      *hit = info.cache_hit;
      *kernels = info.kernels;
      for (int64_t i = 0; i < portc_tensor_numel(out); i++) v.push_back(portc_tensor_get(out, i));
    } else {
      ADD_FAILURE() << portc_last_error();
    }
    portc_tensor_free(out);
    portc_module_free(m);
    portc_bindings_free(b);
    return v;
  }
  std::string base;
  const char *target = nullptr;
};

TEST_P(Regional, IdenticalBlocksCompileOnce) {
  Graph one = parse(blocks(1)), four = parse(blocks(4));
  bool hit = true;
  int k1 = 0, k4 = 0;
  std::string c1 = cache("one");
  compile_run(one.get(), &hit, &k1);
  EXPECT_FALSE(hit);
  int distinct = kernel_entries(c1);
  EXPECT_GE(distinct, 2);
  std::string c4 = cache("four");
  std::vector<double> got = compile_run(four.get(), &hit, &k4);
  EXPECT_FALSE(hit);
  EXPECT_EQ(k4, 4 * k1) << "each block is its own kernels";
  EXPECT_EQ(kernel_entries(c4), distinct) << "four blocks build what one builds";
  // the one-block module's cache holds every kernel of the four-block module
  cache("one");
  std::vector<double> again = compile_run(four.get(), &hit, &k4);
  EXPECT_TRUE(hit);
  EXPECT_EQ(kernel_entries(c1), distinct);
  EXPECT_EQ(again, got);
  // and the shared kernels compute each block with its own buffers
  RunResult want = run(four.get(), 7, {{"N", 3}});
  ASSERT_EQ(want.status, PORTC_OK) << want.error;
  ASSERT_EQ(got.size(), want.outputs[0].size());
  double err = 0, norm = 0;
  for (size_t i = 0; i < got.size(); i++) {
    err += (got[i] - want.outputs[0][i]) * (got[i] - want.outputs[0][i]);
    norm += want.outputs[0][i] * want.outputs[0][i];
  }
  EXPECT_LT(std::sqrt(err / norm), 1e-5);
}

// one compile thread gives the same kernels and results as many
TEST_P(Regional, OneCompileThreadBuildsTheSame) {
  Graph four = parse(blocks(4));
  bool hit = true;
  int k = 0;
  std::string many = cache("many");
  std::vector<double> a = compile_run(four.get(), &hit, &k);
  setenv("PORTC_COMPILE_THREADS", "1", 1);
  std::string single = cache("single");
  std::vector<double> b = compile_run(four.get(), &hit, &k);
  unsetenv("PORTC_COMPILE_THREADS");
  EXPECT_FALSE(hit);
  EXPECT_EQ(kernel_entries(single), kernel_entries(many));
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(Targets, Regional, ::testing::Values("cpu", "vulkan"), [](const auto &info) { return std::string(info.param); });

}  // namespace
