/*
 * compile_all.c: every conformance case's kernels in a GPU dialect, compiled for real
 * architectures with no GPU: the CUDA dialect to cubins for sm_80 and sm_90 by NVRTC (and, scheduled
 * for Hopper, its modules with a matmul on Hopper's kernel for sm_90a), the HIP
 * dialect to code objects for gfx90a, gfx940 (wavefronts of 64) and gfx1030 (32) by Debian's
 * hipcc (hiprtc, which the HIP target uses at run time, is Debian's ROCm 5.2 and aborts inside
 * its code-object library for gfx940; a compiler process cannot take the test down), and the HIP
 * dialect as the hip-on-cuda target compiles it, behind its CUDA prelude, by NVRTC. Each
 * case is lowered fused and eager (the gradient suite's cases fused only), and where it has
 * symbols both dynamic and specialized to its first run's values, rendered by the dialect, and
 * compiled; identical modules are compiled once. Every shipped tune-table entry for the dialect's api (cuda; hip for both HIP ones) is
 * compiled too, its knobs on a graph of its kernel's kind and shape. To keep this quick, modules are compiled in batches, each in its own namespace (PC_KERNEL
 * is then a plain __global__); a batch that fails is compiled module by module to name the case.
 * Exit 77 (a skip for ctest) when the compiler is missing.
 *
 * usage: compile_all cuda|hip|hip-on-cuda EXAMPLES_DIR [ARCH...]
 *        compile_all cuda|hip --source G.ptg [--eager] [--sm_90a [--other|--pairs|--row-pairs]]   prints a graph's source in that
 *                                                 dialect (--sm_90a: CUDA scheduled for Hopper, f32 matmuls too;
 *                                                 --other: its f16 matmuls in their ping-pong form,
 *                                                 --pairs: that form in clusters of 2, --row-pairs: the
 *                                                 128x256 form in clusters of 2)
 *        compile_all cuda|hip --object G.ptg ARCH OUT [hiprtc]   writes its compiled object to OUT
 *                                                 (HIP: by hipcc, or by hiprtc as the target does)
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../codegen/gpu_kernels.h"
#include "../conformance/conformance.h"
#include "../cuda/cu.h"
#include "../hip/hip.h"
#include "../hip/prelude.h"
#include "../lower/pipeline.h"
#include "../driver/module.h"

typedef struct unit {
  char *src; /* the module without its prelude */
  char name[160];
  bool hopper; /* with Hopper's matmul: compiled for sm_90a alone, and the other units not for it */
} unit;

static unit *units;
static int nunits, capunits;
static const char **arches;
static int narch;
static int next_batch, failures;
static bool hip, on_cuda; /* the HIP dialect (by NVRTC, behind the hip-on-cuda prelude), else CUDA's */
static const dialect *D;
static const target *T; /* whose schedule hook the kernels take, with no device */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
enum { BATCH = 60 };

/* own: the CUDA dialect's schedule with these tensor-core kernels of portc's own (CU_OWN_*); 0 the
 * target's schedule */
static void schedule_all(kir_module *km, unsigned own) {
  for (int i = 0; i < km->nk; i++) {
    if (own) cu_schedule_as(km, i, -1, own);
    else T->schedule(km, i, -1);
  }
}

/* km has a kernel on the tensor-core kernel `own` */
static bool uses(const kir_module *km, unsigned own) {
  for (int i = 0; i < km->nk; i++) {
    const kir_schedule *s = &km->k[i].sched;
    if (own & (CU_OWN_WGMMA | CU_OWN_TF32X3) && s->variant == KS_WGMMA) return true;
    if (own == CU_OWN_FLASH && s->variant == KS_MMA && gpu_is_attention(km, i)) return true;
    if (own == CU_OWN_CONV && s->variant == KS_MMA && km->k[i].kind == KK_CONV) return true;
  }
  return false;
}

/* Hopper's f16/bf16 matmuls of km in form `form` (CU_FORM_*), as a tune entry may choose; false
 * where km has none */
