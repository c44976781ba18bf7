// test_lower.cpp: the lowering pipeline without a compiler: each pass on small graphs, the
// fusion groups (how many kernels, which kinds) for the patterns fusion must catch, eager mode,
// and the memory plan.
#include "helpers.h"

extern "C" {
#include "lower/passes.h"
#include "lower/pipeline.h"
#include "codegen/emit.h"
}

static int count_op(const portc_graph *g, enum op op) {
  int n = 0;
  for (int i = 0; i < g->n; i++) n += g->nodes[i].op == op;
  return n;
}

TEST(Passes, DecomposeSoftmaxIntoPrimitives) {
  Graph g = parse("input x: f32[4, 8]\ny = softmax(x)\noutput y\n");
  portc_graph *c = nullptr;
  ASSERT_EQ(graph_copy(g.get(), nullptr, &c), PORTC_OK);
  bool changed = false;
  ASSERT_EQ(decompose(&c, 0, &changed), PORTC_OK) << portc_last_error();
  EXPECT_TRUE(changed);
  EXPECT_EQ(count_op(c, OP_softmax), 0);
  EXPECT_EQ(count_op(c, OP_max), 1);
  EXPECT_EQ(count_op(c, OP_exp), 1);
  EXPECT_EQ(count_op(c, OP_sum), 1);
  EXPECT_EQ(count_op(c, OP_div), 1);
  EXPECT_STREQ(portc_node_name(c, portc_graph_output(c, 0)), "y"); // the output keeps its name
  EXPECT_EQ(portc_graph_verify(c, nullptr), PORTC_OK);
  portc_graph_free(c);
}

TEST(Passes, FoldCseDce) {
  Graph g = parse("input x: f32[4]\nconst a: f32[] = 2\nconst b: f32[] = 3\ns = mul(a, b)\n"
                  "e1 = exp(x)\ne2 = exp(x)\nd = neg(x)\ny = add(e1, e2)\nz = mul(y, s)\noutput z\n");
  portc_graph *c = g.get();
  bool changed = false;
  ASSERT_EQ(opt_fold(c, &changed), PORTC_OK);
  EXPECT_TRUE(changed);
  portc_node s = portc_graph_find(c, "s");
  EXPECT_STREQ(portc_node_op(c, s), "const");
  EXPECT_EQ(c->nodes[s].value.f[0], 6.0);
  ASSERT_EQ(opt_cse(c, &changed), PORTC_OK);
  EXPECT_TRUE(changed);
  portc_node y = portc_graph_find(c, "y");
  EXPECT_EQ(c->nodes[y].in[0], c->nodes[y].in[1]); // both operands are the first exp now
  ASSERT_EQ(opt_dce(c, &changed), PORTC_OK);
  EXPECT_TRUE(changed);
  EXPECT_LT(portc_graph_find(c, "d"), 0);  // dead
  EXPECT_LT(portc_graph_find(c, "e2"), 0); // merged, then dead
  EXPECT_GE(portc_graph_find(c, "x"), 0);  // inputs stay
  EXPECT_EQ(portc_graph_verify(c, nullptr), PORTC_OK) << portc_last_error();
  ASSERT_EQ(opt_cse(c, &changed), PORTC_OK);
  EXPECT_FALSE(changed);
}

struct Lowered {
  kir_module *m = nullptr;
  ~Lowered() { kir_module_free(m); }
};

static int kernels(const std::string &text, bool eager, std::vector<kir_kind> *kinds = nullptr, kir_module **keep = nullptr) {
  Graph g = parse(text);
  if (!g) return -1;
  lower_options o = {};
  o.eager = eager;
  kir_module *m = nullptr;
  if (lower_graph(g.get(), &o, &m) != PORTC_OK) {
    ADD_FAILURE() << portc_last_error();
    return -1;
  }
  int n = m->nk;
  for (int i = 0; kinds && i < n; i++) kinds->push_back(m->k[i].kind);
  if (keep) *keep = m;
  else kir_module_free(m);
  return n;
}

TEST(Fusion, CompositesBecomeOneRowKernel) {
  std::vector<kir_kind> k;
  EXPECT_EQ(kernels("input x: f32[N, 4096]\ny = softmax(x)\noutput y\n", false, &k), 1);
  EXPECT_EQ(k[0], KK_ROW);
  EXPECT_EQ(kernels("input x: f32[N, 4096]\ny = log_softmax(x)\noutput y\n", false), 1);
  EXPECT_EQ(kernels("input x: f32[N, 768]\ninput w: f32[768]\ninput b: f32[768]\ny = layer_norm(x, w, b)\noutput y\n", false), 1);
  EXPECT_EQ(kernels("input x: f32[N, 768]\ninput w: f32[768]\ny = rms_norm(x, w)\noutput y\n", false), 1);
  EXPECT_EQ(kernels("input x: f32[3, 33, 7]\ny = softmax(x, axis=1)\noutput y\n", false), 1); // not innermost: still one
}

TEST(Fusion, ElementwiseChainsWithViewsAreOneKernel) {
  std::vector<kir_kind> k;
  EXPECT_EQ(kernels("input x: f32[8, 6]\ninput z: f32[3, 8]\nt = permute(x, perm=[1, 0])\ns = slice(t, axis=0, start=1, step=2)\n"
                    "r = reshape(s, shape=[3, 8])\ne = expand(z, shape=[2, 3, 8])\na = add(r, e)\nb = tanh(a)\nc = mul(b, b)\n"
                    "y = exp(c)\noutput y\n",
                    false, &k),
            1);
  EXPECT_EQ(k[0], KK_POINTWISE);
  EXPECT_EQ(kernels("input x: f32[8, 6]\nt = permute(x, perm=[1, 0])\na = exp(t)\ny = neg(a)\noutput y\n", true), 3); // eager
}

