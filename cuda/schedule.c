/*
 * schedule.c: the CUDA target's schedule hook, the one place its launch decisions are made:
 * block shapes, which matmul variant a kernel is (tensor cores, SIMT tiles) and its tiles and
 * shared memory, whether cuBLASLt may compute it instead, and the row kernels' vector width.
 * The dialect and the runtime read k->sched; the grid comes from codegen/grid.c. Pointwise-like
 * kernels loop in strides over their elements; row kernels take one block per row, sized by the
 * row's length.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/grid.h"
#include "../ir/dtype.h"
#include "../codegen/gpu_kernels.h"
#include "../targets/kernel_list.h"
#include "cu.h"
#include "dialect_mma.h"

/* an extent for the tile rules: a symbolic one is assumed large */
static int64_t extent_or_big(dim d) { return d.sym >= 0 ? INT64_C(1) << 20 : d.c; }

static int mm_tile(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  int64_t ext[3];
  for (int d = 0; d < 3; d++) ext[d] = extent_or_big(k->mnk[d]);
  int64_t tiles = ((ext[0] + 127) / 128) * ((ext[1] + 127) / 128);
  for (int d = 0; d + 2 < k->dom.rank; d++) tiles *= extent_or_big(k->dom.d[d]);
  bool room = ext[0] >= 128 && ext[1] >= 128 && tiles >= 256; /* two blocks for each of 128 SMs */
  return room && dtype_is_float(m->buf[k->in_buf[0]].dt) ? 128 : 64;
}

static bool static_multiple(dim d, int64_t of) { return d.sym < 0 && d.c % of == 0; }

/* operand `slot` of matmul k is one row-major matrix: the whole buffer, seen through identity
 * steps, at most one swap of two dimensions (then *t: cuBLASLt reads it transposed), with
 * batched a broadcast of one matrix to every batch, and reshapes of the whole buffer on the
 * buffer's side of the swap (a reshape keeps the elements' order: [B, S, K] is [B*S, K]) */
static bool matrix_operand(const kir_module *m, const kir_kernel *k, int slot, bool batched, bool *t) {
  const shape *buf = &m->buf[k->in_buf[slot]].sh;
  const kir_path *p = k->in_path[slot] >= 0 ? &k->path[k->in_path[slot]] : NULL;
  bool reshaped = false;
  int swaps = 0;
  for (int s = 0; p && s < p->n; s++) {
    const kir_step *st = &p->s[s];
    kir_path one = {.n = 1, .s = {*st}};
    kir_kernel probe = {.path = &one, .npath = 1};
    if (path_is_identity(&probe, 0)) continue;
    if (st->kind == ST_BCAST && batched && !reshaped && !swaps && matmul_same_matrix_per_batch(&probe, 0)) continue;
    if (st->kind == ST_PERMUTE && st->from.rank == 2 && st->a[0] == 1 && st->a[1] == 0 && !reshaped && !swaps++) continue;
    if (st->kind == ST_RESHAPE && st->from.rank == 2 && shape_eq(&st->to, buf)) {
      reshaped = true;
      continue;
    }
    return false;
  }
  *t = swaps == 1;
  return buf->rank == 2 || reshaped;
}

bool cu_blaslt_view(const kir_module *m, int i, bool *ta, bool *tb) {
  const kir_kernel *k = &m->k[i];
  *ta = *tb = false;
  if (matmul_gemm_view(m, i)) return true;
  if (k->kind != KK_MATMUL || k->dom.rank < 2) return false;
  if (k->dom.rank > 2) /* A's batch folded into its rows, B one matrix for every batch, transposed (x W^T) */
    return m->buf[k->in_buf[0]].sh.rank == k->dom.rank && path_is_identity(k, k->in_path[0]) && matrix_operand(m, k, 1, true, tb) && *tb;
  return matrix_operand(m, k, 0, false, ta) && matrix_operand(m, k, 1, false, tb);
}

static bool mma_eligible(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (!matmul_gemm_view(m, i)) return false;
  portc_dtype a = m->buf[k->in_buf[0]].dt, b = m->buf[k->in_buf[1]].dt;
  if (a != b || (a != PORTC_F16 && a != PORTC_BF16)) return false;
  return static_multiple(k->mnk[1], 8) && static_multiple(k->mnk[2], 8);
}

