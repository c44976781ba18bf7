// test_artifact.cpp: module files (.portc). A graph compiled for cpu and vulkan into one file runs
// from it where the C compiler cannot be found, with nothing built (the kernel cache stays
// empty), and matches the reference with the parameters the compile saw (generated, and bound at
// compile time); a specialized module's guards hold; a damaged, truncated, foreign or
// newer-format file, and one built for another device, are refused with a message that says so.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "helpers.h"

namespace {

const char *const kGraph =
    "graph filed\ninput x: f32[N, 16]\n"
    "param w: f32[16, 16] = normal(mean=0, std=0.3, seed=4)\n"
    "param b: f32[16]\n"
    "param s: f32[16]\n"
    "h = matmul(x, w)\nhb = add(h, b)\na = gelu(hb)\nm = mul(a, s)\nr = add(x, m)\ny = layer_norm(r)\noutput y\n";

std::string bytes_of(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_bytes(const std::string &path, const std::string &b) { std::ofstream(path, std::ios::binary) << b; }

// the file with its checksum made right again after an edit
std::string resealed(std::string b) {
  uint64_t sum = XXH3_64bits(b.data(), b.size() - 8);
  for (int i = 0; i < 8; i++) b[b.size() - 8 + i] = (char)(sum >> (8 * i));
  return b;
}

portc_tensor *filled(std::vector<int64_t> shape, double scale) {
  portc_tensor *t = portc_tensor_new(PORTC_F32, (int)shape.size(), shape.data());
  for (int64_t i = 0; i < portc_tensor_numel(t); i++) portc_tensor_set(t, i, scale * std::sin(0.7 * (double)i + scale));
  return t;
}

class ModuleFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = testing::TempDir() + "/portc-artifact-" + std::to_string(getpid());
    mkdir(dir.c_str(), 0700);
    setenv("PORTC_CACHE_DIR", (dir + "/cache").c_str(), 1);
    g = parse(kGraph);
    ASSERT_TRUE(g);
    path = dir + "/m.portc";
  }
  void TearDown() override {
    unsetenv("PORTC_CACHE_DIR");
    unsetenv("PORTC_CC");
    EXPECT_EQ(system(("rm -rf '" + dir + "'").c_str()), 0);
  }
  // bindings of the compile: N=3, b and s bound
  portc_bindings *compile_bindings(portc_graph *graph) {
    portc_bindings *bb = portc_bindings_new(graph);
    portc_bindings_set_symbol(bb, "N", 3);
    portc_tensor *b = filled({16}, 0.25), *s = filled({16}, 1.5);
    EXPECT_EQ(portc_bindings_set(bb, "b", b), PORTC_OK);
    EXPECT_EQ(portc_bindings_set(bb, "s", s), PORTC_OK);
    portc_tensor_free(b);
    portc_tensor_free(s);
    return bb;
  }
  void write_file(const char *targets, bool dynamic = false) {
    portc_bindings *bb = compile_bindings(g.get());
    portc_compile_options o = {};
    o.size = sizeof o;
    o.target = targets;
    o.dynamic = dynamic;
    ASSERT_EQ(portc_compile_file(g.get(), &o, bb, path.c_str()), PORTC_OK) << portc_last_error();
    portc_bindings_free(bb);
  }
  // the reference's output for N rows of x, with the compile's parameters
  std::vector<double> reference(int64_t n) {
    portc_bindings *bb = compile_bindings(g.get());
    portc_bindings_set_symbol(bb, "N", n);
    portc_tensor *x = filled({n, 16}, 0.8), *out = nullptr;
    EXPECT_EQ(portc_bindings_set(bb, "x", x), PORTC_OK);
    EXPECT_EQ(portc_reference_run(g.get(), bb, &out), PORTC_OK) << portc_last_error();
    std::vector<double> v;
    for (int64_t i = 0; out && i < portc_tensor_numel(out); i++) v.push_back(portc_tensor_get(out, i));
    portc_tensor_free(out);
    portc_tensor_free(x);
    portc_bindings_free(bb);
    return v;
  }
  // a loaded module's output for N rows of x, binding x alone
  portc_status run_loaded(portc_module *m, int64_t n, std::vector<double> *v) {
    portc_bindings *bb = portc_bindings_new(portc_module_graph(m));
    portc_tensor *x = filled({n, 16}, 0.8), *out = nullptr;
    EXPECT_EQ(portc_bindings_set(bb, "x", x), PORTC_OK);
    portc_status st = portc_module_run(m, bb, &out);
    for (int64_t i = 0; out && i < portc_tensor_numel(out); i++) v->push_back(portc_tensor_get(out, i));
    portc_tensor_free(out);
    portc_tensor_free(x);
    portc_bindings_free(bb);
    return st;
  }
  static double rel_err(const std::vector<double> &got, const std::vector<double> &want) {
    if (got.size() != want.size() || want.empty()) return INFINITY;
    double e = 0, n = 0;
    for (size_t i = 0; i < got.size(); i++) e += (got[i] - want[i]) * (got[i] - want[i]), n += want[i] * want[i];
    return std::sqrt(e / n);
  }
  static int cache_entries(const std::string &folder) {
    int n = 0;
    DIR *d = opendir(folder.c_str());
    for (struct dirent *e; d && (e = readdir(d));) {
      std::string s = e->d_name;
      n += s.size() > 3 && (s.substr(s.size() - 3) == ".so" || s.substr(s.size() - 4) == ".spv");
    }
    if (d) closedir(d);
    return n;
  }
  std::string load_error(const std::string &file, const char *target = nullptr) {
    portc_module *m = nullptr;
    EXPECT_NE(portc_module_load(file.c_str(), target, &m), PORTC_OK) << "loaded " << file;
    portc_module_free(m);
    return portc_last_error();
  }
  std::string dir, path;
  Graph g;
};

