/*
 * context.c: the CUDA driver, initialized once per process, and one context per device used:
 * the device's primary context (the one the CUDA runtime and cuBLASLt share), its name,
 * compute capability, memory, SMs and caches. `cuda:N` or PORTC_CUDA_DEVICE picks the device;
 * otherwise device 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu.h"

cu_driver_api CU;
static device_table table = DEVICE_TABLE_INIT; /* its lock also guards starting the driver */
static bool tried, ok;
static char init_why[512];
static int ndev, driver_version;

portc_status cu_fail(CUresult r, const char *what) {
  const char *name = "CUDA_ERROR_UNKNOWN", *text = "";
  if (CU.cuGetErrorName) CU.cuGetErrorName(r, &name);
  if (CU.cuGetErrorString) CU.cuGetErrorString(r, &text);
  return err_set(r == CUDA_ERROR_OUT_OF_MEMORY ? PORTC_ERR_NOMEM : PORTC_ERR_DEVICE, "cuda: %s failed: %s (%s)", what, name ? name : "?",
                 text ? text : "");
}

static bool init_driver(void) {
  if (tried) return ok;
  tried = true;
  if (!cu_load_driver(&CU, init_why, sizeof init_why)) return false;
  CUresult r = CU.cuInit(0);
  if (!r) target_driver_started();
  if (r) {
    const char *name = "?";
    CU.cuGetErrorName(r, &name);
    snprintf(init_why, sizeof init_why, "cuInit failed: %s%s", name ? name : "?", r == CUDA_ERROR_NO_DEVICE ? " (no NVIDIA GPU)" : "");
    return false;
  }
  CU.cuDriverGetVersion(&driver_version);
  if ((r = CU.cuDeviceGetCount(&ndev)) || ndev < 1) {
    snprintf(init_why, sizeof init_why, "the CUDA driver sees no device");
    return false;
  }
  ok = true;
  return true;
}

bool cu_driver_available(char *why, size_t len) {
  pthread_mutex_lock(&table.lock);
  bool r = init_driver();
  if (!r) snprintf(why, len, "%s", init_why);
  pthread_mutex_unlock(&table.lock);
  return r;
}

bool cu_available(char *why, size_t len) {
  if (!cu_driver_available(why, len)) return false;
  /* kernels are compiled here, so NVRTC must be present too */
  return cu_compiler_id(why, len) != NULL;
}

static int dev_attr(CUdevice d, int a) {
  int v = 0;
  CU.cuDeviceGetAttribute(&v, a, d);
  return v;
}