static bool wgmma_form(kir_module *km, int form) {
  bool any = false;
  for (int i = 0; i < km->nk; i++) {
    kir_schedule *s = &km->k[i].sched;
    if (s->variant != KS_WGMMA || cu_wgmma_tf32(km, &km->k[i])) continue;
    cu_wgmma_form(s, form), any = true;
    char why[256];
    if (!cu_schedule_check(km, i, -1, why, sizeof why)) {
      fprintf(stderr, "kernel %d: Hopper's matmul in form %d: %s\n", i, form, why);
      failures++;
    }
  }
  return any;
}

static bool is_hopper_arch(const char *arch) { return strcmp(arch, "sm_90a") == 0; }

static int by_src(const void *a, const void *b) { return strcmp(((const unit *)a)->src, ((const unit *)b)->src); }

/* km's source in the dialect, without its prelude, as a unit to compile */
static void add_unit(const kir_module *km, const char *name, bool hopper) {
  char *src = emit_module(D, km);
  const char *at = src ? strstr(src, D->prelude) : NULL;
  if (!at) {
    fprintf(stderr, "%s: the module does not start with the prelude\n", name);
    failures++;
    free(src);
    return;
  }
  if (nunits == capunits) {
    capunits = capunits ? 2 * capunits : 1024;
    units = realloc(units, sizeof *units * (size_t)capunits);
  }
  unit *u = &units[nunits++];
  u->src = strdup(at + strlen(D->prelude));
  u->hopper = hopper;
  snprintf(u->name, sizeof u->name, "%s", name);
  free(src);
}

/* CUDA: graph g lowered again with its convolutions channels-last, as the lowering makes them
 * for the tensor-core convolution, where that changes one: that kernel, also in 3 slices */
static void add_channels_last(const portc_graph *g, const int64_t *symvals, const char *name) {
  lower_options lo = {.symvals = symvals, .attention = T->attention_kernel, .channels_last = cu_channels_last_as(CU_OWN_CONV), .copy_merged_rows = T->copy_merged_rows};
  kir_module *km = NULL;
  if (lower_graph(g, &lo, &km)) {
    fprintf(stderr, "%s: does not lower channels-last: %s\n", name, portc_last_error());
    failures++;
    return;
  }
  bool last = false;
  for (int i = 0; i < km->nk; i++) last = last || gpu_conv_last(km, &km->k[i]);
  if (last) {
    char h[200];
    schedule_all(km, CU_OWN_CONV);
    snprintf(h, sizeof h, "%s (channels-last convolution)", name);
    add_unit(km, h, false);
    for (int i = 0; i < km->nk; i++)
      if (gpu_conv_last(km, &km->k[i])) km->k[i].sched.split_k = 3;
    add_unit(km, strncat(h, " (split-K)", sizeof h - strlen(h) - 1), false);
  }
  kir_module_free(km);
}

