/*
 * schedule.c: the CPU target's schedule hook: vector width from the machine's widest vector
 * registers and the kernel's dtype, work per item for pointwise kernels, and the register and
 * cache tiles of the packed matmul. Nothing else on the CPU decides these. The tuning hooks
 * (the CPU's tune key, what a tune entry may set, the candidates) are here too.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
  k->sched.vector = vb / (elem ? elem : 4);
  k->sched.chunk = 8192; /* elements of the last dimension per work item: big enough to stream */
  /* matmul micro-tile: MR rows of A times NR columns of B stay in registers; f32 compute */
  k->sched.nr = vb >= 64 ? 32 : 16;
  k->sched.mr = 6;
  k->sched.kc = 256; /* a KC x NR panel of B stays in L1 */
  k->sched.mc = 96;  /* an MC x KC block of A stays in L2 */
  k->sched.nc = 512;
}

/* /proc/cpuinfo's value for key ("vendor_id", "model name"), or "" */
static void cpuinfo(const char *key, char *out, size_t len) {
  out[0] = 0;
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (!colon || strncmp(line, key, strlen(key)) != 0) continue;
    for (colon++; *colon == ' '; colon++) {}
    snprintf(out, len, "%s", colon);
    out[strcspn(out, "\n")] = 0;
    break;
  }
  if (f) fclose(f);
}

/* the machine's key, read once (every compile asks for it) */
static tune_device machine;
static pthread_once_t machine_once = PTHREAD_ONCE_INIT;

static void read_machine(void) {
  tune_device *d = &machine;
  char vendor[64];
  cpuinfo("vendor_id", vendor, sizeof vendor);
  snprintf(d->api, sizeof d->api, "cpu");
  snprintf(d->type, sizeof d->type, "cpu");
  str_cut(d->vendor, sizeof d->vendor, "%s", strcmp(vendor, "GenuineIntel") == 0 ? "intel" : strcmp(vendor, "AuthenticAMD") == 0 ? "amd" : vendor);
  int vb = vector_bytes();
#if defined(__x86_64__)
  snprintf(d->family, sizeof d->family, "x86_64");
  snprintf(d->arch, sizeof d->arch, "%s", vb >= 64 ? "avx512" : vb >= 32 ? "avx2" : "sse");
#elif defined(__aarch64__)
  snprintf(d->family, sizeof d->family, "aarch64");
  snprintf(d->arch, sizeof d->arch, "neon");
#endif
  cpuinfo("model name", d->model, sizeof d->model);
  d->units = (int)sysconf(_SC_NPROCESSORS_ONLN);
  d->subgroup = vb / 4;
}

void cpu_device_key(int device, tune_device *d) {
  (void)device;
  pthread_once(&machine_once, read_machine);
  *d = machine;
}

bool cpu_schedule_check(kir_module *m, int i, int device, char *why, size_t len) {
  (void)device;
  const kir_schedule *s = &m->k[i].sched;
  if (s->chunk < 1) return snprintf(why, len, "chunk=%lld: at least 1", (long long)s->chunk), false;
  if (s->mr != 6 || (s->nr != 16 && s->nr != 32)) return snprintf(why, len, "the micro-kernels are 6x16 and 6x32, not %dx%d", s->mr, s->nr), false;
  if (s->mc % s->mr || s->nc % s->nr || s->kc < 1)
    return snprintf(why, len, "blocks %dx%dx%d: mc a multiple of %d, nc of %d", s->mc, s->nc, s->kc, s->mr, s->nr), false;
  return true;
}

int cpu_tune_space(const kir_module *m, int i, const tune_device *d, tune_knobs *out, int max) {
  (void)d;
  const kir_kernel *k = &m->k[i];
  int n = 0;
  if (k->kind == KK_POINTWISE) {
    static const int64_t chunks[] = {1024, 4096, 32768};
    for (int c = 0; c < 3 && n < max; c++) out[n++] = (tune_knobs){.mask = tune_knob_bit("chunk"), .v.chunk = chunks[c]};
  } else if (k->kind == KK_MATMUL && dtype_is_float(m->buf[k->in_buf[0]].dt)) {
    /* the register tile's width, and cache blocks around the rules' 96 x 512 x 256 */
    static const int blocks[][4] = {{16, 96, 512, 256}, {32, 48, 512, 256}, {32, 96, 512, 128}, {32, 192, 1024, 256}, {32, 96, 256, 512}};
    unsigned mask = tune_knob_bit("nr") | tune_knob_bit("mc") | tune_knob_bit("nc") | tune_knob_bit("kc");
    for (int c = 0; c < 5 && n < max; c++) {
      tune_knobs t = {.mask = mask};
      t.v.nr = blocks[c][0], t.v.mc = blocks[c][1], t.v.nc = blocks[c][2], t.v.kc = blocks[c][3];
      if (t.v.nr != k->sched.nr || t.v.mc != k->sched.mc || t.v.nc != k->sched.nc || t.v.kc != k->sched.kc) out[n++] = t;
    }
  }
  return n;
}
