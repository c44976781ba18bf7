/*
 * schedule.c: the Vulkan target's schedule hook, the one place its launch decisions are made.
 * 1-D kernels take the device's work-group size (the PC_WG specialization constant: 64 on CPU
 * devices, else 256); matmuls and float convolutions run in 64x64 tiles of 16x16 invocations,
 * and an f16 matmul whose sizes are known multiples of the tile and whose operands lie as they
 * are is marked for cooperative matrices (the shader keeps the SIMT variant for devices
 * without them, chosen by a define at load). Row kernels move their rows in 16-byte vectors
 * where the row's buffers lie as the row does (gpu_row_vector), pointwise kernels their elements
 * where the output's buffer lies as the output does (gpu_pointwise_vector): NVIDIA's driver reads
 * and writes 16-bit elements one by one at a tenth of its bandwidth.
 */
#include "../codegen/gpu_kernels.h"
#include "vk.h"

/* a 2-D f16 matmul whose sizes are known multiples of the tiles, with operands as they lie */
static bool coop_eligible(const kir_module *m, const kir_kernel *k) {
  const dim *d = k->mnk;
  if (k->dom.rank != 2 || d[0].sym >= 0 || d[1].sym >= 0 || d[2].sym >= 0) return false;
  if (d[0].c % VK_MM_TILE || d[1].c % (2 * VK_MM_TILE) || d[2].c % 32) return false; /* 64x128 tiles, k-steps of 32 */
  for (int slot = 0; slot < 2; slot++)
    if (m->buf[k->in_buf[slot]].dt != PORTC_F16 || !matmul_plain_operand(m, k, slot)) return false;
  return true;
}

void vk_schedule(kir_module *m, int i, int device) {
  char why[512];
  const vk_context *c = vk_context_get(device, why, sizeof why);
  kir_kernel *k = &m->k[i];
  kir_schedule *s = &k->sched;
  s->threads[0] = c ? (int)c->wg : 256, s->threads[1] = s->threads[2] = 1;
  s->library_bias = -1;
  if (k->kind == KK_MATMUL || (k->kind == KK_CONV && gpu_conv_tiled(m, i))) {
    s->variant = k->kind == KK_MATMUL && coop_eligible(m, k) ? KS_MMA : KS_TILED;
    s->tile_m = s->tile_n = VK_MM_TILE;
    s->threads[0] = 16, s->threads[1] = 16;
  }
  if (gpu_is_attention(m, i)) s->threads[0] = GPU_ATT_THREADS;
  if (k->kind == KK_ROW && vk_vector_dtypes(m, i)) s->vector = gpu_row_vector(m, i);
  if (k->kind == KK_POINTWISE && vk_vector_dtypes(m, i)) s->vector = gpu_pointwise_vector(m, i);
}

/* what a tune entry may change: the work-group size of 1-D kernels (a power of two the device
 * allows, at least a subgroup: the reductions halve it), and the square tile of the SIMT matmul
 * and convolution (the cooperative-matrix shader's tile is fixed) */
bool vk_schedule_check(kir_module *m, int i, int device, char *why, size_t len) {
  char err[512];
  const vk_context *c = vk_context_get(device, err, sizeof err);
  const kir_schedule *s = &m->k[i].sched;
  if (s->variant == KS_MMA && (s->tile_m != VK_MM_TILE || s->tile_n != VK_MM_TILE))
    return snprintf(why, len, "the cooperative-matrix tile is %d", VK_MM_TILE), false;
  if (!gpu_attention_fits(m, i, why, len)) return false;
  if (s->variant != KS_PLAIN) return gpu_tiles_fit(&m->k[i], 1, why, len);
  int max = c ? (int)c->props.limits.maxComputeWorkGroupInvocations : 1024, sub = c && c->f.subgroup_size ? (int)c->f.subgroup_size : 32;
  return gpu_group_fits(&m->k[i], sub, max, true, why, len);
}

int vk_tune_space(const kir_module *m, int i, const tune_device *d, tune_knobs *out, int max) {
  const kir_schedule *s = &m->k[i].sched;
  static const int sizes[] = {32, 64, 128, 256, 512};
  int n = 0, sub = d->subgroup ? d->subgroup : 32, from = 0, tiles[3];
  while (from < 5 && sizes[from] < sub) from++;
  if (s->variant == KS_TILED) tune_candidates("tile", tiles, tune_useful_tiles(m, i, tiles), s->tile_m, out, max, &n);
  else if (s->variant == KS_PLAIN && !gpu_is_attention(m, i)) tune_candidates("threads", sizes + from, 5 - from, s->threads[0], out, max, &n);
  return n;
}