/* matmul i can run on Hopper's kernel in f32 as three TF32 products: f32 operands as they lie,
 * A's rows whole 16-byte chunks (the TMA's row stride) */
static bool tf32x3_eligible(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (!matmul_gemm_view(m, i)) return false;
  return m->buf[k->in_buf[0]].dt == PORTC_F32 && m->buf[k->in_buf[1]].dt == PORTC_F32 && static_multiple(k->mnk[2], 4);
}

/* Hopper's f32 matmul: the stages that fit beside a tile of bn columns (stages of A's 128 rows and
 * B's two parts, 32 floats of k each), and their shared memory with the barriers and alignment */
static int wt_stages(int bn) { return bn >= 256 ? 2 : bn >= 192 ? 3 : 4; }
static int wt_shared(int bn) { return wt_stages(bn) * ((CU_WG_BM + 2 * bn) * CU_WT_BK * 4 + 16) + 1024; }

/* the f32 form's tile columns by the rule the H100 measured: 128x256 tiles (two stages) where they
 * make three waves of blocks or more (4096^3: 1.105 ms against 1.170 with 128x128), else 128x128
 * (four stages), which kept the f32 transformer layer's 4096-row matmuls fed (0.427 ms against
 * 0.528); sms 0 (no device): 128x256 */
static int wt_tile_n(const kir_module *m, int i, int sms) {
  const kir_kernel *k = &m->k[i];
  int64_t rows = 1, n = extent_or_big(k->mnk[1]);
  for (int d = 0; d + 1 < k->dom.rank; d++) rows *= extent_or_big(k->dom.d[d]);
  int64_t tiles = (rows + CU_WG_BM - 1) / CU_WG_BM * ((n + 255) / 256);
  return tiles >= 3 * (int64_t)sms ? 256 : 128;
}

bool cu_wgmma_tf32(const kir_module *m, const kir_kernel *k) {
  return k->kind == KK_MATMUL && k->sched.variant == KS_WGMMA && m->buf[k->in_buf[0]].dt == PORTC_F32;
}

bool cu_wgmma_pingpong(const kir_module *m, const kir_kernel *k) {
  return k->kind == KK_MATMUL && k->sched.variant == KS_WGMMA && !cu_wgmma_tf32(m, k) && k->sched.tile_n == CU_PP_BN;
}

void cu_pingpong_grid(unsigned g[3], int sms, int cluster) {
  const uint64_t cl = cluster > 1 ? (uint64_t)cluster : 1, most = (uint64_t)sms / cl > 0 ? (uint64_t)sms / cl : 1;
  const uint64_t units = (g[0] + cl - 1) / cl * g[1] * g[2]; /* a cluster's blocks take neighbouring column tiles */
  g[0] = (unsigned)((units < most ? units : most) * cl), g[1] = g[2] = 1;
}

void cu_coop_pair_grid(unsigned g[3]) { g[0] *= 2, g[1] = (g[1] + 1) / 2; }

int cu_wgmma_a_rows(const kir_module *m, const kir_kernel *k) {
  return cu_wgmma_pingpong(m, k) && k->sched.cluster > 1 ? CU_WG_BM / k->sched.cluster : CU_WG_BM;
}

void cu_wgmma_form(kir_schedule *s, int form) {
  const bool coop = form == CU_FORM_COOP || form == CU_FORM_COOP_PAIR;
  s->tile_m = CU_WG_BM, s->tile_k = CU_WG_BK;
  s->tile_n = coop ? CU_WG_BN : CU_PP_BN;
  s->stages = coop ? CU_WG_STAGES : CU_PP_STAGES;
  s->cluster = form == CU_FORM_PINGPONG_PAIR || form == CU_FORM_COOP_PAIR ? 2 : 1;
}

int cu_wgmma_form_of(const kir_schedule *s) {
  if (s->tile_n != CU_PP_BN) return s->cluster > 1 ? CU_FORM_COOP_PAIR : CU_FORM_COOP;
  return s->cluster > 1 ? CU_FORM_PINGPONG_PAIR : CU_FORM_PINGPONG;
}

