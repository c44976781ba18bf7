/*
 * cuda_emulate.c: the CUDA dialect's tensor-core kernels run on the CPU, against the float64
 * reference, where no GPU is. Each case's graph is lowered and scheduled for cuda (with the
 * opt-in kernel it tests), its CUDA source compiled as host C++ behind tests/cuda_emu_shim.h
 * (the warp-wide instructions as PTX describes them, a block's threads as coroutines), its
 * kernels run in order on the reference's inputs, and its output compared with the reference.
 *
 * The first cases are the mma.sync matmul, which the H100 and H200 ran through the conformance
 * suite: they check the emulation itself (its fragment layouts, ldmatrix, the barriers). The
 * others are the kernels that have not run on a GPU yet, which are then checked against the
 * same emulation (Hopper's TMA and wgmma included, as the shim describes them; a split-K kernel
 * with its kN_epi after it; cuBLASLt's epilogue kernel after the product, computed on the host).
 * What it cannot show: speed, the memory model beyond the order of barriers and cp.async waits,
 * and instructions it does not emulate.
 *
 * usage: cuda_emulate SHIM_DIR   (exit 77, a skip for ctest, where no C++ compiler is found)
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../codegen/emit.h"
#include "../codegen/gpu_kernels.h"
#include "../codegen/grid.h"
#include "../cuda/cu.h"
#include "../ir/dtype.h"
#include "../lower/pipeline.h"
#include "../targets/gpu_queue.h"
#include "../targets/target.h"

/* in a case's `own`: lowered with every convolution NCHW (the gathering kernel), not channels-last;
 * Hopper's ping-pong form in clusters of 2 (with tile_n CU_PP_BN), or its 128x256 form (CU_WG_BN);
 * the matmul through cuBLASLt (its product computed on the host, pc_emu_blas) and the epilogue
 * kernel after it, where the schedule offers the library with one (library 2 or 3) */
enum { EMU_NCHW = 1 << 8, EMU_PAIRS = 1 << 9, EMU_LIBRARY = 1 << 10 };

typedef struct emu_case {
  const char *name, *text;
  unsigned own;       /* the opt-in kernels (CU_OWN_*) */
  const char *marks;  /* text the source must hold: the kernel under test is there */
  double tol;         /* on the output's relative error, ||y - ref|| / ||ref|| */
  int split;          /* > 1: the convolutions' reduction in this many slices (split-K), as a GPU's schedule may choose */
  int tile_n;         /* > 0: Hopper's matmul with tiles of this many columns, as a tune entry may choose (f16/bf16:
                       * 128 is the ping-pong form) */
} emu_case;

