/*
 * wgsl_copy.c: how a WGSL copy reaches the device's bandwidth through Dawn, variant by variant
 * (the shapes portc's WebGPU kernels could take): 64M f32 (256 MiB in, 256 MiB out), each
 * variant timed by the pass's timestamps, median of 20 after 3 warm-ups, its result checked.
 *   scalar-loop     an element per invocation in a grid-stride loop over at most 65535 groups
 *                   (what the pointwise kernels do), the input read-only
 *   scalar-loop-rw  the same with the input bound read_write
 *   scalar-2d       an element per invocation, no loop: a 2-D grid of groups
 *   unroll4-loop    4 elements a stride apart per invocation, loaded before any store
 *   vec4-loop       a vec4<f32> per invocation in the grid-stride loop
 *   vec4-2d         a vec4<f32> per invocation, a 2-D grid
 *   portc-text      the copy kernel as portc's WGSL dialect writes it (the prelude in front:
 *                   its private INFINITY/NAN set on entry, every binding referenced), whole buffers
 *   portc-ranged    the same bound as portc's runtime binds (explicit offsets and sizes)
 * Dawn toggles (disable_robustness) through PORTC_WEBGPU_TOGGLES, as the target reads them.
 * Not a test: bench/gpu/NOTES.md records what it printed on the GPU machine.
 * usage: wgsl_copy [MiB] [random]   (default 256; the input i as float, or with `random` seeded
 * uniform values in [-1, 1), as `portc bench` draws them)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../webgpu/prelude.h"
#include "../../../webgpu/wg.h"

#define HEAD(T)                                                                                      \
  "@group(0) @binding(0) var<storage, %s> x: array<" T ">;\n"                                        \
  "@group(0) @binding(1) var<storage, read_write> y: array<" T ">;\n"                                \
  "@compute @workgroup_size(256)\n"                                                                   \
  "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) ng: vec3<u32>,\n" \
  "        @builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {\n"      \
  "  let n: i32 = %d;\n"

/* what `PORTC_LOG=kernels portc bench bench/gpu/copy_64M.ptg -t webgpu` prints after the prelude */
#define PORTC_COPY                                                                                       \
  "@group(0) @binding(0) var<storage, %s> b0: array<f32>;\n"                                             \
  "@group(0) @binding(1) var<storage, read_write> b1: array<f32>;\n"                                     \
  "@compute @workgroup_size(256)\n"                                                                      \
  "fn main(@builtin(global_invocation_id) pc_gid: vec3<u32>, @builtin(num_workgroups) pc_groups: vec3<u32>,\n" \
  "        @builtin(local_invocation_index) pc_lid: u32, @builtin(workgroup_id) pc_wid: vec3<u32>) {\n"   \
  "  pc_init();\n  pc_tid = pc_lid;\n  _ = &b0;\n  _ = &b1;\n  let pc_count: i32 = %d;\n"                 \
  "  for (var t: i32 = i32(pc_gid.x); t < pc_count; t += i32(pc_groups.x) * 256) {\n"                   \
  "    let i0: i32 = t;\n    let x0: i32 = i0 * 1;\n    let v0: f32 = b0[x0];\n    let x1: i32 = i0 * 1;\n" \
  "    b1[x1] = v0;\n  }\n}\n"