/* convolution i can run as its implicit GEMM on the mma.sync kernel: groups 1, f16/bf16 input and
 * weights, static sizes but the batch, a reduction (C x KH x KW) of whole 16-byte rows of weights,
 * images and padding small enough for the gather's table (32-bit offsets in an image, 16-bit ones
 * in the window; a row past the reduction is marked by an offset of 32767, past any image of at
 * most 16384 rows) */
static bool mma_conv_eligible(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind != KK_CONV || attr_i(&m->g->nodes[k->node], "groups") != 1) return false;
  portc_dtype x = m->buf[k->in_buf[0]].dt, w = m->buf[k->in_buf[1]].dt;
  if (x != w || (x != PORTC_F16 && x != PORTC_BF16)) return false;
  if (gpu_conv_last(m, k)) return kir_channels_last_fits(m->g, k->node); /* what the lowering made channels-last */
  const shape *xs = &m->buf[k->in_buf[0]].sh, *ws = &m->buf[k->in_buf[1]].sh;
  for (int d = 1; d < 4; d++)
    if (xs->d[d].sym >= 0 || ws->d[d].sym >= 0 || k->dom.d[d].sym >= 0) return false;
  const attr *pad = attr_get(&m->g->nodes[k->node], "padding");
  for (int d = 0; d < 2; d++)
    if (xs->d[2 + d].c > 16384 || (pad && pad->v[d] > 4096) || (ws->d[2 + d].c - 1) * attr_or_one(&m->g->nodes[k->node], "dilation", d) > 4096)
      return false;
  return ws->d[0].sym < 0 && ws->d[1].c * ws->d[2].c * ws->d[3].c % 8 == 0 && xs->d[1].c * xs->d[2].c * xs->d[3].c < INT32_MAX;
}

/* the mma.sync kernel's shared memory: its stages of 128 x tile_k and tile_k x tile_n panels
 * (padded rows), and a gathered convolution's tables of its panels' rows */
static int mma_shared(const kir_module *m, int i, int tile_n) {
  const kir_kernel *k = &m->k[i];
  const bool gather = k->kind == KK_CONV && !cu_conv_direct(m, i) && !gpu_conv_last(m, k);
  return CU_MMA_STAGES * (CU_MMA_BM * (CU_MMA_BK + 8) + CU_MMA_BK * (tile_n + 8)) * 2 + (gather ? CU_MMA_GATHER_TABLES : 0);
}

/* the tile widths the kernel takes: 128 columns, and 64 for a channels-last convolution (whose
 * columns are its output channels: ResNet's first layers have 64, and a 128-column tile computed
 * zeros on half its warps) */
static bool mma_width_fits(const kir_module *m, int i, int tile_n) {
  return tile_n == CU_MMA_BN || (tile_n == CU_MMA_BN / 2 && gpu_conv_last(m, &m->k[i]));
}

/* the mma.sync kernel's tiles, threads and shared memory: the narrow tile where the columns fit
 * in it */
static void mma_tiles(const kir_module *m, int i, kir_schedule *s) {
  const kir_kernel *k = &m->k[i];
  const dim o = k->dom.d[k->dom.rank - 1]; /* a channels-last convolution's output channels */
  s->variant = KS_MMA;
  s->tile_m = CU_MMA_BM, s->tile_k = CU_MMA_BK, s->stages = CU_MMA_STAGES;
  s->tile_n = mma_width_fits(m, i, CU_MMA_BN / 2) && o.sym < 0 && o.c <= CU_MMA_BN / 2 ? CU_MMA_BN / 2 : CU_MMA_BN;
  s->threads[0] = CU_MMA_THREADS;
  s->shared_bytes = mma_shared(m, i, s->tile_n);
}

/* value v is a load of a vector of n elements that every row of the output reads whole (a bias) */
static bool bias_load(const kir_module *m, const kir_kernel *k, const kir_val *v, portc_dtype dt) {
  if (v->kind != KV_LOAD || m->buf[v->buf].dt != dt || m->buf[v->buf].sh.rank != 1 || v->path < 0) return false;
  const kir_path *p = &k->path[v->path];
  dim n = k->dom.d[k->dom.rank - 1], b = m->buf[v->buf].sh.d[0];
  return p->n == 1 && p->s[0].kind == ST_BCAST && n.sym == b.sym && n.c == b.c;
}

