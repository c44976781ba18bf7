/*
 * cuda_emu_shim.h: what the CUDA dialect's kernels need to compile as host C++ and run on the
 * CPU, one block at a time, for tests/cuda_emulate.c. It stands in for cuda/prelude.h.
 *
 * A block's threads are coroutines (ucontext) of one OS thread, switched only where CUDA threads
 * wait for each other: __syncthreads, and the warp-wide instructions, which run as PTX describes
 * them. Each lane puts its operands in its warp's slot, the warp meets, and each lane computes its
 * own result from all 32 slots:
 *  - ldmatrix.x4 (and .trans): lanes 8i..8i+7 give the row addresses of 8x8 matrix i; lane l
 *    receives row l/4, elements 2(l%4) and 2(l%4)+1 of each (transposed: column l/4, rows 2(l%4)
 *    and 2(l%4)+1);
 *  - mma.sync.m16n8k16 with f16/bf16 operands and f32 sums: A fragments a0..a3 hold (row g, k 2t),
 *    (g+8, 2t), (g, 2t+8), (g+8, 2t+8) and the next k; B fragments b0, b1 (k 2t, n g), (k 2t+8,
 *    n g); sums c0..c3 (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1), where g = lane/4, t = lane%4;
 *  - shfl.bfly (__shfl_xor_sync).
 * cp.async copies at once. A wait that never ends (a barrier some threads never reach) is reported
 * as a deadlock. The dialect's verified mma.sync matmul runs through it too, which checks the
 * emulation against what the hardware computed.
 */
#ifndef PORTC_TESTS_CUDA_EMU_SHIM_H
#define PORTC_TESTS_CUDA_EMU_SHIM_H

#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

using std::max;
using std::min;

#define PC_KERNEL extern "C"
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __grid_constant__
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

/* everything below has internal linkage: each case's program is a library of its own, and
 * libraries must not share the emulator's state */
namespace {

struct pc_dim3 {
  unsigned x, y, z;
};

/* ---- 16-bit floats ---- */
struct __half {
  _Float16 v;
};
struct __nv_bfloat16 {
  uint16_t bits;
};
struct __half2 {
  __half x, y;
};
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
inline float __half2float(__half h) { return (float)h.v; }
inline __half __float2half_rn(float f) { return __half{(_Float16)f}; }
inline float __bfloat162float(__nv_bfloat16 b) {
  uint32_t u = (uint32_t)b.bits << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if (std::isnan(f)) return __nv_bfloat16{0x7fc0};
  u += 0x7fffu + ((u >> 16) & 1u);
  return __nv_bfloat16{(uint16_t)(u >> 16)};
}
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__float2half_rn(a), __float2half_rn(b)}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162{__float2bfloat16_rn(a), __float2bfloat16_rn(b)}; }
inline float pc_emu_f(uint16_t bits, __half) {
  __half h;
  memcpy(&h, &bits, 2);
  return __half2float(h);
}
inline float pc_emu_f(uint16_t bits, __nv_bfloat16) { return __bfloat162float(__nv_bfloat16{bits}); }

/* ---- the emulated block ---- */
struct pc_emu_thread {
  ucontext_t ctx;
  pc_dim3 idx;
  int state; /* 0 runnable, 1 waiting, 2 done */
  int wait;  /* the barrier it waits at: -1 the block's, w warp w's */
  std::vector<char> stack;
};
std::vector<pc_emu_thread> pc_emu_t;
int pc_emu_cur, pc_emu_deadlock;
ucontext_t pc_emu_sched;
pc_dim3 pc_emu_block, pc_emu_grid, pc_emu_bdim;
std::function<void()> pc_emu_body;
std::vector<unsigned char> pc_emu_shared; /* the block's dynamic shared memory */
int pc_emu_arrived[65];                    /* per barrier: [0] the block's, [1 + w] warp w's */
/* the warps' slots for their collective instructions */
struct pc_emu_slots {
  const void *p[32];
  unsigned a[32][4], b[32][2];
  float c[32][4];
  uint64_t v[32];
};
pc_emu_slots pc_emu_warp[32];

