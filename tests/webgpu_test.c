/*
 * webgpu_test.c: the ground of the WebGPU target (webgpu/): the library scripts/deps.sh
 * installs opens, has the ABI portc declares, and its layouts read right; a library of another
 * ABI and a missing one are refused with a message that says what to do.
 *   webgpu_test abi       wg_abi_mismatch on symbol tables of this ABI, the stable one, neither
 *   webgpu_test null      Dawn's Null adapter (no driver needed): its name and backend, limits
 *                         that are WebGPU's minimums or more, the features Dawn's Null backend has
 *   webgpu_test vulkan    the Vulkan adapter (CI: Mesa 25's lavapipe, which scripts/deps.sh unpacks
 *                         and the test names with VK_DRIVER_FILES): its limits, shader-f16,
 *                         subgroups and timestamps, which the target's kernels and timers use
 *   webgpu_test run       a device of the Vulkan adapter runs a WGSL kernel (y = 2x + 1 over a
 *                         million floats, in f32 and, where shader-f16 is there, through f16)
 *                         and the values come back exact; a WGSL error names its line and column
 *   webgpu_test wgsl EXAMPLES  every kernel of the conformance suite (fused and eager) the dialect writes
 *                         in the WGSL dialect, compiled into a pipeline by Dawn's Null adapter,
 *                         which checks WGSL as a browser does (fusion bounded to the buffers
 *                         its limits allow); a kernel it rejects is printed with line numbers
 *                         and the compiler's message
 *   webgpu_test refused WORDS...   wg_load fails (PORTC_WEBGPU_LIB names a missing or wrong
 *                         library) with a message containing each of WORDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/emit.h"
#include "../conformance/conformance.h"
#include "../lower/pipeline.h"
#include "../webgpu/wg.h"

static int fails;
#define CHECK(cond, ...)                              \
  do {                                                \
    if (!(cond)) {                                    \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);     \
      printf(__VA_ARGS__);                            \
      printf("\n");                                   \
      fails++;                                        \
    }                                                 \
  } while (0)

static void api_release_pipeline(WGPUComputePipeline p) {
  char why[256];
  wg_load(NULL, why, sizeof why)->ComputePipelineRelease(p);
}

static void api_release_buffer(WGPUBuffer b) {
  char why[256];
  const wgpu_api *w = wg_load(NULL, why, sizeof why);
  w->BufferDestroy(b);
  w->BufferRelease(b);
}

static void *table(void *handle, const char *name) {
  for (const char *const *n = handle; *n; n++)
    if (!strcmp(*n, name)) return (void *)n;
  return NULL;
}

static void abi(void) {
  const char *dawn[] = {"wgpuCreateInstance", "wgpuGetInstanceCapabilities", NULL};
  const char *stable[] = {"wgpuCreateInstance", "wgpuGetInstanceFeatures", "wgpuGetInstanceLimits", NULL};
  const char *other[] = {"wgpuCreateInstance", NULL};
  const char *none[] = {"vkCreateInstance", NULL};
  CHECK(wg_abi_mismatch(table, dawn) == NULL, "Dawn's ABI of June 2025 refused");
  const char *why = wg_abi_mismatch(table, stable);
  CHECK(why && strstr(why, "stable release"), "the stable ABI: %s", why ? why : "accepted");
  why = wg_abi_mismatch(table, other);
  CHECK(why && strstr(why, "wgpuGetInstanceCapabilities"), "neither ABI: %s", why ? why : "accepted");
  why = wg_abi_mismatch(table, none);
  CHECK(why && strstr(why, "not a webgpu.h library"), "no webgpu.h: %s", why ? why : "accepted");
}

/* limits every WebGPU adapter has at least (the specification's defaults); a field read at a
 * wrong offset would not pass all of them */
