// helpers.h: small wrappers the unit tests share: parse a .ptg text, run it on the reference,
// and read outputs back as doubles.
#pragma once
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <csignal>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "portc/portc.h"

struct GraphDeleter {
  void operator()(portc_graph *g) const { portc_graph_free(g); }
};
using Graph = std::unique_ptr<portc_graph, GraphDeleter>;

inline Graph parse(const std::string &text) {
  portc_graph *g = nullptr;
  portc_status st = portc_graph_parse(text.c_str(), "test.ptg", &g);
  EXPECT_EQ(st, PORTC_OK) << portc_last_error() << "\n--- text:\n" << text;
  return Graph(g);
}

// Runs on the reference; returns every element of output `which` as a double.
struct RunResult {
  portc_status status = PORTC_OK;
  std::string error;
  std::vector<std::vector<double>> outputs;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<portc_dtype> dtypes;
};

inline RunResult run(portc_graph *g, uint64_t seed = 1, std::vector<std::pair<std::string, int64_t>> syms = {}) {
  RunResult r;
  portc_bindings *b = portc_bindings_new(g);
  for (auto &s : syms) EXPECT_EQ(portc_bindings_set_symbol(b, s.first.c_str(), s.second), PORTC_OK) << portc_last_error();
  portc_bindings_set_seed(b, seed);
  int n = portc_graph_output_count(g);
  std::vector<portc_tensor *> outs(n ? n : 1, nullptr);
  r.status = portc_reference_run(g, b, outs.data());
  if (r.status != PORTC_OK) r.error = portc_last_error();
  for (int k = 0; k < n && r.status == PORTC_OK; k++) {
    std::vector<double> v;
    for (int64_t i = 0; i < portc_tensor_numel(outs[k]); i++) v.push_back(portc_tensor_get(outs[k], i));
    r.outputs.push_back(v);
    r.shapes.emplace_back(outs[k]->shape, outs[k]->shape + outs[k]->rank);
    r.dtypes.push_back(outs[k]->dtype);
    portc_tensor_free(outs[k]);
  }
  portc_bindings_free(b);
  return r;
}

// Parses, runs, expects success, returns output 0.
inline std::vector<double> eval(const std::string &text, std::vector<int64_t> *shape = nullptr) {
  Graph g = parse(text);
  if (!g) return {};
  RunResult r = run(g.get());
  EXPECT_EQ(r.status, PORTC_OK) << r.error;
  if (r.outputs.empty()) return {};
  if (shape) *shape = r.shapes[0];
  return r.outputs[0];
}

// Parses, runs, expects a runtime failure; returns the message.
inline std::string eval_error(const std::string &text) {
  Graph g = parse(text);
  if (!g) return "parse failed";
  RunResult r = run(g.get());
  EXPECT_NE(r.status, PORTC_OK) << "expected a failure";
  return r.error;
}

// Compares element by element; NaN equals NaN, infinities must match exactly.
inline void expect_near(const std::vector<double> &got, const std::vector<double> &want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i << ": got " << got[i] << ", want nan";
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "at " << i;
    }
  }
}

inline std::string src_path(const std::string &rel) { return std::string(PORTC_SOURCE_DIR) + "/" + rel; }

// how a forked child that ran under alarm(): its waitpid status in words (SIGALRM: it hung)
inline std::string child_ended(int status) {
  if (WIFSIGNALED(status))
    return "the child was killed by signal " + std::to_string(WTERMSIG(status)) + (WTERMSIG(status) == SIGALRM ? " (the alarm: it hung)" : "");
  return "the child exited with " + std::to_string(WEXITSTATUS(status));
}