TEST_F(ModuleFile, RunsWhereNoCompilerIs) {
  write_file("cpu,vulkan");
  std::vector<double> want = reference(3);
  // a fresh cache and no C compiler: nothing may be built
  setenv("PORTC_CACHE_DIR", (dir + "/empty").c_str(), 1);
  setenv("PORTC_CC", "/nonexistent/cc", 1);
  portc_compile_options o = {};
  o.size = sizeof o;
  portc_module *c = nullptr;
  portc_bindings *bb = compile_bindings(g.get());
  ASSERT_NE(portc_compile(g.get(), &o, bb, &c), PORTC_OK) << "the C compiler is still found";
  portc_bindings_free(bb);
  portc_module *mods[2] = {nullptr, nullptr};
  const char *targets[2] = {"cpu", "vulkan"};
  for (int i = 0; i < 2; i++) {
    const char *t = targets[i];
    ASSERT_EQ(portc_module_load(path.c_str(), t, &mods[i]), PORTC_OK) << t << ": " << portc_last_error();
    std::vector<double> got;
    ASSERT_EQ(run_loaded(mods[i], 3, &got), PORTC_OK) << t << ": " << portc_last_error();
    EXPECT_LT(rel_err(got, want), 1e-5) << t;
    portc_module_info info = {};
    info.size = sizeof info;
    ASSERT_EQ(portc_module_info_get(mods[i], nullptr, &info), PORTC_OK);
    EXPECT_STREQ(info.target, t);
  }
  EXPECT_EQ(cache_entries(dir + "/empty"), 0) << "a module file's run built kernels";
  // specialized to N=3: another size needs a compile, which the CPU cannot do here; Vulkan's
  // shader compiler is part of the library, so it can
  std::vector<double> other;
  EXPECT_NE(run_loaded(mods[0], 5, &other), PORTC_OK);
  EXPECT_NE(std::string(portc_last_error()).find("holds kernels for N=3; this run has N=5"), std::string::npos) << portc_last_error();
  ASSERT_EQ(run_loaded(mods[1], 5, &other), PORTC_OK) << portc_last_error();
  EXPECT_LT(rel_err(other, reference(5)), 1e-5);
  for (portc_module *m : mods) portc_module_free(m);
  // no target named: the file's first
  portc_module *m = nullptr;
  ASSERT_EQ(portc_module_load(path.c_str(), nullptr, &m), PORTC_OK) << portc_last_error();
  portc_module_info info = {};
  info.size = sizeof info;
  ASSERT_EQ(portc_module_info_get(m, nullptr, &info), PORTC_OK);
  EXPECT_STREQ(info.target, "cpu");
  portc_module_free(m);
}