static void check_limits(const char *what, const WGPULimits *l) {
  CHECK(l->maxComputeWorkgroupStorageSize >= 16384, "%s: maxComputeWorkgroupStorageSize %u", what, l->maxComputeWorkgroupStorageSize);
  CHECK(l->maxComputeInvocationsPerWorkgroup >= 256, "%s: maxComputeInvocationsPerWorkgroup %u", what, l->maxComputeInvocationsPerWorkgroup);
  CHECK(l->maxComputeWorkgroupSizeX >= 256 && l->maxComputeWorkgroupSizeY >= 256 && l->maxComputeWorkgroupSizeZ >= 64, "%s: workgroup size %ux%ux%u",
        what, l->maxComputeWorkgroupSizeX, l->maxComputeWorkgroupSizeY, l->maxComputeWorkgroupSizeZ);
  CHECK(l->maxComputeWorkgroupsPerDimension >= 65535, "%s: maxComputeWorkgroupsPerDimension %u", what, l->maxComputeWorkgroupsPerDimension);
  CHECK(l->maxStorageBuffersPerShaderStage >= 8, "%s: maxStorageBuffersPerShaderStage %u", what, l->maxStorageBuffersPerShaderStage);
  CHECK(l->maxStorageBufferBindingSize >= (128u << 20), "%s: maxStorageBufferBindingSize %llu", what, (unsigned long long)l->maxStorageBufferBindingSize);
  CHECK(l->maxBufferSize >= (256u << 20), "%s: maxBufferSize %llu", what, (unsigned long long)l->maxBufferSize);
  CHECK(l->minStorageBufferOffsetAlignment && l->minStorageBufferOffsetAlignment <= 256 &&
            !(l->minStorageBufferOffsetAlignment & (l->minStorageBufferOffsetAlignment - 1)),
        "%s: minStorageBufferOffsetAlignment %u", what, l->minStorageBufferOffsetAlignment);
  CHECK(l->maxBindGroups >= 4 && l->maxBindingsPerBindGroup >= 1000, "%s: bind groups %u, bindings %u", what, l->maxBindGroups,
        l->maxBindingsPerBindGroup);
}

static void vulkan_adapter(void) {
  char why[1024] = "";
  wg_adapter v;
  bool ok = wg_adapter_get(WGPUBackendType_Vulkan, &v, why, sizeof why);
  CHECK(ok, "no Vulkan adapter: %s", why);
  if (!ok) return;
  const WGPULimits *l = &v.limits;
  printf("Vulkan adapter: %s (%s, %s), subgroups %u-%u, workgroup storage %u, invocations %u, storage buffers %u, binding %llu, f16 %s, "
         "subgroups %s, timestamps %s\n",
         v.name, v.driver, v.vendor, v.subgroup_min, v.subgroup_max, l->maxComputeWorkgroupStorageSize, l->maxComputeInvocationsPerWorkgroup,
         l->maxStorageBuffersPerShaderStage, (unsigned long long)l->maxStorageBufferBindingSize, v.f16 ? "yes" : "no", v.subgroups ? "yes" : "no",
         v.timestamps ? "yes" : "no");
  CHECK(v.backend == WGPUBackendType_Vulkan, "backend %d", v.backend);
  check_limits("Vulkan", l);
  CHECK(v.subgroups && v.timestamps, "subgroups %d timestamps %d", v.subgroups, v.timestamps);
  /* shader-f16 is the driver's to offer: Mesa 25's lavapipe (CI's driver) has it, NVIDIA's driver
   * does not through this Dawn (seen on the H200), so only lavapipe must show it */
  if (strstr(v.name, "llvmpipe")) CHECK(v.f16, "%s offers no shader-f16", v.name);
  else if (!v.f16) printf("%s offers no shader-f16 (the target does not need it: 16-bit elements move through 32-bit words)\n", v.name);
  CHECK(v.subgroup_min >= 1 && v.subgroup_min <= v.subgroup_max && v.subgroup_max <= 128, "subgroups %u-%u", v.subgroup_min, v.subgroup_max);
}

static void null_adapter(void) {
  char why[1024] = "";
  const char *path = NULL;
  const wgpu_api *w = wg_load(&path, why, sizeof why);
  CHECK(w != NULL, "the library does not load: %s", why);
  if (!w) return;
  printf("library: %s\n", path);
  wg_adapter a;
  bool ok = wg_adapter_get(WGPUBackendType_Null, &a, why, sizeof why);
  CHECK(ok, "no Null adapter: %s", why);
  if (!ok) return;
  const WGPULimits *l = &a.limits;
  printf("Null adapter: %s, backend %s, workgroup storage %u, invocations %u, size %ux%ux%u, groups %u, storage buffers %u, binding %llu\n",
         a.name, wg_backend_name(a.backend), l->maxComputeWorkgroupStorageSize, l->maxComputeInvocationsPerWorkgroup, l->maxComputeWorkgroupSizeX,
         l->maxComputeWorkgroupSizeY, l->maxComputeWorkgroupSizeZ, l->maxComputeWorkgroupsPerDimension, l->maxStorageBuffersPerShaderStage,
         (unsigned long long)l->maxStorageBufferBindingSize);
  CHECK(a.backend == WGPUBackendType_Null, "backend %d", a.backend);
  CHECK(strstr(a.name, "Null") != NULL, "name '%s'", a.name);
  check_limits("Null", l);
  CHECK(a.f16 && a.subgroups && a.timestamps, "Dawn's Null backend offers every feature: f16 %d subgroups %d timestamps %d", a.f16, a.subgroups,
        a.timestamps);
}

