// test_shape.cpp: shape and dtype inference of every op, on hand-checked cases: broadcasting,
// negative axes, keepdim, size-1 and size-0 dimensions, symbols; and the errors inference gives.
#include "helpers.h"

// The type of the last defined value, as "f32[N, 4]", or "error: MESSAGE".
static std::string infer(const std::string &decls, const std::string &stmt) {
  std::string text = decls + "\n" + stmt + "\n";
  portc_graph *g = nullptr;
  if (portc_graph_parse(text.c_str(), "t.ptg", &g) != PORTC_OK) return std::string("error: ") + portc_last_error();
  portc_node n = portc_graph_node_count(g) - 1;
  std::string s = std::string(portc_dtype_name(portc_node_dtype(g, n))) + "[";
  portc_dim d[PORTC_MAX_RANK];
  portc_node_shape(g, n, d);
  for (int i = 0; i < portc_node_rank(g, n); i++) {
    if (i) s += ", ";
    s += d[i].symbol ? d[i].symbol : std::to_string(d[i].size);
  }
  portc_graph_free(g);
  return s + "]";
}

struct Case {
  const char *decls, *stmt, *want;
};

static void check(const std::vector<Case> &cases) {
  for (const Case &c : cases) {
    std::string got = infer(c.decls, c.stmt);
    if (std::string(c.want).rfind("error:", 0) == 0)
      EXPECT_NE(got.find(c.want + 7), std::string::npos) << c.stmt << "\n got: " << got << "\nwant: " << c.want;
    else
      EXPECT_EQ(got, c.want) << c.stmt;
  }
}

static const char *AB = "input a: f32[N, 1, 4]\ninput b: f32[3, 1]\ninput c: f16[4]\ninput i: i32[N, 3, 4]\ninput m: bool[3, 4]";

TEST(Shape, Elementwise) {
  check({
      {AB, "y = exp(a)", "f32[N, 1, 4]"},
      {AB, "y = add(a, b)", "f32[N, 3, 4]"},
      {AB, "y = mul(b, a)", "f32[N, 3, 4]"},
      {AB, "y = neg(i)", "i32[N, 3, 4]"},
      {AB, "y = lt(a, b)", "bool[N, 3, 4]"},
      {AB, "y = eq(m, m)", "bool[3, 4]"},
      {AB, "y = and(m, m)", "bool[3, 4]"},
      {AB, "y = not(m)", "bool[3, 4]"},
      {AB, "y = where(m, a, b)", "f32[N, 3, 4]"},
      {AB, "y = cast(a, to=i64)", "i64[N, 1, 4]"},
      {AB, "y = add(a, c)", "error: operand dtypes differ (f32 vs f16); insert a cast"},
      {AB, "y = exp(i)", "error: takes a floating dtype (f32, f16, bf16), not i32"},
      {AB, "y = and(a, a)", "error: takes bool, not f32"},
      {AB, "y = lt(m, m)", "error: takes a numeric dtype"},
      {AB, "y = where(a, a, b)", "error: condition must be bool, not f32"},
      {"input a: f32[2, 3]\ninput b: f32[4, 3]", "y = add(a, b)", "error: shapes [2, 3] and [4, 3] do not broadcast"},
      {"input a: f32[N]\ninput b: f32[M]", "y = sub(a, b)", "error: shapes [N] and [M] do not broadcast"},
      {"input a: f32[N]\ninput b: f32[N]", "y = sub(a, b)", "f32[N]"},
      {"input a: f32[0, 3]\ninput b: f32[1, 3]", "y = add(a, b)", "f32[0, 3]"},
      {"input a: f32[]\ninput b: f32[2, 3]", "y = add(a, b)", "f32[2, 3]"},
  });
}

TEST(Shape, Reductions) {
  const char *d = "input x: f32[N, 3, 5]\ninput e: f32[0, 4]\ninput k: i64[2, 3]\ninput m: bool[2]";
  check({
      {d, "y = sum(x)", "f32[]"},
      {d, "y = sum(x, keepdim=true)", "f32[1, 1, 1]"},
      {d, "y = mean(x, axes=[-1])", "f32[N, 3]"},
      {d, "y = max(x, axes=[0, 2], keepdim=true)", "f32[1, 3, 1]"},
      {d, "y = prod(k, axes=[1])", "i64[2]"},
      {d, "y = min(x, axes=[1])", "f32[N, 5]"},
      {d, "y = sum(e, axes=[0])", "f32[4]"},
      {d, "y = argmax(x)", "i64[N, 3]"},
      {d, "y = argmax(x, axis=1, keepdim=true)", "i64[N, 1, 5]"},
      {d, "y = sum(x, axes=[3])", "error: axis 3 is out of range for rank 3"},
      {d, "y = sum(x, axes=[1, -2])", "error: axis -2 is listed twice"},
      {d, "y = mean(k)", "error: takes a floating dtype"},
      {d, "y = sum(m)", "error: does not take bool"},
      {d, "y = max(e, axes=[0])", "error: cannot reduce axis 0 of size 0"},
      {d, "y = argmax(e, axis=0)", "error: axis 0 has size 0"},
  });
}