/* kernel i can also run as cuBLASLt plus an epilogue kernel (a GEMM of one float dtype);
 * *direct when the epilogue is only the store, or the addition of a bias vector of the output's
 * dtype (*bias: its buffer, else -1), so cuBLASLt writes the output itself; *inplace where the
 * output has the operands' dtype and lies as the product does, so cuBLASLt writes the product
 * there and the epilogue kernel finishes each element in place (no f32 scratch to write and read:
 * torch.compile's addmm and pointwise kernel do the same) */
static bool blaslt_eligible(const kir_module *m, int i, bool *direct, bool *inplace, int *bias) {
  const kir_kernel *k = &m->k[i];
  *direct = *inplace = false, *bias = -1;
  bool ta, tb;
  if (!cu_blaslt_view(m, i, &ta, &tb) || k->nstore != 1) return false;
  portc_dtype a = m->buf[k->in_buf[0]].dt, b = m->buf[k->in_buf[1]].dt, o = m->buf[k->store[0].buf].dt;
  if (a != b || !dtype_is_float(a)) return false;
  const kir_val *v = &k->val[k->store[0].val];
  if (v->kind == KV_OP && v->op == OP_cast && v->dt == o) v = &k->val[v->arg[0]];
  if (v->kind == KV_OP && v->op == OP_add) { /* acc + bias, either way round */
    const kir_val *x = &k->val[v->arg[0]], *y = &k->val[v->arg[1]];
    if (y->kind == KV_ACC) x = y, y = &k->val[v->arg[0]];
    if (x->kind == KV_ACC && bias_load(m, k, y, o)) *bias = y->buf, v = x;
  }
  const bool as_product = m->buf[k->store[0].buf].sh.rank == k->dom.rank && path_is_identity(k, k->store[0].path);
  *direct = v->kind == KV_ACC && (o == a || o == PORTC_F32) && as_product;
  *inplace = !*direct && o == a && as_product;
  if (!*direct) *bias = -1;
  return true;
}

static void matmul(kir_module *m, int i, kir_schedule *s, unsigned own, int sms) {
  const kir_kernel *k = &m->k[i];
  bool direct, inplace;
  int bias;
  if (mma_eligible(m, i) && (own & CU_OWN_WGMMA)) {
    s->variant = KS_WGMMA, s->fold_batch = true;
    s->tile_m = CU_WG_BM, s->tile_n = CU_WG_BN, s->tile_k = CU_WG_BK, s->stages = CU_WG_STAGES;
    s->threads[0] = CU_WG_THREADS;
    s->shared_bytes = CU_WG_SHARED;
  } else if (tf32x3_eligible(m, i) && (own & CU_OWN_TF32X3)) {
    s->variant = KS_WGMMA, s->fold_batch = true;
    s->tile_m = CU_WG_BM, s->tile_n = wt_tile_n(m, i, sms), s->tile_k = CU_WT_BK, s->stages = wt_stages(s->tile_n);
    s->threads[0] = CU_WG_THREADS;
    s->shared_bytes = wt_shared(s->tile_n);
  } else if (mma_eligible(m, i)) {
    mma_tiles(m, i, s);
    s->fold_batch = true;
  } else {
    s->variant = KS_TILED;
    s->tile_m = s->tile_n = mm_tile(m, i);
    s->threads[0] = 16, s->threads[1] = 16;
  }
  /* float matmuls: registers for two blocks per SM (measured without spills); Hopper's takes the
   * whole SM's shared memory and registers */
  if (dtype_is_float(m->buf[k->in_buf[0]].dt)) s->min_groups = s->variant == KS_WGMMA ? 1 : 2;
  if (blaslt_eligible(m, i, &direct, &inplace, &bias)) s->library = direct ? 1 : inplace ? 3 : 2, s->library_bias = bias;
}

/* the device's context (-1: the default device), NULL where there is none */
static const cu_context *context(int device) {
  char why[256];
  return cu_context_get(device, why, sizeof why);
}

/* the device's multiprocessors (0 where there is no device: the split-K rules then split nothing) */
static int device_sms(int device) {
  const cu_context *c = context(device);
  return c ? c->sms : 0;
}

