/*
 * schedule.c: the Vulkan target's schedule hook, the one place its launch decisions are made.
 * 1-D kernels take the device's work-group size (the PC_WG specialization constant: 64 on CPU
 * devices, else 256), row kernels of short rows fewer (row_threads); matmuls and float
 * convolutions run in 64x64 tiles of 16x16 invocations. An f32 matmul with N and K known
 * multiples of 4 whose operands can be read in 16-byte words (as they lie, or through views that
 * keep runs of 4 along A's k and B's n or k) moves them so instead (matmul_schedule: 128x128
 * tiles where the output has enough of them, else 64x64; split-K, or small SIMT tiles, where it
 * has too few). On a device with cooperative matrices, an f16 matmul that is one GEMM with N and
 * K known multiples of 8 and operands as they lie runs on those, in 128x128 tiles of four
 * subgroups (vk_coop_schedule; the tile, the number of subgroups and the k-step are tune knobs).
 * So does an f16 convolution the lowering made channels-last (with PORTC_VULKAN_KERNELS=coopconv),
 * its pixels as rows, split-K where its tiles are few.
 * An f32 convolution runs on the word matmul's tiles, but for those of a short reduction or of
 * few output channels (conv_schedule); grouped and depthwise ones run direct, in runs of a row's
 * outputs per invocation (gpu_conv_run_rule). A convolution whose tiles give the device's
 * multiprocessors fewer than two work groups each splits its reduction (split-K,
 * gpu_conv_split_rule) where a vendor extension counts them. Row kernels move their rows in
 * 16-byte vectors where the row's buffers lie as the row does (gpu_row_vector), pointwise kernels
 * their elements where the output's buffer lies as the output does (gpu_pointwise_vector), concat
 * kernels their slabs where each is a run of whole vectors (gpu_concat_vector): NVIDIA's driver
 * reads and writes 16-bit elements one by one at a tenth of its bandwidth.
 */
#include "../ir/dtype.h"
#include "../codegen/gpu_kernels.h"
#include "../codegen/grid.h"
#include "vk.h"

/* an f16 matmul that is one 2-D GEMM with operands as they lie, whose rows move in 16-byte words
 * (N and K known multiples of 8; the rows, M, may be symbolic), or an f16 convolution that the
 * lowering made channels-last (kir_channels_last_fits: its pixels' channels and its weights' rows
 * move in 16-byte words) */
static bool coop_eligible(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (gpu_conv_last(m, k))
    return kir_channels_last_fits(m->g, k->node) && m->buf[k->in_buf[0]].dt == PORTC_F16 && m->buf[k->in_buf[1]].dt == PORTC_F16;
  if (!matmul_gemm_view(m, i)) return false;
  for (int d = 1; d < 3; d++)
    if (k->mnk[d].sym >= 0 || k->mnk[d].c % 8) return false;
  return m->buf[k->in_buf[0]].dt == PORTC_F16 && m->buf[k->in_buf[1]].dt == PORTC_F16;
}

/* An f32 matmul with N and K known multiples of 4 whose operands are read in 16-byte words: one
 * GEMM (matmul_gemm_view), or any batched one whose A is read along k and B along n or k in
 * aligned runs of 4 (operand_runs_along: through permutes, slices and broadcast batches) */
static bool words_eligible(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind != KK_MATMUL || k->dom.rank < 2 || m->buf[k->in_buf[0]].dt != PORTC_F32 || m->buf[k->in_buf[1]].dt != PORTC_F32) return false;
  for (int d = 1; d < 3; d++)
    if (k->mnk[d].sym >= 0 || k->mnk[d].c % 4) return false;
  if (matmul_gemm_view(m, i)) return true;
  const int r = k->dom.rank;
  if (operand_rank(m, k, 0) != r || operand_rank(m, k, 1) != r) return false;
  return operand_runs_along(m, k, 0, r - 1, 4) && (operand_runs_along(m, k, 1, r - 1, 4) || operand_runs_along(m, k, 1, r - 2, 4));
}

