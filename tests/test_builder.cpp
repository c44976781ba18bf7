// test_builder.cpp: the C builder API. Failed calls return a status and a message naming the op,
// its operands and the problem; the graph is left as it was; failures propagate along a chain.
#include "helpers.h"

static portc_dim D(int64_t n) { return portc_dim{n, nullptr}; }
static portc_dim S(const char *s) { return portc_dim{0, s}; }

TEST(Builder, BuildsAndNames) {
  Graph g(portc_graph_new("b"));
  portc_dim xd[] = {S("N"), D(8)};
  portc_node x = portc_input(g.get(), "x", PORTC_F32, 2, xd);
  portc_node y = portc_gelu(g.get(), x);
  ASSERT_GE(y, 0);
  EXPECT_STREQ(portc_node_name(g.get(), y), "t0");
  EXPECT_STREQ(portc_node_op(g.get(), y), "gelu");
  EXPECT_EQ(portc_set_name(g.get(), y, "act"), PORTC_OK);
  EXPECT_EQ(portc_graph_find(g.get(), "act"), y);
  EXPECT_EQ(portc_set_name(g.get(), y, "x"), PORTC_ERR_INVALID);
  EXPECT_NE(std::string(portc_last_error()).find("the name 'x' is already used"), std::string::npos);
  EXPECT_EQ(portc_set_name(g.get(), y, "9lives"), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_set_name(g.get(), y, "output"), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_output(g.get(), y), PORTC_OK);
  EXPECT_EQ(portc_output(g.get(), y), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_graph_input_count(g.get()), 1);
  EXPECT_EQ(portc_graph_input(g.get(), 0), x);
  portc_dim d[PORTC_MAX_RANK];
  portc_node_shape(g.get(), y, d);
  EXPECT_STREQ(d[0].symbol, "N");
  EXPECT_EQ(d[1].size, 8);
}

TEST(Builder, FailureNamesOpOperandsAndLeavesGraphIntact) {
  Graph g(portc_graph_new("b"));
  portc_dim ad[] = {D(2), D(3)}, bd[] = {D(4), D(5)};
  portc_node a = portc_input(g.get(), "a", PORTC_F32, 2, ad);
  portc_node b = portc_input(g.get(), "b", PORTC_F32, 2, bd);
  int before = portc_graph_node_count(g.get());
  portc_node m = portc_matmul(g.get(), a, b);
  EXPECT_EQ(portc_node_status(m), PORTC_ERR_SHAPE);
  EXPECT_STREQ(portc_last_error(), "matmul(a, b): inner dimensions differ: a is [2, 3], b is [4, 5] (3 vs 4)");
  EXPECT_EQ(portc_graph_node_count(g.get()), before);
  // the failure propagates: later calls on it fail and say why
  portc_node r = portc_relu(g.get(), m);
  EXPECT_EQ(portc_node_status(r), PORTC_ERR_SHAPE);
  EXPECT_NE(std::string(portc_last_error()).find("relu: input 0 is a failed node (wrong shape)"), std::string::npos);
  EXPECT_EQ(portc_output(g.get(), r), PORTC_ERR_SHAPE);
  EXPECT_EQ(portc_node_status(portc_add(g.get(), a, 12345)), PORTC_ERR_INVALID);
  EXPECT_NE(std::string(portc_last_error()).find("add: input 1 is not a node of this graph"), std::string::npos);
  EXPECT_EQ(portc_graph_node_count(g.get()), before);
  EXPECT_EQ(portc_graph_verify(g.get(), nullptr), PORTC_ERR_INVALID); // no outputs yet, nothing else
}

