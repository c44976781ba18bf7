// test_import.cpp: what the ONNX importer builds on, without PyTorch: derived symbols, parameters
// holding their values, .npz archives, graphs saved with their weights, and ONNX bytes that are
// not a model. (The models themselves are tested against PyTorch in onnx_test.sh.)
#include <atomic>
#include <cstdio>
#include <fstream>
#include <thread>

#include "helpers.h"

extern "C" {
#include "cpu/cpu.h"
#include "ir/graph.h"
}

static std::string tmp(const std::string &name) { return testing::TempDir() + "/" + name; }

TEST(DerivedSymbol, ReshapeMergingASymbolInfersAMultiple) {
  Graph g = parse("input x: f32[S, N, 12]\nr = reshape(x, shape=[S, -1, 4])\ny = mul(r, r)\noutput y\n");
  ASSERT_TRUE(g);
  portc_dim d[PORTC_MAX_RANK];
  portc_node_shape(g.get(), portc_graph_find(g.get(), "r"), d);
  ASSERT_NE(d[1].symbol, nullptr);
  EXPECT_STREQ(d[1].symbol, "3*N");
  RunResult r = run(g.get(), 1, {{"S", 2}, {"N", 5}});
  ASSERT_EQ(r.status, PORTC_OK) << r.error;
  EXPECT_EQ(r.shapes[0], (std::vector<int64_t>{2, 15, 4}));
}

TEST(DerivedSymbol, TextRoundTripsAndValuesFollowTheBase) {
  Graph g = parse("input x: f32[2*N, 3]\ny = reshape(x, shape=[N, 6])\noutput y\n");
  ASSERT_TRUE(g);
  char *text = portc_graph_print(g.get());
  EXPECT_NE(std::string(text).find("f32[2*N, 3]"), std::string::npos) << text;
  Graph again = parse(text);
  free(text);
  ASSERT_TRUE(again);
  EXPECT_EQ(portc_graph_hash(g.get()), portc_graph_hash(again.get()));
  portc_bindings *b = portc_bindings_new(g.get());
  EXPECT_EQ(portc_bindings_set_symbol(b, "2*N", 7), PORTC_ERR_SHAPE) << "7 is not a multiple of 2";
  EXPECT_NE(std::string(portc_last_error()).find("not a multiple of 2"), std::string::npos) << portc_last_error();
  portc_bindings_free(b);
  RunResult r = run(g.get(), 1, {{"N", 4}});
  ASSERT_EQ(r.status, PORTC_OK) << r.error;
  EXPECT_EQ(r.shapes[0], (std::vector<int64_t>{4, 6}));
}

TEST(DerivedSymbol, MalformedMultiplesAreRefused) {
  portc_graph *g = nullptr;
  EXPECT_NE(portc_graph_parse("input x: f32[1*N]\noutput x\n", "t.ptg", &g), PORTC_OK);
  EXPECT_NE(std::string(portc_last_error()).find("not a valid multiple"), std::string::npos) << portc_last_error();
  EXPECT_EQ(g, nullptr);
}

// y = x w with x: f32[N, 2] and w a parameter holding its 2x3 values; *wp: w's node
static Graph held_weights_graph(portc_node *wp = nullptr) {
  Graph g(portc_graph_new("held"));
  int64_t shape[] = {2, 3};
  portc_tensor *w = portc_tensor_new(PORTC_F32, 2, shape);
  for (int i = 0; i < 6; i++) portc_tensor_set(w, i, 0.5 * i - 1);
  portc_dim xd[] = {{0, "N"}, {2, nullptr}};
  portc_node x = portc_input(g.get(), "x", PORTC_F32, 2, xd);
  portc_node p = portc_param_data(g.get(), "w", w);
  portc_tensor_free(w); /* the graph holds a copy */
  portc_node y = portc_matmul(g.get(), x, p);
  EXPECT_GE(y, 0) << portc_last_error();
  portc_set_name(g.get(), y, "y");
  portc_output(g.get(), y);
  if (wp) *wp = p;
  return g;
}

