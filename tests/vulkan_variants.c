/*
 * vulkan_variants.c: every conformance case's Vulkan kernels compiled to SPIR-V and validated
 * for the device variants a CI machine cannot run. The shader of a kernel is one text whose
 * prelude picks code by what the device offers (f32-to-f16 conversion by the device under float
 * controls, DenormPreserve, subgroup arithmetic), and an f16 matmul is scheduled on cooperative
 * matrices where the device has them; lavapipe offers only some of these, so the others would
 * first be compiled on the GPU that has them. Here each distinct kernel, fused and eager, is
 * compiled by shaderc and checked by the SPIR-V validator exactly as the runtime does, as for a
 * device that offers every feature (the variant without them is what lavapipe runs in
 * verify_vulkan), split-K convolutions included, and f16 convolutions channels-last on the
 * cooperative-matrix kernel, as such a device lowers and runs them. No kernel runs: the schedule hook is the Vulkan target's, on the default device
 * where there is one, and the cooperative-matrix schedule is applied wherever it qualifies; those
 * kernels are compiled a second time for a device with only VK_KHR_cooperative_matrix, whose
 * rewritten SPIR-V is checked by khr_rewrite_wrong, and in every shape the tuner may give them.
 *
 * usage: vulkan_variants EXAMPLES_DIR [--spirv DIR]   DIR: every KHR-rewritten module written there,
 *                                         for a newer validator than Debian 12's (spirv-val)
 *        vulkan_variants --source G.ptg [--wg]   prints the graph's shaders as scheduled here (fused),
 *                                         the cooperative-matrix kernels where they qualify (--wg:
 *                                         f16 GEMMs on a work group's matrices)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/emit.h"
#include "../codegen/gpu_kernels.h"
#include "../conformance/conformance.h"
#include "../lower/pipeline.h"
#include "../targets/regional.h"
#include "../targets/target.h"
#include "../vulkan/vk.h"

typedef struct unit {
  char *src, needs[128], name[160];
  bool coop_conv;      /* a convolution on cooperative matrices */
  bool coop_attention; /* attention on cooperative matrices (vulkan/attention.c) */
  int wg_sums;         /* on a work group's matrices, how its sums leave them: WG_SUMS_* */
  bool unrolled;       /* on a work group's matrices, its k-loop unrolled (unroll > 1) */
} unit;

/* stored from the matrices; finished on their elements and stored; stored and finished by the
 * second dispatch; through shared memory */
enum { WG_SUMS_NONE, WG_SUMS_STORED, WG_SUMS_ELEMENTS, WG_SUMS_AFTER, WG_SUMS_SHARED, WG_SUMS_KINDS };

static unit *units;
static int nunits, capunits, failures, compile_failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int by_src(const void *a, const void *b) { return strcmp(((const unit *)a)->src, ((const unit *)b)->src); }

/* the Vulkan target's schedule, on the machine's default device (or its defaults where none),
 * with the cooperative-matrix matmul wherever a device that has them would run it, and every
 * tiled or cooperative-matrix convolution's reduction in 3 slices, as a device that counts its
 * multiprocessors splits those of few tiles (lavapipe counts none: it runs them whole); the
 * tuner's other shapes below run them whole */
static void schedule_all(kir_module *km) {
  for (int i = 0; i < km->nk; i++) {
    vk_schedule(km, i, -1);
    vk_coop_schedule(km, i);
    if (km->k[i].kind == KK_CONV && km->k[i].sched.variant != KS_PLAIN) km->k[i].sched.split_k = 3;
  }
}