TEST_F(ModuleFile, DynamicRunsEverySizeAndSpecializedRecompilesWithACompiler) {
  write_file("cpu", true);
  portc_module *m = nullptr;
  ASSERT_EQ(portc_module_load(path.c_str(), "cpu", &m), PORTC_OK) << portc_last_error();
  for (int64_t n : {1, 4, 7}) {
    std::vector<double> got;
    ASSERT_EQ(run_loaded(m, n, &got), PORTC_OK) << portc_last_error();
    EXPECT_LT(rel_err(got, reference(n)), 1e-5) << n;
  }
  portc_module_free(m);
  write_file("cpu");
  ASSERT_EQ(portc_module_load(path.c_str(), "cpu", &m), PORTC_OK) << portc_last_error();
  std::vector<double> got;
  ASSERT_EQ(run_loaded(m, 5, &got), PORTC_OK) << portc_last_error(); /* the compiler is here: a recompile */
  EXPECT_LT(rel_err(got, reference(5)), 1e-5);
  portc_module_free(m);
}

TEST_F(ModuleFile, BadFilesAreRefusedWithTheReason) {
  write_file("cpu");
  std::string good = bytes_of(path), bad = dir + "/bad.portc";
  write_bytes(bad, good.substr(0, good.size() / 2));
  EXPECT_NE(load_error(bad).find("is truncated or damaged"), std::string::npos) << portc_last_error();
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x20;
  write_bytes(bad, flipped);
  EXPECT_NE(load_error(bad).find("is truncated or damaged"), std::string::npos) << portc_last_error();
  std::string newer = good;
  newer[8] = 9;
  write_bytes(bad, resealed(newer));
  EXPECT_NE(load_error(bad).find("has format 9; this portc"), std::string::npos) << portc_last_error();
  write_bytes(bad, "graph g\ninput x: f32[4]\noutput x\n");
  EXPECT_NE(load_error(bad).find("is not a portc module file"), std::string::npos) << portc_last_error();
  EXPECT_NE(load_error(dir + "/none.portc").find("none.portc"), std::string::npos) << portc_last_error();
  // the device it was built for, changed: this machine's is another
  std::string other = good;
  size_t at = other.find("cpu ");
  ASSERT_NE(at, std::string::npos);
  size_t colon = other.find(": ", at);
  ASSERT_NE(colon, std::string::npos);
  other[colon + 2] ^= 0x01;
  write_bytes(bad, resealed(other));
  std::string e = load_error(bad);
  EXPECT_NE(e.find("holds no module that runs on this machine"), std::string::npos) << e;
  EXPECT_NE(e.find("this machine's device is"), std::string::npos) << e;
  EXPECT_NE(load_error(path, "vulkan").find("holds no module for vulkan"), std::string::npos) << portc_last_error();
  // a file that is not whole never replaces a good one
  portc_compile_options o = {};
  o.size = sizeof o;
  o.target = "cpu,nosuchtarget";
  portc_bindings *bb = compile_bindings(g.get());
  EXPECT_NE(portc_compile_file(g.get(), &o, bb, path.c_str()), PORTC_OK);
  portc_bindings_free(bb);
  EXPECT_EQ(bytes_of(path), good);
}

}  // namespace
