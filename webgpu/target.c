/*
 * target.c: the WebGPU target's device, schedule and reach. The device is the library's Vulkan
 * adapter (Dawn chooses the GPU), opened once per process with the adapter's limits; the target
 * is available where the library loads and finds that adapter. Kernels are 1-D work groups of
 * WG_THREADS. `supports` takes what the WGSL dialect writes: elementwise ops, casts, views,
 * concat and pad, reductions and the row ops (softmax, log_softmax, layer_norm, rms_norm),
 * matmul, attention (as matmul, softmax, matmul), and float conv2d and pooling, of the dtypes
 * WGSL computes (f32, f16 and bf16 through f32, i32, bool); every other node (int64 values,
 * argmax, gather) runs on the CPU (a graph break, driver/partition.c),
 * with the reason in `portc explain` and PORTC_LOG=graph_breaks.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../ir/dtype.h"
#include "wg.h"

static pthread_mutex_t call_lock = PTHREAD_MUTEX_INITIALIZER, open_lock = PTHREAD_MUTEX_INITIALIZER;
static wg_device dev;
static bool opened, tried;
static char open_why[1024];

void wg_lock(void) { pthread_mutex_lock(&call_lock); }
void wg_unlock(void) { pthread_mutex_unlock(&call_lock); }

wg_device *wg_target_device(int index, char *why, size_t len) {
  if (index > 0) return snprintf(why, len, "no device webgpu:%d (the library's Vulkan adapter is webgpu:0)", index), NULL;
  pthread_mutex_lock(&open_lock);
  if (!tried) {
    tried = true;
    char reason[sizeof open_why] = "";
    wg_lock();
    opened = wg_device_open(WGPUBackendType_Vulkan, &dev, reason, sizeof reason);
    wg_unlock();
    if (!opened)
      str_cut(open_why, sizeof open_why, "%s%s", reason,
               strstr(reason, "adapter") ? " (Dawn refuses Debian 12's lavapipe; Mesa 25's, which scripts/deps.sh unpacks, runs with "
                                           "VK_DRIVER_FILES=/usr/local/lib/portc-webgpu/mesa25/lvp_icd.json)"
                                         : "");
  }
  pthread_mutex_unlock(&open_lock);
  if (!opened) str_cut(why, len, "%s", open_why);
  return opened ? &dev : NULL;
}

bool wg_target_available(char *why, size_t len) { return wg_target_device(0, why, len) != NULL; }

const char *wg_target_device_name(void) {
  char why[256];
  wg_device *d = wg_target_device(0, why, sizeof why);
  return d ? d->info.name : "webgpu (no device)";
}

void wg_schedule(kir_module *m, int i, int device) {
  (void)device;
  kir_schedule *s = &m->k[i].sched;
  s->threads[0] = WG_THREADS, s->threads[1] = s->threads[2] = 1;
  if (m->k[i].kind == KK_MATMUL && dtype_is_float(m->buf[m->k[i].in_buf[0]].dt)) s->variant = KS_TILED, s->tile_m = s->tile_n = WG_MM_TILE;
  s->vector = wg_vector(m, i);
  snprintf(s->source, sizeof s->source, "rules");
}

/* a pointwise kernel binds what it reads, its output, the status word and the symbols */
int wg_loads_within(const WGPULimits *l) {
  int n = l ? (int)l->maxStorageBuffersPerShaderStage : 8; /* 8: WebGPU's least */
  return n - 3 > 1 ? n - 3 : 1;
}

int wg_max_kernel_loads(int device) {
  char why[256];
  wg_device *d = wg_target_device(device, why, sizeof why);
  return wg_loads_within(d ? &d->info.limits : NULL);
}

/* dtypes WGSL computes: no f64, and 64-bit integers are not emulated yet */
static bool wgsl_dtype(portc_dtype t) { return t == PORTC_F32 || t == PORTC_F16 || t == PORTC_BF16 || t == PORTC_I32 || t == PORTC_BOOL; }

bool wg_supports(const portc_graph *g, int i, char *why, size_t len) {
  const node *n = &g->nodes[i];
  enum op_kind k = op_get(n->op)->kind;
  bool pointwise = k == K_UNARY || k == K_BINARY || k == K_COMPARE || k == K_WHERE || k == K_CAST || k == K_MASK ||
                   n->op == OP_reshape || n->op == OP_permute || n->op == OP_expand || n->op == OP_slice || n->op == OP_pad;
  if (n->op == OP_concat) { /* a kernel binds every input: as many as every adapter allows */
    int most = wg_loads_within(NULL);
    if (n->nin > most) return snprintf(why, len, "binds at most %d inputs to a kernel, and this concat has %d", most, n->nin), false;
    pointwise = true;
  }
  /* attention too: the target keeps none whole, so lowering writes it as matmul, softmax, matmul */
  bool row = k == K_REDUCE || n->op == OP_softmax || n->op == OP_log_softmax || n->op == OP_layer_norm || n->op == OP_rms_norm ||
             n->op == OP_attention;
  bool window = k == K_CONV || k == K_POOL;
  if (!pointwise && !row && !window && k != K_MATMUL)
    return snprintf(why, len, "writes no %s kernels yet", op_get(n->op)->name), false;
  if (window && !dtype_is_float(n->dt)) return snprintf(why, len, "writes float %s only", op_get(n->op)->name), false;
  if (!wgsl_dtype(n->dt)) return snprintf(why, len, "has no %s values (WGSL computes 32-bit integers)", portc_dtype_name(n->dt)), false;
  for (int j = 0; j < n->nin; j++)
    if (!wgsl_dtype(g->nodes[n->in[j]].dt))
      return snprintf(why, len, "has no %s values (WGSL computes 32-bit integers)", portc_dtype_name(g->nodes[n->in[j]].dt)), false;
  return true;
}

void wg_describe(FILE *out) {
  char why[1024];
  wg_device *d = wg_target_device(0, why, sizeof why);
  if (!d) return;
  const wg_adapter *a = &d->info;
  const WGPULimits *l = &a->limits;
  fprintf(out, "  webgpu:0 %s (%s, %s backend), driver %s\n", a->name, a->vendor, wg_backend_name(a->backend), a->driver);
  fprintf(out, "    storage buffers per stage %u, binding %llu MiB, workgroup memory %u KiB, %u invocations, %u groups per dimension\n",
          l->maxStorageBuffersPerShaderStage, (unsigned long long)(l->maxStorageBufferBindingSize >> 20), l->maxComputeWorkgroupStorageSize >> 10,
          l->maxComputeInvocationsPerWorkgroup, l->maxComputeWorkgroupsPerDimension);
  fprintf(out, "    shader-f16 %s, subgroups %s (%u-%u), timestamps %s\n", a->f16 ? "yes" : "no", a->subgroups ? "yes" : "no", a->subgroup_min,
          a->subgroup_max, a->timestamps ? "yes" : "no");
}