/* the module's distinct kernels as units to compile, named NAME (eager) .kernelI VARIANT */
static void add_units(kir_module *km, bool eager, const char *name, const char *variant) {
  char *src = emit_module(&vulkan_dialect, km);
  kernel_piece *pc = NULL;
  if (!src || kernel_pieces(src, km->nk, "vulkan", &pc)) {
    fprintf(stderr, "%s: the module does not cut into kernels: %s\n", name, portc_last_error());
    failures++;
  }
  for (int i = 0; pc && i < km->nk; i++) {
    if (pc[i].same_as != i) continue;
    if (nunits == capunits) {
      capunits = capunits ? 2 * capunits : 1024;
      units = realloc(units, sizeof *units * (size_t)capunits);
    }
    unit *u = &units[nunits++];
    u->src = pc[i].source, pc[i].source = NULL;
    snprintf(u->needs, sizeof u->needs, "%s", pc[i].needs);
    snprintf(u->name, sizeof u->name, "%s%s.kernel%d%s", name, eager ? " (eager)" : "", i, variant);
    u->coop_conv = km->k[i].kind == KK_CONV && km->k[i].sched.variant == KS_MMA;
    u->coop_attention = gpu_is_attention(km, i) && km->k[i].sched.variant == KS_MMA;
    const kir_kernel *k = &km->k[i];
    u->unrolled = k->sched.variant == KS_MMA && k->sched.wg_matrices && k->sched.unroll > 1;
    u->wg_sums = !(k->sched.variant == KS_MMA && k->sched.wg_matrices) ? WG_SUMS_NONE
                 : vk_coop_wg_on_elements(km, k)                        ? WG_SUMS_ELEMENTS
                 : vk_coop_wg_after(km, k)                              ? WG_SUMS_AFTER
                 : vk_coop_wg_stores_matrices(km, k)                    ? WG_SUMS_STORED
                                                                        : WG_SUMS_SHARED;
  }
  if (pc) kernel_pieces_free(pc, km->nk);
  free(src);
}

/* the lowering as on a device with cooperative matrices: the target's attention_kernel and
 * copy_merged_rows, and f16 convolutions channels-last (vk_channels_last's answer there) */
static lower_options device_lowering(bool eager) {
  int device;
  const target *T = target_find("vulkan", &device);
  return (lower_options){.eager = eager, .attention = T->attention_kernel, .channels_last = 1u << PORTC_F16,
                         .copy_merged_rows = T->copy_merged_rows};
}

/* the schedules of the work group's matrices tried here (the rule's 128x256 needs N >= 256, which
 * the cases' GEMMs do not reach): 128x128, loading two k-steps at once, a tile whose sums, where an
 * epilogue follows and tiles are moved back inside, pass through shared memory in four parts,
 * 128x128 on a work group of 128 invocations, 128x128 with its panels loaded through tensor
 * layouts (wg_matrices=2), and both ways with three k-steps (the cases' K of 96) written out a
 * pass of the k-loop and elementwise epilogues finished on the matrices' elements */
static const struct { int tile_m, tile_n, tile_k, stages, threads, wg, unroll, elements; } wg_shapes[] = {
  {128, 128, 32, 1, 256, 1, 1, 0}, {128, 128, 32, 2, 256, 1, 1, 0}, {256, 128, 64, 1, 256, 1, 1, 0}, {128, 128, 32, 1, 128, 1, 1, 0},
  {128, 128, 32, 1, 256, 2, 1, 0}, {128, 128, 32, 1, 256, 2, 3, 1}, {128, 128, 32, 1, 256, 1, 3, 1}};

/* f16 GEMMs on the work group's matrices (matmul_wg.c) as a device with VK_NV_cooperative_matrix2
 * runs them (the H100's steps, no shared memory kept by the driver), in each of wg_shapes that
 * fits; returns whether kernel i was so scheduled */