/* whether kernel i's operands can be read by the word tiles: an f32 matmul that words_eligible
 * takes, or an f32 convolution */
static bool words_kernel_takes(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind == KK_MATMUL) return words_eligible(m, i);
  return k->kind == KK_CONV && m->buf[k->in_buf[0]].dt == PORTC_F32 && m->buf[k->in_buf[1]].dt == PORTC_F32;
}

static size_t shared_max(const vk_context *c) { return c ? c->props.limits.maxComputeSharedMemorySize : VK_MIN_SHARED; }
/* the attention kernel's: where no device is known, what the lowering assumed when it kept the
 * node whole (KIR_ATTENTION_MAX_SHARED) */
static size_t attention_shared(const vk_context *c) { return c ? shared_max(c) : KIR_ATTENTION_MAX_SHARED; }
/* what the driver leaves of it beside the work group's matrices' staging */
static size_t wg_shared(const vk_context *c) {
  return c && c->f.coop_wg_reserved < shared_max(c) ? shared_max(c) - c->f.coop_wg_reserved : c ? 0 : VK_COOP_SHARED;
}
/* the steps of their sizes: the device's, else the H100's */
static const vk_wg_steps *wg_steps(const vk_context *c) { return c && c->f.coop_workgroup ? &c->f.coop_wg_steps : vk_coop_wg_default_steps(); }

/* A float matmul's tiles. The f32 word matmul (words_eligible) takes 128x128 tiles where the
 * output has at least 128 of them (a wave of work groups on a large GPU), else 64x64 (the rows or
 * batches may be symbolic: then 64); the k-step follows from the tile (vk_words_k_step), and the
 * double buffer then takes 16 KiB, which every device has. An output of fewer 64x64 tiles than
 * the device has multiprocessors (64 where it does not count them) is short of work groups: a
 * word matmul of one GEMM splits its reduction (split-K) into the fewest slices, a power of two,
 * that give each multiprocessor one, while a slice keeps 256 of k; where half of them would still
 * go without, the matmul runs on the SIMT kernel in the largest tile of 32 or 16 that gives each
 * one, else 16. A classifier's 32x1000 with K = 2048 took 127 us in 16 tiles of 64 on the H200. */
static void matmul_schedule(kir_module *m, int i, const vk_context *c) {
  kir_kernel *k = &m->k[i];
  kir_schedule *s = &k->sched;
  const bool fold = matmul_gemm_view(m, i), words = words_eligible(m, i);
  int64_t batches = 1, rows = k->mnk[0].sym >= 0 ? -1 : k->mnk[0].c, n = k->mnk[1].sym >= 0 ? -1 : k->mnk[1].c;
  for (int d = 0; d + 2 < k->dom.rank; d++) batches = k->dom.d[d].sym >= 0 || batches < 0 ? -1 : batches * k->dom.d[d].c;
  if (fold) rows = rows < 0 || batches < 0 ? -1 : rows * batches, batches = 1;
  const bool known = rows > 0 && batches > 0 && n > 0;
  const int64_t want = c && c->f.units ? c->f.units : 64, groups = batches * ((rows + 63) / 64) * ((n + 63) / 64);
  int split = 1;
  while (words && fold && known && groups * split < want && split < VK_MAX_SPLIT && k->mnk[2].c / (2 * split) >= 256) split *= 2;
  if (known && groups * split < want / 2) {
    s->tile_m = s->tile_n = batches * ((rows + 31) / 32) * ((n + 31) / 32) >= want ? 32 : 16;
    return;
  }
  if (!words) return;
  s->vector = 4, s->fold_batch = fold, s->tile_k = 0, s->split_k = split;
  const int64_t tiles128 = batches * ((rows + 127) / 128) * ((n + 127) / 128);
  s->tile_m = s->tile_n = known && split == 1 && tiles128 >= 128 ? 128 : 64;
  /* a GEMM of 128x128 tiles that fill less than two waves, with a long reduction, splits it in
   * two: the transformer's FFN down-projection, 4096x512 with K = 2048 in 128 tiles, 379 -> 273 us
   * on the H200 (tuned) */
  if (s->tile_m == 128 && fold && tiles128 < 2 * want && k->mnk[2].c >= 2048) s->split_k = 2;
  char why[160];
  if (!vk_words_fit(s, KK_MATMUL, shared_max(c), why, sizeof why)) s->vector = 0, s->fold_batch = false, s->split_k = 1, s->tile_m = s->tile_n = VK_MM_TILE;
}