static const char affine[] =
    "@group(0) @binding(0) var<storage, read> x: array<f32>;\n"
    "@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n"
    "@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
    "  let i = g.x + g.y * 65535u * 256u;\n"
    "  if (i < arrayLength(&y)) { y[i] = 2.0 * x[i] + 1.0; }\n"
    "}\n";
/* the same through f16: x in [-128, 128) at steps of 1/8 is exact in f16, and so is 2x + 1 */
static const char affine16[] =
    "enable f16;\n"
    "@group(0) @binding(0) var<storage, read> x: array<f32>;\n"
    "@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n"
    "@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
    "  let i = g.x + g.y * 65535u * 256u;\n"
    "  if (i < arrayLength(&y)) { let h = f16(x[i]); y[i] = f32(h * 2.0h + 1.0h); }\n"
    "}\n";
static const char broken[] =
    "@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n"
    "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
    "  y[g.x] = undefined_name;\n"
    "}\n";

static void run(void) {
  char why[2048] = "";
  wg_device d;
  bool ok = wg_device_open(WGPUBackendType_Vulkan, &d, why, sizeof why);
  CHECK(ok, "no device: %s", why);
  if (!ok) return;
  printf("device of %s\n", d.info.name);
  enum { N = 1 << 20 };
  static float x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = (float)(i % 2048 - 1024) / 8;
  WGPUBuffer b[2] = {wg_buffer_new(&d, sizeof x, why, sizeof why), wg_buffer_new(&d, sizeof y, why, sizeof why)};
  CHECK(b[0] && b[1], "buffers: %s", why);
  ok = b[0] && b[1] && wg_buffer_write(&d, b[0], 0, x, sizeof x, why, sizeof why);
  CHECK(ok, "write: %s", why);
  for (int v = 0; ok && v < (d.info.f16 ? 2 : 1); v++) {
    WGPUComputePipeline p = wg_pipeline_new(&d, v ? affine16 : affine, "main", why, sizeof why);
    CHECK(p, "pipeline %d: %s", v, why);
    if (!p) break;
    const uint32_t groups[3] = {N / 256, 1, 1};
    memset(y, 0, sizeof y);
    bool ran = wg_dispatch(&d, p, b, NULL, NULL, 2, groups, why, sizeof why) && wg_buffer_read(&d, b[1], 0, y, sizeof y, why, sizeof why);
    CHECK(ran, "dispatch %d: %s", v, why);
    int wrong = 0;
    for (int i = 0; ran && i < N; i++) wrong += y[i] != 2 * x[i] + 1;
    CHECK(ran && !wrong, "%s: %d of %d values wrong (y[5] = %g, want %g)", v ? "f16" : "f32", wrong, N, y[5], 2 * x[5] + 1);
    if (ran && !wrong) printf("y = 2x + 1 over %d values in %s: exact\n", N, v ? "f16" : "f32");
    api_release_pipeline(p);
  }
  WGPUComputePipeline bad = wg_pipeline_new(&d, broken, "main", why, sizeof why);
  CHECK(!bad, "a broken shader compiled");
  printf("broken shader: %s\n", why);
  CHECK(strstr(why, "line 3, column") && strstr(why, "undefined_name"), "the message lacks the place or the name: %s", why);
  for (int i = 0; i < 2; i++)
    if (b[i]) api_release_buffer(b[i]);
  wg_device_close(&d);
}

static int over_limit; /* kernels with more buffers than the device binds */
static int relowered;  /* fused modules too wide for it, lowered one kernel per op instead */



static int by_kind[KK_OPAQUE + 1]; /* kernels compiled, per kind */