TEST(Fusion, ReductionTakesProducersAndConsumers) {
  std::vector<kir_kind> k;
  EXPECT_EQ(kernels("input x: f32[33, 1000]\nconst c: f32[] = 0.5\nsq = mul(x, x)\ns = sum(sq, axes=[1], keepdim=true)\n"
                    "r = sqrt(s)\ny = mul(r, c)\noutput y\n",
                    false, &k),
            1);
  EXPECT_EQ(k[0], KK_ROW);
}

TEST(Fusion, ContractionsTakeTheirEpilogue) {
  std::vector<kir_kind> k;
  EXPECT_EQ(kernels("input x: f32[65, 127]\ninput w: f32[127, 96]\ninput b: f32[96]\nh = matmul(x, w)\nhb = add(h, b)\n"
                    "y = gelu(hb)\noutput y\n",
                    false, &k),
            1);
  EXPECT_EQ(k[0], KK_MATMUL);
  EXPECT_EQ(kernels("input x: f32[2, 3, 9, 9]\ninput w: f32[8, 3, 3, 3]\ninput b: f32[8]\nc = conv2d(x, w, b)\nr = relu(c)\n"
                    "input s: f32[2, 8, 7, 7]\ny = add(r, s)\noutput y\n",
                    false),
            1);
  // a transposed operand is read through its view, not copied
  EXPECT_EQ(kernels("input a: f32[33, 7]\ninput b: f32[33, 5]\nat = permute(a, perm=[1, 0])\ny = matmul(at, b)\noutput y\n", false), 1);
}

// A weight gradient over a batch of sequences, x_b^T dy_b summed over b, is one 2-D matmul over
// B*S rows (x and dy read through reshapes), with or without keepdim.
TEST(Passes, BatchedMatmulSummedOverItsBatchIsOneMatmul) {
  for (const char *keep : {"false", "true"}) {
    std::string text = std::string("input x: f32[3, 5, 7]\ninput dy: f32[3, 5, 4]\nxt = permute(x, perm=[0, 2, 1])\np = matmul(xt, dy)\n") +
                       "dw = sum(p, axes=[0], keepdim=" + keep + ")\noutput dw\n";
    Graph g = parse(text.c_str());
    ASSERT_TRUE(g);
    portc_graph *c = nullptr;
    ASSERT_EQ(graph_copy(g.get(), nullptr, &c), PORTC_OK);
    bool changed = false;
    ASSERT_EQ(fold_batch_sum(&c, &changed), PORTC_OK) << portc_last_error();
    EXPECT_TRUE(changed) << keep;
    EXPECT_EQ(portc_graph_verify(c, nullptr), PORTC_OK);
    portc_graph_free(c);
    std::vector<kir_kind> k;
    EXPECT_EQ(kernels(text.c_str(), false, &k), keep[0] == 't' ? 2 : 1) << keep; // keepdim: and a copy to [1, 7, 4]
    EXPECT_EQ(k[0], KK_MATMUL); // its values: the conformance case fusion/weight-gradient-over-a-batch
  }
  // a sum over part of the batch, a broadcast batch, or rows of a symbolic length stay as they are
  for (const char *text : {"input x: f32[3, S, 7]\ninput dy: f32[3, S, 4]\nxt = permute(x, perm=[0, 2, 1])\np = matmul(xt, dy)\n"
                           "dw = sum(p, axes=[0])\noutput dw\n",
                           "input x: f32[3, 2, 5, 7]\ninput dy: f32[3, 2, 5, 4]\nxt = permute(x, perm=[0, 1, 3, 2])\np = matmul(xt, dy)\n"
                           "dw = sum(p, axes=[0])\noutput dw\n",
                           "input x: f32[1, 5, 7]\ninput dy: f32[3, 5, 4]\nxt = permute(x, perm=[0, 2, 1])\np = matmul(xt, dy)\n"
                           "dw = sum(p, axes=[0])\noutput dw\n"}) {
    Graph g = parse(text);
    portc_graph *c = nullptr;
    ASSERT_EQ(graph_copy(g.get(), nullptr, &c), PORTC_OK);
    bool changed = true;
    ASSERT_EQ(fold_batch_sum(&c, &changed), PORTC_OK);
    EXPECT_FALSE(changed) << text;
    portc_graph_free(c);
  }
}