#define threadIdx (pc_emu_t[pc_emu_cur].idx)
#define blockIdx pc_emu_block
#define gridDim pc_emu_grid
#define blockDim pc_emu_bdim
#define pc_emu_dynamic_shared (pc_emu_shared.data())

/* the current thread waits until `count` threads have come to barrier `which` */
inline void pc_emu_meet(int which, int count) {
  int slot = which + 1;
  if (++pc_emu_arrived[slot] == count) {
    pc_emu_arrived[slot] = 0;
    for (auto &t : pc_emu_t)
      if (t.state == 1 && t.wait == which) t.state = 0;
    return;
  }
  pc_emu_thread &me = pc_emu_t[pc_emu_cur];
  me.state = 1, me.wait = which;
  swapcontext(&me.ctx, &pc_emu_sched);
}
inline int pc_emu_lane() { return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31; }
inline int pc_emu_warpid() { return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) >> 5; }
inline void __syncthreads() { pc_emu_meet(-1, (int)pc_emu_t.size()); }
inline void pc_emu_warp_meet() { pc_emu_meet(pc_emu_warpid(), 32); }

inline void pc_emu_entry() {
  pc_emu_body();
  pc_emu_t[pc_emu_cur].state = 2;
}

/* runs body as every thread of every block of the grid; false on a deadlock */
inline bool pc_emu_launch(pc_dim3 grid, pc_dim3 block, int shared, std::function<void()> body) {
  pc_emu_grid = grid, pc_emu_bdim = block, pc_emu_body = body;
  int n = (int)(block.x * block.y * block.z);
  pc_emu_t.assign((size_t)n, pc_emu_thread{});
  pc_emu_shared.assign((size_t)shared + 16, 0);
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned bx = 0; bx < grid.x; bx++) {
        pc_emu_block = pc_dim3{bx, by, bz};
        memset(pc_emu_arrived, 0, sizeof pc_emu_arrived);
        for (int i = 0; i < n; i++) {
          pc_emu_thread &t = pc_emu_t[(size_t)i];
          t.idx = pc_dim3{(unsigned)i % block.x, (unsigned)i / block.x % block.y, (unsigned)i / (block.x * block.y)};
          t.state = 0, t.wait = 0;
          t.stack.resize(1 << 20);
          getcontext(&t.ctx);
          t.ctx.uc_stack.ss_sp = t.stack.data();
          t.ctx.uc_stack.ss_size = t.stack.size();
          t.ctx.uc_link = &pc_emu_sched;
          makecontext(&t.ctx, pc_emu_entry, 0);
        }
        for (int left = n;;) {
          bool ran = false;
          left = 0;
          for (int i = 0; i < n; i++) {
            if (pc_emu_t[(size_t)i].state == 2) continue;
            left++;
            if (pc_emu_t[(size_t)i].state != 0) continue;
            pc_emu_cur = i, ran = true;
            swapcontext(&pc_emu_sched, &pc_emu_t[(size_t)i].ctx);
          }
          if (!left) break;
          if (!ran) {
            fprintf(stderr, "deadlock in block (%u, %u, %u): threads wait at barriers no one else reaches\n", bx, by, bz);
            pc_emu_deadlock = 1;
            return false;
          }
        }
      }
  return true;
}

/* ---- what cuda/prelude.h gives the kernels ---- */
struct pc_syms {
  int v[32];
  int operator[](int i) const { return v[i]; }
};
#define PC_I32(x) ((int64_t)(int32_t)(x))
#define PC_I64(x) ((int64_t)(x))
#define PC_IDX(x) ((int)(x))
#define PC_BOOL(x) ((int64_t)((x) != 0))
#define PC_FLOAT(x) ((float)(x))
inline float pc_maxf(float a, float b) { return (a != a || b != b) ? NAN : a > b ? a : b; }
inline float pc_minf(float a, float b) { return (a != a || b != b) ? NAN : a < b ? a : b; }
inline float pc_relu(float x) { return x != x ? x : x > 0.0f ? x : 0.0f; }
inline float pc_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline unsigned atomicOr(unsigned *p, unsigned v) {
  unsigned o = *p;
  *p |= v;
  return o;
}