static const struct variant {
  const char *name, *body;
  int per; /* elements per invocation */
  bool vec, two_d, rw, prelude, ranged;
} variants[] = {
    {"scalar-loop", HEAD("f32") "  for (var t: i32 = i32(gid.x); t < n; t += i32(ng.x) * 256) { y[t] = x[t]; }\n}\n", 1, false, false, false, false, false},
    {"scalar-loop-rw", HEAD("f32") "  for (var t: i32 = i32(gid.x); t < n; t += i32(ng.x) * 256) { y[t] = x[t]; }\n}\n", 1, false, false, true, false, false},
    {"scalar-2d", HEAD("f32") "  let t = i32((wid.y * ng.x + wid.x) * 256u + lid);\n  if (t < n) { y[t] = x[t]; }\n}\n", 1, false, true, false, false, false},
    {"unroll4-loop",
     HEAD("f32") "  let s = i32(ng.x) * 256;\n"
                 "  for (var t: i32 = i32(gid.x); t < n; t += 4 * s) {\n"
                 "    let a = x[t]; let b = x[min(t + s, n - 1)]; let c = x[min(t + 2 * s, n - 1)]; let d = x[min(t + 3 * s, n - 1)];\n"
                 "    y[t] = a; if (t + s < n) { y[t + s] = b; } if (t + 2 * s < n) { y[t + 2 * s] = c; } if (t + 3 * s < n) { y[t + 3 * s] = d; }\n"
                 "  }\n}\n",
     1, false, false, false, false, false},
    {"vec4-loop", HEAD("vec4<f32>") "  for (var t: i32 = i32(gid.x); t < n; t += i32(ng.x) * 256) { y[t] = x[t]; }\n}\n", 4, true, false, false, false, false},
    {"vec4-2d", HEAD("vec4<f32>") "  let t = i32((wid.y * ng.x + wid.x) * 256u + lid);\n  if (t < n) { y[t] = x[t]; }\n}\n", 4, true, true, false, false, false},
    {"portc-text", PORTC_COPY, 1, false, false, false, true, false},
    {"portc-ranged", PORTC_COPY, 1, false, false, false, true, true},
};

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 256;
  size_t n = mib << 18; /* floats */
  char why[4096] = "";
  wg_device d;
  if (!wg_device_open(WGPUBackendType_Vulkan, &d, why, sizeof why)) return fprintf(stderr, "no device: %s\n", why), 1;
  if (!d.info.timestamps) return fprintf(stderr, "%s has no timestamp-query\n", d.info.name), 1;
  const char *toggles = getenv("PORTC_WEBGPU_TOGGLES");
  float *h = malloc(n * sizeof *h), *back = malloc(n * sizeof *back);
  bool random = argc > 2 && !strcmp(argv[2], "random");
  uint64_t state = 1;
  for (size_t i = 0; i < n; i++) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    h[i] = random ? (float)((double)(state >> 40) / (double)(1u << 23) - 1.0) : (float)i;
  }
  printf("%s, %zu MiB in and out, %s input, toggles: %s\n", d.info.name, mib, random ? "random" : "sequential", toggles && *toggles ? toggles : "(none)");
  WGPUBuffer b[2] = {wg_buffer_new(&d, n * 4, why, sizeof why), wg_buffer_new(&d, n * 4, why, sizeof why)};
  if (!b[0] || !b[1] || !wg_buffer_write(&d, b[0], 0, h, n * 4, why, sizeof why)) return fprintf(stderr, "buffers: %s\n", why), 1;
  const uint64_t offsets[2] = {0, 0}, sizes[2] = {n * 4, n * 4};
  for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
    const struct variant *x = &variants[v];
    int items = (int)(n / (size_t)x->per);
    static char src[65536];
    int at = snprintf(src, sizeof src, "%s\n", x->prelude ? wgsl_prelude : "");
    snprintf(src + at, sizeof src - (size_t)at, x->body, x->rw ? "read_write" : "read", items);
    WGPUComputePipeline p = wg_pipeline_new(&d, src, "main", why, sizeof why);
    if (!p) return fprintf(stderr, "%s: %s\n", x->name, why), 1;
    uint32_t groups[3] = {65535, 1, 1};
    int64_t need = (items + 255) / 256;
    if (x->two_d) groups[1] = (uint32_t)((need + 65534) / 65535);
    else if (need < 65535) groups[0] = (uint32_t)need;
    double t[23];
    for (int r = 0; r < 23; r++) {
      wg_pass pass;
      if (!wg_pass_begin(&d, &pass, true, why, sizeof why) || !wg_pass_dispatch(&d, &pass, p, b, x->ranged ? offsets : NULL, x->ranged ? sizes : NULL, 2, groups, why, sizeof why) ||
          !wg_pass_submit(&d, &pass, why, sizeof why) || !wg_pass_seconds(&d, &t[r], why, sizeof why))
        return fprintf(stderr, "%s: %s\n", x->name, why), 1;
    }
    qsort(t + 3, 20, sizeof *t, cmp);
    memset(back, 0, n * 4);
    bool right = wg_buffer_read(&d, b[1], 0, back, n * 4, why, sizeof why) && !memcmp(back, h, n * 4);
    printf("%-15s %8.3f ms %8.1f GB/s%s\n", x->name, t[13] * 1e3, 2.0 * (double)n * 4 / t[13] / 1e9, right ? "" : "  WRONG RESULT");
    const uint32_t zero = 0;
    wg_buffer_write(&d, b[1], 0, &zero, 4, why, sizeof why);
    wg_pipeline_free(p);
  }
  wg_buffer_free(b[0]);
  wg_buffer_free(b[1]);
  wg_device_close(&d);
  free(h);
  free(back);
  return 0;
}
