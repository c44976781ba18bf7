/*
 * cuda_emu_shim.h: what the CUDA dialect's kernels need to compile as host C++ and run on the
 * CPU, one block at a time (or one cluster of blocks at a time), for tests/cuda_emulate.c. It
 * stands in for cuda/prelude.h.
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
 * cp.async lands when its thread waits for its group (cp.async.wait_group), not before, so that a
 * stage read before its wait, or refilled while another thread still reads it, gives wrong sums
 * here too (the threads run in turn between barriers). A wait that never ends (a barrier some threads never reach) is reported
 * as a deadlock. The dialect's verified mma.sync matmul runs through it too, which checks the
 * emulation against what the hardware computed.
 *
 * A launch in clusters runs a cluster's blocks at once: their threads take turns in one scheduler,
 * each block with its own dynamic shared memory (the current thread's is pc_emu_shared_base), its
 * own barriers and warps' slots. Remote mbarrier arrivals and multicast copies reach the other
 * blocks' memory at the same offset, as on the GPU. Block r runs in every (2r + 1)-th round of
 * the scheduler, so the others run ahead of it, as a block may on the GPU: a block that reuses
 * memory of another's before the other is done with it computes wrong sums here too. Static
 * shared memory stays one instance, which no kernel launched in clusters uses.
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
using std::isnan; /* CUDA's device isnan, as the pooling templates call it */

#define PC_KERNEL extern "C"
#define __global__
#define __device__
/* a block's static shared memory: one instance for the coroutines of the block that runs */
#define __shared__ static
#define __forceinline__ inline
#define __restrict__ __restrict
#define __grid_constant__
#define __cluster_dims__(...)
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

/* everything below has internal linkage: each case's program is a library of its own, and
 * libraries must not share the emulator's state */
namespace {

struct pc_dim3 {
  unsigned x, y, z;
};

struct float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) { return float2{x, y}; }
struct int2 {
  int x, y;
};
inline int2 make_int2(int x, int y) { return int2{x, y}; }

/* ---- 16-bit floats ---- */
inline uint16_t pc_emu_bf16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if (std::isnan(f)) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
struct __half {
  _Float16 v;
  __half() = default;
  __half(float f) : v((_Float16)f) {}
};
struct __nv_bfloat16 {
  uint16_t bits;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : bits(pc_emu_bf16_bits(f)) {}
};
struct __half2 {
  __half x, y;
};
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
inline unsigned __float_as_uint(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
/* as the prelude's: x as two TF32 values, for Hopper's f32 matmul */
inline unsigned pc_tf32_round(unsigned u) { return (u + 0x1000u) & 0xffffe000u; }
inline void pc_tf32_split(float x, unsigned &hi, unsigned &lo) {
  const unsigned u = __float_as_uint(x);
  hi = pc_tf32_round(u);
  if ((hi & 0x7f800000u) == 0x7f800000u) hi = u & 0xffffe000u;
  lo = __uint_as_float(hi) == x ? 0u : pc_tf32_round(__float_as_uint(x - __uint_as_float(hi)));
}
inline float __half2float(__half h) { return (float)h.v; }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __bfloat162float(__nv_bfloat16 b) {
  uint32_t u = (uint32_t)b.bits << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__float2half_rn(a), __float2half_rn(b)}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162{__float2bfloat16_rn(a), __float2bfloat16_rn(b)}; }
inline float pc_emu_f(uint16_t bits, __half) {
  __half h;
  memcpy(&h, &bits, 2);
  return __half2float(h);
}
inline float pc_emu_f(uint16_t bits, __nv_bfloat16) {
  __nv_bfloat16 b;
  b.bits = bits;
  return __bfloat162float(b);
}

