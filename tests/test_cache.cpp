// test_cache.cpp: the kernel cache's key covers everything that changes a compiled artifact:
// the source, the target, the compiler's identity, the device, each option the compiler gets,
// and the environment variables that change its output. Each target's real option list is
// checked too: toggling what it depends on gives another key. And cache_or_build builds once,
// then hits, and rebuilds an entry that was damaged. The folder and its entries resist what the
// reliability issue found: a store seen half done, leftovers of killed processes, things that
// are not entries at an entry's name, parents others can change, a full disk, and code that
// crashes its process.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "helpers.h"

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
  char entry[80], path[4200];
  ASSERT_EQ(cache_or_build(&k, "bin", "MAGIC", 5, "t", build_hello, &n, &data, &bytes, &hit, nullptr, entry), PORTC_OK);
  EXPECT_FALSE(hit);
  EXPECT_EQ(n.builds, 1);
  free(data);
  ASSERT_EQ(cache_or_build(&k, "bin", "MAGIC", 5, "t", build_hello, &n, &data, &bytes, &hit, nullptr, entry), PORTC_OK);
  EXPECT_TRUE(hit);
  EXPECT_EQ(n.builds, 1);
  ASSERT_EQ(bytes, 10u);
  EXPECT_EQ(std::string(static_cast<char *>(data), bytes), "MAGIChello");
  free(data);
  snprintf(path, sizeof path, "%s/%s", dir, entry);
  FILE *f = fopen(path, "r+b"); // one byte changed: the checksum no longer matches
  ASSERT_TRUE(f);
  fputc('X', f);
  fclose(f);
  ASSERT_EQ(cache_or_build(&k, "bin", "MAGIC", 5, "t", build_hello, &n, &data, &bytes, &hit, nullptr, entry), PORTC_OK);
  EXPECT_FALSE(hit);
  EXPECT_EQ(n.builds, 2);
  free(data);
  set_args(&a, {"-O2"}); // another option: another entry
  ASSERT_EQ(cache_or_build(&k, "bin", "MAGIC", 5, "t", build_hello, &n, &data, &bytes, &hit, nullptr, entry), PORTC_OK);
  EXPECT_FALSE(hit);
  EXPECT_EQ(n.builds, 3);
  free(data);
  unsetenv("PORTC_CACHE_DIR");
  std::string cmd = std::string("rm -rf ") + dir;
  EXPECT_EQ(system(cmd.c_str()), 0);
}

// a fresh private folder as the cache, removed afterwards
struct TempCache {
  std::string dir;
  TempCache() {
    char d[] = "/tmp/portc-cache-test-XXXXXX";
    EXPECT_TRUE(mkdtemp(d));
    dir = d;
    setenv("PORTC_CACHE_DIR", d, 1);
  }
  ~TempCache() {
    unsetenv("PORTC_CACHE_DIR");
    chmod(dir.c_str(), 0700);
    std::string cmd = "rm -rf " + dir;
    EXPECT_EQ(system(cmd.c_str()), 0);
  }
  std::vector<std::string> names() const {
    std::vector<std::string> v;
    DIR *d = opendir(dir.c_str());
    for (struct dirent *e; d && (e = readdir(d));)
      if (e->d_name[0] != '.') v.push_back(e->d_name);
    if (d) closedir(d);
    return v;
  }
  bool has(const std::string &name) const { return access((dir + "/" + name).c_str(), F_OK) == 0; }
};