/* A tiled f32 convolution runs on the word tiles (conv_words in matmul.c), 64x64 (128x128 ones,
 * chosen where they made a wave of work groups, took ResNet-50 on the H200 from 12.1 to 13.1 ms:
 * most of its convolutions have a short reduction), then split-K where the tiles are still too
 * few (gpu_conv_split_rule). A convolution of a reduction of at most 128 (C x KH x KW: 1x1 ones
 * of at most 128 input channels, stems of 3 channels) stays on the shared SIMT kernel: its few
 * k-steps do not pay for the word tiles' double buffer (ResNet-50's on the H200, tuned: 64 -> 256
 * at 56x56 with the residual 291 -> 205 us, 128 -> 512 at 28x28 200 -> 173, 64 -> 64 59 -> 50;
 * SqueezeNet's stem, 3 -> 64, 153 us in word tiles, 135 in SIMT ones on cuda). A convolution of
 * at most 32 output channels takes the SIMT kernel's 32x32 tiles, as on cuda: a 64-row tile
 * computes rows of nothing (MobileNetV2 on the H200, tuned: its stem 3 -> 32 132 -> 109 us, 1x1
 * 32 -> 16 99 -> 80, 144 -> 24 109 -> 81; 32 output channels of a long reduction lost 1 us of
 * 23-31). */
static bool short_reduction_conv(const kir_module *m, const kir_kernel *k) {
  const shape *w = &m->buf[k->in_buf[1]].sh;
  return w->rank == 4 && w->d[1].c * w->d[2].c * w->d[3].c <= 128;
}

static void conv_schedule(kir_module *m, int i, const vk_context *c) {
  kir_kernel *k = &m->k[i];
  kir_schedule *s = &k->sched;
  const int units = c ? (int)c->f.units : 0;
  if (k->dom.d[1].sym < 0 && k->dom.d[1].c <= 32) s->tile_m = s->tile_n = 32;
  else if (words_kernel_takes(m, i) && !short_reduction_conv(m, k)) {
    s->vector = 4, s->tile_k = 0;
    s->tile_m = s->tile_n = 64;
    char why[160];
    if (!vk_words_fit(s, KK_CONV, shared_max(c), why, sizeof why)) s->vector = 0, s->tile_m = s->tile_n = VK_MM_TILE;
  }
  s->split_k = gpu_conv_split_rule(m, i, s->tile_m, units, VK_MAX_SPLIT);
}

/* whether matmul k runs on the f32 word matmul as one GEMM: the one matmul that may split */
static bool word_gemm(const kir_kernel *k) {
  const kir_schedule *s = &k->sched;
  return k->kind == KK_MATMUL && s->variant == KS_TILED && s->vector == 4 && s->fold_batch;
}

int vk_split(const kir_kernel *k) {
  if (k->kind != KK_MATMUL) return gpu_conv_split(k);
  return word_gemm(k) && k->sched.split_k > 1 ? k->sched.split_k : 1;
}

void vk_split_mn(const kir_module *m, int i, const int64_t *S, int64_t mn[2]) {
  const kir_kernel *k = &m->k[i];
  if (k->kind != KK_MATMUL) gpu_conv_mn(m, i, S, mn);
  else mn[0] = gpu_gemm_rows(m, i, S), mn[1] = dim_value(k->mnk[1], S);
}

/* A row kernel's work group: an invocation per element or vector of a short row, a power of two
 * from a subgroup to the device's size (the reductions halve it). On the H200 the tuner found
 * rows of 128 (vectors of 4) twice as fast in 32 invocations as in 256, rows of 512 in 128 (11.2
 * -> 8.7 us), and ResNet's 49-element pooling rows in 32 (55.8 -> 44.1 us). */