/* ---- the emulated block ---- */
struct pc_emu_copy { /* a cp.async in flight: its 16 bytes land in shared memory at the wait */
  void *dst;
  unsigned char v[16];
};
struct pc_emu_thread {
  ucontext_t ctx;
  pc_dim3 idx, block;
  int rank;  /* its block's in the cluster */
  int state; /* 0 runnable, 1 waiting at a barrier, 2 done, 3 spinning (runnable again next round) */
  int wait;  /* the barrier it waits at: -1 the block's, w warp w's, PC_EMU_CLUSTER the cluster's */
  std::vector<char> stack;
  std::vector<pc_emu_copy> cp_open;                /* issued, not yet committed */
  std::vector<std::vector<pc_emu_copy>> cp_groups; /* committed, oldest first */
};
std::vector<pc_emu_thread> pc_emu_t;
int pc_emu_cur, pc_emu_deadlock;
ucontext_t pc_emu_sched;
pc_dim3 pc_emu_grid, pc_emu_bdim;
std::function<void()> pc_emu_body;
enum { PC_EMU_MAX_CLUSTER = 8, PC_EMU_CLUSTER = -2 };
std::vector<unsigned char> pc_emu_shared[PC_EMU_MAX_CLUSTER]; /* each block's dynamic shared memory */
unsigned char *pc_emu_bases[PC_EMU_MAX_CLUSTER];             /* ...from a 1024-byte boundary */
unsigned char *pc_emu_shared_base;                            /* the current thread's block's */
int pc_emu_arrived[PC_EMU_MAX_CLUSTER][74]; /* per block and barrier: [0] the block's, [1 + w] warp w's, [65] the named barrier 1,
                                             * [66 + g] warpgroup g's */
int pc_emu_cluster_arrived;
long pc_emu_progress;   /* counts what can release a waiting thread: barriers met, mbarrier phases */
/* an mbarrier (Hopper): arrivals still expected in this phase, the bytes still expected, the phase */
struct pc_emu_mbar {
  int count, pending;
  long tx;
  unsigned phase;
};
std::vector<std::pair<const void *, pc_emu_mbar>> pc_emu_mbars;
/* the warps' slots for their collective instructions */
struct pc_emu_slots {
  const void *p[32];
  unsigned a[32][4], b[32][2];
  float c[32][4];
  uint64_t v[32];
};
pc_emu_slots pc_emu_warps[PC_EMU_MAX_CLUSTER][32];

#define threadIdx (pc_emu_t[pc_emu_cur].idx)
#define blockIdx (pc_emu_t[pc_emu_cur].block)
#define gridDim pc_emu_grid
#define blockDim pc_emu_bdim
#define pc_emu_dynamic_shared pc_emu_shared_base

/* the current thread waits until `count` threads of its block (of its cluster: PC_EMU_CLUSTER)
 * have come to barrier `which` */
inline void pc_emu_meet(int which, int count) {
  const int rank = pc_emu_t[pc_emu_cur].rank;
  int &arrived = which == PC_EMU_CLUSTER ? pc_emu_cluster_arrived : pc_emu_arrived[rank][which + 1];
  if (++arrived == count) {
    arrived = 0, pc_emu_progress++;
    for (auto &t : pc_emu_t)
      if (t.state == 1 && t.wait == which && (which == PC_EMU_CLUSTER || t.rank == rank)) t.state = 0;
    return;
  }
  pc_emu_thread &me = pc_emu_t[pc_emu_cur];
  me.state = 1, me.wait = which;
  swapcontext(&me.ctx, &pc_emu_sched);
}
inline int pc_emu_lane() { return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31; }
inline int pc_emu_warpid() { return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) >> 5; }
inline int pc_emu_block_threads() { return (int)(pc_emu_bdim.x * pc_emu_bdim.y * pc_emu_bdim.z); }
inline void __syncthreads() { pc_emu_meet(-1, pc_emu_block_threads()); }
/* the calling warp's slots for its collective instructions */
inline pc_emu_slots &pc_emu_warp_slots() { return pc_emu_warps[pc_emu_t[pc_emu_cur].rank][pc_emu_warpid()]; }
inline void pc_emu_warp_meet() { pc_emu_meet(pc_emu_warpid(), 32); }
inline void __syncwarp(unsigned = 0xffffffffu) { pc_emu_warp_meet(); }

/* a thread that spins (an mbarrier wait) lets the others run */
inline void pc_emu_yield() {
  pc_emu_thread &me = pc_emu_t[pc_emu_cur];
  me.state = 3;
  swapcontext(&me.ctx, &pc_emu_sched);
}

inline void pc_emu_entry() {
  pc_emu_body();
  pc_emu_t[pc_emu_cur].state = 2, pc_emu_progress++;
}

/* what cuBLASLt computes where the runtime calls it (cuda/blaslt.c): D = A B, A (M x K) and B
 * (K x N) row-major, f32 sums, into an f32 scratch (library 2) or the output's dtype (library 3),
 * for the epilogue kernel kN_epi after it */