std::string file_bytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The store is one rename: readers racing a writer of the same key always find the whole entry
// and never remove it as damaged (defect 10: with two renames a reader between them deleted the
// fresh entry and failed the writer).
TEST(CacheFolder, ReadersRacingAWriterAlwaysFindAWholeEntry) {
  TempCache tc;
  cache_folder cf;
  ASSERT_EQ(cache_open(&cf), PORTC_OK) << portc_last_error();
  const char *key = "0123456789abcdef0123456789abcdef";
  std::string first(65536, 'a');
  ASSERT_EQ(cache_write(&cf, key, "bin", first.data(), first.size()), PORTC_OK) << portc_last_error();
  std::atomic<bool> done{false};
  std::atomic<int> bad{0}, store_failures{0};
  std::thread writer([&] {
    for (int i = 0; i < 300; i++) {
      std::string v(65536, (char)('a' + i % 26));
      if (cache_write(&cf, key, "bin", v.data(), v.size()) != PORTC_OK) store_failures++;
    }
    done = true;
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; r++)
    readers.emplace_back([&] {
      while (!done) {
        size_t n = 0;
        char *d = static_cast<char *>(cache_read(&cf, key, "bin", &n));
        if (!d || n != 65536 || std::string(d, n) != std::string(n, d[0])) bad++;
        free(d);
      }
    });
  writer.join();
  for (auto &t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(store_failures.load(), 0);
  for (auto &n : tc.names()) EXPECT_EQ(n.find(".tmp-"), std::string::npos) << n << " left behind";
  cache_close(&cf);
}

// a PID that no longer runs: a child that has exited and been reaped
pid_t dead_pid() {
  pid_t p = fork();
  if (p == 0) _exit(0);
  waitpid(p, nullptr, 0);
  return p;
}

// What killed processes leave (temporary files, build folders, run marks without an entry) and
// earlier versions' two-file entries are swept when a process first opens the folder; what a
// running process is writing, and a recent failed build's folder, stay (defect 10).
TEST(CacheFolder, LeftoversOfEndedProcessesAreSwept) {
  TempCache tc;
  std::string dead = std::to_string(dead_pid()), live = std::to_string(getpid());
  const std::string key = "0123456789abcdef0123456789abcdef";
  auto touch = [&](const std::string &n) { std::ofstream(tc.dir + "/" + n) << "x"; };
  touch(key + ".so.tmp-" + dead + "-7");
  touch(key + ".so.tmp-" + live + "-7");
  touch("fedcba9876543210fedcba9876543210.so.run");
  touch("11111111111111111111111111111111.so");
  touch("11111111111111111111111111111111.so.sum");
  ASSERT_EQ(mkdir((tc.dir + "/build-" + dead + "-0").c_str(), 0700), 0);
  touch("build-" + dead + "-0/kernels.c");
  ASSERT_EQ(mkdir((tc.dir + "/failed-" + dead + "-1").c_str(), 0700), 0);
  char dir[4096];
  int64_t entries = -1, bytes = -1;
  ASSERT_EQ(cache_stats(dir, sizeof dir, &entries, &bytes), PORTC_OK) << portc_last_error();
  EXPECT_FALSE(tc.has(key + ".so.tmp-" + dead + "-7"));
  EXPECT_FALSE(tc.has("build-" + dead + "-0"));
  EXPECT_FALSE(tc.has("fedcba9876543210fedcba9876543210.so.run"));
  EXPECT_FALSE(tc.has("11111111111111111111111111111111.so"));
  EXPECT_FALSE(tc.has("11111111111111111111111111111111.so.sum"));
  EXPECT_TRUE(tc.has(key + ".so.tmp-" + live + "-7"));
  EXPECT_TRUE(tc.has("failed-" + dead + "-1"));
  EXPECT_EQ(entries, 0);
}

// A FIFO, a folder with files in it, or a link at an entry's name is not an entry: the lookup
// removes it without blocking, and the build is stored (defect 12: a folder there made every
// store fail, a FIFO blocked the lookup).
TEST(CacheFolder, WhatIsNotAnEntryAtItsNameIsReplaced) {
  TempCache tc;
  build_args a;
  set_args(&a, {"-O1"});
  build_key k = {"test", "source", &a, "compiler 1", "device", nullptr};
  std::string name = key_of(k) + ".bin", path = tc.dir + "/" + name;
  for (int kind = 0; kind < 3; kind++) {
    if (kind == 0) {
      ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
    }
    if (kind == 1) {
      ASSERT_EQ(mkdir(path.c_str(), 0700), 0);
      std::ofstream(path + "/inside") << "x";
    }
    if (kind == 2) {
      ASSERT_EQ(symlink("/etc/passwd", path.c_str()), 0);
    }
    Counter n;
    void *data = nullptr;
    size_t bytes = 0;
    bool hit = true;
    char entry[80];
    ASSERT_EQ(cache_or_build(&k, "bin", "MAGIC", 5, "t", build_hello, &n, &data, &bytes, &hit, nullptr, entry), PORTC_OK) << kind;
    EXPECT_FALSE(hit) << kind;
    EXPECT_EQ(std::string(entry), name) << kind;
    free(data);
    ASSERT_EQ(cache_or_build(&k, "bin", "MAGIC", 5, "t", build_hello, &n, &data, &bytes, &hit, nullptr, entry), PORTC_OK) << kind;
    EXPECT_TRUE(hit) << kind;
    EXPECT_EQ(n.builds, 1) << kind;
    free(data);
    struct stat st;
    ASSERT_EQ(lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode)) << kind;
    ASSERT_EQ(unlink(path.c_str()), 0);
  }
}

// The folder is trusted only when no other user can replace it: a parent that others can write
// to is refused unless it is sticky (like /tmp), and so is a parent owned by another user
// (defect 3: a world-writable parent let another user swap the folder and have root load code).
TEST(CacheFolder, ParentsOthersCanChangeAreRefused) {
  char base[] = "/tmp/portc-parent-test-XXXXXX";
  ASSERT_TRUE(mkdtemp(base));
  std::string dir = std::string(base) + "/cache";
  setenv("PORTC_CACHE_DIR", dir.c_str(), 1);
  char out[4096];
  ASSERT_EQ(chmod(base, 0777), 0);
  EXPECT_EQ(cache_dir(out, sizeof out), PORTC_ERR_IO);
  EXPECT_NE(std::string(portc_last_error()).find("can be written by others and is not sticky (mode 0777)"), std::string::npos)
      << portc_last_error();
  ASSERT_EQ(chmod(base, 01777), 0);
  EXPECT_EQ(cache_dir(out, sizeof out), PORTC_OK) << portc_last_error();
  ASSERT_EQ(chmod(dir.c_str(), 0770), 0); // the folder itself
  EXPECT_EQ(cache_dir(out, sizeof out), PORTC_ERR_IO);
  EXPECT_NE(std::string(portc_last_error()).find("others can write to it"), std::string::npos) << portc_last_error();
  ASSERT_EQ(chmod(dir.c_str(), 0700), 0);
  ASSERT_EQ(chmod(base, 0755), 0);
  if (geteuid() == 0) { // a parent owned by another user
    ASSERT_EQ(chown(base, 65534, 65534), 0);
    EXPECT_EQ(cache_dir(out, sizeof out), PORTC_ERR_IO);
    EXPECT_NE(std::string(portc_last_error()).find("belongs to user 65534"), std::string::npos) << portc_last_error();
    ASSERT_EQ(chown(base, 0, 0), 0);
  }
  unsetenv("PORTC_CACHE_DIR");
  std::string cmd = std::string("rm -rf ") + base;
  EXPECT_EQ(system(cmd.c_str()), 0);
}

// runs f in a child process; its exit status (0: every check in it held)
int in_child(const std::function<int()> &f) {
  fflush(nullptr);
  pid_t p = fork();
  if (p == 0) _exit(f());
  int status = 0;
  waitpid(p, &status, 0);
  return status;
}

// A full disk (writes fail with EFBIG under a file-size limit) fails the store, not the build:
// the kernels are returned, the error is logged, and nothing half written stays.
TEST(CacheFolder, AFullDiskFailsTheStoreNotTheBuild) {
  TempCache tc;
  int status = in_child([&] {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {4, 4};
    setrlimit(RLIMIT_FSIZE, &rl);
    cache_folder cf;
    if (cache_open(&cf) != PORTC_OK) return 10;
    std::string big(100000, 'x');
    if (cache_write(&cf, "0123456789abcdef0123456789abcdef", "bin", big.data(), big.size()) == PORTC_OK) return 11;
    if (std::string(portc_last_error()).find("cannot store") == std::string::npos) return 12;
    cache_close(&cf);
    build_args a;
    set_args(&a, {"-O1"});
    build_key k = {"test", "source", &a, "compiler 1", "device", nullptr};
    Counter n;
    void *data = nullptr;
    size_t bytes = 0;
    bool hit = true;
    char entry[80];
    if (cache_or_build(&k, "bin", "MAGIC", 5, "t", build_hello, &n, &data, &bytes, &hit, nullptr, entry) != PORTC_OK) return 13;
    if (bytes != 10 || entry[0]) return 14; // built, not stored
    free(data);
    return 0;
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_TRUE(tc.names().empty()) << tc.names().size() << " files left, the first " << tc.names()[0];
}

// compiles and runs `add(x, x)` on the CPU in this process: 0 when the output is right
int compile_and_run() {
  portc_graph *g = nullptr;
  if (portc_graph_parse("graph twice\ninput x: f32[4]\ny = add(x, x)\noutput y\n", "t.ptg", &g) != PORTC_OK) return 20;
  portc_compile_options o = {};
  o.size = sizeof o;
  o.target = "cpu";
  portc_module *m = nullptr;
  portc_bindings *b = portc_bindings_new(g);
  int64_t shape[] = {4};
  portc_tensor *x = portc_tensor_new(PORTC_F32, 1, shape), *y = nullptr;
  for (int i = 0; i < 4; i++) portc_tensor_set(x, i, i);
  portc_bindings_set(b, "x", x);
  int rc = portc_compile(g, &o, b, &m) != PORTC_OK ? 21 : portc_module_run(m, b, &y) != PORTC_OK ? 22 : 0;
  for (int i = 0; rc == 0 && i < 4; i++)
    if (portc_tensor_get(y, i) != 2 * i) rc = 23;
  if (rc) fprintf(stderr, "compile_and_run: %s\n", portc_last_error());
  portc_tensor_free(x);
  portc_tensor_free(y);
  portc_module_free(m);
  portc_bindings_free(b);
  portc_graph_free(g);
  return rc;
}

// the one .so entry in the cache
std::string so_entry(const TempCache &tc) {
  for (auto &n : tc.names())
    if (n.size() == 35 && n.substr(32) == ".so") return n;
  return "";
}

// replaces an entry's bytes, with a valid trailer: damage the checksum cannot see
void replace_entry(const std::string &entry, const std::string &bytes) {
  cache_folder cf;
  ASSERT_EQ(cache_open(&cf), PORTC_OK);
  ASSERT_EQ(cache_write(&cf, entry.substr(0, 32).c_str(), "so", bytes.data(), bytes.size()), PORTC_OK);
  cache_close(&cf);
}

// Code whose checksum matches but that crashes its process is removed after the crash and built
// again, instead of crashing every run; one that does not load is rebuilt at once (defect 10).
// Each compile runs in a child process: a library stays loaded under its name in a process.
TEST(CacheFolder, CodeThatCrashedItsProcessIsRebuilt) {
  char cc[256], ver[256];
  if (!cpu_compiler(cc, sizeof cc, ver, sizeof ver)) GTEST_SKIP() << "no C compiler";
  TempCache tc;
  ASSERT_EQ(in_child(compile_and_run), 0);
  std::string entry = so_entry(tc);
  ASSERT_FALSE(entry.empty());
  std::string good = file_bytes(tc.dir + "/" + entry);
  // a library whose kernel writes through a null pointer
  std::string src = tc.dir + "/crash.c", lib = tc.dir + "/crash.so";
  std::ofstream(src) << "int portc_kernel(void *const *b, const long long *s) { *(volatile int *)0 = 1; return 0; }\n";
  ASSERT_EQ(system((std::string(cc) + " -shared -fPIC -o " + lib + " " + src).c_str()), 0);
  std::string crash = file_bytes(lib);
  unlink(src.c_str());
  unlink(lib.c_str());
  replace_entry(entry, crash);
  int status = in_child(compile_and_run);
  EXPECT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) >= 128)) << "the crashing entry ran: status " << status;
  EXPECT_TRUE(tc.has(entry + ".run")) << "a crash leaves its mark";
  EXPECT_EQ(in_child(compile_and_run), 0);
  EXPECT_FALSE(tc.has(entry + ".run"));
  EXPECT_EQ(file_bytes(tc.dir + "/" + entry).size(), good.size()) << "rebuilt";
  // an ELF that does not load: rebuilt in the same process
  replace_entry(entry, std::string("\177ELF") + std::string(4000, 'z'));
  EXPECT_EQ(in_child(compile_and_run), 0);
  EXPECT_EQ(file_bytes(tc.dir + "/" + entry).size(), good.size()) << "rebuilt";
}

// Threads that compile and run at once share one empty cache: each gets the right result (the
// store, the sweep, the size limit's count and the run marks are shared; the TSan job runs this)
TEST(CacheFolder, ThreadsCompilingAtOnceShareOneCache) {
  char cc[256], ver[256];
  if (!cpu_compiler(cc, sizeof cc, ver, sizeof ver)) GTEST_SKIP() << "no C compiler";
  TempCache tc;
  setenv("PORTC_CACHE_MAX", "1M", 1);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; t++)
    threads.emplace_back([&] {
      for (int i = 0; i < 3; i++)
        if (compile_and_run() != 0) wrong++;
    });
  for (auto &t : threads) t.join();
  unsetenv("PORTC_CACHE_MAX");
  EXPECT_EQ(wrong.load(), 0);
  for (auto &n : tc.names()) EXPECT_TRUE(n.size() == 35 && n.substr(32) == ".so") << n << " left behind";
}

} // namespace