// A weight matmul of rows in another order (an exporter's sequence-first in-projection of a
// batch-first input) reads the rows as they lie and permutes its result, its bias and activation
// moving with it: one kernel, the matmul with its epilogue, whose left operand is x itself.
TEST(Passes, WeightMatmulOfPermutedRowsReadsThemAsTheyLie) {
  const char *text = "input x: f32[4, 33, 40]\ninput w: f32[40, 24]\ninput b: f32[24]\nt = permute(x, perm=[1, 0, 2])\nh = matmul(t, w)\n"
                     "hb = add(h, b)\ny = relu(hb)\noutput y\n";
  Graph g = parse(text);
  ASSERT_TRUE(g);
  portc_graph *c = nullptr;
  ASSERT_EQ(graph_copy(g.get(), nullptr, &c), PORTC_OK);
  bool changed = false;
  ASSERT_EQ(matmul_rows(&c, &changed), PORTC_OK) << portc_last_error();
  EXPECT_TRUE(changed);
  EXPECT_EQ(portc_graph_verify(c, nullptr), PORTC_OK);
  int mm = -1;
  for (int i = 0; i < c->n; i++)
    if (c->nodes[i].op == OP_matmul) mm = i;
  ASSERT_GE(mm, 0);
  EXPECT_STREQ(c->nodes[c->nodes[mm].in[0]].name, "x");
  int y = c->outputs[0];
  EXPECT_EQ(c->nodes[y].op, OP_permute);
  EXPECT_STREQ(c->nodes[y].name, "y");
  EXPECT_EQ(c->nodes[c->nodes[y].in[0]].op, OP_relu);
  portc_graph_free(c);
  std::vector<kir_kind> k;
  EXPECT_EQ(kernels(text, false, &k), 2); // the matmul with bias and relu, then y in its order
  EXPECT_EQ(k[0], KK_MATMUL);
  // the reduced axis moved, a batched right operand, or an epilogue operand per row stay as they are
  for (const char *other : {"input x: f32[4, 40, 33]\ninput w: f32[40, 24]\nt = permute(x, perm=[0, 2, 1])\nh = matmul(t, w)\noutput h\n",
                            "input x: f32[4, 33, 40]\ninput w: f32[33, 40, 24]\nt = permute(x, perm=[1, 0, 2])\nh = matmul(t, w)\noutput h\n",
                            "input x: f32[4, 33, 40]\ninput w: f32[40, 24]\ninput s: f32[33, 4, 24]\nt = permute(x, perm=[1, 0, 2])\n"
                            "h = matmul(t, w)\ny = add(h, s)\noutput y\n"}) {
    Graph o = parse(other);
    ASSERT_TRUE(o);
    ASSERT_EQ(graph_copy(o.get(), nullptr, &c), PORTC_OK);
    ASSERT_EQ(matmul_rows(&c, &changed), PORTC_OK);
    bool moved = false; // the add of a per-row operand keeps reading the permuted result
    for (int i = 0; i < c->n; i++) moved = moved || (c->nodes[i].op == OP_add && strstr(c->nodes[i].name, ".rows"));
    EXPECT_FALSE(moved) << other;
    if (!strstr(other, "input s")) {
      EXPECT_FALSE(changed) << other;
    }
    portc_graph_free(c);
  }
}

// Attention's heads merged for the output projection ([B, H, S, D] permuted to [B, S, H, D], then
// [B, S, H*D]): where the target asks, the permute is copied into a matrix by a kernel of its own,
// and the projection reads a plain operand (what cuBLASLt takes) with its bias still fused; a
// permute whose merged axes lie together, one that moves the last axis, or the option off leave
// the matmul reading through the view; so does a target that asks it for other dtypes only (Vulkan: f16)
TEST(Passes, HeadsMergedForAWeightMatmulAreCopiedIntoAMatrixWhereTheTargetAsks) {
  const char *text = "input a: f32[2, 4, 9, 8]\ninput w: f32[32, 16]\ninput b: f32[16]\nt = permute(a, perm=[0, 2, 1, 3])\n"
                     "m = reshape(t, shape=[2, 9, 32])\nh = matmul(m, w)\ny = add(h, b)\noutput y\n";
  for (unsigned dtypes : {1u << PORTC_F32 | 1u << PORTC_F16, 1u << PORTC_F16, 0u}) {
    const bool on = dtypes >> PORTC_F32 & 1u;
    Graph g = parse(text);
    ASSERT_TRUE(g);
    lower_options o = {};
    o.copy_merged_rows = dtypes;
    kir_module *m = nullptr;
    ASSERT_EQ(lower_graph(g.get(), &o, &m), PORTC_OK) << portc_last_error();
    ASSERT_EQ(m->nk, on ? 2 : 1);
    const int mm = m->nk - 1;
    EXPECT_EQ(m->k[mm].kind, KK_MATMUL);
    EXPECT_EQ(matmul_gemm_view(m, mm), on) << (on ? "copied" : "read through the view");
    if (on) {
      EXPECT_EQ(m->k[0].kind, KK_POINTWISE);
      EXPECT_NE(strstr(m->k[0].why, "copied so that they lie as a matrix"), nullptr) << m->k[0].why;
    }
    kir_module_free(m);
  }
  for (const char *other : {"input a: f32[2, 9, 4, 8]\ninput w: f32[32, 16]\nt = permute(a, perm=[1, 0, 2, 3])\nm = reshape(t, shape=[9, 2, 32])\n"
                            "h = matmul(m, w)\noutput h\n",
                            "input a: f32[2, 4, 8, 9]\ninput w: f32[32, 16]\nt = permute(a, perm=[0, 3, 1, 2])\nm = reshape(t, shape=[2, 9, 32])\n"
                            "h = matmul(m, w)\noutput h\n"}) {
    Graph g = parse(other);
    ASSERT_TRUE(g);
    portc_graph *c = nullptr;
    ASSERT_EQ(graph_copy(g.get(), nullptr, &c), PORTC_OK);
    bool changed = true;
    ASSERT_EQ(matmul_merged_rows(c, 1u << PORTC_F32, &changed), PORTC_OK);
    EXPECT_FALSE(changed) << other;
    portc_graph_free(c);
  }
}

