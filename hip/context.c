/*
 * context.c: the HIP runtime, initialized once per process, and what portc needs to know of each
 * AMD device: its name, gfx architecture (gcnArchName, e.g. "gfx90a:sramecc+:xnack-", whose
 * first part names the code object's target), compute units, wavefront size, LDS per work group
 * and memory. `hip:N` or PORTC_HIP_DEVICE picks the device; otherwise device 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip.h"

hip_runtime_api HIP;
static device_table table = DEVICE_TABLE_INIT; /* its lock also guards starting the driver */
static bool tried, ok;
static char init_why[600];
static int ndev;

portc_status hip_fail(hipError_t r, const char *what) {
  const char *text = HIP.hipGetErrorString ? HIP.hipGetErrorString(r) : "?";
  return err_set(r == hipErrorOutOfMemory ? PORTC_ERR_NOMEM : PORTC_ERR_DEVICE, "hip: %s failed: %s (%d)", what, text ? text : "?", r);
}

static bool init_runtime(void) {
  if (tried) return ok;
  tried = true;
  if (!hip_load_runtime(&HIP, init_why, sizeof init_why)) return false;
  hipError_t r = HIP.hipInit(0);
  if (!r) target_driver_started();
  if (!r) r = HIP.hipGetDeviceCount(&ndev);
  if (r || ndev < 1) {
    snprintf(init_why, sizeof init_why, "the HIP runtime finds no AMD GPU (%s)", r ? HIP.hipGetErrorString(r) : "0 devices");
    return false;
  }
  ok = true;
  return true;
}

bool hip_available(char *why, size_t len) {
  pthread_mutex_lock(&table.lock);
  bool r = init_runtime();
  if (!r) snprintf(why, len, "%s", init_why);
  pthread_mutex_unlock(&table.lock);
  return r;
}

static int dev_attr(int dev, int a) {
  int v = 0;
  HIP.hipDeviceGetAttribute(&v, a, dev);
  return v;
}

static void *make_context(int index, char *why, size_t len) {
  hip_context *c = calloc(1, sizeof *c);
  char *props = calloc(1, HIP_PROP_BYTES + 1024); /* room for a newer, larger layout */
  hipError_t r = c && props ? HIP.hipGetDeviceProperties(props, index) : hipErrorOutOfMemory;
  if (r) {
    snprintf(why, len, "hip:%d: hipGetDeviceProperties failed: %s", index, HIP.hipGetErrorString(r));
    free(c), free(props);
    return NULL;
  }
  c->index = index;
  snprintf(c->device_name, sizeof c->device_name, "%.255s", props + HIP_PROP_NAME);
  snprintf(c->gcn_arch, sizeof c->gcn_arch, "%.255s", props + HIP_PROP_GCN_ARCH);
  free(props);
  snprintf(c->arch, sizeof c->arch, "%.*s", (int)strcspn(c->gcn_arch, ":"), c->gcn_arch); /* "gfx90a" of "gfx90a:sramecc+:xnack-" */
  c->cus = dev_attr(index, hipDeviceAttributeMultiprocessorCount);
  c->wave = dev_attr(index, hipDeviceAttributeWarpSize);
  c->lds = dev_attr(index, hipDeviceAttributeMaxSharedMemoryPerBlock);
  c->l2 = dev_attr(index, hipDeviceAttributeL2CacheSize);
  HIP.hipDeviceTotalMem(&c->mem, index);
  if (c->wave != 32 && c->wave != 64) c->wave = hip_wave_size(c->arch);
  snprintf(c->name, sizeof c->name, "%s (hip:%d, %s, wave%d)", c->device_name, index, c->arch, c->wave);
  snprintf(c->cache_id, sizeof c->cache_id, "%s %s wave%d", c->device_name, c->gcn_arch, c->wave);
  return c;
}

/* the device count, once the driver has started (under the table's lock) */
static int devices(char *why, size_t len) {
  if (init_runtime()) return ndev;
  snprintf(why, len, "%s", init_why);
  return -1;
}

hip_context *hip_context_get(int index, char *why, size_t len) {
  hip_context *c = device_table_get(&table, "hip", index, "PORTC_HIP_DEVICE", devices, make_context, why, len);
  if (c) HIP.hipSetDevice(c->index);
  return c;
}

const char *hip_default_device_name(void) {
  char why[600];
  hip_context *c = hip_context_get(-1, why, sizeof why);
  return c ? c->name : "no AMD GPU";
}

void hip_describe(FILE *out) {
  char why[600];
  hip_families_print(out);
  if (!hip_available(why, sizeof why)) return;
  fprintf(out, "  compiler: %s\n", hip_compiler_id(why, sizeof why) ? hip_compiler_id(why, sizeof why) : why);
  for (int i = 0; i < ndev; i++) {
    hip_context *c = hip_context_get(i, why, sizeof why);
    if (!c) {
      fprintf(out, "  hip:%d: %s\n", i, why);
      continue;
    }
    fprintf(out, "  hip:%d: %s\n    %s, %.1f GiB, %d compute units, wavefront %d, LDS %d KiB per work group, L2 %d MiB\n", i, c->name,
            c->gcn_arch, (double)c->mem / (1 << 30), c->cus, c->wave, c->lds >> 10, c->l2 >> 20);
  }
}

void hip_device_key(int index, tune_device *d) {
  snprintf(d->api, sizeof d->api, "hip");
  snprintf(d->vendor, sizeof d->vendor, "amd");
  char why[512];
  const hip_context *c = hip_context_get(index, why, sizeof why);
  if (!c) return;
  const hip_family *f = hip_family_of(c->arch);
  snprintf(d->family, sizeof d->family, "%s", f ? f->family : "");
  str_cut(d->arch, sizeof d->arch, "%s", c->arch);
  str_cut(d->model, sizeof d->model, "%s", c->device_name);
  d->units = c->cus, d->subgroup = c->wave, d->shared_bytes = c->lds;
}
