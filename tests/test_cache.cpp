// test_cache.cpp: the kernel cache's key covers everything that changes a compiled artifact:
// the source, the target, the compiler's identity, the device, each option the compiler gets,
// and the environment variables that change its output. Each target's real option list is
// checked too: toggling what it depends on gives another key. And cache_or_build builds once,
// then hits, and rebuilds an entry that was damaged.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

extern "C" {
#include "cpu/cpu.h"
#include "cuda/cu.h"
#include "hip/hip.h"
#include "targets/cache.h"
}

namespace {

std::string key_of(const build_key &k) {
  char out[33];
  build_key_hash(&k, out);
  return out;
}

// a build_args holds pointers into itself: it is filled where it lives, never copied
void set_args(build_args *a, std::initializer_list<const char *> v) {
  *a = {};
  for (const char *s : v) build_args_add(a, "%s", s);
}

TEST(CacheKey, EveryFieldAndOptionChangesTheKey) {
  build_args a;
  set_args(&a, {"-O3", "-march=native"});
  static const char *const env[] = {"PORTC_TEST_CACHE_ENV", nullptr};
  unsetenv("PORTC_TEST_CACHE_ENV");
  build_key base = {"cpu", "int x;", &a, "gcc 12", "-march=znver3 -mavx2", env};
  std::string k0 = key_of(base);
  EXPECT_EQ(k0.size(), 32u);
  EXPECT_EQ(k0, key_of(base)) << "the same build has the same key";

  build_key k = base;
  k.target = "cuda";
  EXPECT_NE(key_of(k), k0);
  k = base, k.source = "int y;";
  EXPECT_NE(key_of(k), k0);
  k = base, k.compiler = "gcc 13";
  EXPECT_NE(key_of(k), k0);
  k = base, k.device = "-march=znver3 -mno-avx2";
  EXPECT_NE(key_of(k), k0);

  build_args dropped, added, joined, swapped;
  set_args(&dropped, {"-O3"});
  set_args(&added, {"-O3", "-march=native", "-ffast-math"});
  set_args(&joined, {"-O3-march=native"});
  set_args(&swapped, {"-march=native", "-O3"});
  for (const build_args *other : {&dropped, &added, &joined, &swapped}) {
    k = base, k.args = other;
    EXPECT_NE(key_of(k), k0) << "options " << other->n;
  }

  setenv("PORTC_TEST_CACHE_ENV", "", 1);
  EXPECT_NE(key_of(base), k0) << "an empty variable is not an unset one";
  std::string empty = key_of(base);
  setenv("PORTC_TEST_CACHE_ENV", "/opt/include", 1);
  EXPECT_NE(key_of(base), k0);
  EXPECT_NE(key_of(base), empty);
  unsetenv("PORTC_TEST_CACHE_ENV");
  EXPECT_EQ(key_of(base), k0);
}

TEST(CacheKey, TargetsOptionListsFollowWhatTheyDependOn) {
  build_args plain = {}, lineinfo = {}, sm80 = {};
  unsetenv("PORTC_CUDA_LINEINFO");
  cu_compile_options("sm_90", &plain);
  setenv("PORTC_CUDA_LINEINFO", "1", 1);
  cu_compile_options("sm_90", &lineinfo);
  unsetenv("PORTC_CUDA_LINEINFO");
  cu_compile_options("sm_80", &sm80);
  build_key k = {"cuda", "src", &plain, "nvrtc", "dev", nullptr};
  std::string k0 = key_of(k);
  k.args = &lineinfo;
  EXPECT_NE(key_of(k), k0) << "PORTC_CUDA_LINEINFO changes NVRTC's options";
  k.args = &sm80;
  EXPECT_NE(key_of(k), k0);

  build_args w64 = {}, w32 = {};
  hip_compile_options("gfx90a", 64, &w64);
  hip_compile_options("gfx90a", 32, &w32);
  build_key h = {"hip", "src", &w64, "hiprtc", "dev", nullptr};
  std::string h0 = key_of(h);
  h.args = &w32;
  EXPECT_NE(key_of(h), h0);

  build_args cc = {}, other_cc = {};
  unsetenv("PORTC_CC");
  cpu_compile_options(&cc);
  setenv("PORTC_CC", "clang", 1);
  cpu_compile_options(&other_cc);
  unsetenv("PORTC_CC");
  ASSERT_GT(cc.n, 2);
  EXPECT_STREQ(cc.v[0], "cc");
  EXPECT_STREQ(other_cc.v[0], "clang");
  build_key c = {"cpu", "src", &cc, "gcc", cpu_isa_flags(), cpu_compiler_env};
  std::string c0 = key_of(c);
  c.args = &other_cc;
  EXPECT_NE(key_of(c), c0);
  c.args = &cc;
  for (const char *const *v = cpu_compiler_env; *v; v++) {
    const char *was = getenv(*v);
    std::string saved = was ? was : "";
    setenv(*v, "/somewhere/else", 1);
    EXPECT_NE(key_of(c), c0) << *v << " changes what the compiler makes";
    if (was) setenv(*v, saved.c_str(), 1);
    else unsetenv(*v);
  }
  EXPECT_EQ(key_of(c), c0);
}

TEST(CacheKey, TheCpuDeviceIsItsInstructionSetFlags) {
  std::string isa = cpu_isa_flags();
  EXPECT_TRUE(isa.find("-march=") != std::string::npos || isa.find("-target-cpu") != std::string::npos) << isa;
#if defined(__x86_64__)
  EXPECT_NE(isa.find("sse2"), std::string::npos) << "-march=native spelled out: " << isa;
#endif
  EXPECT_EQ(isa.find('/'), std::string::npos) << "no file names, which change from run to run: " << isa;
}

struct Counter {
  int builds = 0;
};

portc_status build_hello(void *ctx, void **data, size_t *bytes) {
  static_cast<Counter *>(ctx)->builds++;
  *data = strdup("MAGIChello");
  *bytes = 10;
  return PORTC_OK;
}

TEST(CacheOrBuild, BuildsOnceHitsThenRebuildsADamagedEntry) {
  char dir[] = "/tmp/portc-cache-test-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  setenv("PORTC_CACHE_DIR", dir, 1);
  build_args a;
  set_args(&a, {"-O1"});
  build_key k = {"test", "source", &a, "compiler 1", "device", nullptr};
  Counter n;
  void *data = nullptr;
  size_t bytes = 0;
  bool hit = true;
  char path[4200];
  ASSERT_EQ(cache_or_build(&k, "bin", "MAGIC", 5, "t", build_hello, &n, &data, &bytes, &hit, path, sizeof path), PORTC_OK);
  EXPECT_FALSE(hit);
  EXPECT_EQ(n.builds, 1);
  free(data);
  ASSERT_EQ(cache_or_build(&k, "bin", "MAGIC", 5, "t", build_hello, &n, &data, &bytes, &hit, path, sizeof path), PORTC_OK);
  EXPECT_TRUE(hit);
  EXPECT_EQ(n.builds, 1);
  ASSERT_EQ(bytes, 10u);
  EXPECT_EQ(std::string(static_cast<char *>(data), bytes), "MAGIChello");
  free(data);
  FILE *f = fopen(path, "r+b"); // one byte changed: the checksum no longer matches
  ASSERT_TRUE(f);
  fputc('X', f);
  fclose(f);
  ASSERT_EQ(cache_or_build(&k, "bin", "MAGIC", 5, "t", build_hello, &n, &data, &bytes, &hit, path, sizeof path), PORTC_OK);
  EXPECT_FALSE(hit);
  EXPECT_EQ(n.builds, 2);
  free(data);
  set_args(&a, {"-O2"}); // another option: another entry
  ASSERT_EQ(cache_or_build(&k, "bin", "MAGIC", 5, "t", build_hello, &n, &data, &bytes, &hit, path, sizeof path), PORTC_OK);
  EXPECT_FALSE(hit);
  EXPECT_EQ(n.builds, 3);
  free(data);
  unsetenv("PORTC_CACHE_DIR");
  std::string cmd = std::string("rm -rf ") + dir;
  EXPECT_EQ(system(cmd.c_str()), 0);
}

} // namespace
