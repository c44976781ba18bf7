/*
 * schedule.c: the Vulkan target's schedule hook, the one place its launch decisions are made.
 * 1-D kernels take the device's work-group size (the PC_WG specialization constant: 64 on CPU
 * devices, else 256); matmuls and float convolutions run in 64x64 tiles of 16x16 invocations,
 * and an f16 matmul whose sizes are known multiples of the tile and whose operands lie as they
 * are is marked for cooperative matrices (the shader keeps the SIMT variant for devices
 * without them, chosen by a define at load).
 */
#include "../codegen/gpu_kernels.h"
#include "vk.h"

/* a 2-D f16 matmul whose sizes are known multiples of the tiles, with operands as they lie */
static bool coop_eligible(const kir_module *m, const kir_kernel *k) {
  const dim *d = k->mnk;
  if (k->dom.rank != 2 || d[0].sym >= 0 || d[1].sym >= 0 || d[2].sym >= 0) return false;
  if (d[0].c % VK_MM_TILE || d[1].c % VK_MM_TILE || d[2].c % 16) return false;
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
}

/* what a tune entry may change: the work-group size of 1-D kernels (a power of two the device
 * allows, at least a subgroup: the reductions halve it), and the square tile of the SIMT
 * matmul and convolution (16 to 128; the cooperative-matrix shader's tile is fixed) */
bool vk_schedule_check(kir_module *m, int i, int device, char *why, size_t len) {
  char err[512];
  const vk_context *c = vk_context_get(device, err, sizeof err);
  const kir_schedule *s = &m->k[i].sched;
  int wg = s->threads[0], tiled = s->variant != KS_PLAIN;
  if (tiled) {
    if (s->threads[0] != 16 || s->threads[1] != 16) return snprintf(why, len, "tiled kernels run 16x16 invocations"), false;
    if (s->tile_m != s->tile_n || s->tile_m < 16 || s->tile_m > 128 || s->tile_m % 16)
      return snprintf(why, len, "tile %dx%d: square, 16 to 128", s->tile_m, s->tile_n), false;
    if (s->variant == KS_MMA && s->tile_m != VK_MM_TILE) return snprintf(why, len, "the cooperative-matrix tile is %d", VK_MM_TILE), false;
    return true;
  }
  uint32_t max = c ? c->props.limits.maxComputeWorkGroupInvocations : 1024, sub = c && c->f.subgroup_size ? c->f.subgroup_size : 32;
  if (s->threads[1] > 1 || s->threads[2] > 1 || wg < (int)sub || (uint32_t)wg > max || (wg & (wg - 1)))
    return snprintf(why, len, "threads=%d: a power of two from %u to %u", wg, sub, max), false;
  return true;
}

int vk_tune_space(const kir_module *m, int i, const tune_device *d, tune_knobs *out, int max) {
  const kir_kernel *k = &m->k[i];
  const kir_schedule *s = &k->sched;
  int n = 0;
  if (s->variant == KS_TILED) {
    static const int tiles[] = {32, 64, 128};
    for (int t = 0; t < 3 && n < max; t++)
      if (tiles[t] != s->tile_m) out[n++] = (tune_knobs){.mask = tune_knob_bit("tile"), .v.tile_m = tiles[t], .v.tile_n = tiles[t]};
  } else if (s->variant == KS_PLAIN) {
    static const int sizes[] = {32, 64, 128, 256, 512};
    for (int t = 0; t < 5 && n < max; t++)
      if (sizes[t] != s->threads[0] && sizes[t] >= (d->subgroup ? d->subgroup : 32))
        out[n++] = (tune_knobs){.mask = tune_knob_bit("threads"), .v.threads = {sizes[t], 1, 1}};
  }
  return n;
}