static void *make_context(int index, char *why, size_t len) {
  if (!cu_own_kernels_known(getenv("PORTC_CUDA_KERNELS"), why, len)) return NULL;
  cu_context *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(why, len, "out of memory");
    return NULL;
  }
  CUresult r;
  if ((r = CU.cuDeviceGet(&c->dev, index)) || (r = CU.cuDevicePrimaryCtxRetain(&c->ctx, c->dev))) {
    const char *name = "?";
    CU.cuGetErrorName(r, &name);
    snprintf(why, len, "device %d cannot be opened: %s", index, name ? name : "?");
    free(c);
    return NULL;
  }
  c->index = index;
  pthread_mutex_init(&c->lock, NULL);
  char dn[256] = "";
  CU.cuDeviceGetName(dn, sizeof dn, c->dev);
  CU.cuDeviceTotalMem_v2(&c->mem_bytes, c->dev);
  c->cc_major = dev_attr(c->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  c->cc_minor = dev_attr(c->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  c->sms = dev_attr(c->dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  c->warp = dev_attr(c->dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  c->max_threads = dev_attr(c->dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  c->smem_block = dev_attr(c->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  c->smem_optin = dev_attr(c->dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  c->l2_bytes = dev_attr(c->dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  c->mem_clock_khz = dev_attr(c->dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  c->bus_bits = dev_attr(c->dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  c->clock_khz = dev_attr(c->dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  snprintf(c->arch, sizeof c->arch, "sm_%d%d", c->cc_major, c->cc_minor);
  snprintf(c->model, sizeof c->model, "%s", dn);
  c->driver = driver_version;
  snprintf(c->name, sizeof c->name, "%s (cuda:%d, %s, driver %d.%d)", dn, index, c->arch, driver_version / 1000, driver_version % 1000 / 10);
  snprintf(c->cache_id, sizeof c->cache_id, "%s %s driver %d", dn, c->arch, driver_version);
  return c;
}

/* the device count, once the driver has started (under the table's lock) */
static int devices(char *why, size_t len) {
  if (init_driver()) return ndev;
  snprintf(why, len, "%s", init_why);
  return -1;
}

cu_context *cu_context_get(int index, char *why, size_t len) {
  cu_context *c = device_table_get(&table, "cuda", index, "PORTC_CUDA_DEVICE", devices, make_context, why, len);
  if (c) CU.cuCtxSetCurrent(c->ctx);
  return c;
}

const char *cu_default_device_name(void) {
  char why[512];
  cu_context *c = cu_context_get(-1, why, sizeof why);
  return c ? c->name : "no CUDA device";
}

void cu_describe(FILE *out) {
  char why[512];
  if (!cu_available(why, sizeof why)) return;
  fprintf(out, "  compiler: %s\n", cu_compiler_id(why, sizeof why));
  const char *own = getenv("PORTC_CUDA_KERNELS");
  fprintf(out, "  tensor-core kernels of portc's own (wgmma, flash, conv) taken: %s\n",
          own ? (*own ? own : "none") : "wgmma, flash, conv (the default; PORTC_CUDA_KERNELS lists fewer)");
  for (int i = 0; i < ndev; i++) {
    cu_context *c = cu_context_get(i, why, sizeof why);
    if (!c) {
      fprintf(out, "  cuda:%d: %s\n", i, why);
      continue;
    }
    double bw = 2.0 * c->mem_clock_khz * 1e3 * c->bus_bits / 8 / 1e9;
    fprintf(out, "  cuda:%d: %s\n", i, c->name);
    fprintf(out, "    %.1f GiB, %d SMs at %d MHz, L2 %d MiB, shared memory %d KiB per block (%d KiB opt-in), theoretical %.0f GB/s\n",
            (double)c->mem_bytes / (1 << 30), c->sms, c->clock_khz / 1000, c->l2_bytes >> 20, c->smem_block >> 10, c->smem_optin >> 10, bw);
    char bwhy[400];
    fprintf(out, "    cuBLASLt: %s\n", cu_blaslt_get(c, bwhy, sizeof bwhy) ? "loaded" : bwhy);
  }
}

/* the architecture family of a compute capability, for tune keys */
static const char *family(int major, int minor) {
  switch (major) {
  case 7: return minor >= 5 ? "turing" : "volta";
  case 8: return minor == 9 ? "ada" : "ampere";
  case 9: return "hopper";
  case 10:
  case 12: return "blackwell";
  default: return "";
  }
}

void cu_device_key(int index, const char *api, tune_device *d) {
  snprintf(d->api, sizeof d->api, "%s", api);
  snprintf(d->vendor, sizeof d->vendor, "nvidia");
  char why[512];
  const cu_context *c = cu_context_get(index, why, sizeof why);
  if (!c) return;
  snprintf(d->type, sizeof d->type, "discrete");
  snprintf(d->family, sizeof d->family, "%s", family(c->cc_major, c->cc_minor));
  snprintf(d->arch, sizeof d->arch, "%s", c->arch);
  str_cut(d->model, sizeof d->model, "%s", c->model);
  snprintf(d->driver, sizeof d->driver, "%d.%d", c->driver / 1000, c->driver % 1000 / 10);
  const char *compiler = cu_compiler_id(why, sizeof why);
  snprintf(d->compiler, sizeof d->compiler, "%s", compiler ? compiler : "");
  d->units = c->sms, d->subgroup = c->warp, d->shared_bytes = c->smem_optin;
}