inline void pc_cp16(void *dst, const void *src, bool ok) {
  if (ok) memcpy(dst, src, 16);
  else memset(dst, 0, 16);
}
inline void pc_cp_commit() {}
template <int N> inline void pc_cp_wait() {}

inline uint16_t pc_emu_at(const void *row, int i) {
  uint16_t v;
  memcpy(&v, (const char *)row + 2 * i, 2);
  return v;
}
inline void pc_ldsm_x4(unsigned *r, const void *p) {
  pc_emu_slots &s = pc_emu_warp[pc_emu_warpid()];
  int l = pc_emu_lane();
  s.p[l] = p;
  pc_emu_warp_meet();
  for (int i = 0; i < 4; i++) r[i] = pc_emu_at(s.p[8 * i + l / 4], 2 * (l % 4)) | (unsigned)pc_emu_at(s.p[8 * i + l / 4], 2 * (l % 4) + 1) << 16;
  pc_emu_warp_meet();
}
inline void pc_ldsm_x4_t(unsigned *r, const void *p) {
  pc_emu_slots &s = pc_emu_warp[pc_emu_warpid()];
  int l = pc_emu_lane();
  s.p[l] = p;
  pc_emu_warp_meet();
  for (int i = 0; i < 4; i++) r[i] = pc_emu_at(s.p[8 * i + 2 * (l % 4)], l / 4) | (unsigned)pc_emu_at(s.p[8 * i + 2 * (l % 4) + 1], l / 4) << 16;
  pc_emu_warp_meet();
}
template <class T> inline void pc_mma(float *c, const unsigned *a, const unsigned *b, T) {
  pc_emu_slots &s = pc_emu_warp[pc_emu_warpid()];
  int l = pc_emu_lane();
  memcpy(s.a[l], a, 16), memcpy(s.b[l], b, 8);
  pc_emu_warp_meet();
  float A[16][16], B[16][8];
  for (int L = 0; L < 32; L++) {
    int g = L / 4, t = L % 4;
    for (int e = 0; e < 2; e++) {
      A[g][2 * t + e] = pc_emu_f((uint16_t)(s.a[L][0] >> 16 * e), T());
      A[g + 8][2 * t + e] = pc_emu_f((uint16_t)(s.a[L][1] >> 16 * e), T());
      A[g][2 * t + 8 + e] = pc_emu_f((uint16_t)(s.a[L][2] >> 16 * e), T());
      A[g + 8][2 * t + 8 + e] = pc_emu_f((uint16_t)(s.a[L][3] >> 16 * e), T());
      B[2 * t + e][g] = pc_emu_f((uint16_t)(s.b[L][0] >> 16 * e), T());
      B[2 * t + 8 + e][g] = pc_emu_f((uint16_t)(s.b[L][1] >> 16 * e), T());
    }
  }
  int g = l / 4, t = l % 4;
  for (int h = 0; h < 4; h++) {
    int row = g + (h >> 1) * 8, col = 2 * t + (h & 1);
    float sum = c[h];
    for (int k = 0; k < 16; k++) sum += A[row][k] * B[k][col];
    c[h] = sum;
  }
  pc_emu_warp_meet();
}
inline unsigned pc_pack2(float a, float b, __half) {
  __half2 h = __floats2half2_rn(a, b);
  unsigned u;
  memcpy(&u, &h, 4);
  return u;
}
inline unsigned pc_pack2(float a, float b, __nv_bfloat16) {
  __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  unsigned u;
  memcpy(&u, &h, 4);
  return u;
}
template <class V> inline V __shfl_xor_sync(unsigned, V v, int o) {
  pc_emu_slots &s = pc_emu_warp[pc_emu_warpid()];
  int l = pc_emu_lane();
  memcpy(&s.v[l], &v, sizeof v);
  pc_emu_warp_meet();
  V r;
  memcpy(&r, &s.v[l ^ o], sizeof r);
  pc_emu_warp_meet();
  return r;
}

} // namespace

#endif