/* compute capability of the device, 90 for 9.0 (0: no device) */
static int device_cc(int device) {
  const cu_context *c = context(device);
  return c ? c->cc_major * 10 + c->cc_minor : 0;
}

static const kernel_name own_names[] = {{"wgmma", CU_OWN_WGMMA}, {"flash", CU_OWN_FLASH}, {"conv", CU_OWN_CONV}, {"tf32x3", CU_OWN_TF32X3}};
enum { OWN_NAMES = sizeof own_names / sizeof *own_names };

unsigned cu_own_kernels(const char *list) { return kernel_list_bits(list, own_names, OWN_NAMES); }

bool cu_own_kernels_known(const char *list, char *why, size_t len) {
  return kernel_list_known("PORTC_CUDA_KERNELS", list, own_names, OWN_NAMES, why, len);
}

/* the kernels of portc's own taken: those PORTC_CUDA_KERNELS lists where it is set, else
 * CU_OWN_DEFAULT */
static unsigned own_taken(void) {
  const char *list = getenv("PORTC_CUDA_KERNELS");
  return list ? cu_own_kernels(list) : CU_OWN_DEFAULT;
}

/* Hopper's matmul (both forms) only on compute capability 9.0 */
void cu_schedule(kir_module *m, int i, int device) {
  unsigned own = own_taken();
  if (own & (CU_OWN_WGMMA | CU_OWN_TF32X3) && device_cc(device) != 90) own &= ~(unsigned)(CU_OWN_WGMMA | CU_OWN_TF32X3);
  cu_schedule_as(m, i, device, own);
}

unsigned cu_channels_last_as(unsigned own) { return own & CU_OWN_CONV ? 1u << PORTC_F16 | 1u << PORTC_BF16 : 0; }

unsigned cu_channels_last(int device) {
  (void)device;
  return cu_channels_last_as(own_taken());
}

void cu_schedule_as(kir_module *m, int i, int device, unsigned own) {
  kir_kernel *k = &m->k[i];
  kir_schedule *s = &k->sched;
  s->threads[0] = CU_PW_THREADS, s->threads[1] = s->threads[2] = 1;
  s->library_bias = -1;
  switch (k->kind) {
  case KK_ROW: {
    int64_t L = gpu_row_length(k);
    s->threads[0] = L <= 0 ? 256 : L <= 32 ? 32 : L <= 1024 ? 128 : 256;
    s->vector = gpu_row_vector(m, i);
    break;
  }
  case KK_MATMUL: matmul(m, i, s, own, device_sms(device)); break;
  case KK_CONV:
    /* 64x64 tiles, 32x32 for 32 output channels or fewer: what the tuner chose over 128x128 on
     * every one of the 48 convolution shapes of ResNet-18/50 and SqueezeNet on the H100 (the
     * shipped table), for devices and shapes that no table covers */
    /* a channels-last convolution is there only because this kernel takes it (cu_channels_last) */
    if (mma_conv_eligible(m, i) && (own & CU_OWN_CONV || gpu_conv_last(m, k))) {
      mma_tiles(m, i, s);
      s->min_groups = 2;
      /* split-K where the 128x128 tiles leave SMs idle (ResNet's 7x7 layers at batch 32: 52 tiles
       * on 132 SMs): slices that fill the two blocks each SM runs, each at least 4 k-steps */
      s->split_k = gpu_conv_split_fill(m, i, CU_MMA_BM, 2 * device_sms(device), 4 * CU_MMA_BK, CU_MAX_SPLIT);
    } else if (gpu_conv_tiled(m, i)) {
      s->variant = KS_TILED, s->tile_m = s->tile_n = m->k[i].dom.d[1].sym < 0 && m->k[i].dom.d[1].c <= 32 ? 32 : CU_CONV_TILE;
      s->threads[0] = 16, s->threads[1] = 16;
      s->split_k = gpu_conv_split_rule(m, i, s->tile_m, device_sms(device), CU_MAX_SPLIT);
    }
    s->run = gpu_conv_run_rule(m, i);
    break;
  default:
    if (gpu_is_attention(m, i) && cu_flash_fits(m, i) && (own & CU_OWN_FLASH)) {
      s->variant = KS_MMA, s->tile_m = CU_FA_BQ, s->tile_n = CU_FA_BK;
      s->threads[0] = CU_FA_THREADS;
      s->shared_bytes = cu_flash_shared_bytes(m, i);
    } else if (gpu_is_attention(m, i)) {
      gpu_attention_schedule(m, i, CU_STATIC_SHARED, s);
    }
    break;
  }
}

