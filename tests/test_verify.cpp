// test_verify.cpp: the verifier reports every problem of a graph, each with the node it concerns,
// and prints the graph annotated under the offending nodes.
#include "helpers.h"

extern "C" {
#include "ir/graph.h"
}

static std::string verify_report(portc_graph *g, portc_status *st) {
  char *rep = nullptr;
  *st = portc_graph_verify(g, &rep);
  std::string s = rep ? rep : "";
  free(rep);
  return s;
}

TEST(Verify, CleanGraphPasses) {
  Graph g = parse("input x: f32[N, 4]\ny = relu(x)\noutput y\n");
  portc_status st;
  EXPECT_EQ(verify_report(g.get(), &st), "");
  EXPECT_EQ(st, PORTC_OK);
}

TEST(Verify, NoOutputs) {
  Graph g = parse("input x: f32[4]\ny = relu(x)\n");
  portc_status st;
  std::string r = verify_report(g.get(), &st);
  EXPECT_EQ(st, PORTC_ERR_INVALID);
  EXPECT_NE(r.find("1 problem in graph main:\n  graph: the graph has no outputs"), std::string::npos) << r;
  EXPECT_NE(std::string(portc_last_error()).find("the graph has no outputs"), std::string::npos);
}

TEST(Verify, ReportsEveryProblemWithItsNode) {
  Graph g = parse("input x: f32[N, 4]\nconst c: f32[2] = [1, 2]\ny = relu(x)\nz = sum(y, axes=[1])\nw = neg(z)\noutput w\n");
  portc_graph *G = g.get();
  // corrupt it in four independent ways, as a buggy pass might
  G->nodes[3].sh.d[0] = dim{7, -1};          // z: recorded shape is wrong
  G->nodes[4].in[0] = 4;                      // w: reads itself
  free(G->nodes[2].name);
  G->nodes[2].name = strdup("x");             // y: duplicate name
  G->nodes[1].value.n = 3;                    // c: value count does not match
  portc_status st;
  std::string r = verify_report(G, &st);
  EXPECT_EQ(st, PORTC_ERR_INVALID);
  EXPECT_NE(r.find("4 problems in graph main:"), std::string::npos) << r;
  EXPECT_NE(r.find("node 1 'c' (line 2): holds 3 values for 2 elements"), std::string::npos) << r;
  EXPECT_NE(r.find("node 2 'x' (line 3): name 'x' is also used by node 0"), std::string::npos) << r;
  EXPECT_NE(r.find("node 3 'z' (line 4): recorded type f32[7] differs from the inferred f32[N]"), std::string::npos) << r;
  EXPECT_NE(r.find("node 4 'w' (line 5): input 0 refers to node 4, which is not an earlier node"), std::string::npos) << r;
  // annotated: the problem sits right under its node's line
  EXPECT_NE(r.find("  z: f32[7] = sum(x, axes=[1])\n  ^^^ recorded type f32[7] differs from the inferred f32[N]"), std::string::npos) << r;
  G->nodes[1].value.n = 2; // restore so that the graph frees cleanly
}

TEST(Verify, OutputsOutOfRangeAndBadOps) {
  Graph g = parse("input x: f32[4]\ny = exp(x)\noutput y\n");
  portc_graph *G = g.get();
  G->outputs[0] = 9;
  G->nodes[1].op = OP_COUNT;
  portc_status st;
  std::string r = verify_report(G, &st);
  EXPECT_NE(r.find("op " + std::to_string((int)OP_COUNT) + " does not exist"), std::string::npos) << r;
  EXPECT_NE(r.find("output 0 refers to node 9, which does not exist"), std::string::npos) << r;
  G->nodes[1].op = OP_exp;
  G->outputs[0] = 1;
}

TEST(Verify, RunRefusesABrokenGraph) {
  Graph g = parse("input x: f32[4]\ny = exp(x)\noutput y\n");
  g->nodes[1].sh.d[0].c = 5;
  RunResult r = run(g.get());
  EXPECT_EQ(r.status, PORTC_ERR_INVALID);
  EXPECT_NE(r.error.find("recorded type f32[5] differs from the inferred f32[4]"), std::string::npos) << r.error;
}