inline float pc_emu_tof(float x) { return x; }
inline float pc_emu_tof(__half x) { return __half2float(x); }
inline float pc_emu_tof(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class TA, class TD> void pc_emu_blas(const TA *a, const TA *b, TD *d, long M, long N, long K) {
  for (long m = 0; m < M; m++)
    for (long n = 0; n < N; n++) {
      float s = 0;
      for (long k = 0; k < K; k++) s += pc_emu_tof(a[m * K + k]) * pc_emu_tof(b[k * N + n]);
      d[m * N + n] = TD(s);
    }
}
/* runs body as every thread of every block of the grid, `cluster` blocks along x at a time (grid.x
 * a multiple of it); false on a deadlock */
inline bool pc_emu_launch(pc_dim3 grid, pc_dim3 block, int shared, std::function<void()> body, int cluster = 1) {
  pc_emu_grid = grid, pc_emu_bdim = block, pc_emu_body = body;
  const int cl = cluster > 1 ? cluster : 1, n = (int)(block.x * block.y * block.z), all = n * cl;
  if (cl > PC_EMU_MAX_CLUSTER || grid.x % (unsigned)cl) {
    fprintf(stderr, "a grid of %u blocks along x in clusters of %d\n", grid.x, cl);
    return false;
  }
  pc_emu_t.assign((size_t)all, pc_emu_thread{});
  pc_emu_mbars.clear();
  for (int r = 0; r < cl; r++) {
    pc_emu_shared[r].assign((size_t)shared + 2048, 0);
    pc_emu_bases[r] = pc_emu_shared[r].data() + (1024 - (uintptr_t)pc_emu_shared[r].data() % 1024) % 1024;
  }
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned bx = 0; bx < grid.x; bx += (unsigned)cl) {
        memset(pc_emu_arrived, 0, sizeof pc_emu_arrived);
        pc_emu_cluster_arrived = 0;
        for (int i = 0; i < all; i++) {
          pc_emu_thread &t = pc_emu_t[(size_t)i];
          const int rank = i / n, j = i % n;
          t.idx = pc_dim3{(unsigned)j % block.x, (unsigned)j / block.x % block.y, (unsigned)j / (block.x * block.y)};
          t.block = pc_dim3{bx + (unsigned)rank, by, bz}, t.rank = rank;
          t.state = 0, t.wait = 0;
          t.stack.resize(256 << 10);
          getcontext(&t.ctx);
          t.ctx.uc_stack.ss_sp = t.stack.data();
          t.ctx.uc_stack.ss_size = t.stack.size();
          t.ctx.uc_link = &pc_emu_sched;
          makecontext(&t.ctx, pc_emu_entry, 0);
        }
        for (int left = all, idle = 0, round = 0;; round++) {
          bool ran = false;
          long before = pc_emu_progress;
          left = 0;
          for (int i = 0; i < all; i++) {
            pc_emu_thread &t = pc_emu_t[(size_t)i];
            if (t.state == 2) continue;
            left++;
            if (t.state == 3) t.state = 0; /* a spinning thread tries again */
            if (t.state != 0) continue;
            ran = true;
            if (round % (2 * t.rank + 1)) continue; /* block r of a cluster runs every (2r + 1)-th round */
            pc_emu_cur = i, pc_emu_shared_base = pc_emu_bases[t.rank];
            swapcontext(&pc_emu_sched, &t.ctx);
          }
          if (!left) break;
          idle = pc_emu_progress == before ? idle + 1 : 0;
          if (!ran || idle > 100) {
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
inline float pc_round_f16(float x) { return __half2float(__float2half_rn(x)); } /* autocast's casts */
inline float pc_round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
inline float pc_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline float pc_ex2(float x) { return exp2f(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
/* N consecutive elements of a 16-byte aligned address as floats, as the prelude's pc_ldv reads
 * them, and stored from floats, as its pc_stv does */
inline void pc_emu_aligned(const void *p, const char *what) {
  if ((uintptr_t)p % 16) {
    fprintf(stderr, "%s: a 16-byte access at an address that is not 16-byte aligned\n", what);
    abort();
  }
}
template <int N, class T> inline void pc_ldv(const T *p, float *o) {
  pc_emu_aligned(p, "pc_ldv");
  for (int i = 0; i < N; i++) o[i] = pc_emu_tof(p[i]);
}
template <int N, class T> inline void pc_stv(T *p, const float *v) {
  pc_emu_aligned(p, "pc_stv");
  for (int i = 0; i < N; i++) p[i] = T(v[i]);
}
inline unsigned atomicOr(unsigned *p, unsigned v) {
  unsigned o = *p;
  *p |= v;
  return o;
}

/* asynchronous as on the GPU: a copy's bytes reach shared memory only when its thread waits for
 * its group, so that a kernel that reads a stage before waiting for it reads stale data here too */
inline void pc_cp16(void *dst, const void *src, bool ok) {
  pc_emu_copy c;
  c.dst = dst;
  if (ok) memcpy(c.v, src, 16);
  else memset(c.v, 0, 16);
  pc_emu_t[pc_emu_cur].cp_open.push_back(c);
}
inline void pc_cp_commit() {
  pc_emu_thread &t = pc_emu_t[pc_emu_cur];
  t.cp_groups.push_back(std::move(t.cp_open));
  t.cp_open.clear();
}
template <int N> inline void pc_cp_wait() {
  pc_emu_thread &t = pc_emu_t[pc_emu_cur];
  while ((int)t.cp_groups.size() > N) {
    for (const pc_emu_copy &c : t.cp_groups.front()) memcpy(c.dst, c.v, 16);
    t.cp_groups.erase(t.cp_groups.begin());
  }
}

inline uint16_t pc_emu_at(const void *row, int i) {
  uint16_t v;
  memcpy(&v, (const char *)row + 2 * i, 2);
  return v;
}
inline void pc_ldsm_x4(unsigned *r, const void *p) {
  pc_emu_slots &s = pc_emu_warp_slots();
  int l = pc_emu_lane();
  s.p[l] = p;
  pc_emu_warp_meet();
  for (int i = 0; i < 4; i++) r[i] = pc_emu_at(s.p[8 * i + l / 4], 2 * (l % 4)) | (unsigned)pc_emu_at(s.p[8 * i + l / 4], 2 * (l % 4) + 1) << 16;
  pc_emu_warp_meet();
}
inline void pc_ldsm_x4_t(unsigned *r, const void *p) {
  pc_emu_slots &s = pc_emu_warp_slots();
  int l = pc_emu_lane();
  s.p[l] = p;
  pc_emu_warp_meet();
  for (int i = 0; i < 4; i++) r[i] = pc_emu_at(s.p[8 * i + 2 * (l % 4)], l / 4) | (unsigned)pc_emu_at(s.p[8 * i + 2 * (l % 4) + 1], l / 4) << 16;
  pc_emu_warp_meet();
}
template <class T> inline void pc_mma(float *c, const unsigned *a, const unsigned *b, T) {
  pc_emu_slots &s = pc_emu_warp_slots();
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
  pc_emu_slots &s = pc_emu_warp_slots();
  int l = pc_emu_lane();
  memcpy(&s.v[l], &v, sizeof v);
  pc_emu_warp_meet();
  V r;
  memcpy(&r, &s.v[l ^ o], sizeof r);
  pc_emu_warp_meet();
  return r;
}

/* ---- Hopper (sm_90a): mbarriers, the TMA's 2-D box copies, wgmma ---- */
#define __CUDA_ARCH_FEAT_SM90_ALL 1
/* the emulation's tensor map: base, extents (innermost first), row stride in bytes, box, and
 * the element's bytes */
struct __align__(64) pc_tmap {
  unsigned long long v[16];
};
inline pc_tmap pc_emu_tmap(const void *base, uint64_t d0, uint64_t d1, uint64_t stride, unsigned b0, unsigned b1, unsigned es) {
  pc_tmap m = {};
  m.v[0] = (uintptr_t)base, m.v[1] = d0, m.v[2] = d1, m.v[3] = stride, m.v[4] = b0, m.v[5] = b1, m.v[6] = es;
  return m;
}
/* shared addresses count from the 1024-aligned base, so that the 128-byte swizzle, a function of
 * the address, is the hardware's */
inline unsigned pc_saddr(const void *p) { return (unsigned)((const unsigned char *)p - pc_emu_shared_base); }
inline unsigned pc_emu_swizzle(unsigned a) { return a ^ ((a >> 7 & 7) << 4); }
inline pc_emu_mbar &pc_emu_mbar_of(const void *b) {
  for (auto &m : pc_emu_mbars)
    if (m.first == b) return m.second;
  pc_emu_mbars.push_back({b, pc_emu_mbar{}});
  return pc_emu_mbars.back().second;
}
inline void pc_emu_mbar_check(pc_emu_mbar &m) {
  if (m.pending == 0 && m.tx == 0) m.phase++, m.pending = m.count, pc_emu_progress++;
}
inline void pc_mbar_init(uint64_t *b, unsigned count) {
  pc_emu_mbar &m = pc_emu_mbar_of(b);
  m = pc_emu_mbar{(int)count, (int)count, 0, 0};
}
inline void pc_mbar_init_fence() {}
inline void pc_mbar_expect(uint64_t *b, unsigned bytes) {
  pc_emu_mbar &m = pc_emu_mbar_of(b);
  m.tx += bytes, m.pending--;
  pc_emu_mbar_check(m);
}
inline void pc_mbar_arrive(uint64_t *b) {
  pc_emu_mbar &m = pc_emu_mbar_of(b);
  m.pending--;
  pc_emu_mbar_check(m);
}
/* try_wait.parity: true once the phase of that parity has completed, i.e. the current phase's
 * parity is the other one */
inline void pc_mbar_wait(uint64_t *b, unsigned parity) {
  while ((pc_emu_mbar_of(b).phase & 1) == (parity & 1)) pc_emu_yield();
}
/* the box of `map` at (c0, c1) into dst in the shared memory of each block of the cluster in
 * `mask` (dst's offset in each), rows swizzled in 128-byte periods (16-byte chunk c of the 128
 * bytes at r at chunk c ^ (r % 8)), zeros past the extents; its bytes complete at once on the
 * barrier at bar's offset in each */
inline void pc_tma_load_mc(void *dst, const pc_tmap *map, uint64_t *bar, int c0, int c1, unsigned short mask) {
  const unsigned char *base = (const unsigned char *)(uintptr_t)map->v[0];
  const long d0 = (long)map->v[1], d1 = (long)map->v[2], stride = (long)map->v[3], b0 = (long)map->v[4], b1 = (long)map->v[5];
  const long es = (long)map->v[6];
  const unsigned at = pc_saddr(dst), bar_at = pc_saddr(bar);
  for (int r = 0; r < PC_EMU_MAX_CLUSTER; r++) {
    if (!(mask >> r & 1)) continue;
    for (long y = 0; y < b1; y++)
      for (long e = 0; e < b0; e++) {
        unsigned char v[4] = {0};
        if (c1 + y < d1 && c0 + e < d0) memcpy(v, base + (c1 + y) * stride + (c0 + e) * es, (size_t)es);
        memcpy(pc_emu_bases[r] + pc_emu_swizzle(at + (unsigned)((y * b0 + e) * es)), v, (size_t)es);
      }
    pc_emu_mbar &m = pc_emu_mbar_of(pc_emu_bases[r] + bar_at);
    m.tx -= b0 * b1 * es;
    pc_emu_mbar_check(m);
  }
}
inline void pc_tma_load(void *dst, const pc_tmap *map, uint64_t *bar, int c0, int c1) {
  pc_tma_load_mc(dst, map, bar, c0, c1, (unsigned short)(1u << pc_emu_t[pc_emu_cur].rank));
}
/* an arrival on the barrier at b's offset in each of the cluster's first CTAS blocks */
template <int CTAS> inline void pc_mbar_arrive_cluster(uint64_t *b) {
  const unsigned at = pc_saddr(b);
  for (int r = 0; r < CTAS; r++) pc_mbar_arrive((uint64_t *)(void *)(pc_emu_bases[r] + at));
}
inline void pc_cluster_sync() { pc_emu_meet(PC_EMU_CLUSTER, (int)pc_emu_t.size()); }
template <int R> inline void pc_regs_inc() {}
template <int R> inline void pc_regs_dec() {}
inline void pc_consumers_sync() { pc_emu_meet(64, 256); }
inline void pc_wg_fence() {}
inline void pc_wg_commit() {}
/* the MMAs are the warpgroup's: its threads compute theirs when each gets there, so a wait for
 * them is a meeting of the warpgroup (a thread that then gives their stage back gives it back
 * for all four warps) */
template <int N> inline void pc_wg_wait() { pc_emu_meet(65 + pc_emu_warpid() / 4, 128); }
inline uint64_t pc_wg_desc(const void *p, unsigned lead, unsigned stride) {
  return (uint64_t)((pc_saddr(p) & 0x3FFFF) >> 4) | (uint64_t)((lead & 0x3FFFF) >> 4) << 16 | (uint64_t)((stride & 0x3FFFF) >> 4) << 32 |
         1ull << 62;
}
/* the 16-bit element of a wgmma operand at element offset `off` from the descriptor's start, in
 * the 128-byte swizzle */
inline uint16_t pc_emu_desc_at(uint64_t desc, unsigned off) {
  unsigned a = pc_emu_swizzle((unsigned)(desc & 0x3FFF) * 16 + off * 2);
  uint16_t v;
  memcpy(&v, pc_emu_shared_base + a, 2);
  return v;
}
/* wgmma.mma_async.m64n256k16, A K-major and B N-major, 128-byte swizzle, as the PTX ISA's
 * canonical layouts have them (T = 8 elements of 16 bits):
 *   A, K-major: ((8, m), (T, 2k)) : ((8T, SBO), (1, T)) over (row, k)
 *   B, MN-major: ((T, 8, m), (8, k)) : ((1, T, LBO), (8T, SBO)) over (n, k)
 * Each thread computes its own nacc sums (N / 2): row 16 (warp % 4) + lane / 4 (+8), column
 * 8 (i / 4) + 2 (lane % 4) + i % 2, the sums of the calling warpgroup */
template <class T> inline void pc_emu_wgmma(float *d, uint64_t da, uint64_t db, T, int nacc) {
  const unsigned sbo_a = (unsigned)(da >> 32 & 0x3FFF) * 8, lbo_b = (unsigned)(db >> 16 & 0x3FFF) * 8, sbo_b = (unsigned)(db >> 32 & 0x3FFF) * 8;
  const int w = pc_emu_warpid() % 4, l = pc_emu_lane();
  float A[2][16];
  for (int h = 0; h < 2; h++) {
    const unsigned r = (unsigned)(16 * w + l / 4 + 8 * h);
    for (unsigned k = 0; k < 16; k++) A[h][k] = pc_emu_f(pc_emu_desc_at(da, r % 8 * 64 + r / 8 * sbo_a + k % 8 + k / 8 * 8), T());
  }
  for (int i = 0; i < nacc; i++) {
    const unsigned n = (unsigned)(8 * (i / 4) + 2 * (l % 4) + i % 2);
    float sum = d[i];
    for (unsigned k = 0; k < 16; k++)
      sum += A[i / 2 % 2][k] * pc_emu_f(pc_emu_desc_at(db, n % 8 + n / 8 % 8 * 8 + n / 64 * lbo_b + k % 8 * 64 + k / 8 * sbo_b), T());
    d[i] = sum;
  }
}

/* wgmma.mma_async.m64nNk8.f32.tf32.tf32 (nacc = N / 2 sums a thread): A in registers (lanes 4g..4g+3 of warp w hold rows
 * 16 w + g and + 8: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)), B K-major in the
 * 128-byte swizzle, ((8, n), (4, k)) : ((128 bytes, SBO), (4 bytes)) over (n, k); the tensor
 * cores read the top 19 bits of each operand */
inline float pc_emu_tf32(unsigned u) { return __uint_as_float(u & 0xffffe000u); }
inline void pc_emu_wgmma(float *d, const unsigned *a, uint64_t db, float, int nacc) {
  pc_emu_slots &s = pc_emu_warp_slots();
  const int l = pc_emu_lane(), g = l / 4;
  memcpy(s.a[l], a, 16);
  pc_emu_warp_meet();
  float A[2][8];
  for (int t = 0; t < 4; t++)
    for (int h = 0; h < 2; h++) A[h][t] = pc_emu_tf32(s.a[4 * g + t][h]), A[h][t + 4] = pc_emu_tf32(s.a[4 * g + t][2 + h]);
  pc_emu_warp_meet();
  const unsigned start = (unsigned)(db & 0x3FFF) * 16, sbo = (unsigned)(db >> 32 & 0x3FFF) * 16;
  for (int i = 0; i < nacc; i++) {
    const unsigned n = (unsigned)(8 * (i / 4) + 2 * (l % 4) + i % 2);
    float sum = d[i];
    for (unsigned k = 0; k < 8; k++) {
      unsigned b;
      memcpy(&b, pc_emu_shared_base + pc_emu_swizzle(start + n % 8 * 128 + n / 8 * sbo + k * 4), 4);
      sum += A[i / 2 % 2][k] * pc_emu_tf32(b);
    }
    d[i] = sum;
  }
}

} // namespace

#endif
