// test_tune.cpp: tune tables and the tuner. The syntax reports every bad line with its number;
// entries match by device and kernel, most specific first, and the tables take precedence in
// order (the user's measured table, site tables, shipped ones, then the rules); an entry the
// target refuses leaves the rules; every shipped entry lints and is accepted by its target for a
// kernel of its kind (and runs correctly on lavapipe when it is for Vulkan); `portc_tune` on the
// CPU and on lavapipe writes a table that the next compile uses, and never keeps a candidate
// that is wrong or slower than the default.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "helpers.h"

extern "C" {
#include "codegen/gpu_kernels.h"
#include "codegen/grid.h"
#include "cuda/cu.h"
#include "driver/module.h"
#include "lower/pipeline.h"
#include "targets/regional.h"
#include "targets/tune.h"
#include "vulkan/vk.h"
}

namespace {

tune_table parse_text(const std::string &text, int *problems, std::string *err) {
  tune_table t = {};
  snprintf(t.name, sizeof t.name, "test");
  char buf[4096];
  *problems = tune_parse(text.c_str(), &t, buf, sizeof buf);
  *err = buf;
  return t;
}

// a fresh cache folder (and so an empty user table) for the duration of a test
struct TempCache {
  std::string dir;
  TempCache() {
    char tmpl[] = "/tmp/portc-tune-test-XXXXXX";
    dir = mkdtemp(tmpl);
    setenv("PORTC_CACHE_DIR", dir.c_str(), 1);
    unsetenv("PORTC_TUNE_PATH");
  }
  ~TempCache() {
    std::string cmd = "rm -rf '" + dir + "'";
    EXPECT_EQ(system(cmd.c_str()), 0);
    unsetenv("PORTC_CACHE_DIR");
    unsetenv("PORTC_TUNE_PATH");
  }
  std::string user_table() const { return dir + "/tune.txt"; }
};

void write_file(const std::string &path, const std::string &text) {
  std::ofstream f(path);
  f << text;
}

std::string read_file(const std::string &path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool available(const char *target) {
  for (int i = 0; i < portc_target_count(); i++)
    if (std::string(portc_target_name(i)) == target) return portc_target_available(i, nullptr, 0);
  return false;
}

// compiles g for target and returns kernel i's schedule
kir_schedule schedule_of(portc_graph *g, const char *target, int i, portc_bindings *b = nullptr) {
  portc_compile_options o = {};
  o.size = sizeof o;
  o.target = target;
  o.dynamic = b == nullptr;
  portc_module *m = nullptr;
  EXPECT_EQ(portc_compile(g, &o, b, &m), PORTC_OK) << portc_last_error();
  kir_schedule s = {};
  if (m && i < m->km->nk) s = m->km->k[i].sched;
  portc_module_free(m);
  return s;
}

// lowers g (which the module refers to: keep it; with lo, or the default options) and schedules
// every kernel with the target's rules for no device (Vulkan's: 16 KiB of shared memory, 64 work
// groups wanted); nullptr where it does not lower
kir_module *target_schedules(const Graph &g, const char *name, lower_options lo = {}) {
  kir_module *km = nullptr;
  int device;
  const target *tg = target_find(name, &device);
  if (!g || !tg || lower_graph(g.get(), &lo, &km)) return nullptr;
  for (int j = 0; j < km->nk; j++) km->k[j].sched = {}, tg->schedule(km, j, -1);
  return km;
}

kir_module *vulkan_schedules(const Graph &g) { return target_schedules(g, "vulkan"); }

const char *const kPointwise = "graph pw\ninput x: f32[4096]\ny = relu(x)\noutput y\n";

TEST(TuneTable, ParsesEntriesAndReportsEveryBadLineWithItsNumber) {
  int problems;
  std::string err;
  tune_table t = parse_text(
      "# a comment\n"
      "\n"
      "api=cpu kind=pointwise chunk=1024 prov=heuristic source=\"a guide\"\n"
      "api=cpu kind=pointwise chunk=1024\n"                                  // 4: no provenance
      "api=cpu bogus=1 chunk=1024 prov=heuristic source=x\n"               // 5: unknown key
      "api=cpu tile=24x24 prov=heuristic source=x\n"                       // 6: not a multiple of 16
      "api=cpu chunk=64 prov=measured device=x date=2026-01-01\n"          // 7: no median
      "api=vulkan vendor=amd m=64..512 tile=32x32 prov=transferred from=x rescaled=\"none\"\n"
      "api=cuda threads=2048 prov=heuristic source=x\n"                    // 9: too many threads
      "api=cpu kind=pointwise prov=heuristic source=x\n",                  // 10: no knobs
      &problems, &err);
  EXPECT_EQ(t.n, 2);
  EXPECT_EQ(problems, 6) << err;
  for (const char *line : {"test:4:", "test:5:", "test:6:", "test:7:", "test:9:", "test:10:"})
    EXPECT_NE(err.find(line), std::string::npos) << "no problem reported for " << line << "\n" << err;
  EXPECT_NE(err.find("unknown key 'bogus'"), std::string::npos) << err;
  ASSERT_EQ(t.n, 2);
  EXPECT_EQ(t.e[0].line, 3);
  EXPECT_EQ(t.e[1].ext[TX_M].lo, 64);
  EXPECT_EQ(t.e[1].ext[TX_M].hi, 512);
  // an entry written back reads the same
  char line[2048];
  tune_format(&t.e[1], line, sizeof line);
  tune_table again = parse_text(line, &problems, &err);
  ASSERT_EQ(again.n, 1) << err;
  char line2[2048];
  tune_format(&again.e[0], line2, sizeof line2);
  EXPECT_STREQ(line, line2);
  tune_table_free(&t);
  tune_table_free(&again);
}

TEST(TuneTable, TheMostSpecificDeviceThenShapeWinsAndALaterLineBreaksATie) {
  int problems;
  std::string err;
  tune_table t = parse_text(
      "api=vulkan kind=matmul tile=16x16 prov=heuristic source=a\n"                              // api only
      "api=vulkan vendor=amd kind=matmul tile=32x32 prov=heuristic source=b\n"                   // vendor
      "api=vulkan vendor=amd family=rdna3 kind=matmul tile=48x48 prov=heuristic source=c\n"      // family
      "api=vulkan vendor=amd family=rdna3 kind=matmul m=1..100 tile=64x64 prov=heuristic source=d\n"  // family, range
      "api=vulkan vendor=amd family=rdna3 kind=matmul m=1..100 tile=80x80 prov=heuristic source=e\n"  // the same, later
      "api=vulkan family=rdna3 kind=matmul b=1 m=64 n=64 k=64 tile=96x96 prov=heuristic source=f\n",  // family, exact
      &problems, &err);
  ASSERT_EQ(problems, 0) << err;
  tune_device amd = {}, intel = {};
  snprintf(amd.api, sizeof amd.api, "vulkan");
  snprintf(amd.vendor, sizeof amd.vendor, "amd");
  snprintf(amd.family, sizeof amd.family, "rdna3");
  intel = amd;
  snprintf(intel.vendor, sizeof intel.vendor, "intel");
  snprintf(intel.family, sizeof intel.family, "xe-hpg");
  tune_kernel k = {};
  snprintf(k.kind, sizeof k.kind, "matmul");
  for (auto &x : k.ext) x = TUNE_NONE;
  k.ext[TX_B] = 1, k.ext[TX_M] = 64, k.ext[TX_N] = 64, k.ext[TX_K] = 64;
  EXPECT_EQ(tune_best(&t, &amd, &k)->knobs.v.tile_m, 96) << "exact shape beats range and wildcard";
  k.ext[TX_K] = 128;
  EXPECT_EQ(tune_best(&t, &amd, &k)->knobs.v.tile_m, 80) << "range beats wildcard; the later of two equal lines";
  k.ext[TX_M] = 1000;
  EXPECT_EQ(tune_best(&t, &amd, &k)->knobs.v.tile_m, 48) << "family, wildcard shape";
  EXPECT_EQ(tune_best(&t, &intel, &k)->knobs.v.tile_m, 16) << "another vendor gets the api-wide entry";
  snprintf(k.kind, sizeof k.kind, "conv");
  EXPECT_EQ(tune_best(&t, &amd, &k), nullptr) << "another kind matches nothing";
  tune_table_free(&t);
}

TEST(TuneTables, UserBeatsSiteBeatsShippedBeatsRules) {
  TempCache cache;
  Graph g = parse(kPointwise);
  ASSERT_TRUE(g);
  kir_schedule rules = schedule_of(g.get(), "cpu", 0);
  EXPECT_STREQ(rules.source, "rules");
  std::string site = cache.dir + "/site.tune";
  write_file(site, "api=cpu kind=pointwise chunk=2048 prov=heuristic source=\"site\"\n");
  setenv("PORTC_TUNE_PATH", site.c_str(), 1);
  kir_schedule s = schedule_of(g.get(), "cpu", 0);
  EXPECT_EQ(s.chunk, 2048);
  EXPECT_NE(std::string(s.source).find("heuristic, site site.tune:1"), std::string::npos) << s.source;
  write_file(cache.user_table(), "api=cpu kind=pointwise elems=4096 chunk=4096 prov=measured device=x date=2026-01-01 median_us=1\n");
  s = schedule_of(g.get(), "cpu", 0);
  EXPECT_EQ(s.chunk, 4096);
  EXPECT_NE(std::string(s.source).find("measured, user tune.txt:1"), std::string::npos) << s.source;
  // a line that is not an entry is skipped; the rest of the table still counts
  write_file(cache.user_table(), "garbage\napi=cpu kind=pointwise chunk=1024 prov=measured device=x date=2026-01-01 median_us=1\n");
  EXPECT_EQ(schedule_of(g.get(), "cpu", 0).chunk, 1024);
  EXPECT_GT(portc_tune_check(cache.user_table().c_str(), stderr), 0);
}

TEST(TuneTables, AnEntryTheTargetRefusesLeavesTheRules) {
  TempCache cache;
  Graph g = parse("graph mm\ninput a: f32[64, 64]\ninput b: f32[64, 64]\ny = matmul(a, b)\noutput y\n");
  ASSERT_TRUE(g);
  kir_schedule rules = schedule_of(g.get(), "cpu", 0);
  // each value is in its knob's range (it lints), but the packed matmul needs nc to be a
  // multiple of nr
  write_file(cache.user_table(), "api=cpu kind=matmul nr=32 nc=48 prov=measured device=x date=2026-01-01 median_us=1\n");
  EXPECT_EQ(portc_tune_check(cache.user_table().c_str(), stderr), 0);
  kir_schedule s = schedule_of(g.get(), "cpu", 0);
  EXPECT_EQ(s.nc, rules.nc);
  EXPECT_STREQ(s.source, "rules");
}

// split-K: CUDA's tiled convolution takes it (up to its limit); a matmul, and every other
// target's convolution, refuse it by name. A library algorithm: only a kernel that may run on
// the vendor library takes one.
TEST(TuneTables, OnlyCudasAndVulkansTiledConvolutionsSplitAndOnlyLibraryKernelsPickAnAlgorithm) {
  Graph g = parse("graph c\ninput x: f32[2, 16, 8, 8]\nparam w: f32[64, 16, 3, 3]\n"
                  "y = conv2d(x, w, stride=[1, 1], padding=[1, 1])\nz = relu(y)\noutput z\n"
                  "input a: f32[64, 64]\ninput b: f32[64, 64]\nm = matmul(a, b)\noutput m\n");
  ASSERT_TRUE(g);
  lower_options lo = {};
  kir_module *km = nullptr;
  ASSERT_EQ(lower_graph(g.get(), &lo, &km), PORTC_OK) << portc_last_error();
  int conv = -1, mm = -1;
  for (int j = 0; j < km->nk; j++) conv = km->k[j].kind == KK_CONV ? j : conv, mm = km->k[j].kind == KK_MATMUL ? j : mm;
  ASSERT_GE(conv, 0);
  ASSERT_GE(mm, 0);
  struct { const char *target; int split; bool conv_ok; } cases[] = {{"cuda", 4, true}, {"cuda", 65, false}, {"vulkan", 2, true}, {"vulkan", 65, false}, {"hip", 2, false}};
  for (auto &c : cases) {
    SCOPED_TRACE(std::string(c.target) + " split_k=" + std::to_string(c.split));
    int device;
    const target *tg = target_find(c.target, &device);
    ASSERT_NE(tg, nullptr);
    char why[256] = "";
    for (int j = 0; j < km->nk; j++) km->k[j].sched = {}, tg->schedule(km, j, -1);
    ASSERT_EQ(km->k[conv].sched.variant, KS_TILED);
    EXPECT_EQ(gpu_conv_split(&km->k[conv]), 1); // a reduction of 144: the rules do not split it
    km->k[conv].sched.split_k = c.split;
    EXPECT_EQ(tg->schedule_check(km, conv, -1, why, sizeof why), c.conv_ok) << why;
    if (!c.conv_ok) {
      EXPECT_NE(strstr(why, "split_k="), nullptr) << why;
    }
    km->k[mm].sched.split_k = 2;
    EXPECT_FALSE(tg->schedule_check(km, mm, -1, why, sizeof why));
    EXPECT_NE(strstr(why, "split_k=2"), nullptr) << why;
    // a library algorithm: only where the kernel may run on the vendor library (CUDA's f32 GEMM)
    km->k[mm].sched.split_k = 0, km->k[mm].sched.library_algo = 3;
    bool library = km->k[mm].sched.library != 0;
    EXPECT_EQ(library, std::string(c.target) == "cuda");
    EXPECT_EQ(tg->schedule_check(km, mm, -1, why, sizeof why), library) << why;
    if (!library) {
      EXPECT_NE(strstr(why, "algo=3"), nullptr) << why;
    }
    km->k[conv].sched.split_k = 0, km->k[conv].sched.library_algo = 1;
    EXPECT_FALSE(tg->schedule_check(km, conv, -1, why, sizeof why));
    EXPECT_NE(strstr(why, "algo=1"), nullptr) << why;
  }
  kir_module_free(km);
}

// Vulkan's f32 word matmul: 64x64 or 128x128 tiles, its k-step derived from the tile unless set;
// another tile, or a k-step whose shared memory the device lacks, runs the element kernel
TEST(TuneTables, VulkansWordMatmulTakesItsTilesAndLeavesTheRestToTheElementKernel) {
  Graph g = parse("graph mm\ninput a: f32[512, 512]\ninput b: f32[512, 512]\ny = matmul(a, b)\noutput y\n"
                  "input c: f32[512, 510]\nz = matmul(a, c)\noutput z\n");
  ASSERT_TRUE(g);
  kir_module *km = vulkan_schedules(g);
  ASSERT_NE(km, nullptr) << portc_last_error();
  ASSERT_EQ(km->nk, 2);
  int device;
  const target *tg = target_find("vulkan", &device);
  const int words = km->k[0].mnk[1].c == 512 ? 0 : 1, other = 1 - words;
  kir_schedule &s = km->k[words].sched;
  EXPECT_EQ(km->k[other].sched.vector, 0); // 510 columns: not whole 16-byte words
  ASSERT_EQ(s.variant, KS_TILED);
  EXPECT_EQ(s.vector, 4);
  EXPECT_EQ(s.tile_m, 64); // 16 tiles of 128: too few for 128; 64 of 64 give the 64 work groups wanted without a device
  EXPECT_EQ(s.split_k, 1);
  EXPECT_EQ(vk_words_k_step(&s), 16);
  const kir_schedule rules = s;
  char why[256] = "";
  s.tile_m = s.tile_n = 128;
  EXPECT_TRUE(tg->schedule_check(km, words, -1, why, sizeof why)) << why;
  EXPECT_EQ(s.vector, 4);
  EXPECT_EQ(vk_words_k_step(&s), 8);
  s.tile_k = 32; // 64 KiB of shared memory
  EXPECT_TRUE(tg->schedule_check(km, words, -1, why, sizeof why)) << why;
  EXPECT_EQ(s.vector, 0);
  EXPECT_FALSE(s.fold_batch);
  s = rules;
  s.tile_m = s.tile_n = 32;
  EXPECT_TRUE(tg->schedule_check(km, words, -1, why, sizeof why)) << why;
  EXPECT_EQ(s.vector, 0);
  // the tuner's candidates: the tiles and the two other k-steps
  s = rules;
  tune_device dev = {};
  snprintf(dev.api, sizeof dev.api, "vulkan");
  tune_knobs cand[16];
  int n = tg->tune_space(km, words, &dev, cand, 16), steps = 0, tiles = 0;
  for (int c = 0; c < n; c++) {
    steps += cand[c].mask == tune_knob_bit("tile_k") && cand[c].v.tile_k != 16;
    tiles += cand[c].mask == tune_knob_bit("tile");
  }
  EXPECT_EQ(steps, 2);
  EXPECT_GE(tiles, 1);
  kir_module_free(km);
}

// Vulkan's matmuls short of work groups (64 wanted without a device): a GEMM of 16 tiles of 64
// splits a reduction of 2048 in 4 (slices of 512), and the tuner tries the other slice counts; with
// a reduction of 256 (no slice of 256 or more) it takes SIMT tiles of 16 instead
// The word matmul stores four sums at a time into an f32 output that lies as it is, with a
// light epilogue, when it does not split its reduction; every other output a float at a time.
TEST(TuneTables, VulkansWordMatmulStoresWordsOnlyWhereItsOutputTakesThem) {
  Graph g = parse("graph mm\ninput a: f32[512, 512]\ninput b: f32[512, 512]\ninput bias: f32[512]\n"
                  "p = matmul(a, b)\nq = add(p, bias)\ny = relu(q)\noutput y\n"
                  "r = matmul(b, a)\nz = gelu(r)\noutput z\n"
                  "t = matmul(b, b)\nh = cast(t, to=f16)\noutput h\n"
                  "input c: f32[512, 510]\nw = matmul(a, c)\noutput w\n");
  ASSERT_TRUE(g);
  kir_module *km = vulkan_schedules(g);
  ASSERT_NE(km, nullptr) << portc_last_error();
  ASSERT_EQ(km->nk, 4);
  int words = 0;
  for (int i = 0; i < km->nk; i++) {
    const kir_kernel *k = &km->k[i];
    bool gelu = false;
    for (int v = 0; v < k->nval; v++) gelu = gelu || (k->val[v].kind == KV_OP && k->val[v].op == OP_gelu);
    if (k->mnk[1].c == 510) EXPECT_EQ(k->sched.vector, 0); // not whole words: the element kernel
    else if (km->buf[k->store[0].buf].dt == PORTC_F32) {
      ASSERT_EQ(k->sched.vector, 4) << i;
      words++;
    }
    // relu(A B + bias) only: gelu's epilogue is written once, rolled; f16 and 510 columns are not f32 words
    const bool expect = k->mnk[1].c != 510 && km->buf[k->store[0].buf].dt == PORTC_F32 && !gelu;
    EXPECT_EQ(vk_words_store_words(km, k), expect) << i;
    const kir_schedule rules = k->sched;
    km->k[i].sched.split_k = 2; // split: partial sums go to the scratch buffer, a float at a time
    EXPECT_FALSE(vk_words_store_words(km, k)) << i;
    km->k[i].sched = rules;
  }
  EXPECT_EQ(words, 2);
  kir_module_free(km);
}

TEST(TuneTables, VulkansMatmulsShortOfWorkGroupsSplitOrTakeSmallTiles) {
  Graph g = parse("graph mm\ninput a: f32[32, 2048]\ninput b: f32[2048, 1000]\ny = matmul(a, b)\noutput y\n"
                  "input c: f32[32, 256]\ninput d: f32[256, 1000]\nz = matmul(c, d)\noutput z\n");
  ASSERT_TRUE(g);
  kir_module *km = vulkan_schedules(g);
  ASSERT_NE(km, nullptr) << portc_last_error();
  ASSERT_EQ(km->nk, 2);
  int device;
  const target *tg = target_find("vulkan", &device);
  const int split = km->k[0].mnk[2].c == 2048 ? 0 : 1, small = 1 - split;
  const kir_schedule &s = km->k[split].sched;
  EXPECT_EQ(s.vector, 4);
  EXPECT_TRUE(s.fold_batch);
  EXPECT_EQ(s.tile_m, 64);
  EXPECT_EQ(s.split_k, 4);
  EXPECT_EQ(vk_split(&km->k[split]), 4);
  char why[256] = "";
  EXPECT_TRUE(tg->schedule_check(km, split, -1, why, sizeof why)) << why;
  const kir_schedule &t = km->k[small].sched;
  EXPECT_EQ(t.vector, 0);
  EXPECT_EQ(t.tile_m, 16);
  EXPECT_EQ(vk_split(&km->k[small]), 1);
  tune_device dev = {};
  snprintf(dev.api, sizeof dev.api, "vulkan");
  tune_knobs cand[32];
  int n = tg->tune_space(km, split, &dev, cand, 32), slices = 0;
  for (int c = 0; c < n; c++)
    if (cand[c].mask == tune_knob_bit("split_k")) slices |= 1 << cand[c].v.split_k;
  EXPECT_EQ(slices, 1 << 1 | 1 << 2 | 1 << 8); // 1, 2 and 8: all but the rule's 4
  // a split of a matmul on the SIMT kernel is refused: only the word matmul splits
  km->k[small].sched.split_k = 2;
  EXPECT_FALSE(tg->schedule_check(km, small, -1, why, sizeof why));
  EXPECT_NE(strstr(why, "split_k=2"), nullptr) << why;
  kir_module_free(km);
}

// CUDA's Hopper matmul (scheduled as for an sm_90a device): f16 and bf16 GEMMs of any row count
// take it, with its 128x256 tile of three warpgroups, the whole SM's shared memory and the
// operands' tensor maps as parameters, and make the module compile for sm_90a; the tuner's other
// candidate is its ping-pong form (128x128 tiles in 6 stages, a block per SM); f32 matmuls and
// other devices keep their kernels
TEST(TuneTables, HoppersMatmulTakesHalfPrecisionGemmsAndTheirTensorMaps) {
  int device;
  const target *tg = target_find("cuda", &device);
  ASSERT_NE(tg, nullptr);
  cu_context sm90 = {};
  snprintf(sm90.arch, sizeof sm90.arch, "sm_90");
  for (const char *t : {"f16", "bf16", "f32"}) {
    char text[256];
    snprintf(text, sizeof text, "graph mm\ninput a: %s[1000, 512]\ninput b: %s[512, 264]\ny = matmul(a, b)\noutput y\n", t, t);
    Graph g = parse(text);
    ASSERT_TRUE(g);
    kir_module *km = target_schedules(g, "cuda");
    ASSERT_NE(km, nullptr) << portc_last_error();
    ASSERT_EQ(km->nk, 1);
    const bool half = strcmp(t, "f32") != 0;
    EXPECT_EQ(km->k[0].sched.variant, half ? KS_MMA : KS_TILED) << t << ": no device, no Hopper kernel";
    EXPECT_STREQ(cu_compile_arch(&sm90, km), "sm_90");
    km->k[0].sched = {};
    cu_schedule_as(km, 0, -1, CU_OWN_WGMMA);
    const kir_schedule &s = km->k[0].sched;
    char why[256] = "";
    EXPECT_TRUE(tg->schedule_check(km, 0, -1, why, sizeof why)) << t << ": " << why;
    if (!half) {
      EXPECT_EQ(s.variant, KS_TILED);
      EXPECT_STREQ(cu_compile_arch(&sm90, km), "sm_90");
      kir_module_free(km);
      continue;
    }
    EXPECT_EQ(s.variant, KS_WGMMA) << t;
    EXPECT_EQ(s.tile_m, 128);
    EXPECT_EQ(s.tile_n, 256);
    EXPECT_EQ(s.threads[0], 384);
    EXPECT_EQ(s.min_groups, 1);
    EXPECT_GT(s.shared_bytes, 4 * (128 * 64 + 64 * 256) * 2);
    EXPECT_LE(s.shared_bytes, 227 * 1024) << "more than an H100's block may take";
    EXPECT_STREQ(cu_compile_arch(&sm90, km), "sm_90a");
    char *src = emit_module(&cuda_dialect, km);
    ASSERT_NE(src, nullptr);
    std::string cu(src);
    free(src);
    EXPECT_NE(cu.find("__launch_bounds__(384, 1)"), std::string::npos);
    EXPECT_NE(cu.find("const __grid_constant__ pc_tmap pc_ta, const __grid_constant__ pc_tmap pc_tb"), std::string::npos);
    EXPECT_NE(cu.find(std::string("wgmma.mma_async.sync.aligned.m64n256k16.f32.") + t + "." + t), std::string::npos) << t;
    EXPECT_NE(cu.find("pc_tma_load(Bs"), std::string::npos);
    // a tile the kernel was not written for is refused, naming the tiles it has
    km->k[0].sched.tile_n = 128;
    EXPECT_FALSE(tg->schedule_check(km, 0, -1, why, sizeof why));
    EXPECT_NE(strstr(why, "128x256x64"), nullptr) << why;
    EXPECT_NE(strstr(why, "ping-pong"), nullptr) << why;
    // the tuner's other candidates: the ping-pong form, 128x128 tiles in 6 stages, its own
    // shared memory, a block per SM (or per tile, where there are fewer); and the same in
    // clusters of two blocks that share their A panel's loads
    km->k[0].sched.tile_n = 256;
    tune_knobs cand[16];
    const tune_device d = {};
    const int n = tg->tune_space(km, 0, &d, cand, 16);
    std::vector<tune_knobs> forms, row_pairs;
    for (int j = 0; j < n; j++)
      if (cand[j].mask & tune_knob_bit("stages")) (cand[j].v.tile_n == CU_PP_BN ? forms : row_pairs).push_back(cand[j]);
    ASSERT_EQ(forms.size(), 2u) << t;
    ASSERT_EQ(row_pairs.size(), 1u) << t << ": the 128x256 form in clusters of 2";
    for (const tune_knobs &f : forms) {
      tune_knobs_apply(&f, &km->k[0].sched);
      EXPECT_EQ(s.tile_n, CU_PP_BN);
      EXPECT_EQ(s.stages, CU_PP_STAGES);
      EXPECT_TRUE(tg->schedule_check(km, 0, -1, why, sizeof why)) << why;
      EXPECT_TRUE(cu_wgmma_pingpong(km, &km->k[0]));
      EXPECT_EQ(s.shared_bytes, CU_PP_SHARED);
      EXPECT_LE(s.shared_bytes, 227 * 1024) << "more than an H100's block may take";
      src = emit_module(&cuda_dialect, km);
      ASSERT_NE(src, nullptr);
      std::string pp(src);
      free(src);
      EXPECT_NE(pp.find(std::string("wgmma.mma_async.sync.aligned.m64n128k16.f32.") + t + "." + t), std::string::npos) << t;
      EXPECT_NE(pp.find("pc_mbar_wait(&turn[c]"), std::string::npos) << "the consumers take turns";
      const bool pair = s.cluster == 2;
      EXPECT_EQ(pp.find("__cluster_dims__(2, 1, 1)") != std::string::npos, pair);
      EXPECT_EQ(pp.find("pc_tma_load_mc(As") != std::string::npos, pair) << "each block of a pair loads half of A into both";
      EXPECT_EQ(pp.find("pc_mbar_arrive_cluster<2>(&empty[") != std::string::npos, pair) << "a stage is free when both blocks are done";
    }
    EXPECT_EQ(forms[0].v.cluster + forms[1].v.cluster, 3) << "one form of a block, one of clusters of 2";
    unsigned grid[3] = {3, 2, 1};
    cu_pingpong_grid(grid, 132, 1);
    EXPECT_EQ(grid[0], 6u) << "fewer tiles than SMs: a block per tile";
    EXPECT_EQ(grid[1] * grid[2], 1u);
    unsigned big[3] = {64, 64, 1};
    cu_pingpong_grid(big, 132, 1);
    EXPECT_EQ(big[0], 132u) << "a block per SM";
    unsigned pairs[3] = {3, 2, 1};
    cu_pingpong_grid(pairs, 132, 2);
    EXPECT_EQ(pairs[0], 8u) << "3 column tiles make 2 units of 2, each a cluster of 2 blocks";
    unsigned odd[3] = {64, 64, 1};
    cu_pingpong_grid(odd, 131, 2);
    EXPECT_EQ(odd[0], 130u) << "whole clusters of 2";
    // the 128x256 form in clusters of two blocks on neighbouring row tiles, which share B's loads
    tune_knobs_apply(&row_pairs[0], &km->k[0].sched);
    EXPECT_EQ(s.tile_n, CU_WG_BN);
    EXPECT_EQ(s.cluster, 2);
    EXPECT_TRUE(tg->schedule_check(km, 0, -1, why, sizeof why)) << why;
    EXPECT_EQ(s.shared_bytes, CU_WG_SHARED);
    EXPECT_EQ(cu_wgmma_a_rows(km, &km->k[0]), CU_WG_BM) << "each block loads all of its own A";
    src = emit_module(&cuda_dialect, km);
    ASSERT_NE(src, nullptr);
    std::string rp(src);
    free(src);
    EXPECT_NE(rp.find("__cluster_dims__(2, 1, 1)"), std::string::npos);
    EXPECT_NE(rp.find("pc_tma_load_mc(Bs"), std::string::npos) << "each block of a pair loads half of B into both";
    EXPECT_NE(rp.find("pc_mbar_init(&empty[s], 4)"), std::string::npos) << "a stage is free when both blocks' consumers are done";
    unsigned rows[3] = {32, 63, 1};
    cu_coop_pair_grid(rows);
    EXPECT_EQ(rows[0], 64u) << "two blocks a unit, along x";
    EXPECT_EQ(rows[1], 32u) << "63 row tiles make 32 units, the last one's second tile past M";
    km->k[0].sched.cluster = 3;
    EXPECT_FALSE(tg->schedule_check(km, 0, -1, why, sizeof why)) << "clusters of 2 only";
    // a tune entry spells the pairs with the cluster knob, 1 or 2
    int problems = 0;
    std::string err;
    tune_table tt = parse_text("api=cuda kind=matmul tile=128x128 stages=6 cluster=2 prov=heuristic source=a\n"
                               "api=cuda kind=matmul tile=128x128 stages=6 cluster=3 prov=heuristic source=b\n",
                               &problems, &err);
    EXPECT_EQ(problems, 1) << err;
    EXPECT_NE(err.find("cluster"), std::string::npos) << err;
    ASSERT_EQ(tt.n, 1) << err;
    EXPECT_EQ(tt.e[0].knobs.v.cluster, 2);
    tune_table_free(&tt);
    kir_module_free(km);
  }
}

// The SIMT attention kernel's tiles follow the device's shared memory: 64 query rows over 32 keys
// a step where they fit, 32 rows where the queries are few or 64 do not fit, 16 keys a step where
// only that fits (heads of 96 in 32 KiB, as on lavapipe); the lowering keeps a node whole only
// where the smallest tiles fit 32 KiB, and a schedule past the device's shared memory is refused
TEST(TuneTables, AttentionTilesFollowTheSharedMemory) {
  struct {
    int queries, head;
    size_t shared;
    int bq, bk;
  } cases[] = {{70, 64, 48 << 10, 64, 32}, {70, 64, 32 << 10, 32, 32}, {20, 64, 48 << 10, 32, 32}, {70, 96, 32 << 10, 32, 16}};
  for (const auto &c : cases) {
    char text[320];
    snprintf(text, sizeof text, "graph att\ninput q: f32[2, %d, %d]\ninput k: f32[2, 50, %d]\ninput v: f32[2, 50, %d]\ny = attention(q, k, v)\noutput y\n",
             c.queries, c.head, c.head, c.head);
    Graph g = parse(text);
    ASSERT_TRUE(g);
    lower_options lo = {};
    lo.attention = TARGET_ATTENTION_FLOATS;
    kir_module *km = nullptr;
    ASSERT_EQ(lower_graph(g.get(), &lo, &km), PORTC_OK) << portc_last_error();
    ASSERT_EQ(km->nk, 1);
    ASSERT_TRUE(gpu_is_attention(km, 0));
    kir_schedule s = {};
    gpu_attention_schedule(km, 0, c.shared, &s);
    EXPECT_EQ(s.tile_m, c.bq) << c.queries << " queries, heads of " << c.head << ", " << c.shared << " bytes";
    EXPECT_EQ(s.tile_n, c.bk) << c.queries << " queries, heads of " << c.head << ", " << c.shared << " bytes";
    EXPECT_EQ(s.threads[0], 2 * c.bq);
    EXPECT_LE(kir_attention_shared(c.head, c.head, s.tile_m, s.tile_n), (int64_t)c.shared);
    km->k[0].sched = s;
    char why[256] = "";
    EXPECT_TRUE(gpu_attention_fits(km, 0, c.shared, why, sizeof why)) << why;
    km->k[0].sched.tile_m = 64, km->k[0].sched.tile_n = 32, km->k[0].sched.threads[0] = 128;
    EXPECT_EQ(gpu_attention_fits(km, 0, 16 << 10, why, sizeof why), false);
    EXPECT_NE(strstr(why, "the device allows 16384"), nullptr) << why;
    kir_module_free(km);
  }
  Graph wide = parse("graph att\ninput q: f32[2, 9, 112]\ninput k: f32[2, 9, 112]\ninput v: f32[2, 9, 112]\ny = attention(q, k, v)\noutput y\n");
  ASSERT_TRUE(wide);
  int n = -1;
  for (int i = 0; i < wide->n; i++)
    if (wide->nodes[i].op == OP_attention) n = i;
  ASSERT_GE(n, 0);
  EXPECT_FALSE(kir_attention_fits(wide.get(), n)) << "heads of 112: the smallest tiles take more than 32 KiB";
}

// CUDA's attention on tensor cores (opted into): f16/bf16 attention whose head sizes are multiples
// of 16 takes it, with 4 warps over 64 query rows, its shared memory, and a grid of 64-row tiles;
// f32, and head sizes it was not written for, keep the SIMT kernel; a schedule it cannot run is refused
TEST(TuneTables, CudasTensorCoreAttentionTakesHalfPrecisionHeadsOfSixteens) {
  int device;
  const target *tg = target_find("cuda", &device);
  ASSERT_NE(tg, nullptr);
  struct {
    const char *type;
    int head;
    bool takes;
  } cases[] = {{"f16", 64, true}, {"bf16", 32, true}, {"f32", 64, false}, {"f16", 24, false}};
  for (const auto &c : cases) {
    char text[320];
    snprintf(text, sizeof text,
             "graph att\ninput q: %s[2, 2, 70, %d]\ninput k: %s[2, 2, 131, %d]\ninput v: %s[2, 2, 131, 32]\ny = attention(q, k, v)\noutput y\n",
             c.type, c.head, c.type, c.head, c.type);
    Graph g = parse(text);
    ASSERT_TRUE(g);
    lower_options lo = {};
    lo.attention = tg->attention_kernel; // kept whole, as the CUDA target asks
    kir_module *km = nullptr;
    ASSERT_EQ(lower_graph(g.get(), &lo, &km), PORTC_OK) << portc_last_error();
    int a = -1;
    for (int i = 0; i < km->nk; i++)
      if (gpu_is_attention(km, i)) a = i;
    ASSERT_GE(a, 0) << c.type << " " << c.head;
    km->k[a].sched = {};
    cu_schedule_as(km, a, -1, CU_OWN_FLASH);
    const kir_schedule &s = km->k[a].sched;
    char why[256] = "";
    EXPECT_TRUE(tg->schedule_check(km, a, -1, why, sizeof why)) << why;
    EXPECT_EQ(s.variant == KS_MMA, c.takes) << c.type << " " << c.head;
    if (!c.takes) {
      EXPECT_EQ(s.tile_m, 64) << "70 queries: tiles of 64 rows";
      EXPECT_EQ(s.threads[0], 2 * s.tile_m);
      km->k[a].sched.threads[0] = 64;
      EXPECT_FALSE(tg->schedule_check(km, a, -1, why, sizeof why));
      EXPECT_NE(strstr(why, "two invocations a row"), nullptr) << why;
      kir_module_free(km);
      continue;
    }
    EXPECT_EQ(s.threads[0], 128);
    EXPECT_EQ(s.shared_bytes, (64 * (c.head + 8) + 2 * 64 * (c.head + 8 + 40)) * 2) << "Q, and two stages of K and V (values of 32)";
    const int64_t S[1] = {0};
    EXPECT_EQ(gpu_attention_groups(km, a, S), 4 * 2) << "two 64-row tiles of 70 queries for each of 4 heads";
    char *src = emit_module(&cuda_dialect, km);
    ASSERT_NE(src, nullptr);
    std::string cu(src);
    free(src);
    EXPECT_NE(cu.find("pc_fa_smem"), std::string::npos);
    EXPECT_NE(cu.find("pc_pack2(s[2 * kk][0]"), std::string::npos);
    km->k[a].sched.threads[0] = 64;
    EXPECT_FALSE(tg->schedule_check(km, a, -1, why, sizeof why));
    EXPECT_NE(strstr(why, "128 threads"), nullptr) << why;
    kir_module_free(km);
  }
}

// CUDA's tensor-core convolution (opted into): f16/bf16 convolutions without groups whose reduction
// (C x KH x KW) is a multiple of 8 run as their implicit GEMM on the mma.sync kernel, a work group
// per 128x128 tile of output channels by pixels; f32, groups, and the RGB stem's 3 x 7 x 7 keep
// their kernels; the list PORTC_CUDA_KERNELS gives is read by name
TEST(TuneTables, CudasTensorCoreConvolutionTakesHalfPrecisionReductionsOfEights) {
  int device;
  const target *tg = target_find("cuda", &device);
  ASSERT_NE(tg, nullptr);
  struct {
    const char *graph;
    bool takes;
  } cases[] = {
      {"input x: f16[2, 16, 30, 30]\ninput w: f16[136, 16, 3, 3]\ny = conv2d(x, w, padding=[1, 1])\n", true},
      {"input x: bf16[2, 64, 8, 8]\ninput w: bf16[32, 64, 1, 1]\ny = conv2d(x, w)\n", true},
      {"input x: f32[2, 16, 30, 30]\ninput w: f32[136, 16, 3, 3]\ny = conv2d(x, w, padding=[1, 1])\n", false},
      {"input x: f16[2, 3, 30, 30]\ninput w: f16[64, 3, 7, 7]\ny = conv2d(x, w, stride=[2, 2], padding=[3, 3])\n", false},
      {"input x: f16[2, 16, 30, 30]\ninput w: f16[32, 8, 3, 3]\ny = conv2d(x, w, groups=2)\n", false},
  };
  for (const auto &c : cases) {
    Graph g = parse(std::string("graph c\n") + c.graph + "output y\n");
    ASSERT_TRUE(g);
    kir_module *km = target_schedules(g, "cuda");
    ASSERT_NE(km, nullptr) << portc_last_error();
    ASSERT_EQ(km->nk, 1);
    km->k[0].sched = {};
    cu_schedule_as(km, 0, -1, cu_own_kernels("flash,conv"));
    const kir_schedule &s = km->k[0].sched;
    char why[256] = "";
    EXPECT_TRUE(tg->schedule_check(km, 0, -1, why, sizeof why)) << why;
    EXPECT_EQ(s.variant == KS_MMA, c.takes) << c.graph;
    if (c.takes) {
      const int64_t S[1] = {0};
      const gpu_limits lim = {{INT32_MAX, 65535, 65535}, 0};
      unsigned grid[3];
      gpu_grid(km, 0, S, &lim, grid);
      int64_t mn[2];
      gpu_conv_mn(km, 0, S, mn);
      EXPECT_EQ(grid[0], (unsigned)((mn[1] + 127) / 128)) << "a work group per 128 pixels";
      EXPECT_EQ(grid[1], (unsigned)((mn[0] + 127) / 128)) << "and per 128 output channels";
    }
    kir_module_free(km);
  }
  EXPECT_EQ(cu_own_kernels("wgmma,conv"), (unsigned)(CU_OWN_WGMMA | CU_OWN_CONV));
  EXPECT_EQ(cu_own_kernels("flash,nonsense"), (unsigned)CU_OWN_FLASH);
  EXPECT_EQ(cu_own_kernels(nullptr), 0u);
  char why[128] = "";
  EXPECT_TRUE(cu_own_kernels_known("wgmma,flash,conv", why, sizeof why));
  EXPECT_TRUE(cu_own_kernels_known(nullptr, why, sizeof why));
  EXPECT_TRUE(cu_own_kernels_known("none", why, sizeof why));
  EXPECT_EQ(cu_own_kernels("none"), 0u);
  EXPECT_FALSE(cu_own_kernels_known("flash,wgmm", why, sizeof why));
  EXPECT_STREQ(why, "PORTC_CUDA_KERNELS lists 'wgmm', which is not wgmma, flash, conv, tf32x3 or none");
}

// Hopper's f32 matmul (three TF32 products): f32 operands with a reduction of whole 16-byte rows
// only; 128x256 tiles in 2 stages by the rule without a device, and a tune entry may take 128x192
// in 3 or 128x128 in 4 (the tuner's candidates), whose shared memory schedule_check sizes.
TEST(TuneTables, CudasF32MatmulOnHopperTakesThreeTileShapes) {
  int device;
  const target *tg = target_find("cuda", &device);
  ASSERT_NE(tg, nullptr);
  const struct { const char *graph; bool takes; } cases[] = {
      {"input a: f32[2, 100, 228]\ninput b: f32[228, 300]\ny = matmul(a, b)\n", true},
      {"input a: f32[100, 230]\ninput b: f32[230, 300]\ny = matmul(a, b)\n", false},
      {"input a: f16[100, 64]\ninput b: f16[64, 300]\ny = matmul(a, b)\n", false},
  };
  for (const auto &c : cases) {
    Graph g = parse(std::string("graph m\n") + c.graph + "output y\n");
    ASSERT_TRUE(g);
    kir_module *km = target_schedules(g, "cuda");
    ASSERT_NE(km, nullptr) << portc_last_error();
    ASSERT_EQ(km->nk, 1);
    km->k[0].sched = {};
    cu_schedule_as(km, 0, -1, cu_own_kernels("tf32x3"));
    kir_schedule &s = km->k[0].sched;
    char why[256] = "";
    EXPECT_TRUE(tg->schedule_check(km, 0, -1, why, sizeof why)) << why;
    EXPECT_EQ(s.variant == KS_WGMMA && cu_wgmma_tf32(km, &km->k[0]), c.takes) << c.graph;
    if (!c.takes) {
      kir_module_free(km);
      continue;
    }
    EXPECT_EQ(s.tile_n, 256);
    EXPECT_EQ(s.stages, 2);
    const int full = s.shared_bytes;
    tune_knobs cand[16];
    const tune_device d = {};
    int n = tg->tune_space(km, 0, &d, cand, 16), seen = 0;
    for (int j = 0; j < n; j++) {
      if (!(cand[j].mask & tune_knob_bit("stages"))) continue;
      kir_schedule rules = s;
      tune_knobs_apply(&cand[j], &s);
      EXPECT_TRUE(tg->schedule_check(km, 0, -1, why, sizeof why)) << why;
      EXPECT_EQ(s.stages, s.tile_n == 192 ? 3 : 4);
      EXPECT_LT(s.shared_bytes, 228 * 1024) << "fits the SM's shared memory";
      EXPECT_NE(s.shared_bytes, full);
      seen += s.tile_n == 192 || s.tile_n == 128;
      s = rules;
    }
    EXPECT_EQ(seen, 2) << "128x192 and 128x128 among the candidates";
    s.tile_n = 192, s.stages = 2;
    EXPECT_FALSE(tg->schedule_check(km, 0, -1, why, sizeof why)) << "192 columns need 3 stages";
    kir_module_free(km);
  }
}

// Vulkan's cooperative-matrix matmul (scheduled as on a device that has them): the rule's 128x128
// tile of 4 subgroups with k-steps of 32; the tuner's other shapes (tiles to 256, 8 subgroups,
// k-steps of 16 and 64) all fit 48 KiB of shared memory and the check takes them; shapes it
// cannot run are refused, saying why
TEST(TuneTables, VulkansCooperativeMatrixShapesFitTheirSharedMemoryOrAreRefused) {
  Graph g = parse("graph mm\ninput a: f16[1024, 512]\ninput b: f16[512, 1024]\ny = matmul(a, b)\noutput y\n");
  ASSERT_TRUE(g);
  kir_module *km = vulkan_schedules(g);
  ASSERT_NE(km, nullptr) << portc_last_error();
  ASSERT_EQ(km->nk, 1);
  ASSERT_TRUE(vk_coop_schedule(km, 0));
  kir_schedule &s = km->k[0].sched;
  EXPECT_EQ(s.variant, KS_MMA);
  EXPECT_EQ(s.tile_m, 128);
  EXPECT_EQ(s.threads[0], 128);
  EXPECT_EQ(s.tile_k, 32);
  const kir_schedule rules = s;
  char why[256] = "";
  tune_device dev = {};
  snprintf(dev.api, sizeof dev.api, "vulkan");
  dev.shared_bytes = 48 * 1024;
  int device;
  const target *tg = target_find("vulkan", &device);
  tune_knobs cand[32];
  const int n = tg->tune_space(km, 0, &dev, cand, 32);
  int eight = 0, wide = 0, steps = 0;
  for (int c = 0; c < n; c++) {
    s = rules;
    tune_knobs_apply(&cand[c], &s);
    EXPECT_TRUE(vk_coop_fit(&s, 48 * 1024, why, sizeof why)) << why;
    eight += s.threads[0] == 256, wide += s.tile_m == 256 || s.tile_n == 256, steps |= 1 << s.tile_k / 16;
  }
  EXPECT_GE(n, 8);
  EXPECT_GE(eight, 3);
  EXPECT_EQ(wide, 2);
  EXPECT_EQ(steps, 1 << 1 | 1 << 2 | 1 << 4); // k-steps 16, 32 and 64
  // 16 KiB (no device): the rule's own shape does not fit, a 64x64 tile with k-steps of 16 does
  s = rules;
  EXPECT_FALSE(vk_coop_fit(&s, 16384, why, sizeof why));
  EXPECT_NE(strstr(why, "shared memory"), nullptr) << why;
  s.tile_m = s.tile_n = 64, s.tile_k = 16;
  EXPECT_TRUE(vk_coop_fit(&s, 16384, why, sizeof why)) << why;
  // refused: 128x256 with k-steps of 32 on 8 subgroups (62 KiB), 256x256 on 4 (64 fragments each),
  // 8 subgroups on 64x64 with k-steps of 16 (fewer words than invocations), 96 threads, a k-step of 8
  const int bad[][4] = {{128, 256, 256, 32}, {256, 256, 128, 16}, {64, 64, 256, 16}, {128, 128, 96, 32}, {128, 128, 128, 8}};
  const char *says[] = {"shared memory", "fragments", "fewer words", "subgroups of 32", "k-step"};
  for (int b = 0; b < 5; b++) {
    s = rules;
    s.tile_m = bad[b][0], s.tile_n = bad[b][1], s.threads[0] = bad[b][2], s.tile_k = bad[b][3];
    EXPECT_FALSE(vk_coop_fit(&s, 48 * 1024, why, sizeof why)) << b;
    EXPECT_NE(strstr(why, says[b]), nullptr) << why;
  }
  kir_module_free(km);
}

// Vulkan's channels-last f16 convolutions (as a device with cooperative matrices lowers and
// schedules them) run on the cooperative-matrix kernel, pixels as rows: 128-row tiles, 64 columns
// where there are 64 output channels or fewer, whole by the rule on a device that does not count
// its multiprocessors; the check refuses them any other kernel, and split-K beyond the
// convolutions; the tuner offers slices where they leave multiprocessors idle, and the shader
// gathers the pixels' channels in words and adds the slices in a second phase. NCHW ones stay off
// the kernel (here one of 12 output channels, which does not fit).
TEST(TuneTables, VulkansChannelsLastConvolutionsRunOnCooperativeMatricesAndSplit) {
  Graph g = parse("graph c\ninput x: f16[2, 7, 7, 512]\ninput w: f16[3, 3, 512, 512]\ninput v: f16[3, 3, 24, 16]\ninput u: f16[2, 9, 7, 24]\n"
                  "y = conv2d(x, w, padding=[1, 1], channels_last=true)\nz = conv2d(u, v, stride=[2, 2], padding=[1, 1], channels_last=true)\n"
                  "input a: f16[2, 24, 9, 7]\ninput b: f16[12, 24, 3, 3]\nq = conv2d(a, b, padding=[1, 1])\noutput y\noutput z\noutput q\n");
  ASSERT_TRUE(g);
  lower_options lo = {};
  lo.channels_last = 1u << PORTC_F16; /* vk_channels_last on such a device */
  kir_module *km = target_schedules(g, "vulkan", lo);
  ASSERT_NE(km, nullptr) << portc_last_error();
  ASSERT_EQ(km->nk, 3);
  int device;
  const target *tg = target_find("vulkan", &device);
  char why[256] = "";
  /* the check passes, or refuses only for the shared memory of this machine's device (lavapipe's
   * 32 KiB), while the shape fits the 48 KiB of NVIDIA's */
  auto takes = [&](int i) {
    char fit[256] = "";
    return vk_coop_fit(&km->k[i].sched, 48 * 1024, fit, sizeof fit) &&
           (tg->schedule_check(km, i, -1, why, sizeof why) || strstr(why, "bytes of shared memory, the device allows"));
  };
  for (int i = 0; i < 3; i++) {
    const bool last = gpu_conv_last(km, &km->k[i]);
    EXPECT_EQ(vk_coop_schedule(km, i), last) << i;
    if (!last) continue;
    const kir_schedule &s = km->k[i].sched;
    EXPECT_EQ(s.variant, KS_MMA);
    EXPECT_EQ(s.tile_m, 128);
    EXPECT_EQ(s.tile_n, km->k[i].dom.d[3].c > 64 ? 128 : 64) << i;
    EXPECT_EQ(s.split_k, 1);
    EXPECT_TRUE(takes(i)) << why;
    const int64_t S[1] = {0};
    const gpu_limits lim = {{INT32_MAX, 65535, 65535}, 0};
    unsigned grid[3];
    gpu_grid(km, i, S, &lim, grid);
    EXPECT_EQ(grid[0], km->k[i].dom.d[3].c > 64 ? 4u : 1u) << "a work group per 128 (64) output channels";
    EXPECT_EQ(grid[1], 1u) << "and per 128 pixels";
  }
  const int y = gpu_conv_last(km, &km->k[0]) && km->k[0].dom.d[3].c == 512 ? 0 : 1;
  ASSERT_EQ(km->k[y].dom.d[3].c, 512);
  kir_schedule &s = km->k[y].sched;
  const kir_schedule rules = s;
  tune_device dev = {};
  snprintf(dev.api, sizeof dev.api, "vulkan");
  dev.shared_bytes = 48 * 1024, dev.units = 132;
  tune_knobs cand[32];
  const int n = tg->tune_space(km, y, &dev, cand, 32);
  int splits = 0;
  for (int c = 0; c < n; c++) {
    s = rules;
    tune_knobs_apply(&cand[c], &s);
    EXPECT_TRUE(takes(y)) << why;
    splits |= 1 << s.split_k;
  }
  EXPECT_EQ(splits & (1 << 2 | 1 << 4 | 1 << 8), 1 << 2 | 1 << 4 | 1 << 8) << "4 tiles of 128 on 132 multiprocessors: 2, 4 and 8 slices";
  s = rules, s.split_k = 3;
  EXPECT_TRUE(takes(y)) << why;
  char *src = emit_module(&vulkan_dialect, km);
  ASSERT_NE(src, nullptr);
  const std::string glsl(src);
  free(src);
  EXPECT_NE(glsl.find("win = kc / C"), std::string::npos) << "the window's row, column and channel of each word of k";
  EXPECT_NE(glsl.find("PC_PHASE == 0"), std::string::npos) << "the slices' sums, then their sum";
  s.variant = KS_TILED;
  EXPECT_FALSE(tg->schedule_check(km, y, -1, why, sizeof why));
  EXPECT_NE(strstr(why, "cooperative-matrix kernel only"), nullptr) << why;
  kir_module_free(km);

  Graph mm = parse("graph mm\ninput a: f16[1024, 512]\ninput b: f16[512, 1024]\ny = matmul(a, b)\noutput y\n");
  ASSERT_TRUE(mm);
  km = vulkan_schedules(mm);
  ASSERT_NE(km, nullptr) << portc_last_error();
  ASSERT_TRUE(vk_coop_schedule(km, 0));
  km->k[0].sched.split_k = 2;
  EXPECT_FALSE(tg->schedule_check(km, 0, -1, why, sizeof why));
  EXPECT_NE(strstr(why, "convolutions split"), nullptr) << why;
  kir_module_free(km);

  // taken where PORTC_VULKAN_KERNELS lists it; a list naming another kernel is refused by name
  EXPECT_EQ(vk_own_kernels("coopconv"), (unsigned)VK_OWN_COOPCONV);
  EXPECT_EQ(vk_own_kernels("none"), 0u);
  EXPECT_EQ(vk_own_kernels(nullptr), (unsigned)VK_OWN_DEFAULT);
  EXPECT_EQ(vk_own_kernels(nullptr), (unsigned)(VK_OWN_COOPATTENTION | VK_OWN_COOPWG))
      << "attention and plain GEMMs of the work group's matrices on cooperative matrices by default, convolutions not";
  EXPECT_TRUE(vk_own_kernels_known("coopconv,coopattention,none", why, sizeof why));
  EXPECT_FALSE(vk_own_kernels_known("coopconv,flash", why, sizeof why));
  EXPECT_STREQ(why, "PORTC_VULKAN_KERNELS lists 'flash', which is not coopconv, coopattention, coopwg, coopwgtensor, coopwgelements or none");
}

// Vulkan's f16 attention on cooperative matrices (vulkan/attention.c): taken where the heads are
// multiples of 16 that the device's shared memory holds (64 in 48 KiB: 45056 bytes), in 64x64
// tiles of 128 invocations, with Q, K and V read in 16-byte words; other tiles, heads of 24, f32,
// and heads of 96 on 48 KiB (61440 bytes) are refused (those stay on the SIMT kernel)
// Vulkan's f16 GEMMs on cooperative matrices of the whole work group (vulkan/matmul_wg.c): the
// rule takes outputs stored from the matrices: plain, finished on the matrices' elements where
// the epilogue is elementwise on the sums (a bias added first: the sums start from it), or
// finished by the shader's second dispatch where the output lies as the product (tiles moved
// back inside too); a tile in the device's
// steps, at least a tile of the matrix each way and k-steps that divide K fit; an epilogue's sums
// through shared memory (an output that does not lie as the product) must fit what the driver
// leaves of it; work groups of 128 invocations take the device's steps for that size, where it
// offers them; the tune entry's knob is wg_matrices, 0 or 1.
TEST(TuneTables, VulkansWorkGroupMatricesTakeGemmsInTheDevicesSteps) {
  const vk_wg_steps *step = vk_coop_wg_default_steps();
  static const vk_wg_steps only256 = {{{0, 0, 0}, {32, 32, 16}}};
  char why[256];
  Graph plain = parse("graph mm\ninput a: f16[200, 96]\ninput b: f16[96, 328]\ny = matmul(a, b)\noutput y\n");
  Graph gelu = parse("graph mm\ninput a: f16[200, 96]\ninput b: f16[96, 328]\ninput c: f16[328]\nh = matmul(a, b)\nz = add(h, c)\n"
                     "y = gelu(z)\noutput y\n");
  ASSERT_TRUE(plain && gelu);
  kir_module *km = vulkan_schedules(plain);
  ASSERT_NE(km, nullptr) << portc_last_error();
  EXPECT_TRUE(vk_coop_wg_rule(km, 0));
  kir_schedule &s = km->k[0].sched;
  vk_coop_wg_schedule(&s);
  EXPECT_EQ(s.threads[0], VK_WG_THREADS);
  s.tile_m = 128, s.tile_n = 256, s.tile_k = 32;
  EXPECT_TRUE(vk_coop_wg_fit(km, 0, &s, step, 40960, why, sizeof why)) << why;
  EXPECT_TRUE(vk_coop_wg_stores_matrices(km, &km->k[0])) << "a plain f16 output is stored from the matrices";
  s.tile_n = 96;
  EXPECT_TRUE(vk_coop_wg_fit(km, 0, &s, step, 40960, why, sizeof why)) << why;
  s.tile_n = 80;
  EXPECT_FALSE(vk_coop_wg_fit(km, 0, &s, step, 40960, why, sizeof why));
  EXPECT_NE(strstr(why, "steps of 32x32x16"), nullptr) << why;
  s.tile_n = 128, s.tile_m = 256;
  EXPECT_FALSE(vk_coop_wg_fit(km, 0, &s, step, 40960, why, sizeof why)) << "256 rows of tile for a matrix of 200";
  s.tile_m = 128, s.tile_k = 64;
  EXPECT_FALSE(vk_coop_wg_fit(km, 0, &s, step, 40960, why, sizeof why)) << "k-steps of 64 do not divide K = 96";
  s.tile_k = 32, s.stages = 3;
  EXPECT_FALSE(vk_coop_wg_fit(km, 0, &s, step, 40960, why, sizeof why));
  /* 128 invocations: the H100's steps for them are 32x16x16 */
  s.stages = 1, s.threads[0] = 128, s.tile_n = 80;
  EXPECT_TRUE(vk_coop_wg_fit(km, 0, &s, step, 40960, why, sizeof why)) << why;
  EXPECT_FALSE(vk_coop_wg_fit(km, 0, &s, &only256, 40960, why, sizeof why)) << "a device without matrices of 128 invocations";
  EXPECT_NE(strstr(why, "no cooperative matrices of a work group of that size"), nullptr) << why;
  s.threads[0] = 192;
  EXPECT_FALSE(vk_coop_wg_fit(km, 0, &s, step, 40960, why, sizeof why));
  EXPECT_NE(strstr(why, "128 or 256 invocations"), nullptr) << why;
  s.threads[0] = 128, s.tile_n = 128;
  char *wg128 = emit_module(&vulkan_dialect, km);
  ASSERT_NE(wg128, nullptr);
  EXPECT_NE(std::string(wg128).find("layout(local_size_x = 128) in;"), std::string::npos) << "the schedule's invocations";
  free(wg128);
  kir_module_free(km);
  /* bias and GELU, tiles moved back inside: the sums start from the bias (a row of stride 0),
   * GELU runs on the matrix's elements, and the result is stored from it: no second dispatch */
  km = vulkan_schedules(gelu);
  ASSERT_NE(km, nullptr) << portc_last_error();
  EXPECT_TRUE(vk_coop_wg_rule(km, 0)) << "an epilogue finished on the elements: the rule takes it";
  kir_schedule &w = km->k[0].sched;
  vk_coop_wg_schedule(&w);
  w.tile_m = 128, w.tile_n = 256, w.tile_k = 32;
  EXPECT_TRUE(vk_coop_wg_fit(km, 0, &w, step, 8192, why, sizeof why)) << "one accumulator: no shared memory of its own. " << why;
  EXPECT_TRUE(vk_coop_wg_stores_matrices(km, &km->k[0]));
  EXPECT_FALSE(vk_coop_wg_on_elements(km, &km->k[0])) << "only where the schedule asks (wg_elements)";
  EXPECT_EQ(vk_coop_wg_after(km, &km->k[0]), 200 * 328 / 8) << "else a second dispatch";
  w.wg_elements = 1;
  EXPECT_TRUE(vk_coop_wg_on_elements(km, &km->k[0]));
  EXPECT_EQ(vk_coop_wg_after(km, &km->k[0]), 0);
  const int bias = vk_coop_wg_row_vector(km, &km->k[0]);
  ASSERT_GE(bias, 0);
  EXPECT_EQ(km->buf[bias].sh.d[0].c, 328) << "the bias";
  char *src = emit_module(&vulkan_dialect, km);
  ASSERT_NE(src, nullptr);
  const std::string elements(src);
  free(src);
  EXPECT_NE(elements.find("fcoopmatNV<32, 2, PC_WG_M, 256> c[1]"), std::string::npos) << "one accumulator of the whole tile";
  EXPECT_NE(elements.find(", uint(c0) >> 3, 0u, false);"), std::string::npos) << "the bias's columns of the tile, in every row";
  EXPECT_NE(elements.find("c[0] = fcoopmatNV<32, 2, PC_WG_M, 256>(cv);"), std::string::npos) << "the sums start from it";
  EXPECT_NE(elements.find("i < c[0].length()"), std::string::npos) << "the epilogue on each element";
  EXPECT_NE(elements.find("pc_gelu("), std::string::npos);
  EXPECT_EQ(elements.find("PC_PHASE"), std::string::npos) << "one phase";
  EXPECT_EQ(elements.find("pc_C["), std::string::npos) << "no sums through shared memory";
  kir_module_free(km);
  /* an epilogue that reads more than a row vector (a residual) or reads the bias after an op on the
   * sums: they go into the output from one matrix, and the second dispatch finishes its
   * 200 x 328 / 8 words */
  for (const char *epilogue : {"input r: f16[200, 328]\nh = matmul(a, b)\nz = add(h, r)\n", "input c: f16[328]\nh = matmul(a, b)\ng = gelu(h)\nz = add(g, c)\n"}) {
    Graph residual = parse(std::string("graph mm\ninput a: f16[200, 96]\ninput b: f16[96, 328]\n") + epilogue + "output z\n");
    ASSERT_TRUE(residual);
    km = vulkan_schedules(residual);
    ASSERT_NE(km, nullptr) << portc_last_error();
    EXPECT_TRUE(vk_coop_wg_rule(km, 0)) << "an epilogue finished after: the rule takes it";
    kir_schedule &r = km->k[0].sched;
    vk_coop_wg_schedule(&r);
    r.tile_m = 128, r.tile_n = 256, r.tile_k = 32, r.wg_elements = 1;
    EXPECT_FALSE(vk_coop_wg_on_elements(km, &km->k[0])) << epilogue;
    EXPECT_EQ(vk_coop_wg_row_vector(km, &km->k[0]), -1);
    EXPECT_EQ(vk_coop_wg_after(km, &km->k[0]), 200 * 328 / 8) << epilogue;
    src = emit_module(&vulkan_dialect, km);
    ASSERT_NE(src, nullptr);
    const std::string after(src);
    free(src);
    EXPECT_NE(after.find("layout(constant_id = 3) const int PC_PHASE"), std::string::npos) << "two phases";
    EXPECT_NE(after.find("if (PC_PHASE == 1)"), std::string::npos);
    EXPECT_EQ(after.find("coherent"), std::string::npos) << "nothing read back within the dispatch";
    kir_module_free(km);
  }
  /* an output that does not lie as the product (the sums in f16, the output bf16): an accumulator
   * at a time through shared memory, where it fits what the driver leaves */
  Graph cast = parse("graph mm\ninput a: f16[200, 96]\ninput b: f16[96, 328]\nh = matmul(a, b)\ny = cast(h, to=bf16)\noutput y\n");
  ASSERT_TRUE(cast);
  km = vulkan_schedules(cast);
  ASSERT_NE(km, nullptr) << portc_last_error();
  EXPECT_FALSE(vk_coop_wg_rule(km, 0)) << "sums through shared memory: the subgroup's matrices by rule";
  kir_schedule &e = km->k[0].sched;
  vk_coop_wg_schedule(&e);
  e.tile_m = 128, e.tile_n = 128, e.tile_k = 32;
  EXPECT_FALSE(vk_coop_wg_stores_matrices(km, &km->k[0]));
  EXPECT_EQ(vk_coop_wg_after(km, &km->k[0]), 0);
  EXPECT_TRUE(vk_coop_wg_fit(km, 0, &e, step, 40960, why, sizeof why)) << "two accumulators of 128x64 sums, 32 KiB each";
  EXPECT_FALSE(vk_coop_wg_fit(km, 0, &e, step, 16384, why, sizeof why));
  EXPECT_NE(strstr(why, "shared memory the driver leaves"), nullptr) << why;
  src = emit_module(&vulkan_dialect, km);
  ASSERT_NE(src, nullptr);
  const std::string glsl(src);
  free(src);
  EXPECT_NE(glsl.find("fcoopmatNV<32, 2, PC_WG_M, 64> c[2]"), std::string::npos) << "the work group's scope, two accumulators";
  EXPECT_NE(glsl.find("if (m < mt || n < n0) continue;"), std::string::npos) << "a tile moved back inside stores what no other tile does";
  kir_module_free(km);
  int problems = 0;
  std::string err;
  tune_table tt = parse_text("api=vulkan kind=matmul tile=128x256 tile_k=64 wg_matrices=1 prov=heuristic source=a\n"
                             "api=vulkan kind=matmul wg_matrices=3 prov=heuristic source=b\n",
                             &problems, &err);
  EXPECT_EQ(problems, 1) << err;
  EXPECT_NE(err.find("wg_matrices"), std::string::npos) << err;
  ASSERT_EQ(tt.n, 1) << err;
  EXPECT_EQ(tt.e[0].knobs.v.wg_matrices, 1);
  tune_table_free(&tt);
}

// wg_matrices=2: the work group's f16 GEMM loads its A and B panels through tensor layouts. The
// shader reads them as f16 elements and compiles as any other; spirv_tensor.c then makes each
// such load OpCooperativeMatrixLoadTensorNV (5367) over a layout (OpTypeTensorLayoutNV, 5370),
// with the extension's capabilities; a module without such loads, or not SPIR-V, is refused by
// name; so is the kernel on a device without tensor addressing (or without coopwgtensor listed).
TEST(TuneTables, VulkansWorkGroupMatricesLoadThroughTensorLayouts) {
  Graph gelu = parse("graph mm\ninput a: f16[256, 128]\ninput b: f16[128, 256]\ninput c: f16[256]\nh = matmul(a, b)\nz = add(h, c)\n"
                     "y = gelu(z)\noutput y\n");
  ASSERT_TRUE(gelu);
  kir_module *km = vulkan_schedules(gelu);
  ASSERT_NE(km, nullptr) << portc_last_error();
  kir_schedule &s = km->k[0].sched;
  vk_coop_wg_schedule(&s);
  s.tile_m = 128, s.tile_n = 128, s.wg_matrices = 2, s.wg_elements = 1;
  char why[200];
  s.unroll = 3;
  EXPECT_FALSE(vk_coop_wg_fit(km, 0, &s, vk_coop_wg_default_steps(), VK_COOP_SHARED, why, sizeof why)) << "3 k-steps of 64 do not divide K = 128";
  EXPECT_NE(std::string(why).find("unroll=3"), std::string::npos) << why;
  s.unroll = 2; /* both of K's k-steps written out in one pass */
  ASSERT_TRUE(vk_coop_wg_fit(km, 0, &s, vk_coop_wg_default_steps(), VK_COOP_SHARED, why, sizeof why)) << why;
  char *src = emit_module(&vulkan_dialect, km);
  kernel_piece *pc = nullptr;
  ASSERT_NE(src, nullptr);
  ASSERT_EQ(kernel_pieces(src, km->nk, "vulkan", &pc), PORTC_OK) << portc_last_error();
  free(src);
  EXPECT_NE(std::string(pc[0].source).find("float16_t"), std::string::npos) << "an f16 view of the operands";
  EXPECT_NE(std::string(pc[0].needs).find("coopwgtensor"), std::string::npos) << pc[0].needs;
  vk_context every = {};
  every.f.storage16 = every.f.int64 = every.f.coop_matrix = every.f.coop_khr = every.f.coop_workgroup = true;
  every.f.subgroup_size = 32;
  const char *defines[10];
  int nd = 0;
  EXPECT_NE(vk_kernel_defines(&every, 0, pc[0].needs, defines, &nd), PORTC_OK) << "a device without tensor addressing";
  EXPECT_NE(std::string(portc_last_error()).find("tensor addressing"), std::string::npos) << portc_last_error();
  every.f.coop_wg_tensor = true;
  nd = 0;
  ASSERT_EQ(vk_kernel_defines(&every, 0, pc[0].needs, defines, &nd), PORTC_OK) << portc_last_error();
  uint32_t *spirv = nullptr;
  size_t words = 0;
  const portc_status compiled = vk_compile(&every, pc[0].source, "tensor", defines, &spirv, &words);
  kernel_pieces_free(pc, km->nk);
  ASSERT_EQ(compiled, PORTC_OK) << portc_last_error();
  int tensor_loads = 0, khr_loads = 0, layouts = 0, caps = 0, made = 0, made_in_loop = 0, slices = 0, divisions = 0, remainders = 0;
  bool looped = false;
  for (size_t i = 5; i < words; i += spirv[i] >> 16) {
    const uint32_t op = spirv[i] & 0xffff;
    tensor_loads += op == 5367, khr_loads += op == 4457, layouts += op == 5370, slices += op == 5375;
    divisions += op == 134, remainders += op == 137; /* OpUDiv, OpUMod */
    caps += op == 17 && (spirv[i + 1] == 5433 || spirv[i + 1] == 5439);
    looped |= op == 246; /* OpLoopMerge */
    made += op == 5372, made_in_loop += op == 5372 && looped;
  }
  EXPECT_EQ(tensor_loads, 4) << "A's panel and B's (one accumulator), for each of the pass's two k-steps";
  EXPECT_EQ(khr_loads, 1) << "the bias's, which the sums start from";
  EXPECT_EQ(layouts, 1);
  EXPECT_EQ(caps, 2);
  EXPECT_EQ(made, 2) << "a layout for A and one for B";
  EXPECT_EQ(made_in_loop, 0) << "the layouts are made before the loops, once";
  EXPECT_EQ(slices, 4) << "each load slices its layout";
  EXPECT_EQ(divisions, 2) << "each layout's rows: the buffer's length by the stride; the loads' rows and columns are the offsets' own operands";
  EXPECT_EQ(remainders, 0) << "no column divided out of an offset";
  EXPECT_NE(vk_spirv_tensor_loads(&spirv, &words), PORTC_OK) << "nothing left to rewrite";
  EXPECT_NE(std::string(portc_last_error()).find("no row-major load"), std::string::npos) << portc_last_error();
  free(spirv);
  uint32_t junk[6] = {1, 2, 3, 4, 5, 6};
  uint32_t *j = (uint32_t *)malloc(sizeof junk);
  memcpy(j, junk, sizeof junk);
  size_t jw = 6;
  EXPECT_NE(vk_spirv_tensor_loads(&j, &jw), PORTC_OK);
  EXPECT_NE(std::string(portc_last_error()).find("not a SPIR-V module"), std::string::npos) << portc_last_error();
  free(j);
  kir_module_free(km);
}

TEST(TuneTables, VulkansF16AttentionRunsOnCooperativeMatricesWhereItsHeadsFit) {
  const char *shapes[][2] = {{"f16[2, 4, 100, 64]", "taken"}, {"f16[2, 4, 100, 24]", "heads of 24"}, {"f32[2, 4, 100, 64]", "f32"},
                             {"f16[2, 4, 100, 96]", "heads of 96"}};
  for (const auto &sh : shapes) {
    const std::string text = std::string("graph a\ninput q: ") + sh[0] + "\ninput k: " + sh[0] + "\ninput v: " + sh[0] +
                             "\ny = attention(q, k, v, causal=true)\noutput y\n";
    Graph g = parse(text.c_str());
    ASSERT_TRUE(g) << text;
    lower_options lo = {};
    lo.attention = TARGET_ATTENTION_FLOATS;
    kir_module *km = target_schedules(g, "vulkan", lo);
    ASSERT_NE(km, nullptr) << portc_last_error();
    ASSERT_EQ(km->nk, 1);
    ASSERT_TRUE(gpu_is_attention(km, 0));
    char why[256] = "";
    const bool taken = vk_attention_coop_fits(km, 0, 48 * 1024, why, sizeof why);
    EXPECT_EQ(taken, strcmp(sh[1], "taken") == 0) << sh[1] << ": " << why;
    EXPECT_EQ(vk_coop_schedule(km, 0), taken) << sh[1];
    if (taken) {
      kir_schedule &s = km->k[0].sched;
      EXPECT_EQ(s.variant, KS_MMA);
      EXPECT_EQ(s.tile_m, 64);
      EXPECT_EQ(s.threads[0], 128);
      char *src = emit_module(&vulkan_dialect, km);
      ASSERT_NE(src, nullptr);
      const std::string glsl(src);
      free(src);
      EXPECT_NE(glsl.find("coopMatLoadNV(kf, pa_K"), std::string::npos) << "K^T's fragments from the key tile";
      EXPECT_NE(glsl.find("j > i"), std::string::npos) << "the causal mask";
      EXPECT_NE(glsl.find("b2v[uint("), std::string::npos) << "V read in 16-byte words";
      s.threads[0] = 256;
      EXPECT_FALSE(vk_attention_coop_check(km, 0, 48 * 1024, why, sizeof why));
      EXPECT_NE(strstr(why, "128 invocations over 64x64 tiles"), nullptr) << why;
      s.threads[0] = 128;
      EXPECT_TRUE(vk_attention_coop_check(km, 0, 48 * 1024, why, sizeof why)) << why;
      EXPECT_FALSE(vk_attention_coop_check(km, 0, 32 * 1024, why, sizeof why));
      EXPECT_NE(strstr(why, "45056 bytes of shared memory"), nullptr) << why;
    } else if (strcmp(sh[1], "heads of 96") == 0) {
      EXPECT_NE(strstr(why, "bytes of shared memory, the device allows 49152"), nullptr) << why;
    }
    kir_module_free(km);
  }
}

// Vulkan's rules from the H200's tuning: a row kernel of short rows takes one invocation per
// element or vector (a power of two from a subgroup up), long rows the device's work-group size;
// a 1x1 convolution of at most 128 input channels stays on the SIMT kernel, wider ones and 3x3
// ones take the word tiles
TEST(TuneTables, VulkansShortRowsTakeFewerInvocationsAndShortReductionConvolutionsTheSimtKernel) {
  Graph g = parse("graph r\ninput a: f32[64, 4096]\ninput b: f32[64, 128]\ninput c: f32[64, 49]\ninput d: f32[4096]\n"
                  "ya = softmax(a, axis=-1)\nyb = softmax(b, axis=-1)\nyc = softmax(c, axis=-1)\nyd = relu(d)\n"
                  "output ya\noutput yb\noutput yc\noutput yd\n"
                  "input x: f32[2, 64, 16, 16]\nparam w1: f32[64, 64, 1, 1]\nparam w2: f32[64, 256, 1, 1]\nparam w3: f32[64, 16, 3, 3]\n"
                  "input x2: f32[2, 256, 16, 16]\ninput x3: f32[2, 16, 16, 16]\ninput x4: f32[2, 3, 16, 16]\nparam w4: f32[64, 3, 3, 3]\n"
                  "c1 = conv2d(x, w1)\nc2 = conv2d(x2, w2)\nc3 = conv2d(x3, w3, padding=[1, 1])\nc4 = conv2d(x4, w4, stride=[2, 2])\n"
                  "output c1\noutput c2\noutput c3\noutput c4\n");
  ASSERT_TRUE(g);
  kir_module *km = vulkan_schedules(g);
  ASSERT_NE(km, nullptr) << portc_last_error();
  int rows[3] = {-1, -1, -1}, wg = 0, convs = 0;
  for (int i = 0; i < km->nk; i++) {
    const kir_kernel *k = &km->k[i];
    if (k->kind == KK_POINTWISE) wg = k->sched.threads[0];
    if (k->kind == KK_ROW) rows[gpu_row_length(k) == 4096 ? 0 : gpu_row_length(k) == 128 ? 1 : 2] = k->sched.threads[0];
    if (k->kind == KK_CONV) {
      const shape &w = km->buf[k->in_buf[1]].sh;
      const bool narrow = w.d[1].c * w.d[2].c * w.d[3].c <= 128; /* a short reduction: 1x1 of 64 channels, a stem of 3 */
      EXPECT_EQ(k->sched.vector, narrow ? 0 : 4) << "weights " << w.d[1].c << "x" << w.d[2].c << "x" << w.d[3].c;
      convs++;
    }
  }
  EXPECT_EQ(convs, 4);
  ASSERT_GT(wg, 0);
  EXPECT_EQ(rows[0], wg);                              // 1024 vectors of 4: the device's size
  EXPECT_LE(rows[1] * 4, 128);                         // 32 vectors of 4: at most one each
  EXPECT_GT(rows[1] * 2 * 4, 128);                     // and the most invocations that gives
  EXPECT_LT(rows[1], wg);
  EXPECT_LE(rows[2], 32);                              // 49 floats (no vectors): 32 invocations
  EXPECT_GT(rows[2] * 2, 49);
  kir_module_free(km);
}

// The direct convolution (grouped, depthwise) takes runs of a row's outputs per invocation on every
// GPU target that writes it (4, 2 at stride 2; none where the output width is unknown), and Vulkan
// gives convolutions of at most 32 output channels the SIMT kernel's 32x32 tiles
TEST(TuneTables, DepthwiseConvolutionsRunInRowRunsAndNarrowOnesInSmallTiles) {
  Graph g = parse("graph d\ninput x: f32[2, 64, 16, 16]\nparam w: f32[64, 1, 3, 3]\nparam wn: f32[16, 64, 1, 1]\ninput xs: f32[N, 8, 9, 9]\n"
                  "param ws: f32[8, 1, 3, 3]\n"
                  "d1 = conv2d(x, w, padding=[1, 1], groups=64)\nd2 = conv2d(x, w, stride=[2, 2], padding=[1, 1], groups=64)\n"
                  "n = conv2d(x, wn)\ns = conv2d(xs, ws, groups=8)\noutput d1\noutput d2\noutput n\noutput s\n");
  ASSERT_TRUE(g);
  for (const char *name : {"vulkan", "cuda", "hip"}) {
    kir_module *km = target_schedules(g, name);
    ASSERT_NE(km, nullptr) << name << ": " << portc_last_error();
    int seen = 0;
    for (int i = 0; i < km->nk; i++) {
      const kir_kernel *k = &km->k[i];
      if (k->kind != KK_CONV) continue;
      seen++;
      const bool depthwise = km->buf[k->in_buf[1]].sh.d[1].c == 1, stride2 = k->dom.d[2].c == 8;
      if (!depthwise) { /* the narrow 1x1 convolution (hip keeps one tile for every shape) */
        EXPECT_EQ(k->sched.variant, KS_TILED) << name;
        if (strcmp(name, "hip") != 0) {
          EXPECT_EQ(k->sched.tile_m, 32) << name;
        }
        EXPECT_EQ(gpu_conv_run(k), 1) << name;
      } else if (k->dom.d[0].sym >= 0) { /* a symbolic batch: the width is still known */
        EXPECT_EQ(gpu_conv_run(k), 4) << name;
      } else {
        EXPECT_EQ(k->sched.variant, KS_PLAIN) << name;
        EXPECT_EQ(gpu_conv_run(k), stride2 ? 2 : 4) << name << (stride2 ? ": stride 2" : ": stride 1");
      }
    }
    EXPECT_EQ(seen, 4) << name;
    kir_module_free(km);
  }
}

// a 1-D kernel's work-group size is a candidate of the Vulkan tuner
TEST(TuneTables, VulkansTunerTriesWorkGroupSizesOfAPointwiseKernel) {
  Graph g = parse("graph p\ninput x: f32[4096]\ny = relu(x)\noutput y\n");
  ASSERT_TRUE(g);
  lower_options lo = {};
  kir_module *km = nullptr;
  ASSERT_EQ(lower_graph(g.get(), &lo, &km), PORTC_OK) << portc_last_error();
  int device;
  const target *tg = target_find("vulkan", &device);
  ASSERT_NE(tg, nullptr);
  km->k[0].sched = {};
  tg->schedule(km, 0, -1);
  ASSERT_EQ(km->k[0].sched.variant, KS_PLAIN);
  tune_device dev = {};
  snprintf(dev.api, sizeof dev.api, "vulkan");
  tune_knobs cand[16];
  int n = tg->tune_space(km, 0, &dev, cand, 16), threads = 0;
  for (int c = 0; c < n; c++) threads += cand[c].mask == tune_knob_bit("threads");
  EXPECT_GE(threads, 3);
  kir_module_free(km);
}

// split-K's rule and tuner candidates, shared by CUDA and Vulkan: ResNet's last 3x3 layer at batch
// 2 (16 tiles of 64, a reduction of 4608) splits on a device of 132 multiprocessors, not where their number is unknown
// (0: Vulkan without a vendor extension), and not with tiles enough for every unit
TEST(TuneTables, SplitKRuleAndCandidatesFollowTheDevicesMultiprocessors) {
  Graph g = parse("graph c\ninput x: f32[2, 512, 7, 7]\nparam w: f32[512, 512, 3, 3]\n"
                  "y = conv2d(x, w, padding=[1, 1])\noutput y\n");
  ASSERT_TRUE(g);
  lower_options lo = {};
  kir_module *km = nullptr;
  ASSERT_EQ(lower_graph(g.get(), &lo, &km), PORTC_OK) << portc_last_error();
  ASSERT_EQ(km->k[0].kind, KK_CONV);
  EXPECT_EQ(gpu_conv_split_rule(km, 0, 64, 132, 64), 16); // 16 groups x 16 slices, each of 18 panels (32 would keep 9)
  EXPECT_EQ(gpu_conv_split_rule(km, 0, 64, 132, 2), 2);  // at most the target's maximum
  EXPECT_EQ(gpu_conv_split_rule(km, 0, 64, 0, 64), 1);
  EXPECT_EQ(gpu_conv_split_rule(km, 0, 64, 8, 64), 1);   // 16 groups: two for each of 8 units
  // the tensor-core convolution's rule: 128x128 tiles (4 x 1 for a batch of 2), two blocks on
  // each of 132 SMs: 264 slots / 4 tiles = 66 slices, capped by the reduction (4608 / 256 = 18
  // slices of at least 4 k-steps) and by the target's maximum
  EXPECT_EQ(gpu_conv_split_fill(km, 0, 128, 264, 256, 64), 18);
  EXPECT_EQ(gpu_conv_split_fill(km, 0, 128, 264, 256, 8), 8);
  EXPECT_EQ(gpu_conv_split_fill(km, 0, 128, 12, 256, 64), 3); // 12 slots, 4 tiles
  EXPECT_EQ(gpu_conv_split_fill(km, 0, 128, 7, 256, 64), 1);  // fewer slots than two slices need
  EXPECT_EQ(gpu_conv_split_fill(km, 0, 128, 264, 4608, 64), 1); // one slice of the whole reduction at most
  for (const char *name : {"cuda", "vulkan"}) {
    SCOPED_TRACE(name);
    int device;
    const target *tg = target_find(name, &device);
    ASSERT_NE(tg, nullptr);
    km->k[0].sched = {};
    tg->schedule(km, 0, -1);
    ASSERT_EQ(km->k[0].sched.variant, KS_TILED);
    for (int units : {132, 0}) {
      tune_device dev = {};
      snprintf(dev.api, sizeof dev.api, "%s", name);
      dev.units = units;
      tune_knobs cand[32];
      int n = tg->tune_space(km, 0, &dev, cand, 32), split = 0;
      for (int c = 0; c < n; c++) split += cand[c].v.split_k > 1;
      if (units) EXPECT_GE(split, 2) << "units " << units;
      else EXPECT_EQ(split, 0);
    }
  }
  kir_module_free(km);
}

// every shipped entry lints, and its target accepts its knobs on a kernel of its kind
std::string graph_for(const tune_entry &e, bool small = false) {
  char text[1024];
  tune_sample_graph(&e, small, text, sizeof text);
  return text;
}

const char *target_of(const tune_entry &e) {
  std::string api = e.dev.api;
  if (api == "hip") return std::string(e.dev.vendor) == "nvidia" ? "hip-on-cuda" : "hip";
  return api == "cpu" ? "cpu" : api == "vulkan" ? "vulkan" : api == "cuda" ? "cuda" : nullptr;
}

TEST(ShippedTables, EveryEntryLintsAndItsTargetAcceptsIt) {
  int total = 0, ran = 0;
  for (int s = 0; tune_shipped_name[s]; s++) {
    tune_table t = {};
    snprintf(t.name, sizeof t.name, "%s", tune_shipped_name[s]);
    char err[4096];
    EXPECT_EQ(tune_parse(tune_shipped_text[s], &t, err, sizeof err), 0) << err;
    for (int i = 0; i < t.n; i++, total++) {
      const tune_entry &e = t.e[i];
      SCOPED_TRACE(std::string(t.name) + ":" + std::to_string(e.line));
      const char *tname = target_of(e);
      ASSERT_NE(tname, nullptr) << "api " << e.dev.api << " has no target here";
      int device;
      const target *tg = target_find(tname, &device);
      ASSERT_NE(tg, nullptr);
      Graph g = parse(graph_for(e));
      ASSERT_TRUE(g);
      Graph small = parse(graph_for(e, true));
      ASSERT_TRUE(small);
      // lower, schedule by the rules, apply the entry's knobs, and ask the target
      portc_bindings *b = portc_bindings_new(small.get());
      lower_options lo = {};
      kir_module *km = nullptr;
      ASSERT_EQ(lower_graph(g.get(), &lo, &km), PORTC_OK) << portc_last_error();
      for (int j = 0; j < km->nk; j++) tg->schedule(km, j, -1);
      char why[256] = "";
      EXPECT_GT(tune_entry_apply(tg, km, &e, why, sizeof why), 0) << why << " (" << graph_for(e) << ")";
      kir_module_free(km);
      // Vulkan entries also run, and agree with the reference, on the device here (lavapipe in CI)
      if (std::string(tname) == "vulkan" && available("vulkan")) {
        TempCache cache;
        char line[2048];
        tune_entry any = e;
        memset(&any.dev, 0, sizeof any.dev);
        snprintf(any.dev.api, sizeof any.dev.api, "vulkan");
        memset(any.ext, 0, sizeof any.ext); /* the small graph's kernel, whatever its shape and epilogue */
        any.kern.layout[0] = any.kern.epilogue[0] = any.kern.params[0] = 0;
        tune_format(&any, line, sizeof line);
        write_file(cache.user_table(), line);
        portc_compile_options o = {};
        o.size = sizeof o;
        o.target = "vulkan";
        portc_module *m = nullptr;
        portc_bindings_set_seed(b, 3);
        ASSERT_EQ(portc_compile(small.get(), &o, b, &m), PORTC_OK) << portc_last_error();
        portc_tensor *out = nullptr, *ref = nullptr;
        ASSERT_EQ(portc_module_run(m, b, &out), PORTC_OK) << portc_last_error();
        ASSERT_EQ(portc_reference_run(small.get(), b, &ref), PORTC_OK);
        double worst = 0, scale = 1e-30;
        for (int64_t x = 0; x < portc_tensor_numel(ref); x++) {
          worst = std::max(worst, std::fabs(portc_tensor_get(out, x) - portc_tensor_get(ref, x)));
          scale = std::max(scale, std::fabs(portc_tensor_get(ref, x)));
        }
        EXPECT_LT(worst / scale, 1e-3) << graph_for(e, true);
        bool used = false;
        for (int j = 0; j < m->km->nk; j++) used = used || std::string(m->km->k[j].sched.source).rfind("heuristic", 0) == 0 ||
                                                   std::string(m->km->k[j].sched.source).rfind("measured", 0) == 0;
        EXPECT_TRUE(used) << "the entry was not applied";
        portc_tensor_free(out);
        portc_tensor_free(ref);
        portc_module_free(m);
        ran++;
      }
      portc_bindings_free(b);
    }
    tune_table_free(&t);
  }
  EXPECT_GT(total, 0) << "no shipped entries";
  if (available("vulkan")) {
    EXPECT_GT(ran, 0) << "no Vulkan entry ran";
  }
}

// ---- the tuner ----

const char *const kTunable =
    "graph tunable\ninput a: f32[96, 256]\ninput b: f32[256, 160]\nh = matmul(a, b)\ny = relu(h)\nz = add(y, y)\noutput z\n";

void tune_and_reuse(const char *target) {
  TempCache cache;
  Graph g = parse(kTunable);
  ASSERT_TRUE(g);
  portc_tune_options o = {};
  o.size = sizeof o;
  o.target = target;
  o.budget_seconds = 120;
  o.reps = 3;
  o.dynamic = true;
  char *report = nullptr;
  ASSERT_EQ(portc_tune(g.get(), &o, nullptr, &report), PORTC_OK) << portc_last_error();
  ASSERT_NE(report, nullptr);
  std::string table = read_file(cache.user_table());
  free(report);
  EXPECT_NE(table.find("prov=measured"), std::string::npos) << table;
  EXPECT_EQ(portc_tune_check(cache.user_table().c_str(), stderr), 0) << table;
  // the next compile of the graph reads it
  bool measured = false;
  for (int i = 0; i < 3; i++) measured = measured || std::string(schedule_of(g.get(), target, i).source).rfind("measured, user", 0) == 0;
  EXPECT_TRUE(measured) << table;
  // and max-autotune has nothing left to do: it leaves the table as it is
  portc_compile_options co = {};
  co.size = sizeof co;
  co.target = target, co.dynamic = true, co.mode = PORTC_MODE_MAX_AUTOTUNE;
  portc_module *m = nullptr;
  ASSERT_EQ(portc_compile(g.get(), &co, nullptr, &m), PORTC_OK) << portc_last_error();
  portc_module_free(m);
  EXPECT_EQ(read_file(cache.user_table()), table);
}

TEST(Tuner, OnTheCpuWritesATableTheNextCompileUses) { tune_and_reuse("cpu"); }

TEST(Tuner, OnVulkanWritesATableTheNextCompileUses) {
  if (!available("vulkan")) GTEST_SKIP() << "no Vulkan device";
  tune_and_reuse("vulkan");
}

// the hook makes every candidate look 10x faster but gives wrong outputs (hook_wrong), or keeps
// its outputs and makes it a second slower (hook_slow): either way the default must stay
int hooked;
void hook_wrong(int, int cand, portc_tensor **out, int nout, double *seconds) {
  if (!cand) return;
  hooked++;
  *seconds /= 10;
  for (int o = 0; o < nout; o++) portc_tensor_set(out[o], 0, portc_tensor_get(out[o], 0) + 1000);
}
void hook_slow(int, int cand, portc_tensor **, int, double *seconds) {
  if (!cand) return;
  hooked++;
  *seconds += 1.0; /* a second slower: more than any noise on a kernel of microseconds */
}

void expect_defaults_kept(void (*hook)(int, int, portc_tensor **, int, double *)) {
  TempCache cache;
  Graph g = parse(kTunable);
  ASSERT_TRUE(g);
  portc_tune_options o = {};
  o.size = sizeof o;
  o.target = "cpu", o.dynamic = true, o.reps = 3, o.budget_seconds = 120;
  hooked = 0;
  tuner_test_hook = hook;
  char *report = nullptr;
  portc_status st = portc_tune(g.get(), &o, nullptr, &report);
  tuner_test_hook = nullptr;
  ASSERT_EQ(st, PORTC_OK) << portc_last_error();
  EXPECT_GT(hooked, 0) << "no candidate was judged";
  std::string rep = report ? report : "";
  free(report);
  // every line of the report says the default won
  std::istringstream lines(rep);
  std::string line;
  std::getline(lines, line);  // the header
  int rows = 0;
  while (std::getline(lines, line)) {
    rows++;
    EXPECT_NE(line.find("(the default)"), std::string::npos) << rep;
  }
  EXPECT_GT(rows, 0) << rep;
  kir_schedule rules = {};
  {
    TempCache none;
    rules = schedule_of(g.get(), "cpu", 0);
  }
  kir_schedule s = schedule_of(g.get(), "cpu", 0);
  EXPECT_EQ(s.nr, rules.nr);
  EXPECT_EQ(s.kc, rules.kc);
  EXPECT_EQ(s.mc, rules.mc);
}

TEST(Tuner, RefusesAWrongCandidateHoweverFast) { expect_defaults_kept(hook_wrong); }
TEST(Tuner, RefusesASlowerCandidate) { expect_defaults_kept(hook_slow); }

}  // namespace
