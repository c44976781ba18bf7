/*
 * schedule.c: the HIP target's schedule hook (also the hip-on-cuda target's), the one place its
 * launch decisions are made, and the wavefront size of an architecture. Work groups are whole
 * wavefronts of 64 (so also of 32); pointwise-like kernels loop in strides over their elements;
 * row kernels take one group per row, sized by the row's length; matmuls and float convolutions
 * run in 64x64 tiles of 16x16 threads.
 */
#include <string.h>

#include "../codegen/gpu_kernels.h"
#include "../ir/dtype.h"
#include "hip.h"

int hip_wave_size(const char *arch) {
  const hip_family *f = hip_family_of(arch);
  if (f) return f->wave;
  return strncmp(arch, "gfx1", 4) == 0 && strlen(arch) >= 7 ? 32 : 64;
}

static int row_threads(const kir_kernel *k) {
  int64_t L = gpu_row_length(k);
  return L < 0 ? 256 : L <= 64 ? 64 : L <= 1024 ? 128 : 256;
}

int hip_lds_bytes(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->sched.variant == KS_TILED) return 16 * (2 * k->sched.tile_m + 1) * (dtype_is_float(m->buf[k->in_buf[0]].dt) ? 4 : 0);
  return k->kind == KK_ROW ? 8 * 1024 / 32 : 0;
}

void hip_schedule(kir_module *m, int i, int device) {
  (void)device; /* the rules need no device facts yet; the tune tables will */
  kir_kernel *k = &m->k[i];
  kir_schedule *s = &k->sched;
  s->threads[0] = HIP_PW_THREADS, s->threads[1] = s->threads[2] = 1;
  s->library_bias = -1;
  if (k->kind == KK_ROW) s->threads[0] = row_threads(k);
  if (k->kind == KK_MATMUL || (k->kind == KK_CONV && gpu_conv_tiled(m, i))) {
    s->variant = KS_TILED, s->tile_m = s->tile_n = HIP_MM_TILE;
    s->threads[0] = 16, s->threads[1] = 16;
  }
  if (gpu_is_attention(m, i)) gpu_attention_schedule(m, i, HIP_STATIC_SHARED, s);
  if (k->kind == KK_CONV) s->run = gpu_conv_run_rule(m, i);
}

/* what a tune entry may change: the group size of 1-D kernels (whole wavefronts of 64, which are
 * also whole ones of 32), and the square tile of the SIMT matmul and convolution */
bool hip_schedule_check(kir_module *m, int i, int device, char *why, size_t len) {
  (void)device;
  const kir_schedule *s = &m->k[i].sched;
  if (!gpu_attention_fits(m, i, HIP_STATIC_SHARED, why, len)) return false;
  return s->variant == KS_TILED ? gpu_tiles_fit(&m->k[i], 1, why, len) : gpu_group_fits(&m->k[i], 64, 1024, false, why, len);
}

int hip_tune_space(const kir_module *m, int i, const tune_device *d, tune_knobs *out, int max) {
  (void)d;
  const kir_kernel *k = &m->k[i];
  static const int sizes[] = {128, 256, 512, 1024};
  int n = 0, tiles[3];
  if (k->sched.variant == KS_TILED) tune_candidates("tile", tiles, tune_useful_tiles(m, i, tiles), k->sched.tile_m, out, max, &n);
  else if (k->kind != KK_ROW && !gpu_is_attention(m, i)) tune_candidates("threads", sizes, 4, k->sched.threads[0], out, max, &n);
  tune_run_candidates(m, i, out, max, &n);
  return n;
}