/* a module's kernels that the WGSL dialect writes as pipelines of the device; returns how many compiled */
static int compile_kernels(wg_device *d, const kir_module *km, const char *name) {
  char *src = emit_module(&wgsl_dialect, km);
  CHECK(src, "%s: no source", name);
  int n = 0, bufs[WG_MAX_BINDINGS + 1];
  for (int i = 0; src && i < km->nk; i++) {
    char refused[256];
    if (!wg_writes(km, i) || (km->k[i].kind == KK_OPAQUE && !wg_supports(km->g, km->k[i].node, refused, sizeof refused))) continue;
    if (kernel_buffers(km, i, bufs, WG_MAX_BINDINGS) + (km->g->nsyms > 0) > (int)d->info.limits.maxStorageBuffersPerShaderStage) {
      over_limit++;
      printf("%s: kernel %d (%s) binds %d buffers\n", name, i, km->k[i].why, kernel_buffers(km, i, bufs, WG_MAX_BINDINGS));
      continue;
    }
    char *wgsl = wg_kernel_source(src, i), why[4096] = "";
    CHECK(wgsl, "%s: kernel %d is not in the module", name, i);
    WGPUComputePipeline p = wgsl ? wg_pipeline_new(d, wgsl, "main", why, sizeof why) : NULL;
    if (p) n++, by_kind[km->k[i].kind]++, api_release_pipeline(p);
    else if (wgsl) {
      char *numbered = emit_numbered(wgsl);
      const char *own = numbered ? strstr(numbered, "//@kernel") : NULL; /* the prelude compiles: the kernel's own lines */
      CHECK(false, "%s: kernel %d: %s\n%s", name, i, why, own ? own - 7 : "");
      free(numbered);
    }
    free(wgsl);
  }
  free(src);
  return n;
}

static void wgsl(const char *examples) {
  char why[1024] = "";
  wg_device d;
  bool ok = wg_device_open(WGPUBackendType_Null, &d, why, sizeof why);
  CHECK(ok, "no Null device: %s", why);
  if (!ok) return;
  conf_cases cs = {0};
  conf_generate(&cs, examples);
  int kernels = 0, cases = 0;
  for (int c = 0; c < cs.n && fails < 5; c++) {
    portc_graph *g = NULL;
    const conf_case *cc = &cs.c[c];
    if ((cc->path ? portc_graph_load(cc->path, &g) : portc_graph_parse(cc->text, cc->name, &g)) != PORTC_OK) continue;
    for (int eager = 0; eager < 2; eager++) {
      lower_options lo = {.eager = eager, .max_loads = wg_loads_within(&d.info.limits)};
      kir_module *km = NULL;
      if (lower_graph(g, &lo, &km) != PORTC_OK) continue;
      if (!eager && kernels_wider_than(km, lo.max_loads + 1)) { /* as the driver does (module.c): one kernel per op */
        kir_module_free(km);
        km = NULL;
        lo.eager = true, relowered++;
        if (lower_graph(g, &lo, &km) != PORTC_OK) continue;
      }
      int n = compile_kernels(&d, km, cc->name);
      kernels += n, cases += n > 0;
      kir_module_free(km);
    }
    portc_graph_free(g);
  }
  printf("%d kernels of %d modules compiled as WGSL (pointwise %d, row %d, matmul %d, conv %d, pooling, concat and pad %d); %d fused modules too wide for "
         "the %u buffers the device binds, lowered one kernel per op; %d kernels over it\n",
         kernels, cases, by_kind[KK_POINTWISE], by_kind[KK_ROW], by_kind[KK_MATMUL], by_kind[KK_CONV], by_kind[KK_OPAQUE], relowered,
         d.info.limits.maxStorageBuffersPerShaderStage, over_limit);
  CHECK(kernels > 1000, "only %d kernels: the suite no longer reaches the dialect", kernels);
  CHECK(by_kind[KK_MATMUL] > 50 && by_kind[KK_CONV] > 10 && by_kind[KK_OPAQUE] > 5, "too few matmul, conv or opaque kernels: the suite no longer reaches them");
  CHECK(over_limit == 0, "%d kernels bind more buffers than the device allows: fusion's bound (max_loads) failed", over_limit);
  conf_free(&cs);
  wg_device_close(&d);
}

static void refused(int n, char **words) {
  char why[1024] = "";
  const wgpu_api *w = wg_load(NULL, why, sizeof why);
  CHECK(w == NULL, "a library loaded where none should");
  printf("refused: %s\n", why);
  for (int i = 0; i < n; i++) CHECK(strstr(why, words[i]) != NULL, "the message lacks '%s'", words[i]);
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "abi")) abi();
  else if (argc >= 2 && !strcmp(argv[1], "null")) null_adapter();
  else if (argc >= 2 && !strcmp(argv[1], "vulkan")) vulkan_adapter();
  else if (argc >= 2 && !strcmp(argv[1], "run")) run();
  else if (argc >= 3 && !strcmp(argv[1], "wgsl")) wgsl(argv[2]);
  else if (argc >= 2 && !strcmp(argv[1], "refused")) refused(argc - 2, argv + 2);
  else return printf("usage: webgpu_test abi|null|vulkan|run|refused WORDS...|wgsl EXAMPLES\n"), 2;
  if (fails) printf("%d checks failed\n", fails);
  else printf("webgpu %s: all checks passed\n", argv[1]);
  return fails != 0;
}