/* entry (may be NULL): a tune-table entry whose knobs the module's kernels take */
static void add_module(const portc_graph *g, bool eager, const int64_t *symvals, const char *name, const tune_entry *entry) {
  lower_options lo = {.eager = eager, .symvals = symvals, .attention = T->attention_kernel, .copy_merged_rows = T->copy_merged_rows};
  kir_module *km = NULL;
  if (lower_graph(g, &lo, &km)) {
    fprintf(stderr, "%s: does not lower: %s\n", name, portc_last_error());
    failures++;
    return;
  }
  schedule_all(km, 0);
  char why[256];
  if (entry && tune_entry_apply(T, km, entry, why, sizeof why) <= 0) {
    fprintf(stderr, "%s: %s\n", name, why);
    failures++;
    kir_module_free(km);
    return;
  }
  char full[160];
  snprintf(full, sizeof full, "%s%s%s", name, eager ? " (eager)" : "", symvals ? " (specialized)" : "");
  add_unit(km, full, false);
  /* CUDA: the module once more with each tensor-core kernel it has a use for and its schedule
   * did not already take (as the default set does): attention and convolution on tensor cores
   * (for every architecture but sm_90a), Hopper's matmul (for sm_90a alone) */
  bool sm90a = false;
  for (int a = 0; a < narch; a++) sm90a = sm90a || is_hopper_arch(arches[a]);
  const struct {
    unsigned own;
    const char *suffix;
    bool hopper;
  } extra[] = {{CU_OWN_FLASH, " (tensor-core attention)", false}, {CU_OWN_CONV, " (tensor-core convolution)", false}, {CU_OWN_WGMMA, " (sm_90a)", true},
              {CU_OWN_TF32X3, " (sm_90a, f32 as three TF32 products)", true}};
  for (size_t x = 0; x < sizeof extra / sizeof *extra && !hip && !entry; x++) {
    if ((extra[x].hopper && !sm90a) || uses(km, extra[x].own)) continue;
    schedule_all(km, extra[x].own);
    char h[200];
    snprintf(h, sizeof h, "%s%s", full, extra[x].suffix);
    if (uses(km, extra[x].own)) add_unit(km, h, extra[x].hopper);
    if (extra[x].own == CU_OWN_WGMMA && wgmma_form(km, CU_FORM_PINGPONG)) { /* the rules' form is the other */
      char f[240];
      snprintf(f, sizeof f, "%s (ping-pong)", h), add_unit(km, f, true);
      wgmma_form(km, CU_FORM_PINGPONG_PAIR);
      snprintf(f, sizeof f, "%s (ping-pong in clusters of 2)", h), add_unit(km, f, true);
      wgmma_form(km, CU_FORM_COOP_PAIR);
      snprintf(f, sizeof f, "%s (128x256 in clusters of 2)", h), add_unit(km, f, true);
    }
    bool split = false; /* the tensor-core convolutions also with their reduction in 3 slices */
    for (int i = 0; i < km->nk && extra[x].own == CU_OWN_CONV; i++)
      if (km->k[i].kind == KK_CONV && km->k[i].sched.variant == KS_MMA) km->k[i].sched.split_k = 3, split = true;
    if (split) add_unit(km, strncat(h, " (split-K)", sizeof h - strlen(h) - 1), false);
    schedule_all(km, 0);
  }
  if (!hip && !entry && !eager) add_channels_last(g, symvals, full);
  /* CUDA: its tiled convolutions once more with the reduction in 3 slices (split-K; 3 leaves a
   * short last slice) */
  bool split = false;
  for (int i = 0; i < km->nk && !hip && !entry; i++)
    if (km->k[i].kind == KK_CONV && km->k[i].sched.variant == KS_TILED) km->k[i].sched.split_k = 3, split = true;
  if (split) add_unit(km, strncat(full, " (split-K)", sizeof full - strlen(full) - 1), false);
  kir_module_free(km);
}

/* the units of [first, first + count) that are compiled for arch, in one program; NULL if none */
static char *program(int first, int count, const char *arch) {
  strbuf b = {0};
  sb_printf(&b, "#define PC_KERNEL __global__\n%s%s", on_cuda ? "#define PC_WAVE 32\n" HIP_ON_CUDA_PRELUDE : "", D->prelude);
  int n = 0;
  for (int i = first; i < first + count; i++)
    if (units[i].hopper == is_hopper_arch(arch)) sb_printf(&b, "namespace m%d {\n%s}\n", i, units[i].src), n++;
  char *src = sb_take(&b);
  if (!n) free(src);
  return n ? src : NULL;
}

/* HIP through hipcc, device code only, to a plain code object: a process per call */
static portc_status hipcc(const char *src, const char *arch, void **obj, size_t *bytes) {
  char dir[] = "/tmp/portc-hipcc-XXXXXX";
  if (!mkdtemp(dir)) return err_set(PORTC_ERR_IO, "hipcc: no temporary folder");
  char in[96], out[96], log[96], cmd[640];
  snprintf(in, sizeof in, "%s/m.hip", dir);
  snprintf(out, sizeof out, "%s/m.co", dir);
  snprintf(log, sizeof log, "%s/log", dir);
  FILE *f = fopen(in, "w");
  if (f) fputs(src, f), fclose(f);
  snprintf(cmd, sizeof cmd, "hipcc --offload-arch=%s --cuda-device-only --no-gpu-bundle-output -O3 -w -DPC_WAVE=%d -c %s -o %s >%s 2>&1", arch,
           hip_wave_size(arch), in, out, log);
  int rc = system(cmd);
  portc_status st = PORTC_OK;
  *obj = NULL;
  FILE *o = rc == 0 ? fopen(out, "rb") : NULL;
  if (o) {
    fseek(o, 0, SEEK_END);
    *bytes = (size_t)ftell(o);
    rewind(o);
    if ((*obj = malloc(*bytes + 1)) && fread(*obj, 1, *bytes, o) != *bytes) free(*obj), *obj = NULL;
    fclose(o);
  }
  if (!*obj) {
    char text[3000] = "";
    FILE *l = fopen(log, "r");
    if (l) text[fread(text, 1, sizeof text - 1, l)] = 0, fclose(l);
    st = err_set(PORTC_ERR_INTERNAL, "hipcc failed for %s (exit %d):\n%s", arch, rc, text);
  }
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return st;
}