static bool schedule_workgroup(kir_module *km, int i, int shape) {
  if (!vk_coop_wg_eligible(km, i)) return false;
  kir_schedule s = km->k[i].sched;
  vk_coop_wg_schedule(&s);
  s.tile_m = wg_shapes[shape].tile_m, s.tile_n = wg_shapes[shape].tile_n, s.tile_k = wg_shapes[shape].tile_k, s.stages = wg_shapes[shape].stages;
  s.threads[0] = wg_shapes[shape].threads, s.wg_matrices = wg_shapes[shape].wg, s.unroll = wg_shapes[shape].unroll;
  s.wg_elements = wg_shapes[shape].elements;
  char why[200];
  if (!vk_coop_wg_fit(km, i, &s, vk_coop_wg_default_steps(), VK_COOP_SHARED, why, sizeof why)) return false;
  km->k[i].sched = s;
  return true;
}

static void add_workgroup_units(kir_module *km, bool eager, const char *name) {
  kir_schedule *rules = malloc(sizeof *rules * (size_t)(km->nk ? km->nk : 1)); /* restored after each shape */
  for (int i = 0; rules && i < km->nk; i++) rules[i] = km->k[i].sched;
  for (size_t v = 0; rules && v < sizeof wg_shapes / sizeof *wg_shapes; v++) {
    bool any = false;
    for (int i = 0; i < km->nk; i++) any = schedule_workgroup(km, i, (int)v) || any;
    char variant[128];
    snprintf(variant, sizeof variant, " [work group of %d, %dx%d, k-step %d, %d stages, %d a pass%s%s]", wg_shapes[v].threads, wg_shapes[v].tile_m,
             wg_shapes[v].tile_n, wg_shapes[v].tile_k, wg_shapes[v].stages, wg_shapes[v].unroll, wg_shapes[v].wg == 2 ? ", tensor loads" : "",
             wg_shapes[v].elements ? ", on the elements" : "");
    if (any) add_units(km, eager, name, variant);
    for (int i = 0; i < km->nk; i++) km->k[i].sched = rules[i];
  }
  free(rules);
}

/* The module as scheduled (schedule_all), and where it has cooperative-matrix kernels, once more
 * for each other shape the tuner may give them on a device with VK_COOP_SHARED bytes of shared memory (tile,
 * subgroups, k-step: vk_tune_space), applied to all of them */
static void add_module(const portc_graph *g, bool eager, const char *name) {
  const lower_options lo = device_lowering(eager);
  kir_module *km = NULL;
  if (lower_graph(g, &lo, &km)) {
    fprintf(stderr, "%s: does not lower: %s\n", name, portc_last_error());
    failures++;
    return;
  }
  schedule_all(km);
  add_units(km, eager, name, "");
  int coop = -1;
  for (int i = 0; i < km->nk && coop < 0; i++)
    if (km->k[i].sched.variant == KS_MMA) coop = i;
  const tune_device nvidia = {.api = "vulkan", .units = 132, .subgroup = 32, .shared_bytes = VK_COOP_SHARED};
  tune_knobs shapes[32];
  const int n = coop < 0 ? 0 : vk_tune_space(km, coop, &nvidia, shapes, 32);
  const unsigned shape_knobs = tune_knob_bit("tile") | tune_knob_bit("threads") | tune_knob_bit("tile_k");
  kir_schedule *rules = n ? malloc(sizeof *rules * (size_t)km->nk) : NULL; /* restored after each shape */
  for (int i = 0; rules && i < km->nk; i++) rules[i] = km->k[i].sched;
  for (int v = 0; rules && v < n; v++) {
    if (shapes[v].mask & ~shape_knobs) continue;
    for (int i = 0; i < km->nk; i++)
      if (km->k[i].sched.variant == KS_MMA) tune_knobs_apply(&shapes[v], &km->k[i].sched), km->k[i].sched.split_k = 1;
    const kir_schedule *s = &km->k[coop].sched;
    char variant[96];
    snprintf(variant, sizeof variant, " [%dx%d, %d threads, k-step %d]", s->tile_m, s->tile_n, s->threads[0], s->tile_k);
    add_units(km, eager, name, variant);
    for (int i = 0; i < km->nk; i++) km->k[i].sched = rules[i];
  }
  free(rules);
  add_workgroup_units(km, eager, name);
  kir_module_free(km);
}