TEST(Builder, SourcesValidateTheirArguments) {
  Graph g(portc_graph_new("b"));
  portc_dim bad[] = {D(-2)};
  EXPECT_EQ(portc_node_status(portc_input(g.get(), "x", PORTC_F32, 1, bad)), PORTC_ERR_SHAPE);
  EXPECT_NE(std::string(portc_last_error()).find("input x: dimension 0 is negative (-2)"), std::string::npos) << portc_last_error();
  EXPECT_EQ(portc_node_status(portc_input(g.get(), "x", PORTC_F32, 9, bad)), PORTC_ERR_SHAPE);
  EXPECT_EQ(portc_node_status(portc_input(g.get(), "x", PORTC_F64, 0, nullptr)), PORTC_ERR_DTYPE);
  EXPECT_EQ(portc_node_status(portc_input(g.get(), nullptr, PORTC_F32, 0, nullptr)), PORTC_ERR_INVALID);
  portc_dim sym[] = {S("not valid")};
  EXPECT_EQ(portc_node_status(portc_input(g.get(), "x", PORTC_F32, 1, sym)), PORTC_ERR_INVALID);
  double v[] = {1, 2, 3};
  int64_t shape[] = {2};
  EXPECT_EQ(portc_node_status(portc_const(g.get(), PORTC_F32, 1, shape, v, 3)), PORTC_ERR_SHAPE);
  EXPECT_NE(std::string(portc_last_error()).find("3 values for 2 elements"), std::string::npos);
  double frac[] = {1.5};
  EXPECT_EQ(portc_node_status(portc_const(g.get(), PORTC_I32, 0, nullptr, frac, 1)), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_node_status(portc_param_init(g.get(), "w", PORTC_F32, 0, nullptr, PORTC_INIT_UNIFORM, 0, 2, 1)), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_node_status(portc_param_file(g.get(), "w", PORTC_F32, 0, nullptr, "")), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_graph_node_count(g.get()), 0);
  EXPECT_EQ(portc_node_status(portc_exp(nullptr, 0)), PORTC_ERR_INVALID);
}