static bool compile_range(int first, int count, bool report) {
  bool ok = true;
  for (int a = 0; a < narch && ok; a++) {
    char *src = program(first, count, arches[a]);
    if (!src) continue;
    void *cubin = NULL;
    size_t bytes = 0;
    char name[64];
    snprintf(name, sizeof name, "batch%d.%s", first, hip ? "hip" : "cu");
    portc_status st = hip && !on_cuda ? hipcc(src, arches[a], &cubin, &bytes) : cu_compile(src, arches[a], name, &cubin, &bytes);
    if (st != PORTC_OK) {
      ok = false;
      if (report) {
        pthread_mutex_lock(&lock);
        fprintf(stderr, "FAIL %s for %s:\n%.3000s\n", units[first].name, arches[a], portc_last_error());
        pthread_mutex_unlock(&lock);
      }
    } else if (bytes < 4 || memcmp(cubin, "\177ELF", 4) != 0) {
      ok = false;
      fprintf(stderr, "FAIL %s for %s: the compiler gave no ELF object\n", units[first].name, arches[a]);
    }
    free(cubin);
    free(src);
  }
  return ok;
}

static void *worker(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&lock);
    int first = next_batch;
    next_batch += BATCH;
    pthread_mutex_unlock(&lock);
    if (first >= nunits) return NULL;
    int count = first + BATCH <= nunits ? BATCH : nunits - first;
    if (compile_range(first, count, false)) continue;
    for (int i = first; i < first + count; i++) /* name the failing modules */
      if (!compile_range(i, 1, true)) {
        pthread_mutex_lock(&lock);
        failures++;
        pthread_mutex_unlock(&lock);
      }
  }
}

static int print_source(const char *path, bool eager, bool hopper, int form) {
  portc_graph *g = NULL;
  kir_module *km = NULL;
  /* the convolutions channels-last where PORTC_CUDA_KERNELS takes the tensor-core one, as a device would */
  lower_options lo = {.eager = eager, .attention = T->attention_kernel, .channels_last = hip ? 0 : cu_channels_last(-1), .copy_merged_rows = T->copy_merged_rows};
  if (portc_graph_load(path, &g) || lower_graph(g, &lo, &km)) {
    fprintf(stderr, "%s: %s\n", path, portc_last_error());
    return 1;
  }
  schedule_all(km, !hip && hopper ? CU_OWN_WGMMA | CU_OWN_TF32X3 : 0);
  if (!hip && hopper && form != CU_FORM_COOP) wgmma_form(km, form);
  char *src = emit_module(D, km);
  fputs(src ? src : "", stdout);
  free(src);
  kir_module_free(km);
  portc_graph_free(g);
  return 0;
}