/* what a tune entry may change: the block size of 1-D kernels (whole warps), the square tile
 * of the SIMT matmul and convolution, the convolution's split-K, the register bound, and the
 * vendor library (off) and its algorithm; the tensor-core kernel's tiles are fixed */
bool cu_schedule_check(kir_module *m, int i, int device, char *why, size_t len) {
  (void)device;
  const kir_schedule *s = &m->k[i].sched;
  if (gpu_conv_last(m, &m->k[i]) && s->variant != KS_MMA) return snprintf(why, len, "a channels-last convolution runs on tensor cores only"), false;
  switch (s->variant) {
  case KS_MMA:
    if (!gpu_knobs_fit(&m->k[i], m->k[i].kind == KK_CONV ? CU_MAX_SPLIT : 1, why, len)) return false;
    if (gpu_is_attention(m, i)) {
      if (!cu_flash_fits(m, i))
        return snprintf(why, len, "attention on tensor cores takes f16/bf16 operands and head sizes that are multiples of 16 up to %d",
                        CU_FA_MAX_HEAD), false;
      if (s->threads[0] != CU_FA_THREADS || s->tile_m != CU_FA_BQ || s->tile_n != CU_FA_BK)
        return snprintf(why, len, "attention on tensor cores runs %d threads over %dx%d tiles", CU_FA_THREADS, CU_FA_BQ, CU_FA_BK), false;
      return true;
    }
    if (s->tile_m != CU_MMA_BM || !mma_width_fits(m, i, s->tile_n) || s->tile_k != CU_MMA_BK || s->stages != CU_MMA_STAGES ||
        s->threads[0] != CU_MMA_THREADS)
      return snprintf(why, len, "the tensor-core kernel's tile is %dx%dx%d (%dx%d for a channels-last convolution) in %d stages", CU_MMA_BM,
                      CU_MMA_BN, CU_MMA_BK, CU_MMA_BM, CU_MMA_BN / 2, CU_MMA_STAGES), false;
    m->k[i].sched.shared_bytes = mma_shared(m, i, s->tile_n); /* what follows from the tile */
    return true;
  case KS_WGMMA: {
    if (!gpu_knobs_fit(&m->k[i], 1, why, len)) return false;
    if (cu_wgmma_tf32(m, &m->k[i])) { /* the f32 form: 128x256 in 2 stages, 128x192 in 3 or 128x128 in 4 */
      bool known = s->tile_n == 256 || s->tile_n == 192 || s->tile_n == 128;
      if (s->tile_m != CU_WG_BM || !known || s->tile_k != CU_WT_BK || s->stages != wt_stages(s->tile_n) || s->threads[0] != CU_WG_THREADS)
        return snprintf(why, len, "Hopper's f32 matmul's tile is 128x256, 128x192 or 128x128 (k-steps of %d) in 2, 3 or 4 stages", CU_WT_BK),
               false;
      m->k[i].sched.shared_bytes = wt_shared(s->tile_n); /* what follows from the tile */
      return true;
    }
    /* f16/bf16: both consumers on one 128x256 tile in 4 stages, or the ping-pong form's 128x128 tiles in 6 */
    const bool coop = s->tile_n == CU_WG_BN && s->stages == CU_WG_STAGES, pingpong = s->tile_n == CU_PP_BN && s->stages == CU_PP_STAGES;
    if (s->tile_m != CU_WG_BM || !(coop || pingpong) || s->tile_k != CU_WG_BK || s->threads[0] != CU_WG_THREADS)
      return snprintf(why, len, "Hopper's tensor-core kernel's tile is %dx%dx%d in %d stages, or %dx%dx%d in %d (ping-pong)", CU_WG_BM, CU_WG_BN,
                      CU_WG_BK, CU_WG_STAGES, CU_WG_BM, CU_PP_BN, CU_WG_BK, CU_PP_STAGES),
             false;
    if (s->cluster > 2) return snprintf(why, len, "cluster=%d: Hopper's f16/bf16 matmul runs in clusters of 2", s->cluster), false;
    m->k[i].sched.shared_bytes = pingpong ? CU_PP_SHARED : CU_WG_SHARED; /* what follows from the tile */
    return true;
  }
  case KS_TILED: return gpu_tiles_fit(&m->k[i], CU_MAX_SPLIT, why, len);
  case KS_PLAIN: break;
  }
  if (!gpu_attention_fits(m, i, CU_STATIC_SHARED, why, len)) return false;
  return gpu_group_fits(&m->k[i], 32, 1024, false, why, len);
}