static int row_threads(const kir_kernel *k, int wg, int subgroup) {
  const int64_t L = gpu_row_length(k), per = k->sched.vector > 1 ? k->sched.vector : 1;
  if (L <= 0) return wg;
  int t = subgroup;
  while (t * 2 <= wg && t * 2 * per <= L) t *= 2;
  return t < wg ? t : wg;
}

bool vk_coop_schedule(kir_module *m, int i) {
  if (gpu_is_attention(m, i)) return vk_attention_coop_schedule(m, i, VK_COOP_SHARED);
  if (!coop_eligible(m, i)) return false;
  kir_schedule *s = &m->k[i].sched;
  s->variant = KS_MMA, s->fold_batch = m->k[i].kind == KK_MATMUL, s->split_k = 1, s->vector = 0;
  s->tile_m = s->tile_n = VK_COOP_TILE, s->tile_k = VK_COOP_K;
  if (m->k[i].kind == KK_CONV && m->k[i].dom.d[3].c <= 64) s->tile_n = 64; /* 64 output channels or fewer: no half-empty tiles */
  s->threads[0] = VK_COOP_THREADS, s->threads[1] = s->threads[2] = 1;
  return true;
}

/* the dtypes whose convolutions the device computes channels-last (target.h): f16 where it has
 * cooperative matrices and PORTC_VULKAN_KERNELS takes the kernel whose A rows are the pixels
 * (matmul.c) */
unsigned vk_channels_last(int device) {
  char why[512];
  const vk_context *c = vk_context_get(device, why, sizeof why);
  return c && c->f.coop_conv ? 1u << PORTC_F16 : 0;
}

/* the vector width of a row, pointwise or concat kernel whose buffers can take one, else 0 */
static int vector_rule(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind == KK_OPAQUE) return gpu_concat_vector(m, i);
  if (!vk_vector_dtypes(m, i)) return 0;
  return k->kind == KK_ROW ? gpu_row_vector(m, i) : k->kind == KK_POINTWISE ? gpu_pointwise_vector(m, i) : 0;
}

void vk_schedule(kir_module *m, int i, int device) {
  char why[512];
  const vk_context *c = vk_context_get(device, why, sizeof why);
  kir_kernel *k = &m->k[i];
  kir_schedule *s = &k->sched;
  s->threads[0] = c ? (int)c->wg : 256, s->threads[1] = s->threads[2] = 1;
  s->library_bias = -1;
  if (k->kind == KK_MATMUL || (k->kind == KK_CONV && gpu_conv_tiled(m, i))) {
    s->variant = KS_TILED;
    s->tile_m = s->tile_n = VK_MM_TILE;
    s->threads[0] = 16, s->threads[1] = 16;
    if (k->kind == KK_CONV) conv_schedule(m, i, c);
    else if (dtype_is_float(m->buf[k->in_buf[0]].dt)) matmul_schedule(m, i, c);
    /* a channels-last convolution on cooperative matrices splits its reduction where its tiles
     * give the multiprocessors fewer than two work groups each, in slices of 4 k-steps or more */
    if (c && c->f.coop_matrix && vk_coop_schedule(m, i) && k->kind == KK_CONV)
      s->split_k = gpu_conv_split_fill(m, i, s->tile_m, 2 * (int)c->f.units, 4 * VK_COOP_K, VK_MAX_SPLIT);
    /* an f16 GEMM on the work group's matrices where the device has them and they take it */
    if (c && c->f.coop_workgroup && vk_coop_wg_rule(m, i)) {
      kir_schedule wg = *s;
      vk_coop_wg_schedule(&wg);
      /* fewer of its tiles than multiprocessors: half as wide (the H100's f16 transformer layer,
       * its N = 256 GEMMs among them: 0.387 ms with 128x128 tiles, 0.413 with 128x256) */
      const int64_t tiles = (gpu_gemm_rows(m, i, NULL) + wg.tile_m - 1) / wg.tile_m * ((k->mnk[1].c + wg.tile_n - 1) / wg.tile_n);
      if (tiles < (int64_t)c->f.units) wg.tile_n = VK_WG_TILE_NARROW;
      if (c->f.coop_wg_tensor) wg.wg_matrices = 2; /* the panels through tensor layouts, where asked for */
      wg.wg_elements = c->f.coop_wg_elements;      /* an elementwise epilogue on the elements, where asked for */
      if (vk_coop_wg_fit(m, i, &wg, &c->f.coop_wg_steps, wg_shared(c), why, sizeof why)) *s = wg;
    }
  }
  if (gpu_is_attention(m, i) && !(c && c->f.coop_attention && vk_attention_coop_schedule(m, i, shared_max(c))))
    gpu_attention_schedule(m, i, attention_shared(c), s);
  if (k->kind == KK_CONV) s->run = gpu_conv_run_rule(m, i);
  if (k->kind == KK_ROW || k->kind == KK_POINTWISE || k->kind == KK_OPAQUE) s->vector = vector_rule(m, i);
  if (k->kind == KK_ROW) s->threads[0] = row_threads(k, s->threads[0], c && c->f.subgroup_size ? (int)c->f.subgroup_size : 32);
}