static int write_object(const char *path, const char *arch, const char *out, bool rtc) {
  portc_graph *g = NULL;
  kir_module *km = NULL;
  lower_options lo = {.attention = T->attention_kernel, .channels_last = hip ? 0 : cu_channels_last(-1), .copy_merged_rows = T->copy_merged_rows};
  if (portc_graph_load(path, &g) || lower_graph(g, &lo, &km)) {
    fprintf(stderr, "%s: %s\n", path, portc_last_error());
    return 1;
  }
  schedule_all(km, !hip && is_hopper_arch(arch) ? CU_OWN_WGMMA | CU_OWN_TF32X3 : 0);
  char *src = emit_module(D, km);
  void *obj = NULL;
  size_t bytes = 0;
  portc_status st = !src ? PORTC_ERR_NOMEM
                    : hip && rtc ? hip_compile(src, arch, hip_wave_size(arch), path, &obj, &bytes)
                    : hip        ? hipcc(src, arch, &obj, &bytes)
                                 : cu_compile(src, arch, path, &obj, &bytes);
  FILE *f = st ? NULL : fopen(out, "wb");
  if (f) fwrite(obj, 1, bytes, f), fclose(f);
  if (st || !f) fprintf(stderr, "%s: %s\n", path, st ? portc_last_error() : "cannot write the object");
  free(obj);
  free(src);
  kir_module_free(km);
  portc_graph_free(g);
  return st || !f ? 1 : 0;
}