static int count_dtype(const portc_graph *g, enum op op, portc_dtype dt) {
  int n = 0;
  for (int i = 0; i < g->n; i++) n += g->nodes[i].op == op && g->nodes[i].dt == dt;
  return n;
}

// a copy of g after cast_sink, which changed it, and DCE; the copy verifies (NULL on failure)
static portc_graph *sunk(const portc_graph *g) {
  portc_graph *c = nullptr;
  bool changed = false;
  const char *failed = nullptr; // the step that failed
  if (graph_copy(g, nullptr, &c)) failed = "graph_copy";
  else if (cast_sink(&c, &changed)) failed = "cast_sink";
  else if (!changed) ADD_FAILURE() << "cast_sink changed nothing";
  else if (opt_dce(c, &changed)) failed = "opt_dce";
  else if (portc_graph_verify(c, nullptr)) failed = "verify";
  else return c;
  if (failed) ADD_FAILURE() << failed << ": " << portc_last_error();
  portc_graph_free(c);
  return nullptr;
}

// Autocast's f16 values stay f16 through ops that only select or move them: the widening to f32
// moves past relu, max-pooling and a reshape, and cancels against the narrowing after them; an
// addition (it rounds) stays f32, and a widening that something else still reads stays too.
TEST(Passes, WideningCastsSinkPastOpsThatOnlyMoveValues) {
  Graph g = parse("input y: f16[2, 4, 8, 8]\nc = cast(y, to=f32)\nr = relu(c)\np = max_pool2d(r, kernel=[2, 2])\n"
                  "v = reshape(p, shape=[2, 64])\nx = cast(v, to=f16)\no = add(x, x)\n"
                  "s = add(c, c)\nt = cast(s, to=f16)\noutput o\noutput t\n");
  ASSERT_TRUE(g);
  portc_graph *c = sunk(g.get());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(count_dtype(c, OP_relu, PORTC_F16), 1);
  EXPECT_EQ(count_dtype(c, OP_max_pool2d, PORTC_F16), 1);
  EXPECT_EQ(count_dtype(c, OP_reshape, PORTC_F16), 1);
  EXPECT_EQ(count_dtype(c, OP_add, PORTC_F32), 1) << "the addition rounds: it stays f32";
  EXPECT_EQ(count_op(c, OP_cast), 2) << "c (read by the f32 addition) and t remain";
  EXPECT_STREQ(portc_node_name(c, portc_graph_output(c, 0)), "o");
  EXPECT_STREQ(portc_node_name(c, portc_graph_output(c, 1)), "t");
  portc_graph_free(c);
  // an output keeps its node (and name), even where its narrowing would cancel
  Graph h = parse("input y: f16[8]\nc = cast(y, to=f32)\nr = relu(c)\nx = cast(r, to=f16)\noutput x\n");
  ASSERT_TRUE(h);
  ASSERT_NE(c = sunk(h.get()), nullptr);
  EXPECT_STREQ(portc_node_name(c, portc_graph_output(c, 0)), "x");
  EXPECT_EQ(count_dtype(c, OP_relu, PORTC_F16), 1);
  portc_graph_free(c);
}

// Under autocast a residual network's stream stays f16: an addition of two values autocast
// widened adds in their dtype (torch.autocast's f16 add), relu follows it, and the next
// convolution's narrowing cancels. An addition of an autocast value and the f32 input stays f32.
TEST(Passes, AutocastsResidualAdditionsSinkAndKeepTheStreamSixteenBit) {
  Graph g = parse("input x: f32[2, 8, 6, 6]\ninput w: f32[8, 8, 3, 3]\ninput v: f32[8, 8, 1, 1]\nautocast f16\n"
                  "c = conv2d(x, w, padding=[1, 1])\nr = relu(c)\nd = conv2d(r, v)\ns = add(d, r)\nt = relu(s)\n"
                  "e = conv2d(t, v)\ny = add(e, t)\nz = add(e, x)\noutput y\noutput z\n");
  ASSERT_TRUE(g);
  portc_graph *c = sunk(g.get());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(count_dtype(c, OP_add, PORTC_F16), 2) << "s and y add in f16";
  EXPECT_EQ(count_dtype(c, OP_add, PORTC_F32), 1) << "z reads the f32 input: it stays f32";
  EXPECT_EQ(count_dtype(c, OP_relu, PORTC_F16), 2);
  EXPECT_EQ(count_dtype(c, OP_conv2d, PORTC_F16), 3);
  EXPECT_STREQ(portc_node_name(c, portc_graph_output(c, 0)), "y");
  EXPECT_EQ(c->nodes[portc_graph_output(c, 0)].dt, PORTC_F32) << "the output is the graph's f32";
  portc_graph_free(c);
  // a graph that writes its casts itself (no autocast): its addition stays f32
  Graph h = parse("input y: f16[8]\ninput u: f16[8]\nc = cast(y, to=f32)\nd = cast(u, to=f32)\ns = add(c, d)\n"
                  "t = cast(s, to=f16)\no = add(t, t)\noutput o\n");
  ASSERT_TRUE(h);
  bool changed = false;
  ASSERT_EQ(graph_copy(h.get(), nullptr, &c), PORTC_OK);
  ASSERT_EQ(cast_sink(&c, &changed), PORTC_OK);
  EXPECT_EQ(count_dtype(c, OP_add, PORTC_F32), 1) << "a cast the graph wrote is not autocast's";
  portc_graph_free(c);
}