TEST(Shape, Matmul) {
  const char *d = "input a: f32[N, 3]\ninput b: f32[3, 5]\ninput v: f32[3]\ninput ba: f32[2, 1, 4, 3]\ninput bb: f32[7, 3, 6]\ninput h: f16[3, 5]";
  check({
      {d, "y = matmul(a, b)", "f32[N, 5]"},
      {d, "y = matmul(a, v)", "f32[N]"},
      {d, "y = matmul(v, b)", "f32[5]"},
      {d, "y = matmul(v, v)", "f32[]"},
      {d, "y = matmul(ba, bb)", "f32[2, 7, 4, 6]"},
      {d, "y = matmul(b, a)", "error: inner dimensions differ"},
      {d, "y = matmul(a, h)", "error: operand dtypes differ"},
  });
}

TEST(Shape, ConvAndPool) {
  const char *d = "input x: f32[N, 4, 9, 9]\ninput w: f32[8, 2, 3, 3]\ninput b: f32[8]\ninput w1: f32[8, 4, 3, 3]\ninput s: f32[N, 4, H, 9]";
  check({
      {d, "y = conv2d(x, w1)", "f32[N, 8, 7, 7]"},
      {d, "y = conv2d(x, w1, b, padding=[1, 1])", "f32[N, 8, 9, 9]"},
      {d, "y = conv2d(x, w1, stride=[2, 2], padding=[1, 1])", "f32[N, 8, 5, 5]"},
      {d, "y = conv2d(x, w1, dilation=[2, 2])", "f32[N, 8, 5, 5]"},
      {d, "y = conv2d(x, w, b, groups=2)", "f32[N, 8, 7, 7]"},
      {d, "y = conv2d(x, w, groups=3)", "error: groups=3 must divide"},
      {d, "y = conv2d(x, w)", "error: weight has 2 input channels, expected C/groups = 4"},
      {d, "y = conv2d(s, w1)", "error: input dimension 2 is symbolic"},
      {d, "y = conv2d(x, w1, stride=[0, 1])", "error: 'stride' values must be >= 1"},
      {d, "y = max_pool2d(x, kernel=[2, 2])", "f32[N, 4, 4, 4]"},
      {d, "y = max_pool2d(x, kernel=[3, 3], stride=[1, 1], padding=[1, 1])", "f32[N, 4, 9, 9]"},
      {d, "y = avg_pool2d(x, kernel=[3, 3], stride=[2, 2])", "f32[N, 4, 4, 4]"},
      {d, "y = avg_pool2d(x, kernel=[2, 2], padding=[2, 2])", "error: padding 2 is more than half the kernel 2"},
      {d, "y = max_pool2d(x, kernel=[10, 10])", "error: kernel 10 is larger than the padded input 9"},
  });
}

TEST(Shape, Views) {
  const char *d = "input x: f32[N, 4, 6]\ninput z: f32[2, 0, 3]\ninput r: f32[1, 3]\ninput i: i64[5]\ninput j: i32[2, 2]";
  check({
      {d, "y = reshape(x, shape=[N, 24])", "f32[N, 24]"},
      {d, "y = reshape(x, shape=[N, -1])", "f32[N, 24]"},
      {d, "y = reshape(x, shape=[-1, 4, 6])", "f32[N, 4, 6]"},
      {d, "y = reshape(x, shape=[N, 2, 2, 6])", "f32[N, 2, 2, 6]"},
      {d, "y = reshape(z, shape=[0, 3, 5])", "f32[0, 3, 5]"},
      {d, "y = reshape(x, shape=[N, 5])", "error: cannot reshape [N, 4, 6] into [N, 5]"},
      {d, "y = reshape(x, shape=[-1, -1])", "error: more than one -1"},
      {d, "y = reshape(x, shape=[5, -1])", "error: cannot infer -1"},
      {d, "y = permute(x, perm=[2, 0, 1])", "f32[6, N, 4]"},
      {d, "y = permute(x, perm=[-1, 0, 1])", "f32[6, N, 4]"},
      {d, "y = permute(x, perm=[0, 0, 1])", "error: perm is not a permutation"},
      {d, "y = expand(r, shape=[5, 3])", "f32[5, 3]"},
      {d, "y = expand(r, shape=[2, M, -1])", "f32[2, M, 3]"},
      {d, "y = expand(r, shape=[5, 4])", "error: cannot expand dimension 1 from 3 to 4"},
      {d, "y = slice(x, axis=1, start=1, stop=3)", "f32[N, 2, 6]"},
      {d, "y = slice(x, axis=-1, start=-4, step=2)", "f32[N, 4, 2]"},
      {d, "y = slice(x, axis=2, start=5, stop=2)", "f32[N, 4, 0]"},
      {d, "y = slice(x, axis=2, start=-100, stop=100)", "f32[N, 4, 6]"},
      {d, "y = slice(x, axis=0, start=1)", "error: cannot slice symbolic dimension N"},
      {d, "y = slice(x, axis=1, step=0)", "error: step must be 1 or more"},
      {d, "y = concat(x, x, axis=1)", "f32[N, 8, 6]"},
      {d, "y = concat(z, z, z, axis=-1)", "f32[2, 0, 9]"},
      {d, "y = concat(x, x, axis=0)", "error: cannot concat along symbolic dimension"},
      // an empty tensor may have a huge dimension; two of them side by side overflow (fuzzer)
      {"input e: f32[0]\ne2 = reshape(e, shape=[0, 9223372036854775804])", "y = concat(e2, e2, axis=1)",
       "error: the concatenated dimension 1 overflows"},
      {d, "y = concat(x, r, axis=1)", "error: operand ranks differ"},
      {d, "y = pad(r, pads=[1, 2, 0, 3])", "f32[4, 6]"},
      {d, "y = pad(r, pads=[1, 2])", "error: pads needs 2 values per dimension (4), got 2"},
      {d, "y = pad(x, pads=[1, 0, 0, 0, 0, 0])", "error: cannot pad symbolic dimension N"},
      {d, "y = gather(x, i, axis=1)", "f32[N, 5, 6]"},
      {d, "y = gather(x, j, axis=-1)", "f32[N, 4, 2, 2]"},
      {d, "y = gather(x, x)", "error: indices must be i32 or i64"},
  });
}

