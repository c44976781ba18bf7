/*
 * prelude.h: what every generated HIP source starts with. The wavefront size is PC_WAVE, defined
 * by the compile step from the device (64 on CDNA such as gfx90a and gfx942, 32 on RDNA), and
 * every reduction is written for either: shuffles within a wavefront with an explicit width,
 * then one pass over the wavefronts' partials in LDS. f16 is HIP's __half with f32 arithmetic;
 * bf16 is converted in software (round to nearest even), since hiprtc has no bf16 header. Math
 * functions are the device library's (ocml).
 *
 * HIP_ON_CUDA_PRELUDE goes in front of the same source where the HIP dialect is compiled by
 * NVRTC for an NVIDIA GPU (the hip-on-cuda target): it maps the few HIP device builtins the
 * dialect uses to CUDA's.
 */
#ifndef PORTC_HIP_PRELUDE_H
#define PORTC_HIP_PRELUDE_H

#define HIP_ON_CUDA_PRELUDE                                                                \
  "#define PC_HIP_ON_CUDA 1\n"                                                             \
  "#include <cuda_fp16.h>\n"                                                               \
  "typedef long long int64_t;\n"                                                           \
  "#define __shfl_xor(v, mask, width) __shfl_xor_sync(0xffffffffu, (v), (mask), (width))\n"