// Where the target runs f16 convolutions channels-last, a chain of them keeps its activations
// NHWC: relu and the residual add move with them, the permutes between the convolutions cancel,
// and only the input, the weights and the output are transposed. An f32 convolution beside them
// stays NCHW; a channels-last one the target cannot run goes back to NCHW between permutes.
TEST(Passes, ConvolutionChainsRunChannelsLastBetweenPermutes) {
  Graph g = parse("input x: f16[2, 16, 9, 7]\ninput w: f16[24, 16, 3, 3]\ninput v: f16[16, 24, 3, 3]\ninput f: f32[2, 3, 8, 8]\n"
                  "input u: f32[4, 3, 1, 1]\nc = conv2d(x, w, padding=[1, 1])\nr = relu(c)\nd = conv2d(r, v, padding=[1, 1])\n"
                  "s = add(d, x)\nt = relu(s)\ny = cast(t, to=f32)\nz = conv2d(f, u)\noutput y\noutput z\n");
  ASSERT_TRUE(g);
  portc_graph *c = nullptr;
  ASSERT_EQ(graph_copy(g.get(), nullptr, &c), PORTC_OK);
  bool changed = false;
  ASSERT_EQ(channels_last(&c, 1u << PORTC_F16, true, &changed), PORTC_OK) << portc_last_error();
  EXPECT_TRUE(changed);
  ASSERT_EQ(opt_dce(c, &changed), PORTC_OK);
  EXPECT_EQ(portc_graph_verify(c, nullptr), PORTC_OK);
  int last = 0, first = 0;
  for (int i = 0; i < c->n; i++)
    if (c->nodes[i].op == OP_conv2d) (attr_i(&c->nodes[i], "channels_last") ? last : first)++;
  EXPECT_EQ(last, 2);
  EXPECT_EQ(first, 1) << "the f32 convolution stays NCHW";
  // x (for the first convolution and for the residual: CSE makes them one later), w, v, and t back
  // to NCHW for the output's cast
  EXPECT_EQ(count_op(c, OP_permute), 5);
  EXPECT_LT(graph_find(c, "d"), 0) << "nothing reads d's NCHW view: the residual add ran NHWC";
  bool chained = false; // a channels-last convolution reads the other one's relu as it is
  for (int i = 0; i < c->n; i++) {
    const node *n = &c->nodes[i];
    if (n->op != OP_conv2d || !attr_i(n, "channels_last")) continue;
    const node *x = &c->nodes[n->in[0]];
    if (x->op == OP_relu) chained = c->nodes[x->in[0]].op == OP_conv2d && attr_i(&c->nodes[x->in[0]], "channels_last");
  }
  EXPECT_TRUE(chained);
  EXPECT_STREQ(portc_node_name(c, portc_graph_output(c, 0)), "y");
  EXPECT_EQ(c->nodes[portc_graph_output(c, 0)].op, OP_cast) << "the output keeps its node";
  EXPECT_EQ(c->nodes[c->nodes[portc_graph_output(c, 0)].in[0]].op, OP_permute) << "and reads t's NCHW view";
  EXPECT_EQ(c->nodes[c->nodes[c->nodes[portc_graph_output(c, 0)].in[0]].in[0]].op, OP_relu) << "t ran NHWC";
  portc_graph_free(c);

  // a channels-last convolution the target does not run: NCHW between permutes
  Graph h = parse("input x: f16[2, 9, 7, 16]\ninput w: f16[3, 3, 16, 24]\ny = conv2d(x, w, channels_last=true)\noutput y\n");
  ASSERT_TRUE(h);
  ASSERT_EQ(graph_copy(h.get(), nullptr, &c), PORTC_OK);
  ASSERT_EQ(channels_last(&c, 0, true, &changed), PORTC_OK) << portc_last_error();
  EXPECT_TRUE(changed);
  const node *y = &c->nodes[portc_graph_output(c, 0)];
  EXPECT_STREQ(portc_node_name(c, portc_graph_output(c, 0)), "y");
  ASSERT_EQ(y->op, OP_permute);
  EXPECT_EQ(c->nodes[y->in[0]].op, OP_conv2d);
  EXPECT_EQ(attr_i(&c->nodes[y->in[0]], "channels_last"), 0);
  EXPECT_EQ(y->sh.d[3].c, 24);
  portc_graph_free(c);
}