TEST(ParamData, HoldsItsValuesAndSavesToAnNpz) {
  Graph g = held_weights_graph();
  RunResult before = run(g.get(), 3, {{"N", 4}});
  ASSERT_EQ(before.status, PORTC_OK) << before.error;

  std::string ptg = tmp("held.ptg"), npz = tmp("held.npz");
  ASSERT_EQ(portc_graph_save(g.get(), ptg.c_str(), npz.c_str()), PORTC_OK) << portc_last_error();
  portc_graph *loaded = nullptr;
  ASSERT_EQ(portc_graph_load(ptg.c_str(), &loaded), PORTC_OK) << portc_last_error();
  Graph l(loaded);
  char *text = portc_graph_print(loaded);
  EXPECT_NE(std::string(text).find("param w: f32[2, 3] = file(\"held.npz\", key=\"w\")"), std::string::npos) << text;
  free(text);
  RunResult after = run(loaded, 3, {{"N", 4}});
  ASSERT_EQ(after.status, PORTC_OK) << after.error;
  EXPECT_EQ(after.outputs, before.outputs);
}

// Threads compiling one graph at once: each compile's copy of the graph shares the parameters'
// values through a count that the threads change together (the tuner compiles its candidates
// so); the values outlive them all and the count comes back to one (the TSan job runs this)
TEST(ParamData, ThreadsCompilingOneGraphShareItsValues) {
  char cc[256], ver[256];
  if (!cpu_compiler(cc, sizeof cc, ver, sizeof ver)) GTEST_SKIP() << "no C compiler";
  portc_node p;
  Graph g = held_weights_graph(&p);
  RunResult before = run(g.get(), 3, {{"N", 4}});
  ASSERT_EQ(before.status, PORTC_OK) << before.error;
  std::atomic<int> failed{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; t++)
    pool.emplace_back([&] {
      for (int i = 0; i < 25; i++) {
        portc_compile_options o = {};
        o.size = sizeof o;
        o.target = "cpu";
        o.dynamic = true;
        portc_module *m = nullptr;
        if (portc_compile(g.get(), &o, nullptr, &m) != PORTC_OK) failed++;
        portc_module_free(m);
      }
    });
  for (auto &th : pool) th.join();
  EXPECT_EQ(failed.load(), 0) << portc_last_error();
  EXPECT_EQ(g->nodes[p].data->refs, 1) << "every copy let go of the values, and only they";
  RunResult after = run(g.get(), 3, {{"N", 4}});
  ASSERT_EQ(after.status, PORTC_OK) << after.error;
  EXPECT_EQ(after.outputs, before.outputs);
}

TEST(ParamData, AMissingNpzMemberIsNamed) {
  Graph g = parse("param w: f32[2] = file(\"none.npz\", key=\"w\")\ny = neg(w)\noutput y\n");
  ASSERT_TRUE(g);
  RunResult r = run(g.get());
  EXPECT_EQ(r.status, PORTC_ERR_IO) << r.error;
  EXPECT_NE(r.error.find("none.npz"), std::string::npos) << r.error;
}

TEST(Onnx, BytesThatAreNotAModelGiveAnErrorAndNoGraph) {
  const unsigned char junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
  portc_graph *g = reinterpret_cast<portc_graph *>(1);
  EXPECT_EQ(portc_graph_from_onnx_memory(junk, sizeof junk, "junk.onnx", &g), PORTC_ERR_PARSE);
  EXPECT_EQ(g, nullptr);
  EXPECT_NE(std::string(portc_last_error()).find("junk.onnx: not an ONNX model"), std::string::npos) << portc_last_error();
  EXPECT_EQ(portc_graph_from_onnx_memory(nullptr, 0, "empty.onnx", &g), PORTC_ERR_PARSE) << "an empty message has no graph";
  EXPECT_NE(std::string(portc_last_error()).find("the model has no graph"), std::string::npos) << portc_last_error();
  EXPECT_EQ(portc_graph_from_onnx("/nonexistent/m.onnx", &g), PORTC_ERR_IO);
  EXPECT_EQ(portc_graph_load("/nonexistent/m.onnx", &g), PORTC_ERR_IO) << "portc_graph_load hands .onnx files to the importer";
}