static const char hip_prelude[] =
    "#if !defined(__HIPCC_RTC__) && !defined(PC_HIP_ON_CUDA)\n"
    "#include <hip/hip_runtime.h>\n"
    "#include <hip/hip_fp16.h>\n"
    "#endif\n"
    "#ifndef PC_WAVE\n"
    "#error PC_WAVE, the wavefront size, must be defined\n"
    "#endif\n"
    "#ifndef INFINITY\n"
    "#define INFINITY __int_as_float(0x7f800000)\n"
    "#define NAN __int_as_float(0x7fffffff)\n"
    "#endif\n"
    "#ifndef INT64_C\n"
    "#define INT64_C(x) x##LL\n"
    "#endif\n"
    "#ifndef INT64_MIN\n"
    "#define INT64_MAX 9223372036854775807LL\n"
    "#define INT64_MIN (-INT64_MAX - 1)\n"
    "#endif\n"
    "#ifndef PC_KERNEL\n"
    "#define PC_KERNEL extern \"C\" __global__\n"
    "#endif\n"
    "typedef unsigned long long pc_u64;\n"
    "#define PC_I32(x) ((int64_t)(int)(x))\n"
    "#define PC_I64(x) ((int64_t)(x))\n"
    "#define PC_IDX(x) ((int)(x))\n"
    "#define PC_BOOL(x) ((int64_t)((x) != 0))\n"
    "#define PC_FLOAT(x) ((float)(x))\n"
    "/* symbol values, passed by value; S[k] reads symbol k */\n"
    "struct pc_syms {\n"
    "  int v[32];\n"
    "  __device__ int operator[](int i) const { return v[i]; }\n"
    "};\n"
    "__device__ inline float pc_ld_bf16(unsigned short h) { return __uint_as_float((unsigned)h << 16); }\n"
    "__device__ inline unsigned short pc_st_bf16(float x) {\n"
    "  unsigned u = __float_as_uint(x);\n"
    "  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);\n"
    "  u += 0x7fffu + ((u >> 16) & 1u);\n"
    "  return (unsigned short)(u >> 16);\n"
    "}\n"
    "__device__ inline float pc_round_bf16(float x) { return pc_ld_bf16(pc_st_bf16(x)); }\n"
    "__device__ inline float pc_round_f16(float x) { return __half2float(__float2half(x)); }\n"
    "__device__ inline void pc_ld4(const float *p, float *o) { const float4 q = *(const float4 *)p; o[0] = q.x, o[1] = q.y, o[2] = q.z, o[3] = q.w; }\n"
    "__device__ inline int64_t pc_f2i32(float x) {\n"
    "  if (x != x) return 0; if (x <= -2147483648.0f) return -2147483647 - 1; if (x >= 2147483647.0f) return 2147483647;\n"
    "  return (int64_t)(int)x;\n"
    "}\n"
    "__device__ inline int64_t pc_f2i64(float x) {\n"
    "  if (x != x) return 0; if (x <= -9223372036854775808.0f) return INT64_MIN; if (x >= 9223372036854775807.0f) return INT64_MAX;\n"
    "  return (int64_t)x;\n"
    "}\n"
    "__device__ inline float pc_maxf(float a, float b) { return (a != a || b != b) ? NAN : a > b ? a : b; }\n"
    "__device__ inline float pc_minf(float a, float b) { return (a != a || b != b) ? NAN : a < b ? a : b; }\n"
    "__device__ inline float pc_relu(float x) { return x != x ? x : x > 0.0f ? x : 0.0f; }\n"
    "__device__ inline float pc_signf(float x) { return x != x ? x : (float)((x > 0.0f) - (x < 0.0f)); }\n"
    "__device__ inline float pc_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }\n"
    "__device__ inline float pc_gelu_tanh(float x) {\n"
    "  return 0.5f * x * (1.0f + tanhf(0.79788456080286535f * (x + 0.044715f * x * x * x)));\n"
    "}\n"
    "__device__ inline int64_t pc_idiv(int64_t x, int64_t y) {\n"
    "  return y == 0 ? 0 : y == -1 ? (int64_t)(0 - (pc_u64)x) : x / y;\n"
    "}\n"
    "__device__ inline int64_t pc_idivc(int64_t x, int64_t y, unsigned *bad) {\n"
    "  if (y == 0) atomicOr(bad, 2u); /* STATUS_DIV_ZERO */\n"
    "  return pc_idiv(x, y);\n"
    "}\n"
    "/* Work-group reductions: a butterfly over the wavefront's lanes (width PC_WAVE), then every\n"
    " * thread combines the wavefronts' partials from LDS in the same order, so all threads hold\n"
    " * the same result. Work groups are whole wavefronts. */\n"
    "struct pc_op_add { template <class T> __device__ T operator()(T a, T b) const { return (T)(a + b); } };\n"
    "struct pc_op_mul { template <class T> __device__ T operator()(T a, T b) const { return (T)(a * b); } };\n"
    "struct pc_op_max { template <class T> __device__ T operator()(T a, T b) const { return a > b ? a : b; } };\n"
    "struct pc_op_min { template <class T> __device__ T operator()(T a, T b) const { return a < b ? a : b; } };\n"
    "template <class T, class F> __device__ inline T pc_block_reduce(T v, F f) {\n"
    "  __shared__ T part[1024 / PC_WAVE];\n"
    "  for (int o = PC_WAVE / 2; o > 0; o >>= 1) v = f(v, __shfl_xor(v, o, PC_WAVE));\n"
    "  const int nw = (int)(blockDim.x / PC_WAVE);\n"
    "  if (nw == 1) return v;\n"
    "  if (threadIdx.x % PC_WAVE == 0) part[threadIdx.x / PC_WAVE] = v;\n"
    "  __syncthreads();\n"
    "  T r = part[0];\n"
    "  for (int i = 1; i < nw; i++) r = f(r, part[i]);\n"
    "  __syncthreads();\n"
    "  return r;\n"
    "}\n"
    "__device__ float pc_wg_sum(float v) { return pc_block_reduce(v, pc_op_add()); }\n"
    "__device__ float pc_wg_prod(float v) { return pc_block_reduce(v, pc_op_mul()); }\n"
    "__device__ float pc_wg_max(float v) { return pc_block_reduce(v, pc_op_max()); }\n"
    "__device__ float pc_wg_min(float v) { return pc_block_reduce(v, pc_op_min()); }\n"
    "__device__ int64_t pc_wg_sumi(int64_t v) { return (int64_t)pc_block_reduce((pc_u64)v, pc_op_add()); }\n"
    "__device__ int64_t pc_wg_prodi(int64_t v) { return (int64_t)pc_block_reduce((pc_u64)v, pc_op_mul()); }\n"
    "__device__ int64_t pc_wg_maxi(int64_t v) { return pc_block_reduce(v, pc_op_max()); }\n"
    "__device__ int64_t pc_wg_mini(int64_t v) { return pc_block_reduce(v, pc_op_min()); }\n"
    "\n";

#endif