TEST(Shape, Composites) {
  const char *d =
      "input x: f32[N, 8]\ninput w: f32[8]\ninput q: f32[2, 4, S, 16]\ninput k: f32[2, 4, T, 16]\ninput v: f32[2, 4, T, 32]\ninput k1: f32[4, T, 16]";
  check({
      {d, "y = softmax(x)", "f32[N, 8]"},
      {d, "y = log_softmax(x, axis=0)", "f32[N, 8]"},
      {d, "y = softmax(x, axis=2)", "error: axis 2 is out of range for rank 2"},
      {d, "y = layer_norm(x, w, w)", "f32[N, 8]"},
      {d, "y = layer_norm(x)", "f32[N, 8]"},
      {d, "y = rms_norm(x, w, eps=1e-6)", "f32[N, 8]"},
      {d, "y = layer_norm(x, q)", "error: weight must be [8] (the last dimension)"},
      {d, "y = attention(q, k, v)", "f32[2, 4, S, 32]"},
      {d, "y = attention(q, k1, v, causal=true)", "f32[2, 4, S, 32]"},
      {d, "y = attention(q, v, v)", "error: q and k head sizes differ (16 vs 32)"},
      {d, "y = attention(q, k, q)", "error: k and v lengths differ (T vs S)"},
      // no keys: the reference's softmax over them would be 0/0 and the decomposition's max has
      // nothing to take (found by the graph fuzzer)
      {"input q: f32[2, 3]\ninput k: f32[0, 3]", "y = attention(q, k, k)", "error: k and v have no keys (length 0)"},
  });
}

// Shape arithmetic never overflows: sizes that would are refused where they arise, and no tensor
// has more than 2^48 elements (so index arithmetic in every target and the reference cannot
// overflow). Before, the pad below passed as f32[1] and corrupted the heap at run time.
TEST(Shape, SizesThatWouldOverflowAreRefused) {
  check({
      {"input x: f32[3]", "y = pad(x, pads=[9223372036854775807, 9223372036854775807], value=7)", "error: overflows"},
      {"input x: f32[3]", "y = pad(x, pads=[4611686018427387904, 4611686018427387904], value=7)", "error: overflows"},
      {"input x: f32[65536, 65536]", "y = pad(x, pads=[0, 0, 0, 1099511627776], value=0)", "error: more than 2^48 elements"},
      {"input x: f32[1, 1, 8, 8]\nparam w: f32[1, 1, 3, 3]", "y = conv2d(x, w, dilation=[4611686018427387904, 1])", "error: more than 2^48"},
      {"input x: f32[1, 1, 8, 8]\nparam w: f32[1, 1, 3, 3]", "y = conv2d(x, w, padding=[4611686018427387904, 0])", "error: more than 2^48"},
      {"input x: f32[1, 1, 8, 8]", "y = max_pool2d(x, kernel=[2, 2], stride=[9223372036854775807, 1])", "error: more than 2^48"},
      {"input x: f32[256, 256, 256, 256, 256, 256, 256, 256]", "y = neg(x)", "error: more than 2^48 elements"},
      {"input x: f32[N, 281474976710656]", "y = neg(x)", "f32[N, 281474976710656]"},
      {"input x: f32[2, 281474976710656]", "y = neg(x)", "error: more than 2^48 elements"},
      {"input x: f32[65536, 65536]\ninput z: f32[65536, 65537]", "y = matmul(x, z)", "f32[65536, 65537]"},
      {"input x: f32[16777216, 1]\ninput z: f32[1, 16777217]", "y = add(x, z)", "error: more than 2^48 elements"},
  });
}
