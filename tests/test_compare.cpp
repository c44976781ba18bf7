// test_compare.cpp: the conformance suite's comparison of an output with the reference
// (conformance/runner.c, TOLERANCES.md): an element out of its bound fails and is named; errors
// that each pass the element bound but lean the same way over a whole tensor fail the norm.
#include <cstring>

extern "C" {
#include "conformance/conformance.h"
}
#include "helpers.h"

namespace {

struct Tensor {
  portc_tensor *t;
  Tensor(portc_dtype dt, std::vector<int64_t> shape) : t(portc_tensor_new(dt, (int)shape.size(), shape.data())) {}
  ~Tensor() { portc_tensor_free(t); }
  void set(int64_t i, double v) { portc_tensor_set(t, i, v); }
};

tolerance bounds(const char *text) {
  Graph g = parse(text);
  tolerance t{};
  conf_tolerance(g.get(), nullptr, "cpu", false, &t); // fused
  return t;
}

} // namespace

TEST(Compare, AnElementOutOfItsBoundIsNamed) {
  tolerance t = bounds("input x: f32[64]\ny = exp(x)\noutput y\n");
  Tensor ref(PORTC_F32, {64}), out(PORTC_F32, {64});
  for (int i = 0; i < 64; i++) ref.set(i, 1 + i / 64.0), out.set(i, 1 + i / 64.0);
  char msg[256];
  EXPECT_TRUE(conf_compare(out.t, ref.t, &t, 1, msg, sizeof msg)) << msg;
  out.set(17, 1 + 17 / 64.0 + 1e-3);
  ASSERT_FALSE(conf_compare(out.t, ref.t, &t, 1, msg, sizeof msg));
  EXPECT_NE(std::string(msg).find("1 of 64 elements out of bounds; first at 17"), std::string::npos) << msg;
}

TEST(Compare, ErrorsLeaningOneWayOverATensorFailTheNorm) {
  tolerance t = bounds("input x: f32[4096]\ny = exp(x)\noutput y\n");
  Tensor ref(PORTC_F32, {4096}), out(PORTC_F32, {4096});
  char msg[256];
  double sq = 0;
  for (int i = 0; i < 4096; i++) {
    double r = (double)(float)(1 + (i % 97) / 97.0);
    ref.set(i, r), sq += r * r;
  }
  // every element 9/10 of its element bound too high (inputs up to 1): each passes, the tensor does not
  double rms = sqrt(sq / 4096);
  for (int i = 0; i < 4096; i++) {
    double r = portc_tensor_get(ref.t, i);
    out.set(i, r + 0.9 * t.rtol * (r + t.atol * rms + 1));
  }
  ASSERT_FALSE(conf_compare(out.t, ref.t, &t, 1, msg, sizeof msg));
  EXPECT_NE(std::string(msg).find("norm error"), std::string::npos) << msg;
}