/* every shipped tune-table entry for this dialect's api, on a graph of its kind and shape */
static int add_shipped_entries(const char *api) {
  int n = 0;
  for (int t = 0; tune_shipped_name[t]; t++) {
    tune_table tab = {0};
    snprintf(tab.name, sizeof tab.name, "%s", tune_shipped_name[t]);
    char err[2048];
    if (tune_parse(tune_shipped_text[t], &tab, err, sizeof err)) {
      fprintf(stderr, "%s", err);
      failures++;
    }
    for (int i = 0; i < tab.n; i++) {
      const tune_entry *e = &tab.e[i];
      if (strcmp(e->dev.api, api) != 0) continue;
      char text[1024], name[320];
      tune_sample_graph(e, false, text, sizeof text);
      snprintf(name, sizeof name, "%s:%d", tab.name, e->line);
      portc_graph *g = NULL;
      if (portc_graph_parse(text, name, &g) != PORTC_OK) {
        fprintf(stderr, "%s: the sample graph does not parse: %s\n", name, portc_last_error());
        failures++;
        continue;
      }
      add_module(g, false, NULL, name, e);
      portc_graph_free(g);
      n++;
    }
    tune_table_free(&tab);
  }
  return n;
}

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "cuda") && strcmp(argv[1], "hip") && strcmp(argv[1], "hip-on-cuda"))) {
    fprintf(stderr, "usage: compile_all cuda|hip|hip-on-cuda EXAMPLES_DIR [ARCH...]\n       compile_all cuda|hip --source G.ptg [--eager]\n");
    return 2;
  }
  on_cuda = strcmp(argv[1], "hip-on-cuda") == 0;
  hip = on_cuda || strcmp(argv[1], "hip") == 0;
  D = hip ? &hip_dialect : &cuda_dialect;
  int unused;
  T = target_find(argv[1], &unused);
  if (!T) T = target_find("cuda", &unused);
  argc--, argv++;
  if (argc >= 3 && strcmp(argv[1], "--source") == 0) {
    bool eager = false, hopper = false;
    int form = CU_FORM_COOP;
    for (int a = 3; a < argc; a++) {
      eager = eager || strcmp(argv[a], "--eager") == 0, hopper = hopper || strcmp(argv[a], "--sm_90a") == 0;
      if (strcmp(argv[a], "--other") == 0) form = CU_FORM_PINGPONG;
      if (strcmp(argv[a], "--pairs") == 0) form = CU_FORM_PINGPONG_PAIR;
      if (strcmp(argv[a], "--row-pairs") == 0) form = CU_FORM_COOP_PAIR;
    }
    return print_source(argv[2], eager, hopper, form);
  }
  if ((argc == 5 || argc == 6) && strcmp(argv[1], "--object") == 0) return write_object(argv[2], argv[3], argv[4], argc == 6);
  static const char *cuda_arches[] = {"sm_80", "sm_90", "sm_90a"}, *hip_arches[] = {"gfx90a", "gfx940", "gfx1030"};
  arches = argc > 2 ? (const char **)argv + 2 : hip && !on_cuda ? hip_arches : on_cuda ? cuda_arches + 1 : cuda_arches;
  narch = argc > 2 ? argc - 2 : hip && !on_cuda ? 3 : on_cuda ? 1 : 3;
  char why[512];
  const char *compiler = hip && !on_cuda ? (system("hipcc --version >/dev/null 2>&1") == 0 ? "hipcc" : NULL) : cu_compiler_id(why, sizeof why);
  if (hip && !on_cuda && !compiler) snprintf(why, sizeof why, "hipcc is not installed (Debian: apt-get install hipcc rocm-device-libs)");
  if (!compiler) {
    printf("SKIPPED: the %s dialect cannot be compiled here: %s\n", argv[0], why);
    return 77;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
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
    int64_t symvals[64] = {0};
    for (int k = 0; k < g->nsyms && k < 64; k++)
      for (int s = 0; s < c->nsyms; s++)
        if (strcmp(c->sym[s], g->syms[k]) == 0) symvals[k] = c->symval[0][s];
    /* a gradient case's eager kernels are single ops the ops suite compiles already: its fused
     * module alone (half the time of this test went to the grad suite's eager modules) */
    for (int eager = 0; eager < (strncmp(c->name, "grad/", 5) == 0 ? 1 : 2); eager++) {
      add_module(g, eager, NULL, c->name, NULL);
      if (g->nsyms > 0) add_module(g, eager, symvals, c->name, NULL);
    }
    portc_graph_free(g);
  }
  int entries = add_shipped_entries(hip ? "hip" : "cuda");
  int modules = nunits;
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
  /* the variants the suite must reach, or this test checks less than it says */
  int mma = 0, epi = 0, vec = 0, wide = 0, split = 0, wgmma = 0, pingpong = 0, pairs = 0, row_pairs = 0, flash = 0, tconv = 0, tlast = 0, hopper = 0;
  for (int i = 0; i < nunits; i++) {
    mma += strstr(units[i].src, "pc_mma(acc") != NULL;
    wgmma += strstr(units[i].src, "wgmma.mma_async") != NULL;
    pingpong += strstr(units[i].src, "the other consumer has passed its last stage") != NULL;
    pairs += strstr(units[i].src, "pc_tma_load_mc(As") != NULL;
    row_pairs += strstr(units[i].src, "pc_tma_load_mc(Bs") != NULL;
    flash += strstr(units[i].src, "pc_fa_smem") != NULL;
    tconv += strstr(units[i].src, "const T *const xb") != NULL;
    tlast += strstr(units[i].src, "channels last: this thread's rows") != NULL;
    epi += strstr(units[i].src, "_epi(const float *__restrict__ pc_acc") != NULL;
    split += strstr(units[i].src, "(float *__restrict__ pc_acc") != NULL;
    vec += strstr(units[i].src, "pc_ldv<PC_VEC>") != NULL;
    wide += strstr(units[i].src, "float c[8][8]") && strstr(units[i].src, "pc_ldv<4>(&pc_As"); /* vector panel reads */
  }
  for (int a = 0; a < narch; a++) hopper += is_hopper_arch(arches[a]);
  if (!hip)
    printf("modules with: mma.sync %d; wgmma %d (ping-pong %d, in clusters %d; 128x256 in clusters %d); tensor-core attention %d; tensor-core "
           "convolution %d (channels-last %d); an epilogue kernel %d; split-K convolution %d; vector row loads %d; 128-wide SIMT matmul with vector "
           "panel reads %d\n",
           mma, wgmma, pingpong, pairs, row_pairs, flash, tconv, tlast, epi, split, vec, wide);
  if (!hip && (!mma || !flash || !tconv || !tlast || !epi || !split || !vec || !wide || (hopper && (!wgmma || !pingpong || !pairs || !row_pairs)))) {
    fprintf(stderr, "the suite no longer reaches every kernel variant of the CUDA dialect\n");
    failures++;
  }
  pthread_t th[2];
  for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, worker, NULL);
  for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("compile_all %s: %d cases and %d shipped tune-table entries, %d modules (%d distinct) compiled by %s for", argv[0], cs.n, entries,
         modules, nunits, compiler);
  for (int a = 0; a < narch; a++) printf(" %s", arches[a]);
  printf(" in %.1f s: %d failed\n", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), failures);
  for (int i = 0; i < nunits; i++) free(units[i].src);
  free(units);
  conf_free(&cs);
  return failures ? 1 : 0;
}
