/*
 * schedule.c: the CPU target's schedule hook: vector width from the machine's widest vector
 * registers and the kernel's dtype, work per item for pointwise kernels, and the register and
 * cache tiles of the packed matmul. Nothing else on the CPU decides these.
 */
#include "../ir/dtype.h"
#include "cpu.h"

/* the widest vector register in bytes */
static int vector_bytes(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 64;
  if (__builtin_cpu_supports("avx2")) return 32;
#endif
  return 16;
}

void cpu_schedule(kir_module *m, int i, int device) {
  (void)device;
  kir_kernel *k = &m->k[i];
  int vb = vector_bytes(), elem = 4;
  if (k->nstore > 0 && k->store[0].buf >= 0) elem = (int)portc_dtype_size(m->buf[k->store[0].buf].dt);
  k->sched.source = "rules";
  k->sched.vector = vb / (elem ? elem : 4);
  k->sched.chunk = 8192; /* elements of the last dimension per work item: big enough to stream */
  /* matmul micro-tile: MR rows of A times NR columns of B stay in registers; f32 compute */
  k->sched.nr = vb >= 64 ? 32 : 16;
  k->sched.mr = 6;
  k->sched.kc = 256; /* a KC x NR panel of B stays in L1 */
  k->sched.mc = 96;  /* an MC x KC block of A stays in L2 */
  k->sched.nc = 512;
}