// ResNet's stem: a convolution, relu, a max pooling, the next convolution. The pooling of an NHWC
// value pools it channels-last, so nothing between the two convolutions is transposed; a pooling
// that is an output (or reads an NCHW value) stays as written.
TEST(Passes, PoolingsOfChannelsLastValuesPoolChannelsLast) {
  Graph g = parse("input x: f16[2, 8, 16, 16]\ninput w: f16[16, 8, 3, 3]\ninput v: f16[16, 16, 1, 1]\n"
                  "c = conv2d(x, w, stride=[2, 2], padding=[1, 1])\nr = relu(c)\n"
                  "p = max_pool2d(r, kernel=[3, 3], stride=[2, 2], padding=[1, 1])\nd = conv2d(p, v)\n"
                  "q = avg_pool2d(d, kernel=[2, 2])\no = max_pool2d(x, kernel=[2, 2])\noutput q\noutput o\n");
  ASSERT_TRUE(g);
  portc_graph *c = nullptr;
  ASSERT_EQ(graph_copy(g.get(), nullptr, &c), PORTC_OK);
  bool changed = false;
  ASSERT_EQ(channels_last(&c, 1u << PORTC_F16, true, &changed), PORTC_OK) << portc_last_error();
  ASSERT_EQ(opt_dce(c, &changed), PORTC_OK);
  EXPECT_EQ(portc_graph_verify(c, nullptr), PORTC_OK);
  const node *p = nullptr;
  for (int i = 0; i < c->n; i++)
    if (c->nodes[i].op == OP_max_pool2d && attr_i(&c->nodes[i], "channels_last")) p = &c->nodes[i];
  ASSERT_NE(p, nullptr) << "p pools channels-last";
  EXPECT_EQ(c->nodes[p->in[0]].op, OP_relu) << "and reads the relu as it is";
  EXPECT_EQ(p->sh.d[1].c, 4);
  EXPECT_EQ(p->sh.d[3].c, 16) << "[N, OH, OW, C]";
  int later = 0; // the second convolution reads p as it is
  for (int i = 0; i < c->n; i++)
    if (c->nodes[i].op == OP_conv2d && attr_i(&c->nodes[i], "channels_last") && &c->nodes[c->nodes[i].in[0]] == p) later++;
  EXPECT_EQ(later, 1);
  const node *q = &c->nodes[portc_graph_output(c, 0)], *o = &c->nodes[portc_graph_output(c, 1)];
  EXPECT_EQ(q->op, OP_avg_pool2d) << "an output keeps its node";
  EXPECT_EQ(attr_i(q, "channels_last"), 0);
  EXPECT_EQ(o->op, OP_max_pool2d);
  EXPECT_EQ(attr_i(o, "channels_last"), 0) << "x is NCHW: its pooling stays so";
  EXPECT_EQ(count_op(c, OP_permute), 4) << "x and the two weights in, d back out for q";
  portc_graph_free(c);
}

TEST(Passes, PerChannelReductionsRunPixelsFirst) {
  // batch norm's statistics: 16 rows of 32,768 become 128 rows of 4,096, then 16 of 8
  struct { const char *text; int64_t part; } cases[] = {
      {"input x: f32[8, 16, 64, 64]\ny = mean(x, axes=[0, 2, 3], keepdim=true)\noutput y\n", 8 * 16},
      {"input x: f32[16, 4, 4096, 2]\ny = sum(x, axes=[0, 2])\noutput y\n", 16 * 4 * 2}};
  for (auto &t : cases) {
    Graph g = parse(t.text);
    ASSERT_TRUE(g);
    portc_graph *c = nullptr;
    ASSERT_EQ(graph_copy(g.get(), nullptr, &c), PORTC_OK);
    bool changed = false;
    ASSERT_EQ(split_reduce(&c, &changed), PORTC_OK) << portc_last_error();
    EXPECT_TRUE(changed) << t.text;
    EXPECT_EQ(portc_graph_verify(c, nullptr), PORTC_OK);
    portc_node part = graph_find(c, "y.part"), y = graph_find(c, "y");
    ASSERT_GE(part, 0);
    EXPECT_EQ(shape_numel_const(&c->nodes[part].sh), t.part) << t.text; // the pixels reduced first
    EXPECT_TRUE(shape_eq(&c->nodes[y].sh, &g->nodes[graph_find(g.get(), "y")].sh)) << t.text;
    portc_graph_free(c);
  }
  // few long rows with no axis before the kept one, or short rows: as they are
  for (const char *text : {"input x: f32[16, 65536]\ny = sum(x, axes=[1])\noutput y\n",
                           "input x: f32[4096, 64, 2]\ny = sum(x, axes=[0, 2])\noutput y\n"}) {
    Graph g = parse(text);
    portc_graph *c = nullptr;
    ASSERT_EQ(graph_copy(g.get(), nullptr, &c), PORTC_OK);
    bool changed = true;
    ASSERT_EQ(split_reduce(&c, &changed), PORTC_OK);
    EXPECT_FALSE(changed) << text;
    portc_graph_free(c);
  }
}

TEST(Fusion, SeveralConsumers) {
  // cheap: recomputed in both consumers (one kernel per output); costly: materialized once
  EXPECT_EQ(kernels("input x: f32[64]\na = exp(x)\ny1 = add(a, x)\ny2 = mul(a, x)\noutput y1, y2\n", false), 2);
  EXPECT_EQ(kernels("input x: f32[64]\na = exp(x)\nb = tanh(a)\nc = sin(b)\nd = cos(c)\ne = erf(d)\nf = exp(e)\ng = tanh(f)\n"
                    "h = sin(g)\ni = cos(h)\ny1 = add(i, x)\ny2 = mul(i, x)\noutput y1, y2\n",
                    false),
            3);
}

// A training step of an MLP: gelu(hb) is read by the forward matmul and again by the weight
// gradient; across the peak between them only hb (which gelu's gradient reads anyway) is held,
// and a.recomputed is computed again just before the weight gradient reads it.
static const char *kMlpStep =
    "input x: f32[512, 64]\ninput t: f32[512, 64]\nparam w1: f32[64, 256] = normal(std=0.02, seed=1)\nparam b1: f32[256] = zeros\n"
    "param w2: f32[256, 64] = normal(std=0.02, seed=2)\nparam b2: f32[64] = zeros\nh = matmul(x, w1)\nhb = add(h, b1)\na = gelu(hb)\n"
    "o = matmul(a, w2)\ny = add(o, b2)\nloss = mse_loss(y, t)\nstep adamw(lr=0.001, weight_decay=0.01): w1, b1, w2, b2 by loss\noutput loss\n";