/* what a tune entry may change: the work-group size of 1-D kernels (a power of two the device
 * allows, at least a subgroup: the reductions halve it), the square tile of the SIMT matmul and
 * convolution, the convolution's split-K and that of the f32 word matmul of one GEMM (the word
 * kernels take 64 or 128 and a k-step that fits the device; other tiles, or a k-step that does
 * not fit, run the element kernel, whole), and the shape of the cooperative-matrix matmul (tiles of 64,
 * 128 or 256 rows and columns, 4 or 8 subgroups, a k-step of 16, 32 or 64: vk_coop_fit, within
 * the device's shared memory). The tuner's candidates (vk_tune_space) are those knobs' values. */
bool vk_schedule_check(kir_module *m, int i, int device, char *why, size_t len) {
  char err[512];
  const vk_context *c = vk_context_get(device, err, sizeof err);
  const kir_schedule *s = &m->k[i].sched;
  const bool last = gpu_conv_last(m, &m->k[i]);
  if (last != (s->variant == KS_MMA && m->k[i].kind == KK_CONV))
    return snprintf(why, len, last ? "a channels-last convolution runs on the cooperative-matrix kernel only (variant mma)"
                                   : "of convolutions, only channels-last ones run on the cooperative-matrix kernel"), false;
  if (s->variant == KS_MMA && s->split_k > 1 && (m->k[i].kind != KK_CONV || s->split_k > VK_MAX_SPLIT))
    return snprintf(why, len, "split_k=%d: of cooperative-matrix kernels, convolutions split, into at most %d slices", s->split_k, VK_MAX_SPLIT),
           false;
  if (s->variant == KS_MMA && gpu_is_attention(m, i)) return vk_attention_coop_check(m, i, shared_max(c), why, len);
  if (s->wg_matrices && (s->variant != KS_MMA || (c && !c->f.coop_workgroup)))
    return snprintf(why, len, "wg_matrices=%d: %s", s->wg_matrices,
                    s->variant != KS_MMA ? "only the cooperative-matrix matmul (variant mma) takes it"
                                         : "the device offers no cooperative matrices of a work group, or PORTC_VULKAN_KERNELS leaves them out"),
           false;
  if (s->wg_elements && !(s->variant == KS_MMA && s->wg_matrices))
    return snprintf(why, len, "wg_elements=1: only the matmul on a work group's matrices (wg_matrices=1 or 2) finishes its epilogue so"), false;
  if (s->unroll > 1 && !(s->variant == KS_MMA && s->wg_matrices))
    return snprintf(why, len, "unroll=%d: only the matmul on a work group's matrices (wg_matrices=1 or 2) unrolls its k-loop", s->unroll), false;
  if (s->wg_matrices == 2 && c && !c->f.coop_wg_tensor)
    return snprintf(why, len, "wg_matrices=2: the device offers no tensor addressing of them, or PORTC_VULKAN_KERNELS leaves out coopwgtensor"),
           false;
  if (s->variant == KS_MMA && s->wg_matrices) return vk_coop_wg_fit(m, i, s, wg_steps(c), wg_shared(c), why, len);
  if (s->variant == KS_MMA) return vk_coop_fit(s, shared_max(c), why, len);
  if (!gpu_attention_fits(m, i, attention_shared(c), why, len)) return false;
  const int width = vk_vector_kernel(&m->k[i]) ? vector_rule(m, i) : 0;
  if (vk_vector_kernel(&m->k[i]) && s->vector != width) /* the width its buffers' layout allows, or none */
    return snprintf(why, len, "vector=%d: this kernel moves %d elements at a time or one", s->vector, width), false;
  if (s->variant == KS_TILED && s->vector && (s->vector != 4 || !words_kernel_takes(m, i))) /* the word tiles read f32 operands in words */
    return snprintf(why, len, "vector=%d: the tiled kernels move words of 4 f32 elements (vector=4), of f32 operands that lie in runs of 4", s->vector), false;
  if (s->variant == KS_TILED && s->vector == 4 && !vk_words_fit(s, m->k[i].kind, shared_max(c), why, len)) {
    kir_schedule *w = &m->k[i].sched; /* a tile the word matmul cannot take: the element kernel */
    w->vector = 0, w->fold_batch = false, w->tile_k = 0;
    if (m->k[i].kind == KK_MATMUL) w->split_k = 1; /* and whole: the element kernel does not split */
  }
  if (m->k[i].kind == KK_MATMUL && s->split_k > 1) { /* the word matmul of one GEMM splits; the shared check knows convolutions */
    if (!word_gemm(&m->k[i]))
      return snprintf(why, len, "split_k=%d: of matmuls, only the f32 word matmul of one GEMM splits", s->split_k), false;
    if (s->split_k > VK_MAX_SPLIT) return snprintf(why, len, "split_k=%d: at most %d", s->split_k, VK_MAX_SPLIT), false;
    kir_kernel whole = m->k[i];
    whole.sched.split_k = 1;
    return gpu_tiles_fit(&whole, VK_MAX_SPLIT, why, len);
  }
  if (s->variant != KS_PLAIN) return gpu_tiles_fit(&m->k[i], VK_MAX_SPLIT, why, len);
  int max = c ? (int)c->props.limits.maxComputeWorkGroupInvocations : 1024, sub = c && c->f.subgroup_size ? (int)c->f.subgroup_size : 32;
  return gpu_group_fits(&m->k[i], sub, max, true, why, len);
}

