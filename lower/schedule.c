/*
 * schedule.c: fills each kernel's schedule knobs from heuristics: vector width from the target's
 * vector registers and the kernel's dtype, work per item for pointwise kernels, and the
 * register and cache tiles of matmul. An autotune table will later override these per device.
 */
#include "kir.h"

void schedule(kir_module *m, int vector_bytes) {
  for (int i = 0; i < m->nk; i++) {
    kir_kernel *k = &m->k[i];
    int elem = 4;
    if (k->nstore > 0 && k->store[0].buf >= 0) elem = (int)portc_dtype_size(m->buf[k->store[0].buf].dt);
    k->sched.vector = vector_bytes / (elem ? elem : 4);
    k->sched.chunk = 8192; /* elements of the last dimension per work item: big enough to stream */
    /* matmul micro-tile: MR rows of A times NR columns of B stay in registers; f32 compute */
    k->sched.nr = vector_bytes >= 64 ? 32 : 16;
    k->sched.mr = 6;
    k->sched.kc = 256; /* a KC x NR panel of B stays in L1 */
    k->sched.mc = 96;  /* an MC x KC block of A stays in L2 */
    k->sched.nc = 512;
  }
}