int cu_tune_space(const kir_module *m, int i, const tune_device *d, tune_knobs *out, int max) {
  const kir_kernel *k = &m->k[i];
  const kir_schedule *s = &k->sched;
  static const int sizes[] = {128, 256, 512, 1024};
  int n = 0, tiles[3];
  if (s->variant == KS_TILED && k->kind == KK_CONV) {
    tune_conv_candidates(m, i, d->units, CU_MAX_SPLIT, out, max - (s->min_groups ? 1 : 0), &n);
    if (s->min_groups && n < max) out[n++] = (tune_knobs){.mask = tune_knob_bit("min_groups"), .v.min_groups = 0};
  } else if (s->variant == KS_TILED) {
    tune_candidates("tile", tiles, tune_useful_tiles(m, i, tiles), s->tile_m, out, max, &n);
    if (s->min_groups && n < max) out[n++] = (tune_knobs){.mask = tune_knob_bit("min_groups"), .v.min_groups = 0};
  } else if (s->variant == KS_PLAIN && k->kind != KK_ROW && !gpu_is_attention(m, i)) {
    tune_candidates("threads", sizes, 4, s->threads[0], out, max, &n);
  } else if (s->variant == KS_MMA && k->kind == KK_CONV) { /* the tensor-core convolution: its split-K, slices of 2 k-steps or more */
    static const int splits[] = {1, 2, 3, 4, 6, 8};
    int now = s->split_k > 1 ? s->split_k : 1;
    int64_t M, N, K;
    bool sized = gpu_conv_static_mnk(m, i, &M, &N, &K);
    for (int j = 0; j < 6 && n < max; j++)
      if (splits[j] != now && (splits[j] == 1 || (sized && K / splits[j] >= 2 * CU_MMA_BK)))
        out[n++] = (tune_knobs){.mask = tune_knob_bit("split_k"), .v.split_k = splits[j]};
    const int other = s->tile_n == CU_MMA_BN ? CU_MMA_BN / 2 : CU_MMA_BN; /* a channels-last one: the other width */
    if (mma_width_fits(m, i, other) && n < max)
      out[n++] = (tune_knobs){.mask = tune_knob_bit("tile"), .v.tile_m = CU_MMA_BM, .v.tile_n = other};
  }
  if (s->variant == KS_WGMMA && cu_wgmma_tf32(m, k)) /* the f32 form's narrower tiles, in more stages */
    for (int bn = 256; bn >= 128 && n < max; bn -= 64)
      if (bn != s->tile_n)
        out[n++] = (tune_knobs){.mask = tune_knob_bit("tile") | tune_knob_bit("stages"), .v.tile_m = CU_WG_BM, .v.tile_n = bn, .v.stages = wt_stages(bn)};
  for (int f = 0; s->variant == KS_WGMMA && !cu_wgmma_tf32(m, k) && f < CU_FORMS && n < max; f++) /* f16/bf16: its other forms */
    if (f != cu_wgmma_form_of(s)) {
      out[n] = (tune_knobs){.mask = tune_knob_bit("tile") | tune_knob_bit("stages") | tune_knob_bit("cluster")};
      cu_wgmma_form(&out[n++].v, f);
    }
  tune_run_candidates(m, i, out, max, &n);
  if (s->library && n < max) out[n++] = (tune_knobs){.mask = tune_knob_bit("library"), .v.library = 0};
  for (int a = 1; a <= 3 && s->library && n < max; a++) /* cuBLASLt's next choices (its first is the default's) */
    out[n++] = (tune_knobs){.mask = tune_knob_bit("algo"), .v.library_algo = a};
  return n;
}