static bool needs(const unit *u, const char *word) {
  size_t n = strlen(word);
  for (const char *w = strstr(u->needs, word); w; w = strstr(w + 1, word))
    if ((w == u->needs || w[-1] == ' ') && (!w[n] || w[n] == ' ' || w[n] == '\n')) return true;
  return false;
}

/* what the KHR rewrite of a cooperative-matrix kernel must hold (spirv_coop.c): no NV
 * instruction left, the KHR capability, and matrix types of all three uses (A, B, accumulator,
 * told apart by the constant each names), and for the work group's matrices (wg) that scope and
 * SPV_NV_cooperative_matrix2; with tensor loads (spirv_tensor.c), their capabilities, extension and
 * layout type, and every load of A or B made one (an accumulator's, a bias, stays); NULL when it does, else what is wrong. Debian 12's
 * SPIR-V validator predates the KHR extension, so this is the check CI can make. */
static const char *khr_rewrite_wrong(const uint32_t *w, size_t n, bool wg, bool tensor) {
  bool capability = false, extension = false, wg_extension = false, wg_scope = false;
  bool tensor_caps[2] = {false, false}, tensor_extension = false, layout_type = false;
  unsigned uses = 0, loads = 0, tensor_loads = 0, products = 0;
  uint32_t *value = calloc(w[3], sizeof *value); /* 1 + the value of each 32-bit OpConstant */
  uint8_t *use = calloc(w[3], 1);                  /* 1 + the use of each KHR matrix type */
  for (size_t i = 5; value && use && i < n; i += w[i] >> 16) {
    uint32_t op = w[i] & 0xffff, wc = w[i] >> 16;
    if (op >= 5357 && op <= 5362) return free(value), free(use), "an NV cooperative-matrix instruction is left";
    if (op == 43 && wc == 4 && w[i + 2] < w[3]) value[w[i + 2]] = w[i + 3] + 1;
    capability = capability || (op == 17 && w[i + 1] == 6022);
    extension = extension || (op == 10 && strcmp((const char *)(w + i + 1), "SPV_KHR_cooperative_matrix") == 0);
    wg_extension = wg_extension || (op == 10 && strcmp((const char *)(w + i + 1), "SPV_NV_cooperative_matrix2") == 0);
    if (op == 4456 && wc == 7 && w[i + 6] < w[3] && value[w[i + 6]] >= 1 && value[w[i + 6]] <= 3) {
      uses |= 1u << (value[w[i + 6]] - 1);
      if (w[i + 1] < w[3]) use[w[i + 1]] = (uint8_t)value[w[i + 6]];
    }
    wg_scope = wg_scope || (op == 4456 && wc == 7 && w[i + 3] < w[3] && value[w[i + 3]] == 3); /* Workgroup, 2 */
    loads += op == 4457 && w[i + 1] < w[3] && use[w[i + 1]] != 3, products += op == 4459, tensor_loads += op == 5367, layout_type = layout_type || op == 5370;
    for (int c = 0; c < 2; c++) tensor_caps[c] = tensor_caps[c] || (op == 17 && w[i + 1] == (c ? 5439u : 5433u));
    tensor_extension = tensor_extension || (op == 10 && strcmp((const char *)(w + i + 1), "SPV_NV_tensor_addressing") == 0);
  }
  free(value), free(use);
  if (tensor && (!tensor_caps[0] || !tensor_caps[1] || !tensor_extension || !layout_type))
    return "tensor loads without the TensorAddressingNV capabilities, SPV_NV_tensor_addressing or a tensor layout type";
  if (tensor != (tensor_loads > 0) || (tensor && loads)) return tensor ? "a load of A or B not made a tensor load" : "a tensor load";
  if (!capability || !extension) return "no CooperativeMatrixKHR capability or extension";
  if (uses != 7) return "the matrix types do not name all three uses";
  if (wg != (wg_scope && wg_extension)) return wg ? "no workgroup-scope matrix, or no SPV_NV_cooperative_matrix2" : "a workgroup-scope matrix";
  return !(loads + tensor_loads) || !products ? "no KHR loads or products" : NULL;
}