static int64_t arena(const kir_module *m) {
  mem_plan plan;
  EXPECT_EQ(plan_memory(m, nullptr, &plan, nullptr), PORTC_OK);
  return plan.arena_bytes;
}

TEST(Memory, ValuesHeldForTheBackwardAreComputedAgain) {
  kir_module *m = nullptr;
  ASSERT_GT(kernels(kMlpStep, false, nullptr, &m), 0);
  Lowered l{m};
  EXPECT_EQ(portc_graph_verify(m->g, nullptr), PORTC_OK);
  portc_node a = graph_find(m->g, "a"), again = graph_find(m->g, "a.recomputed");
  ASSERT_GE(again, 0);
  EXPECT_EQ(m->g->nodes[again].op, OP_gelu);
  EXPECT_EQ(m->g->nodes[again].in[0], graph_find(m->g, "hb"));
  EXPECT_GT(m->remat_values, 0);
  EXPECT_LT(arena(m), m->remat_arena_before);
  // a is read by the forward matmul only; the clone by the weight gradient, later
  int first_a = -1, reads_again = -1;
  for (int k = 0; k < m->nk; k++)
    for (int j = 0; j < m->k[k].nnodes; j++) {
      if (m->k[k].nodes[j] == a && first_a < 0) first_a = k;
      if (m->k[k].nodes[j] == again) reads_again = k;
    }
  EXPECT_LT(first_a, reads_again);
  // where nothing is held across a peak (inference), the graph is left as it is
  kir_module *inf = nullptr;
  ASSERT_GT(kernels("input x: f32[512, 64]\ninput w: f32[64, 256]\ninput w2: f32[256, 64]\nh = matmul(x, w)\na = gelu(h)\ny = matmul(a, w2)\noutput y\n", false,
                    nullptr, &inf),
            0);
  EXPECT_EQ(inf->remat_values, 0);
  kir_module_free(inf);
}

// max_pool2d's gradient adds one spread of the output's gradient per window offset; summed in one
// kernel, all nine would be held together. Partial sums kept in memory free each as it is added.
TEST(Memory, PoolingGradientsAreSummedAsTheyArrive) {
  kir_module *m = nullptr;
  ASSERT_GT(kernels("input x: f32[4, 8, 32, 32]\nparam w: f32[8, 8, 3, 3] = normal(std=0.1, seed=1)\nc = conv2d(x, w, padding=[1, 1])\n"
                    "p = max_pool2d(c, kernel=[3, 3], stride=[2, 2], padding=[1, 1])\nq = mul(p, p)\nloss = mean(q)\n"
                    "step sgd(lr=0.1): w by loss\noutput loss\n",
                    false, nullptr, &m),
            0);
  Lowered l{m};
  int kept = 0;
  for (int i = 0; i < m->g->n; i++) kept += m->g->nodes[i].stored && m->g->nodes[i].op == OP_add;
  EXPECT_GE(kept, 2);
  EXPECT_LT(arena(m), m->remat_arena_before);
}

TEST(Fusion, TransformerLayer) {
  Graph g(nullptr);
  portc_graph *raw = nullptr;
  ASSERT_EQ(portc_graph_load(src_path("examples/transformer.ptg").c_str(), &raw), PORTC_OK);
  g.reset(raw);
  lower_options o = {};
  kir_module *m = nullptr;
  ASSERT_EQ(lower_graph(g.get(), &o, &m), PORTC_OK) << portc_last_error();
  int mm = 0, row = 0;
  for (int i = 0; i < m->nk; i++) mm += m->k[i].kind == KK_MATMUL, row += m->k[i].kind == KK_ROW;
  EXPECT_EQ(mm, 8);  // q, k, v, scores, weighted sum, out projection, two MLP layers (the first holds the gelu)
  EXPECT_EQ(row, 3); // attention softmax and two layer_norms
  EXPECT_EQ(m->nk, 11);
  kir_module_free(m);
}

// The attention an ONNX exporter writes out (matmul by a transposed key, a scale, a mask, softmax,
// matmul) is one attention kernel where the target keeps attention whole, and the decomposition
// (two matmuls and the softmax's row kernel) where it does not.
static const char *const kAttentionSteps =
    "input q: f32[2, 4, 10, 16]\ninput k: f32[2, 4, 10, 16]\ninput v: f32[2, 4, 10, 8]\ninput m: f32[2, 1, 1, 10]\n"
    "const c: f32[] = 4\nkt = permute(k, perm=[0, 1, 3, 2])\ns = matmul(q, kt)\nz = div(s, c)\nb = add(z, m)\n"
    "p = softmax(b, axis=-1)\ny = matmul(p, v)\n";

static int lowered_kernels(const std::string &text, unsigned attention, kir_module **keep) {
  Graph g = parse(text);
  if (!g) return -1;
  lower_options o = {};
  o.attention = attention;
  if (lower_graph(g.get(), &o, keep) != PORTC_OK) {
    ADD_FAILURE() << portc_last_error();
    return -1;
  }
  return (*keep)->nk;
}