int vk_tune_space(const kir_module *m, int i, const tune_device *d, tune_knobs *out, int max) {
  const kir_schedule *s = &m->k[i].sched;
  static const int sizes[] = {32, 64, 128, 256, 512};
  int n = 0, sub = d->subgroup ? d->subgroup : 32, from = 0, tiles[3];
  while (from < 5 && sizes[from] < sub) from++;
  if (s->variant == KS_MMA && s->wg_matrices) { /* the work group's matrices: tile, k-step, steps loaded at once; or the subgroup's */
    static const int wg[][3] = {{128, 128, 32}, {128, 128, 64}, {128, 256, 32}, {128, 256, 64}, {256, 128, 32}, {256, 128, 64}, {64, 128, 32}, {128, 64, 32}};
    const unsigned mask = tune_knob_bit("tile") | tune_knob_bit("tile_k") | tune_knob_bit("stages");
    for (size_t t = 0; t < sizeof wg / sizeof *wg; t++)
      for (int stages = 1; stages <= 2 && n < max; stages++) {
        tune_knobs k = {.mask = mask, .v = {.tile_m = wg[t][0], .tile_n = wg[t][1], .tile_k = wg[t][2], .stages = stages}};
        kir_schedule as = *s;
        tune_knobs_apply(&k, &as);
        char why[200];
        const bool same = as.tile_m == s->tile_m && as.tile_n == s->tile_n && as.tile_k == s->tile_k && as.stages == s->stages;
        if (!same && vk_coop_wg_fit(m, i, &as, wg_steps(NULL), d->shared_bytes > 0 ? (size_t)d->shared_bytes : VK_COOP_SHARED, why, sizeof why))
          out[n++] = k;
      }
    if (n < max)
      out[n++] = (tune_knobs){.mask = tune_knob_bit("wg_matrices") | tune_knob_bit("tile") | tune_knob_bit("threads") | tune_knob_bit("tile_k"),
                              .v = {.wg_matrices = 0, .tile_m = VK_COOP_TILE, .tile_n = VK_COOP_TILE, .threads = {VK_COOP_THREADS, 1, 1},
                                    .tile_k = VK_COOP_K}};
  } else if (s->variant == KS_MMA) { /* the cooperative-matrix shapes: tile, threads (4 or 8 subgroups), k-step */
    static const int mma[][4] = {{64, 64, 128, 32},    {64, 128, 128, 32},  {128, 64, 128, 32},  {128, 128, 128, 32}, {128, 128, 128, 16},
                                 {128, 128, 256, 32}, {128, 128, 256, 16}, {128, 256, 256, 16}, {256, 128, 256, 16}, {64, 64, 128, 64}};
    const unsigned mask = tune_knob_bit("tile") | tune_knob_bit("threads") | tune_knob_bit("tile_k");
    for (size_t t = 0; t < sizeof mma / sizeof *mma && n < max; t++) {
      tune_knobs k = {.mask = mask, .v = {.tile_m = mma[t][0], .tile_n = mma[t][1], .threads = {mma[t][2], 1, 1}, .tile_k = mma[t][3]}};
      kir_schedule as = *s;
      tune_knobs_apply(&k, &as);
      char why[200];
      if (vk_coop_fit(&as, d->shared_bytes > 0 ? (size_t)d->shared_bytes : VK_MIN_SHARED, why, sizeof why) &&
          (as.tile_m != s->tile_m || as.tile_n != s->tile_n || as.threads[0] != s->threads[0] || as.tile_k != s->tile_k))
        out[n++] = k;
    }
    for (int split = 1; m->k[i].kind == KK_CONV && split <= 8 && n < max; split *= 2) /* a convolution's split-K */
      if (split != vk_split(&m->k[i]) && (split == 1 || gpu_conv_split_useful(m, i, s->tile_m, split, d->units)))
        out[n++] = (tune_knobs){.mask = tune_knob_bit("split_k"), .v = {.split_k = split}};
  }
  if (s->variant == KS_TILED && m->k[i].kind == KK_CONV) tune_conv_candidates(m, i, d->units, VK_MAX_SPLIT, out, max, &n);
  else if (s->variant == KS_TILED) tune_candidates("tile", tiles, tune_useful_tiles(m, i, tiles), s->tile_m, out, max, &n);
  else if (s->variant == KS_PLAIN && !gpu_is_attention(m, i)) tune_candidates("threads", sizes + from, 5 - from, s->threads[0], out, max, &n);
  tune_run_candidates(m, i, out, max, &n);
  for (int bk = 8; s->variant == KS_TILED && s->vector == 4 && bk <= 32 && n < max; bk *= 2) /* the word matmul's k-step */
    if (bk != vk_words_k_step(s)) out[n++] = (tune_knobs){.mask = tune_knob_bit("tile_k"), .v = {.tile_k = bk}};
  for (int split = 1; word_gemm(&m->k[i]) && split <= 8 && n < max; split *= 2) /* the word GEMM's split-K, slices of 256 of k or more */
    if (split != vk_split(&m->k[i]) && m->k[i].mnk[2].c / split >= 256)
      out[n++] = (tune_knobs){.mask = tune_knob_bit("split_k"), .v = {.split_k = split}};
  return n;
}