static const emu_case cases[] = {
    {"mma.sync matmul, f16, bias (ran on the H100 and H200)",
     "graph mm\ninput a: f16[200, 136]\ninput b: f16[136, 264]\ninput c: f16[264]\nh = matmul(a, b)\ny = add(h, c)\noutput y\n", 0,
     "pc_mma(acc", 2e-3, 1, 0},
    {"mma.sync matmul, bf16 (ran on the H100 and H200)",
     "graph mm\ninput a: bf16[130, 72]\ninput b: bf16[72, 136]\ny = matmul(a, b)\noutput y\n", 0, "pc_mma(acc", 1.5e-2, 1, 0},
    {"Hopper's matmul (TMA, mbarriers, wgmma), f16, bias, partial tiles",
     "graph mm\ninput a: f16[200, 136]\ninput b: f16[136, 264]\ninput c: f16[264]\nh = matmul(a, b)\ny = add(h, c)\noutput y\n",
     CU_OWN_WGMMA, "wgmma.mma_async", 2e-3, 1, 0},
    {"Hopper's matmul, f16, bias and GELU (erf), partial tiles",
     "graph mm\ninput a: f16[136, 72]\ninput b: f16[72, 264]\ninput c: f16[264]\nh = matmul(a, b)\nz = add(h, c)\ny = gelu(z)\noutput y\n",
     CU_OWN_WGMMA, "wgmma.mma_async", 2e-3, 1, 0},
    {"Hopper's matmul, bf16, more k-steps than stages",
     "graph mm\ninput a: bf16[130, 520]\ninput b: bf16[520, 72]\ny = matmul(a, b)\noutput y\n", CU_OWN_WGMMA, "wgmma.mma_async", 1.5e-2, 1, 0},
    {"Hopper's matmul in f32 (three TF32 products: B split by kN_split, A in registers), bias, partial tiles",
     "graph mm\ninput a: f32[200, 136]\ninput b: f32[136, 264]\ninput c: f32[264]\nh = matmul(a, b)\ny = add(h, c)\noutput y\n",
     CU_OWN_TF32X3, "tf32.tf32", 1e-6, 1, 0},
    {"Hopper's matmul in f32, batches folded into rows, more k-steps than stages, GELU",
     "graph mm\ninput a: f32[2, 65, 520]\ninput b: f32[520, 72]\nh = matmul(a, b)\ny = gelu(h)\noutput y\n", CU_OWN_TF32X3, "tf32.tf32", 1e-6, 1, 0},
    {"Hopper's matmul in f32, 128x192 tiles in 3 stages (a tune entry's), partial tiles, bias",
     "graph mm\ninput a: f32[200, 136]\ninput b: f32[136, 264]\ninput c: f32[264]\nh = matmul(a, b)\ny = add(h, c)\noutput y\n",
     CU_OWN_TF32X3, "m64n192k8.f32.tf32", 1e-6, 1, 192},
    {"Hopper's matmul in f32, 128x128 tiles in 4 stages, more k-steps than stages",
     "graph mm\ninput a: f32[130, 520]\ninput b: f32[520, 136]\ny = matmul(a, b)\noutput y\n", CU_OWN_TF32X3, "m64n128k8.f32.tf32", 1e-6, 1, 128},
    {"attention's heads merged for the output projection, f16: copied into a matrix by a kernel of its own, then Hopper's matmul with a bias",
     "graph mm\ninput a: f16[2, 4, 72, 32]\ninput w: f16[128, 64]\ninput b: f16[64]\nt = permute(a, perm=[0, 2, 1, 3])\n"
     "m = reshape(t, shape=[2, 72, 128])\nh = matmul(m, w)\ny = add(h, b)\noutput y\n",
     CU_OWN_WGMMA, "wgmma.mma_async", 2e-3, 1, 0},
    {"Hopper's matmul, ping-pong (two blocks looping over 9 tiles, a consumer a tile), f16, bias and GELU, partial tiles, more k-steps than stages",
     "graph mm\ninput a: f16[300, 520]\ninput b: f16[520, 264]\ninput c: f16[264]\nh = matmul(a, b)\nz = add(h, c)\ny = gelu(z)\noutput y\n",
     CU_OWN_WGMMA, "m64n128k16.f32.f16", 2e-3, 1, CU_PP_BN},
    {"Hopper's matmul, ping-pong, bf16, batches folded into rows, fewer tiles than blocks' consumers",
     "graph mm\ninput a: bf16[2, 70, 136]\ninput b: bf16[136, 72]\ny = matmul(a, b)\noutput y\n", CU_OWN_WGMMA, "m64n128k16.f32.bf16", 1.5e-2, 1,
     CU_PP_BN},
    {"Hopper's matmul, ping-pong in clusters of 2 (each block loads half of A into both): two clusters looping over 3 units of 2 column "
     "tiles, the last unit's second tile past N, f16, bias and GELU, more k-steps than stages",
     "graph mm\ninput a: f16[300, 520]\ninput b: f16[520, 264]\ninput c: f16[264]\nh = matmul(a, b)\nz = add(h, c)\ny = gelu(z)\noutput y\n",
     CU_OWN_WGMMA | EMU_PAIRS, "pc_tma_load_mc(As", 2e-3, 1, CU_PP_BN},
    {"Hopper's matmul, ping-pong in clusters of 2, bf16, batches folded into rows, a unit a cluster",
     "graph mm\ninput a: bf16[2, 70, 136]\ninput b: bf16[136, 200]\ny = matmul(a, b)\noutput y\n", CU_OWN_WGMMA | EMU_PAIRS,
     "pc_mbar_arrive_cluster<2>", 1.5e-2, 1, CU_PP_BN},
    {"Hopper's matmul, 128x256 tiles in clusters of 2 (each block loads half of B into both): 3 units of 2 row tiles, the last unit's "
     "second tile past M, f16, bias and GELU, partial column tiles, more k-steps than stages",
     "graph mm\ninput a: f16[300, 520]\ninput b: f16[520, 264]\ninput c: f16[264]\nh = matmul(a, b)\nz = add(h, c)\ny = gelu(z)\noutput y\n",
     CU_OWN_WGMMA | EMU_PAIRS, "pc_tma_load_mc(Bs", 2e-3, 1, CU_WG_BN},
    {"Hopper's matmul, 128x256 tiles in clusters of 2, bf16, batches folded into rows, one unit",
     "graph mm\ninput a: bf16[2, 70, 136]\ninput b: bf16[136, 200]\ny = matmul(a, b)\noutput y\n", CU_OWN_WGMMA | EMU_PAIRS,
     "pc_mbar_arrive_cluster<2>", 1.5e-2, 1, CU_WG_BN},
    {"cuBLASLt's f16 product in the output, finished in place 8 elements a thread (16-byte accesses), bias and GELU",
     "graph mm\ninput a: f16[200, 136]\ninput b: f16[136, 264]\ninput c: f16[264]\nh = matmul(a, b)\nz = add(h, c)\ny = gelu(z)\noutput y\n",
     EMU_LIBRARY, "tv * PC_VEC", 2e-3, 1, 0},
    {"cuBLASLt's bf16 product in the output, batches folded into rows, finished in place, tanh",
     "graph mm\ninput a: bf16[2, 70, 136]\ninput b: bf16[136, 200]\nh = matmul(a, b)\ny = tanh(h)\noutput y\n", EMU_LIBRARY, "tv * PC_VEC",
     1.5e-2, 1, 0},
    {"tensor-core convolution, f16, stride 2, padding, bias and relu, 6 k-steps through 3 stages",
     "graph c\ninput x: f16[2, 40, 13, 11]\ninput w: f16[136, 40, 3, 3]\ninput b: f16[136]\nc = conv2d(x, w, b, stride=[2, 2], padding=[1, 1])\n"
     "y = relu(c)\noutput y\n",
     CU_OWN_CONV | EMU_NCHW, "const T *const xb", 2e-3, 1, 0},
    {"tensor-core convolution, bf16, dilation",
     "graph c\ninput x: bf16[3, 24, 9, 10]\ninput w: bf16[20, 24, 3, 3]\ny = conv2d(x, w, dilation=[2, 2], padding=[2, 1])\noutput y\n",
     CU_OWN_CONV | EMU_NCHW, "const T *const xb", 1.5e-2, 1, 0},
    {"tensor-core convolution, f16, 1x1 over 128 pixels and more",
     "graph c\ninput x: f16[2, 32, 11, 9]\ninput w: f16[40, 32, 1, 1]\ny = conv2d(x, w)\noutput y\n", CU_OWN_CONV | EMU_NCHW, "const T *const xb", 2e-3, 1, 0},
    {"tensor-core convolution, f16, 1x1 over images of 96 pixels copied as they lie (16 bytes at a time), 3 images a tile, relu",
     "graph c\ninput x: f16[3, 72, 8, 12]\ninput w: f16[136, 72, 1, 1]\nc = conv2d(x, w)\ny = relu(c)\noutput y\n", CU_OWN_CONV | EMU_NCHW,
     "gn % (H * W)", 2e-3, 1, 0},
    {"tensor-core convolution, f16, split-K in 3 slices of 4 k-steps (the last one partial), bias and residual",
     "graph c\ninput x: f16[2, 80, 7, 7]\ninput w: f16[40, 80, 3, 3]\ninput b: f16[40]\ninput r: f16[2, 40, 7, 7]\n"
     "c = conv2d(x, w, b, padding=[1, 1])\ny = add(c, r)\noutput y\n",
     CU_OWN_CONV | EMU_NCHW, "pc_acc[(int(blockIdx.z)", 2e-3, 3, 0},
    {"channels-last tensor-core convolution from an NCHW graph, f16, stride 2, padding, bias and relu (the input and the weights "
     "transposed by kernels before it, the output after it)",
     "graph c\ninput x: f16[2, 40, 13, 11]\ninput w: f16[136, 40, 3, 3]\ninput b: f16[136]\nc = conv2d(x, w, b, stride=[2, 2], padding=[1, 1])\n"
     "y = relu(c)\noutput y\n",
     CU_OWN_CONV, "channels last: this thread's rows", 2e-3, 1, 0},
    {"channels-last convolutions, f16: two in a row with relu between (NHWC from one to the next), a residual add, split-K in 3",
     "graph c\ninput x: f16[2, 16, 9, 7]\ninput w: f16[24, 16, 3, 3]\ninput v: f16[16, 24, 3, 3]\ninput b: f16[16]\n"
     "c = conv2d(x, w, padding=[1, 1])\nr = relu(c)\nd = conv2d(r, v, b, padding=[1, 1])\ns = add(d, x)\nt = relu(s)\n"
     "y = mul(t, t)\noutput y\n",
     CU_OWN_CONV, "channels last: this thread's rows", 2e-3, 3, 0},
    {"channels-last convolutions under autocast f16: a block's f32 output and its f16 cast for the next convolution stored by one epilogue",
     "graph c\ninput x: f32[2, 16, 9, 7]\ninput w: f32[16, 16, 3, 3]\ninput v: f32[16, 16, 1, 1]\n"
     "autocast f16\nc = conv2d(x, w, padding=[1, 1])\nautocast off\ns = add(c, x)\ny = relu(s)\n"
     "autocast f16\nd = conv2d(y, v)\nautocast off\nz = add(d, y)\noutput z\n",
     CU_OWN_CONV, "channels last: this thread's rows", 2e-3, 1, 0},
    {"channels-last convolutions under autocast f16: the residual stream in f16 (additions of two autocast results add in f16), "
     "one convolution taking the add and the relu",
     "graph c\ninput x: f32[2, 16, 9, 7]\ninput w: f32[16, 16, 3, 3]\ninput v: f32[16, 16, 1, 1]\ninput b: f32[16]\n"
     "autocast f16\nc = conv2d(x, w, padding=[1, 1])\nr = relu(c)\nd = conv2d(r, v, b)\ns = add(d, r)\nt = relu(s)\n"
     "e = conv2d(t, w, padding=[1, 1])\ny = add(e, t)\noutput y\n",
     CU_OWN_CONV, "channels last: this thread's rows", 2e-3, 1, 0},
    {"channels-last convolution of an RGB image, f16: its 3 channels padded to 8 (a 7x7 window, stride 2)",
     "graph c\ninput x: f16[2, 3, 19, 17]\ninput w: f16[16, 3, 7, 7]\nc = conv2d(x, w, stride=[2, 2], padding=[3, 3])\ny = relu(c)\noutput y\n",
     CU_OWN_CONV, "channels last: this thread's rows", 2e-3, 1, 0},
    {"ResNet's stem channels-last, f16: the max pooling between two convolutions pools their NHWC values as they lie",
     "graph c\ninput x: f16[2, 3, 19, 17]\ninput w: f16[16, 3, 7, 7]\ninput v: f16[24, 16, 1, 1]\nc = conv2d(x, w, stride=[2, 2], padding=[3, 3])\n"
     "r = relu(c)\nm = max_pool2d(r, kernel=[3, 3], stride=[2, 2], padding=[1, 1])\nd = conv2d(m, v)\ny = relu(d)\noutput y\n",
     CU_OWN_CONV, "img = t / (C * OW * OH)", 2e-3, 1, 0},
    {"channels-last convolution as written, bf16, dilation, 160 output channels, a 2x2 window",
     "graph c\ninput x: bf16[3, 9, 10, 24]\ninput w: bf16[2, 2, 24, 160]\ny = conv2d(x, w, dilation=[2, 2], padding=[2, 1], channels_last=true)\n"
     "output y\n",
     CU_OWN_CONV, "channels last: this thread's rows", 1.5e-2, 1, 0},
    {"SIMT attention, f32, 64 query rows over 32 keys a step (heads of 64), bias and causal mask",
     "graph att\ninput q: f32[2, 2, 70, 64]\ninput k: f32[2, 2, 131, 64]\ninput v: f32[2, 2, 131, 64]\ninput m: f32[70, 131]\n"
     "y = attention(q, k, v, m, causal=true, scale=0.2)\noutput y\n",
     0, "pa_Q[4352]", 1e-5, 1, 0},
    {"SIMT attention, f32, heads of 24 and 40 (padded rows, a second 32-column run), keys shared by the batch, a per-key mask",
     "graph att\ninput q: f32[3, 37, 24]\ninput k: f32[1, 301, 24]\ninput v: f32[1, 301, 40]\ninput m: f32[1, 301]\n"
     "y = attention(q, k, v, m)\noutput y\n",
     0, "pa_V[2048]", 1e-5, 1, 0},
    {"SIMT attention, bf16, few queries (32-row tiles), heads of 100 (rows of 25 words, unpadded) and 8",
     "graph att\ninput q: bf16[2, 9, 100]\ninput k: bf16[2, 45, 100]\ninput v: bf16[2, 45, 8]\ny = attention(q, k, v, causal=true)\noutput y\n",
     0, "pa_K[3200]", 1e-2, 1, 0},
    {"SIMT attention, f16, the next keys and values waiting in registers as loaded (converted when stored to shared memory)",
     "graph att\ninput q: f16[2, 3, 50, 32]\ninput k: f16[2, 3, 77, 32]\ninput v: f16[2, 3, 77, 48]\ny = attention(q, k, v, causal=true)\noutput y\n",
     0, "__half rk[", 4e-3, 1, 0},
    {"tensor-core attention, f16, bias and causal mask",
     "graph att\ninput q: f16[2, 2, 70, 64]\ninput k: f16[2, 2, 131, 64]\ninput v: f16[2, 2, 131, 32]\ninput m: f16[70, 131]\n"
     "y = attention(q, k, v, m, causal=true, scale=0.2)\noutput y\n",
     CU_OWN_FLASH, "pc_fa_smem", 4e-3, 1, 0},
    {"tensor-core attention, bf16, keys shared by the batch",
     "graph att\ninput q: bf16[3, 65, 64]\ninput k: bf16[1, 200, 64]\ninput v: bf16[1, 200, 64]\ny = attention(q, k, v)\noutput y\n",
     CU_OWN_FLASH, "pc_fa_smem", 2e-2, 1, 0},
    {"tensor-core attention, f16, heads of 32 and 16, more keys than queries",
     "graph att\ninput q: f16[3, 5, 32]\ninput k: f16[3, 40, 32]\ninput v: f16[3, 40, 16]\ny = attention(q, k, v, causal=true)\noutput y\n",
     CU_OWN_FLASH, "pc_fa_smem", 4e-3, 1, 0},
};