TEST(Passes, AttentionIsFormedFromMatmulSoftmaxMatmul) {
  Lowered a, d;
  ASSERT_EQ(lowered_kernels(std::string(kAttentionSteps) + "output y\n", 1u << PORTC_F32, &a.m), 1);
  const kir_kernel *k = &a.m->k[0];
  ASSERT_EQ(k->kind, KK_OPAQUE);
  const node *n = &a.m->g->nodes[k->node];
  ASSERT_EQ(n->op, OP_attention);
  EXPECT_EQ(n->nin, 4);                                  // q, k (the permute's input), v, the mask
  EXPECT_DOUBLE_EQ(attr_get(n, "scale")->f, 0.25);       // div by 4
  EXPECT_STREQ(a.m->g->nodes[n->in[1]].name, "k");       // the transpose is gone, not copied
  EXPECT_EQ(lowered_kernels(std::string(kAttentionSteps) + "output y\n", 0, &d.m), 3); // matmul, softmax row, matmul
}

TEST(Passes, AttentionIsNotFormedWhereItsStepsAreReadElsewhere) {
  Lowered a, b, c;
  // the probabilities are an output too: they must be in memory
  EXPECT_GT(lowered_kernels(std::string(kAttentionSteps) + "output y, p\n", 1u << PORTC_F32, &a.m), 1);
  for (int i = 0; i < a.m->nk; i++) EXPECT_NE(a.m->g->nodes[a.m->k[i].node].op, OP_attention);
  // a softmax over another axis is not attention
  std::string other = kAttentionSteps;
  other.replace(other.find("axis=-1"), 7, "axis=2");
  EXPECT_GT(lowered_kernels(other + "output y\n", 1u << PORTC_F32, &b.m), 1);
  // scales on q and k (PyTorch's exporter writes sqrt(scale) on each) stay on them, scale 1 on the node
  EXPECT_EQ(lowered_kernels("input q: f32[3, 10, 16]\ninput k: f32[3, 12, 16]\ninput v: f32[3, 12, 8]\nconst c: f32[] = 0.5\n"
                            "qs = mul(q, c)\nkt = permute(k, perm=[0, 2, 1])\nks = mul(kt, c)\ns = matmul(qs, ks)\n"
                            "p = softmax(s)\ny = matmul(p, v)\noutput y\n",
                            1u << PORTC_F32, &c.m),
            3); // the two scaled copies and the attention
  bool found = false;
  for (int i = 0; i < c.m->nk; i++) {
    const node *n = &c.m->g->nodes[c.m->k[i].node];
    if (n->op != OP_attention) continue;
    found = true;
    EXPECT_DOUBLE_EQ(attr_get(n, "scale")->f, 1.0);
  }
  EXPECT_TRUE(found);
}

// 40 values summed, and 40 concatenated: no kernel binds more than 25 buffers
TEST(Fusion, WideExpressionsAndConcatsAreCut) {
  std::string sum, cat = "c = concat(";
  for (int i = 0; i < 40; i++) {
    sum += "input x" + std::to_string(i) + ": f32[8]\n";
    cat += (i ? ", x" : "x") + std::to_string(i);
  }
  sum += "s1 = add(x0, x1)\n";
  for (int i = 2; i < 40; i++) sum += "s" + std::to_string(i) + " = add(s" + std::to_string(i - 1) + ", x" + std::to_string(i) + ")\n";
  for (const std::string &text : {sum + "output s39\n", sum + cat + ", axis=0)\noutput c\n"}) {
    kir_module *m = nullptr;
    ASSERT_GE(kernels(text, false, nullptr, &m), 2);
    for (int i = 0; i < m->nk; i++) {
      int bufs[64];
      EXPECT_LE(kernel_buffers(m, i, bufs, 64), 25) << "kernel " << i;
    }
    kir_module_free(m);
  }
}

TEST(MemoryPlan, TempsShareTheArena) {
  kir_module *m = nullptr;
  int n = kernels("input x: f32[1024]\na = exp(x)\nb = neg(a)\nc = tanh(b)\nd = sin(c)\ny = cos(d)\noutput y\n", true, nullptr, &m);
  ASSERT_EQ(n, 5);
  mem_plan plan;
  ASSERT_EQ(plan_memory(m, nullptr, &plan, nullptr), PORTC_OK);
  EXPECT_EQ(plan.naive_bytes, 4 * 4096);  // a, b, c, d
  EXPECT_EQ(plan.arena_bytes, 2 * 4096);  // at most two are alive at once
  kir_module_free(m);
}

TEST(Pipeline, VerifiesAfterEveryPassAndDumps) {
  setenv("PORTC_VERIFY_PASSES", "1", 1);
  Graph g = parse("input x: f32[4, 8]\ny = layer_norm(x)\noutput y\n");
  char *buf = nullptr;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  lower_options o = {};
  o.dump_after = "decompose";
  o.dump = f;
  kir_module *m = nullptr;
  EXPECT_EQ(lower_graph(g.get(), &o, &m), PORTC_OK) << portc_last_error();
  fclose(f);
  std::string out = buf ? buf : "";
  free(buf);
  EXPECT_NE(out.find("# after decompose"), std::string::npos);
  EXPECT_NE(out.find("y.var: f32[4, 1] = mean(y.sq, axes=[-1], keepdim=true)"), std::string::npos) << out;
  kir_module_free(m);
  unsetenv("PORTC_VERIFY_PASSES");
}