static void report(const unit *u, const char *variant, const char *msg) {
  pthread_mutex_lock(&lock);
  fprintf(stderr, "FAIL %s%s:\n%.4000s\n", u->name, variant, msg);
  compile_failures++;
  pthread_mutex_unlock(&lock);
}

/* --spirv's folder, where the rewritten modules go (unit i's as i.spv), or NULL */
static const char *spirv_dir;

static void write_spirv(int i, const uint32_t *spirv, size_t words) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%d.spv", spirv_dir, i);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(spirv, 4, words, f) != words) report(&units[i], " (writing its SPIR-V)", path);
  if (f) fclose(f);
}

/* kernel i as for a device that offers every feature, with the macros the runtime would define;
 * a kernel on cooperative matrices also as for a device with only the KHR extension */
static portc_status compile_one(void *ctx, int i) {
  (void)ctx;
  /* a device with every optional feature: vk_kernel_defines and vk_compile read only these */
  static const vk_features all = {.storage16 = true, .storage8 = true, .int64 = true, .subgroup_arith = true, .coop_matrix = true,
                                  .denorm_preserve = true, .f16_convert = true, .rte32 = true, .rte64 = true, .keep64 = true,
                                  .subgroup_size = 32};
  const unit *u = &units[i];
  const bool wg = needs(u, "coopwg"); /* the work group's matrices: KHR's, with VK_NV_cooperative_matrix2 */
  for (int khr = wg; khr < 1 + needs(u, "coopmat"); khr++) {
    vk_context every = {.f = all};
    every.f.coop_khr = khr, every.f.coop_workgroup = wg, every.f.coop_wg_tensor = needs(u, "coopwgtensor");
    const char *defines[10];
    int nd = 0;
    uint32_t *spirv = NULL;
    size_t words = 0;
    portc_status st = vk_kernel_defines(&every, i, u->needs, defines, &nd);
    if (!st) st = vk_compile(&every, u->src, u->name, defines, &spirv, &words);
    const char *wrong = !st && khr ? khr_rewrite_wrong(spirv, words, wg, every.f.coop_wg_tensor) : NULL;
    if (!st && khr && spirv_dir) write_spirv(i, spirv, words);
    free(spirv);
    if (st || wrong) report(u, khr ? " (KHR)" : "", wrong ? wrong : portc_last_error());
  }
  return PORTC_OK;
}

/* `--source G.ptg`: the graph's fused module as schedule_all leaves it, in GLSL */
static int print_source(const char *path, bool wg) {
  portc_graph *g = NULL;
  kir_module *km = NULL;
  const lower_options lo = device_lowering(false);
  if (portc_graph_load(path, &g) || lower_graph(g, &lo, &km)) {
    fprintf(stderr, "%s: %s\n", path, portc_last_error());
    portc_graph_free(g);
    return 1;
  }
  schedule_all(km);
  for (int i = 0; wg && i < km->nk; i++) schedule_workgroup(km, i, 0);
  char *src = emit_module(&vulkan_dialect, km);
  if (src) fputs(src, stdout);
  free(src);
  kir_module_free(km);
  portc_graph_free(g);
  return src ? 0 : 1;
}