TEST(Builder, EveryOpCallBuilds) {
  Graph g(portc_graph_new("all"));
  portc_graph *G = g.get();
  portc_dim xd[] = {S("N"), D(4), D(8), D(8)};
  portc_node x = portc_input(G, "x", PORTC_F32, 4, xd);
  portc_dim wd[] = {D(6), D(4), D(3), D(3)}, bd[] = {D(6)}, md[] = {D(8), D(8)}, id[] = {D(3)};
  portc_node w = portc_param(G, "w", PORTC_F32, 4, wd), b = portc_param(G, "b", PORTC_F32, 1, bd);
  portc_node m = portc_param(G, "m", PORTC_F32, 2, md);
  portc_node idx = portc_input(G, "idx", PORTC_I64, 1, id);
  portc_node one = portc_scalar(G, PORTC_F32, 1.0);
  portc_node (*un[])(portc_graph *, portc_node) = {portc_neg, portc_abs, portc_exp, portc_log, portc_sqrt, portc_rsqrt, portc_reciprocal,
                                                   portc_tanh, portc_sigmoid, portc_relu, portc_gelu, portc_gelu_tanh, portc_silu,
                                                   portc_erf, portc_sin, portc_cos, portc_floor, portc_ceil, portc_sign};
  for (auto f : un) EXPECT_GE(f(G, x), 0) << portc_last_error();
  portc_node (*bin[])(portc_graph *, portc_node, portc_node) = {portc_add, portc_sub, portc_mul, portc_div, portc_pow,
                                                                portc_maximum, portc_minimum};
  for (auto f : bin) EXPECT_GE(f(G, x, one), 0) << portc_last_error();
  portc_node (*cmp[])(portc_graph *, portc_node, portc_node) = {portc_eq, portc_ne, portc_lt, portc_le, portc_gt, portc_ge};
  portc_node c = -1;
  for (auto f : cmp) EXPECT_GE(c = f(G, x, one), 0) << portc_last_error();
  EXPECT_GE(portc_not(G, portc_and(G, c, portc_or(G, c, c))), 0);
  EXPECT_GE(portc_where(G, c, x, one), 0);
  EXPECT_GE(portc_cast(G, x, PORTC_BF16), 0);
  int64_t ax[] = {1, -1};
  portc_node (*red[])(portc_graph *, portc_node, int, const int64_t *, bool) = {portc_sum, portc_mean, portc_max, portc_min, portc_prod};
  for (auto f : red) EXPECT_GE(f(G, x, 2, ax, true), 0) << portc_last_error();
  EXPECT_GE(portc_argmax(G, x, 1, false), 0);
  EXPECT_GE(portc_matmul(G, x, m), 0);
  portc_conv2d_opts co = {sizeof co, {1, 1}, {1, 1}, {1, 1}, 1, false};
  EXPECT_GE(portc_conv2d(G, x, w, b, &co), 0) << portc_last_error();
  EXPECT_GE(portc_conv2d(G, x, w, PORTC_NONE, nullptr), 0) << portc_last_error();
  portc_pool2d_opts po = {0, {2, 2}, {0, 0}, {0, 0}, false};
  EXPECT_GE(portc_max_pool2d(G, x, &po), 0);
  EXPECT_GE(portc_avg_pool2d(G, x, &po), 0);
  EXPECT_LT(portc_max_pool2d(G, x, nullptr), 0);
  portc_dim rd[] = {S("N"), D(-1)};
  EXPECT_GE(portc_reshape(G, x, 2, rd), 0) << portc_last_error();
  int64_t perm[] = {0, 2, 3, 1};
  EXPECT_GE(portc_permute(G, x, 4, perm), 0);
  portc_dim ed[] = {D(2), S("N"), D(4), D(8), D(8)};
  EXPECT_GE(portc_expand(G, x, 5, ed), 0) << portc_last_error();
  EXPECT_GE(portc_slice(G, x, 2, 1, PORTC_END, 2), 0);
  portc_node xs[] = {x, x};
  EXPECT_GE(portc_concat(G, 2, xs, 1), 0);
  int64_t pads[] = {0, 0, 0, 0, 1, 1, 2, 2};
  EXPECT_GE(portc_pad(G, x, 8, pads, 0.0), 0);
  EXPECT_GE(portc_gather(G, x, idx, 2), 0);
  EXPECT_GE(portc_softmax(G, x, -1), 0);
  EXPECT_GE(portc_log_softmax(G, x, 1), 0);
  portc_dim ld[] = {D(8)};
  portc_node lw = portc_param(G, "lw", PORTC_F32, 1, ld);
  EXPECT_GE(portc_layer_norm(G, x, lw, lw, 1e-5), 0);
  EXPECT_GE(portc_rms_norm(G, x, lw, 1e-6), 0);
  EXPECT_GE(portc_attention(G, x, x, x, true, 0.0), 0);
  EXPECT_GE(portc_output(G, portc_graph_node_count(G) - 1), PORTC_OK);
  EXPECT_EQ(portc_graph_verify(G, nullptr), PORTC_OK) << portc_last_error();
  // and it prints and parses back
  char *text = portc_graph_print(G);
  portc_graph *g2 = nullptr;
  EXPECT_EQ(portc_graph_parse(text, "all", &g2), PORTC_OK) << portc_last_error();
  EXPECT_EQ(portc_graph_hash(g2), portc_graph_hash(G));
  portc_graph_free(g2);
  free(text);
}

TEST(Builder, OpTableDescribesEveryOp) {
  char *t = portc_ops_describe();
  ASSERT_NE(t, nullptr);
  std::string s = std::string("\n") + t;
  free(t);
  for (const char *op : {"neg", "gelu_tanh", "not", "pow", "maximum", "where", "cast", "prod", "argmax", "conv2d", "avg_pool2d",
                         "gather", "pad", "log_softmax", "rms_norm", "attention"})
    EXPECT_NE(s.find(std::string("\n") + op + " "), std::string::npos) << op;
  EXPECT_NE(s.find("conv2d       inputs 2..3   conv       stride:ints=[1,1] padding:ints=[0,0] dilation:ints=[1,1] groups:int=1"),
            std::string::npos)
      << s;
}
