// test_partition.cpp: graph breaks, through the test target cpu-partial (the CPU without
// softmax, f16 values or sums over several axes). A graph with a node it lacks runs correctly
// with that node on the CPU target and one break logged; the walk keeps independent nodes on the
// target's side; --fullgraph refuses the graph naming the node; a specialized module with breaks
// still runs other sizes; a dtype and an attribute break like an op does.
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "helpers.h"

namespace {

const char *const kGraph =
    "graph brk\ninput x: f32[N, 32]\nparam w: f32[32, 32] = normal(mean=0, std=0.3, seed=3)\n"
    "h = matmul(x, w)\ns = softmax(h, axis=-1)\nt = tanh(x)\nm = matmul(s, w)\ny = add(m, t)\noutput y\n";

class Breaks : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("PORTC_TEST_TARGETS", "1", 1);
    dir = testing::TempDir() + "/portc-breaks-" + std::to_string(getpid());
    setenv("PORTC_CACHE_DIR", dir.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("PORTC_TEST_TARGETS");
    unsetenv("PORTC_CACHE_DIR");
    unsetenv("PORTC_LOG");
    EXPECT_EQ(system(("rm -rf '" + dir + "'").c_str()), 0);
  }
  // compiles g on cpu-partial for N=n (or dynamic), returns the module or NULL
  portc_module *compile(portc_graph *g, int64_t n, bool fullgraph = false) {
    portc_bindings *b = portc_bindings_new(g);
    portc_bindings_set_symbol(b, "N", n);
    portc_compile_options o = {};
    o.size = sizeof o;
    o.target = "cpu-partial";
    o.fullgraph = fullgraph;
    portc_module *m = nullptr;
    status = portc_compile(g, &o, b, &m);
    portc_bindings_free(b);
    return m;
  }
  // the module's output and the reference's, for N=n and inputs of seed 9: their relative error
  double error_against_reference(portc_module *m, portc_graph *g, int64_t n) {
    portc_bindings *b = portc_bindings_new(g);
    portc_bindings_set_symbol(b, "N", n);
    portc_bindings_set_seed(b, 9);
    portc_tensor *got = nullptr;
    EXPECT_EQ(portc_module_run(m, b, &got), PORTC_OK) << portc_last_error();
    RunResult want = run(g, 9, {{"N", n}});
    double e = INFINITY;
    if (got && want.status == PORTC_OK && (size_t)portc_tensor_numel(got) == want.outputs[0].size()) {
      double err = 0, norm = 0;
      for (size_t i = 0; i < want.outputs[0].size(); i++) {
        double d = portc_tensor_get(got, (int64_t)i) - want.outputs[0][i];
        err += d * d, norm += want.outputs[0][i] * want.outputs[0][i];
      }
      e = std::sqrt(err / norm);
    }
    portc_tensor_free(got);
    portc_bindings_free(b);
    return e;
  }
  std::string dir;
  portc_status status = PORTC_OK;
};

// stderr, while f runs
template <class F> std::string stderr_of(F f) {
  fflush(stderr);
  char path[] = "/tmp/portc-stderr-XXXXXX";
  int fd = mkstemp(path), saved = dup(2);
  dup2(fd, 2);
  f();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  unlink(path);
  return ss.str();
}

int count(const std::string &text, const std::string &what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
  return n;
}

TEST_F(Breaks, AnOpTheTargetLacksRunsOnTheCpuWithOneBreakLogged) {
  Graph g = parse(kGraph);
  setenv("PORTC_LOG", "graph_breaks", 1);
  portc_module *m = nullptr;
  std::string log = stderr_of([&] { m = compile(g.get(), 4); });
  unsetenv("PORTC_LOG");
  ASSERT_TRUE(m) << portc_last_error();
  EXPECT_EQ(count(log, "[portc graph_breaks] graph brk: node 's' (softmax) runs on cpu: target cpu-partial has no softmax"), 1) << log;
  EXPECT_EQ(count(log, "runs on cpu:"), 1) << log;
  EXPECT_LT(error_against_reference(m, g.get(), 4), 1e-5);
  EXPECT_LT(error_against_reference(m, g.get(), 7), 1e-5) << "another size recompiles the regions";
  portc_bindings *b = portc_bindings_new(g.get());
  portc_bindings_set_symbol(b, "N", 4);
  char *text = portc_module_explain(m, b);
  ASSERT_TRUE(text) << portc_last_error();
  std::string ex = text;
  free(text);
  EXPECT_EQ(count(ex, "graph break: node 's' (softmax) runs on cpu"), 1) << ex;
  // tanh is independent of the softmax: it stays with the first matmul, so there are 3 regions, not 4
  EXPECT_NE(ex.find("3 regions"), std::string::npos) << ex;
  EXPECT_NE(ex.find("== region 0 on cpu-partial: takes x w; gives h t"), std::string::npos) << ex;
  EXPECT_NE(ex.find("== region 1 on cpu: takes h; gives s"), std::string::npos) << ex;
  portc_module_info info = {};
  info.size = sizeof info;
  ASSERT_EQ(portc_module_info_get(m, b, &info), PORTC_OK) << portc_last_error();
  EXPECT_STREQ(info.target, "cpu-partial");
  EXPECT_EQ(info.kernels, 4);
  double secs[2];
  portc_bindings_set_seed(b, 9);
  EXPECT_EQ(portc_module_time(m, b, 2, secs), PORTC_OK) << portc_last_error();
  portc_bindings_free(b);
  portc_module_free(m);
}

TEST_F(Breaks, FullgraphNamesTheNode) {
  Graph g = parse(kGraph);
  EXPECT_EQ(compile(g.get(), 4, true), nullptr);
  EXPECT_NE(status, PORTC_OK);
  EXPECT_NE(std::string(portc_last_error()).find("fullgraph: target cpu-partial cannot run node 's' (softmax): has no softmax"),
            std::string::npos)
      << portc_last_error();
}

TEST_F(Breaks, DtypesAndAttributesBreakToo) {
  Graph g = parse(
      "graph mixed\ninput x: f32[N, 8, 4]\nh = cast(x, to=f16)\nk = exp(h)\nf = cast(k, to=f32)\n"
      "r = sum(f, axes=[1, 2])\nq = sum(f, axes=[2])\nz = sum(q, axes=[1])\ny = add(r, z)\noutput y\n");
  portc_module *m = compile(g.get(), 3);
  ASSERT_TRUE(m) << portc_last_error();
  portc_bindings *b = portc_bindings_new(g.get());
  portc_bindings_set_symbol(b, "N", 3);
  char *text = portc_module_explain(m, b);
  ASSERT_TRUE(text);
  std::string ex = text;
  free(text);
  EXPECT_EQ(count(ex, "has no f16 values"), 2) << ex; /* the cast to f16 and the exp */
  EXPECT_EQ(count(ex, "sums over one axis at a time, not 2"), 1) << ex;
  EXPECT_LT(error_against_reference(m, g.get(), 3), 1e-3);
  portc_bindings_free(b);
  portc_module_free(m);
}

TEST_F(Breaks, TheTestTargetIsOffUnlessAskedFor) {
  unsetenv("PORTC_TEST_TARGETS");
  Graph g = parse(kGraph);
  EXPECT_EQ(compile(g.get(), 4), nullptr);
  EXPECT_NE(std::string(portc_last_error()).find("set PORTC_TEST_TARGETS=1"), std::string::npos) << portc_last_error();
}

}  // namespace