static const char *shim_dir;
static char work[] = "/tmp/portc-cuda-emu-XXXXXX";

static void put(void *p, portc_dtype dt, int64_t i, double v) {
  if (dt == PORTC_F32) ((float *)p)[i] = (float)v;
  else if (dt == PORTC_F16) ((_Float16 *)p)[i] = (_Float16)v;
  else if (dt == PORTC_BF16) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
  }
}

static double get(const void *p, portc_dtype dt, int64_t i) {
  if (dt == PORTC_F32) return ((const float *)p)[i];
  if (dt == PORTC_F16) return (double)((const _Float16 *)p)[i];
  uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* the module's source without its prelude, each dynamic shared-memory array the block's, and
 * Hopper's wgmma (inline PTX) the emulation's, its sums' pins (PIN: empty asm) gone */
#define PIN "asm volatile(\"\" : \"+f\"(d[i])::\"memory\")"
static char *host_source(const kir_module *km) {
  char *src = emit_module(&cuda_dialect, km);
  const char *at = src ? strstr(src, cuda_dialect.prelude) : NULL;
  if (!at) return free(src), NULL;
  strbuf b = {0};
  const char *p = at + strlen(cuda_dialect.prelude);
  for (const char *q, *r;;) {
    const char *pin = strstr(p, PIN);
    q = strstr(p, "extern __shared__"), r = strstr(p, "asm volatile(\"wgmma.mma_async");
    if (pin && (!q || pin < q) && (!r || pin < r)) { /* x86 has no such register constraint; the emulation needs no pin */
      sb_printf(&b, "%.*s(void)d[i]", (int)(pin - p), p);
      p = pin + strlen(PIN);
      continue;
    }
    if (r && (!q || r < q)) {
      const char *end = strstr(r, "\"l\"(b));");
      if (!end) break;
      sb_printf(&b, "%.*spc_emu_wgmma(d, a, b, T(), (int)(sizeof d / sizeof *d));", (int)(r - p), p);
      p = end + strlen("\"l\"(b));");
      continue;
    }
    if (!q) break;
    const char *name_end = strstr(q, "[];"), *name = name_end;
    while (name > q && name[-1] != ' ') name--;
    sb_printf(&b, "%.*sunsigned char *const %.*s = pc_emu_dynamic_shared;", (int)(q - p), p, (int)(name_end - name), name);
    p = strchr(q, ';') + 1;
  }
  sb_printf(&b, "%s", p);
  free(src);
  return sb_take(&b);
}

/* the host program: the kernels, and pc_emu_run, which launches them in order */
static bool write_program(const kir_module *km, const char *path) {
  char *src = host_source(km);
  FILE *f = src ? fopen(path, "w") : NULL;
  if (!f) return free(src), false;
  fprintf(f, "#include \"cuda_emu_shim.h\"\n%s\n", src);
  fprintf(f, "struct pc_emu_arg {\n  void *p;\n  template <class T> operator T *() const { return (T *)p; }\n};\n");
  fprintf(f, "extern \"C\" int pc_emu_run(void **b) {\n  pc_syms S = {};\n  unsigned bad = 0;\n");
  const gpu_limits lim = {.max_groups = {INT32_MAX, 65535, 65535}, .stride_groups = 8}; /* few blocks, which loop */
  const int64_t S[64] = {0};
  for (int i = 0; i < km->nk; i++) {
    const kir_schedule *s = &km->k[i].sched;
    int bufs[GPU_MAX_ARGS];
    int nb = kernel_buffers(km, i, bufs, GPU_MAX_ARGS);
    unsigned g[3];
    gpu_grid(km, i, S, &lim, g);
    const int cl = s->cluster > 1 ? s->cluster : 1;
    if (cu_wgmma_pingpong(km, &km->k[i])) cu_pingpong_grid(g, 2 * cl, cl); /* two SMs (clusters): each block loops over tiles */
    else if (s->variant == KS_WGMMA && cl > 1) cu_coop_pair_grid(g);
    const int split = gpu_conv_split(&km->k[i]);
    if (split > 1) { /* the slices' partial sums, as runtime.c's scratch buffer holds them */
      int64_t mn[2];
      gpu_conv_mn(km, i, S, mn);
      fprintf(f, "  std::vector<float> acc%d((size_t)%lld);\n", i, (long long)(split * mn[0] * mn[1]));
    }
    if (cu_wgmma_tf32(km, &km->k[i])) { /* kN_split first: B's two parts, transposed, as runtime.c launches it */
      const long long n = km->k[i].mnk[1].c, kk = km->k[i].mnk[2].c, T = CU_WT_SPLIT_TILE;
      fprintf(f, "  std::vector<float> split%d((size_t)%lld);\n", i, 2 * n * kk);
      fprintf(f, "  if (!pc_emu_launch(pc_dim3{%lld, %lld, 1}, pc_dim3{%lld, 8, 1}, 0, [&] { k%d_split(pc_emu_arg{b[%d]}, split%d.data(), %lld, %lld); }))\n"
              "    return 1;\n",
              (n + T - 1) / T, (kk + T - 1) / T, T, i, km->k[i].in_buf[1], i, kk, n);
    }
    if (s->library >= 2) { /* cuBLASLt's product (here the host's), then kN_epi: a grid-stride loop, as runtime.c launches it */
      const kir_kernel *k = &km->k[i];
      static const char *const ctype[] = {[PORTC_F32] = "float", [PORTC_F16] = "__half", [PORTC_BF16] = "__nv_bfloat16"};
      const portc_dtype ta = km->buf[k->in_buf[0]].dt, to = km->buf[k->store[0].buf].dt;
      const long long rows = gpu_gemm_rows(km, i, S), n = k->mnk[1].c, kk = k->mnk[2].c;
      if (s->library == 2) fprintf(f, "  std::vector<float> lib%d((size_t)%lld);\n", i, rows * n);
      fprintf(f, "  pc_emu_blas((const %s *)b[%d], (const %s *)b[%d], ", ctype[ta], k->in_buf[0], ctype[ta], k->in_buf[1]);
      if (s->library == 2) fprintf(f, "lib%d.data(), %lldL, %lldL, %lldL);\n", i, rows, n, kk);
      else fprintf(f, "(%s *)b[%d], %lldL, %lldL, %lldL);\n", ctype[to], k->store[0].buf, rows, n, kk);
      fprintf(f, "  if (!pc_emu_launch(pc_dim3{4, 1, 1}, pc_dim3{%d, 1, 1}, 0, [&] { k%d_epi(", CU_PW_THREADS, i);
      if (s->library == 2) fprintf(f, "lib%d.data(), ", i);
      else fprintf(f, "nullptr, ");
      for (int j = 0; j < nb; j++) fprintf(f, "pc_emu_arg{b[%d]}, ", bufs[j]);
      fprintf(f, "%sS); }))\n    return 1;\n", kernel_has_status(km, i) ? "&bad, " : "");
      continue;
    }
    fprintf(f, "  if (!pc_emu_launch(pc_dim3{%u, %u, %u}, pc_dim3{%d, %d, %d}, %d, [&] { k%d(", g[0], g[1], g[2], s->threads[0],
            s->threads[1] ? s->threads[1] : 1, s->threads[2] ? s->threads[2] : 1, s->shared_bytes, i);
    if (split > 1) fprintf(f, "acc%d.data(), ", i);
    for (int j = 0; j < nb; j++) fprintf(f, "pc_emu_arg{b[%d]}, ", bufs[j]);
    fprintf(f, "%sS", kernel_has_status(km, i) ? "&bad, " : "");
    const kir_kernel *k = &km->k[i];
    long long rows = gpu_gemm_rows(km, i, S), n = k->mnk[1].c, kk = k->mnk[2].c;
    if (cu_wgmma_tf32(km, k)) /* the tensor maps, as runtime.c encodes them: A; B's two parts, which kN_split wrote */
      fprintf(f, ", pc_emu_tmap(b[%d], %lld, %lld, %lld, %d, %d, 4), pc_emu_tmap(split%d.data(), %lld, %lld, %lld, %d, %d, 4), "
              "pc_emu_tmap(split%d.data() + %lld, %lld, %lld, %lld, %d, %d, 4)",
              k->in_buf[0], kk, rows, kk * 4, CU_WT_BK, CU_WG_BM, i, kk, n, kk * 4, CU_WT_BK, s->tile_n, i, n * kk, kk, n, kk * 4, CU_WT_BK,
              s->tile_n);
    else if (s->variant == KS_WGMMA) /* A (a share of its rows a block, in clusters) and B */
      fprintf(f, ", pc_emu_tmap(b[%d], %lld, %lld, %lld, %d, %d, 2), pc_emu_tmap(b[%d], %lld, %lld, %lld, 64, %d, 2)", k->in_buf[0], kk, rows, kk * 2,
              CU_WG_BK, cu_wgmma_a_rows(km, k), k->in_buf[1], n, kk, n * 2, CU_WG_BK);
    fprintf(f, "); }, %d))\n    return 1;\n", cl);
    if (split > 1) { /* then kN_epi adds the slices: a grid-stride loop, as runtime.c launches it */
      fprintf(f, "  if (!pc_emu_launch(pc_dim3{4, 1, 1}, pc_dim3{%d, 1, 1}, 0, [&] { k%d_epi(acc%d.data(), ", CU_PW_THREADS, i, i);
      for (int j = 0; j < nb; j++) fprintf(f, "pc_emu_arg{b[%d]}, ", bufs[j]);
      fprintf(f, "%sS); }))\n    return 1;\n", kernel_has_status(km, i) ? "&bad, " : "");
    }
  }
  fprintf(f, "  return bad ? 2 : 0;\n}\n");
  free(src);
  return fclose(f) == 0;
}

static int run_case(const emu_case *c, int index) {
  int device;
  const target *T = target_find("cuda", &device);
  portc_graph *g = NULL;
  kir_module *km = NULL;
  const unsigned own = c->own & ~(unsigned)(EMU_NCHW | EMU_PAIRS | EMU_LIBRARY);
  lower_options lo = {.attention = T->attention_kernel, .channels_last = c->own & EMU_NCHW ? 0 : cu_channels_last_as(own),
                      .copy_merged_rows = T->copy_merged_rows};
  if (portc_graph_parse(c->text, c->name, &g) || lower_graph(g, &lo, &km)) {
    fprintf(stderr, "%s: %s\n", c->name, portc_last_error());
    return 1;
  }
  for (int i = 0; i < km->nk; i++) {
    km->k[i].sched = (kir_schedule){0}, cu_schedule_as(km, i, -1, own);
    if (c->split > 1 && km->k[i].kind == KK_CONV) km->k[i].sched.split_k = c->split;
    char why[256];
    if (c->tile_n && km->k[i].sched.variant == KS_WGMMA) {
      const bool f32 = cu_wgmma_tf32(km, &km->k[i]);
      if (f32) km->k[i].sched.tile_n = c->tile_n, km->k[i].sched.stages = c->tile_n == 256 ? 2 : c->tile_n == 192 ? 3 : 4;
      else if (c->tile_n != CU_PP_BN) cu_wgmma_form(&km->k[i].sched, c->own & EMU_PAIRS ? CU_FORM_COOP_PAIR : CU_FORM_COOP);
      else cu_wgmma_form(&km->k[i].sched, c->own & EMU_PAIRS ? CU_FORM_PINGPONG_PAIR : CU_FORM_PINGPONG);
      if (!cu_schedule_check(km, i, -1, why, sizeof why)) return fprintf(stderr, "%s: %s\n", c->name, why), 1;
    }
  }
  for (int i = 0; i < km->nk; i++) { /* portc's own kernels, unless the case is of cuBLASLt's path with an epilogue kernel */
    kir_schedule *s = &km->k[i].sched;
    bool ta, tb;
    if (!(c->own & EMU_LIBRARY) || s->library < 2) s->library = 0;
    else if (cu_blaslt_view(km, i, &ta, &tb) && (ta || tb)) return fprintf(stderr, "%s: the host's product takes A and B as they lie\n", c->name), 1;
  }
  char *src = emit_module(&cuda_dialect, km);
  bool marked = src && strstr(src, c->marks);
  free(src);
  char cpp[128], so[128], cmd[1024];
  snprintf(cpp, sizeof cpp, "%s/case%d.cpp", work, index);
  snprintf(so, sizeof so, "%s/case%d.so", work, index);
  snprintf(cmd, sizeof cmd, "c++ -std=c++20 -O1 -w -Wno-psabi -shared -fPIC -I%s -o %s %s", shim_dir, so, cpp);
  int rc = 1;
  void *lib = NULL, **mem = calloc((size_t)km->nbuf, sizeof *mem);
  portc_bindings *b = portc_bindings_new(g);
  portc_tensor *ref = NULL;
  portc_bindings_set_seed(b, 11);
  if (!marked) {
    fprintf(stderr, "%s: the source lacks \"%s\": the kernel under test is not the one scheduled\n", c->name, c->marks);
  } else if (portc_reference_run(g, b, &ref)) {
    fprintf(stderr, "%s: the reference: %s\n", c->name, portc_last_error());
  } else if (!write_program(km, cpp) || system(cmd) != 0 || !(lib = dlopen(so, RTLD_NOW | RTLD_LOCAL))) {
    fprintf(stderr, "%s: the host program did not build (%s)\n", c->name, cmd);
  } else {
    int (*run)(void **) = (int (*)(void **))dlsym(lib, "pc_emu_run");
    int out = -1;
    for (int j = 0; j < km->nbuf; j++) {
      const kir_buf *kb = &km->buf[j];
      int64_t n = shape_count(&kb->sh, NULL);
      mem[j] = calloc((size_t)(n > 0 ? n : 1), (size_t)portc_dtype_size(kb->dt));
      const char *name = km->g->nodes[kb->node].name;
      const portc_tensor *t = kb->role == BUF_INPUT || kb->role == BUF_PARAM ? portc_bindings_get(b, name) : NULL;
      for (int64_t e = 0; t && e < n; e++) put(mem[j], kb->dt, e, portc_tensor_get(t, e));
      if (kb->role == BUF_OUTPUT) out = j;
    }
    int st = run ? run(mem) : -1;
    if (st || out < 0) {
      fprintf(stderr, "%s: the run failed (%d)\n", c->name, st);
    } else {
      double num = 0, den = 0;
      int64_t n = portc_tensor_numel(ref), nan_mismatch = 0;
      for (int64_t e = 0; e < n; e++) {
        double y = get(mem[out], km->buf[out].dt, e), r = portc_tensor_get(ref, e);
        if (isnan(r) || isnan(y)) {
          nan_mismatch += isnan(r) != isnan(y);
          continue;
        }
        num += (y - r) * (y - r), den += r * r;
      }
      double err = den > 0 ? sqrt(num / den) : sqrt(num);
      rc = err <= c->tol && !nan_mismatch ? 0 : 1;
      printf("%s %s: relative error %.2e (bound %.0e)%s\n", rc ? "FAIL" : "ok  ", c->name, err, c->tol,
             nan_mismatch ? ", NaN where the reference has none or the other way round" : "");
    }
  }
  if (lib) dlclose(lib);
  for (int j = 0; j < km->nbuf; j++) free(mem[j]);
  free(mem);
  portc_tensor_free(ref);
  portc_bindings_free(b);
  kir_module_free(km);
  portc_graph_free(g);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: cuda_emulate SHIM_DIR\n");
    return 2;
  }
  shim_dir = argv[1];
  setvbuf(stdout, NULL, _IONBF, 0);
  if (system("c++ --version >/dev/null 2>&1") != 0) {
    printf("SKIPPED: no C++ compiler (c++) to build the host programs\n");
    return 77;
  }
  if (!mkdtemp(work)) return perror("mkdtemp"), 1;
  int failures = 0;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) failures += run_case(&cases[i], (int)i);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", work);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", work);
  printf("cuda_emulate: %zu cases, %d failed\n", sizeof cases / sizeof *cases, failures);
  return failures ? 1 : 0;
}