int main(int argc, char **argv) {
  if ((argc == 3 || (argc == 4 && strcmp(argv[3], "--wg") == 0)) && strcmp(argv[1], "--source") == 0) return print_source(argv[2], argc == 4);
  if (argc != 2 && !(argc == 4 && strcmp(argv[2], "--spirv") == 0)) {
    fprintf(stderr, "usage: vulkan_variants EXAMPLES_DIR [--spirv DIR] | --source G.ptg [--wg]\n");
    return 2;
  }
  if (argc == 4) spirv_dir = argv[3];
  conf_cases cs = {0};
  conf_generate(&cs, argv[1]);
  for (int i = 0; i < cs.n; i++) {
    const conf_case *c = &cs.c[i];
    portc_graph *g = NULL;
    if ((c->path ? portc_graph_load(c->path, &g) : portc_graph_parse(c->text, c->name, &g)) != PORTC_OK) {
      fprintf(stderr, "%s: does not parse: %s\n", c->name, portc_last_error());
      failures++;
      continue;
    }
    for (int eager = 0; eager < 2; eager++) add_module(g, eager, c->name);
    portc_graph_free(g);
  }
  qsort(units, (size_t)nunits, sizeof *units, by_src);
  int n = 0;
  for (int i = 0; i < nunits; i++) {
    if (n && strcmp(units[n - 1].src, units[i].src) == 0) {
      free(units[i].src);
      continue;
    }
    units[n++] = units[i];
  }
  nunits = n;
  /* the variants this test is for must be reached, or it checks less than it says */
  int coop = 0, coop_shapes = 0, coop_convs = 0, coop_attentions = 0, f16_stores = 0, coop_wg = 0, wg_tensor = 0, wg_unrolled = 0, wg_sums[WG_SUMS_KINDS] = {0};
  for (int i = 0; i < nunits; i++) {
    wg_sums[units[i].wg_sums]++;
    coop += needs(&units[i], "coopmat");
    coop_wg += needs(&units[i], "coopwg");
    wg_tensor += needs(&units[i], "coopwgtensor");
    wg_unrolled += units[i].unrolled;
    coop_convs += units[i].coop_conv;
    coop_attentions += units[i].coop_attention;
    coop_shapes += needs(&units[i], "coopmat") && strchr(units[i].name, '[');
    f16_stores += needs(&units[i], "storage16");
  }
  run_parallel(nunits, compile_one, NULL); /* each failure is printed and counted by compile_one */
  int ok = nunits - compile_failures;
  failures += compile_failures;
  printf("%d distinct kernels of %d cases (%d on cooperative matrices, %d of them in the tuner's other shapes, %d on a work group's "
         "[sums stored %d, finished on the elements %d, finished after %d, through shared memory %d; %d with tensor loads, %d unrolled], %d convolutions, %d attentions; %d with 16-bit data), %d compiled and validated\n",
         nunits, cs.n, coop, coop_shapes, coop_wg, wg_sums[WG_SUMS_STORED], wg_sums[WG_SUMS_ELEMENTS], wg_sums[WG_SUMS_AFTER], wg_sums[WG_SUMS_SHARED], wg_tensor, wg_unrolled,
         coop_convs, coop_attentions, f16_stores, ok);
  const bool wg_every = wg_sums[WG_SUMS_STORED] && wg_sums[WG_SUMS_ELEMENTS] && wg_sums[WG_SUMS_AFTER] && wg_sums[WG_SUMS_SHARED];
  if (!coop || !coop_shapes || !coop_wg || !wg_every || !wg_tensor || !wg_unrolled || !coop_convs || !coop_attentions || !f16_stores) {
    printf("FAIL: the suite reached no %s kernel\n", !coop              ? "cooperative-matrix"
                                                    : !coop_shapes      ? "differently shaped cooperative-matrix"
                                                    : !coop_wg          ? "work-group cooperative-matrix"
                                                    : !wg_every         ? "work-group kernel of each way out of the sums"
                                                    : !wg_tensor        ? "work-group kernel with tensor loads"
                                                    : !wg_unrolled      ? "work-group kernel with an unrolled k-loop"
                                                    : !coop_convs       ? "cooperative-matrix convolution"
                                                    : !coop_attentions  ? "cooperative-matrix attention"
                                                                        : "f16-storing");
    failures++;
  }
  for (int i = 0; i < nunits; i++) free(units[i].src);
  free(units);
  conf_free(&cs);
  return failures ? 1 : 0;
}
