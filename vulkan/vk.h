/*
 * vk.h: the Vulkan target's parts and what they share: the per-device context (context.c),
 * buffers and copies (memory.c), GLSL to SPIR-V (compile.c), the launch geometry that the
 * dialect and the runtime agree on (launch.c), and the dialect itself (dialect.c).
 */
#ifndef PORTC_VULKAN_VK_H
#define PORTC_VULKAN_VK_H

#include <pthread.h>

#include "../targets/cache.h"
#include "../targets/target.h"
#include "vk_api.h"

/* the sizes' steps (M, N, K) of a device's cooperative matrices of a whole work group, for work
 * groups of 128 invocations (of[0]) and of 256 (of[1]); zeros where it offers none of that size */
typedef struct vk_wg_steps {
  uint32_t of[2][3];
} vk_wg_steps;

/* what a device offers that kernels may need; a kernel that needs a missing one is refused at
 * compile time with the feature's name, or written without it */
typedef struct vk_features {
  bool storage16, storage8, int64, subgroup_arith, timestamps, coop_matrix, denorm_preserve;
  /* f32 to f16 converted by the device, rounded to nearest even with f16 denormals kept (float
   * controls' RoundingModeRTE and DenormPreserve for 16 bits, shaderFloat16); rte32: the 32-bit
   * rounding mode is set alongside, only on drivers whose widths must agree; rte64, keep64: the
   * 64-bit rounding and denormal modes too, on drivers where 16 and 64 bits must agree */
  bool f16_convert, rte32, rte64, keep64;
  /* cooperative matrices through VK_KHR_cooperative_matrix (coop_matrix says there are some:
   * NV's where offered, else KHR's); coop_size32: the device's subgroups are 32 only when a
   * pipeline requires it (VK_EXT_subgroup_size_control), which the matmul's pipelines do */
  bool coop_khr, coop_size32;
  /* the f16 matmul on cooperative matrices of a whole work group of 256 (VK_NV_cooperative_matrix2's
   * workgroup scope and flexible sizes, with coop_khr; where PORTC_VULKAN_KERNELS takes it), and
   * of 128 where the device offers that too: their sizes' steps in coop_wg_steps; the driver keeps
   * coop_wg_reserved bytes of the work group's shared memory for staging them */
  bool coop_workgroup;
  vk_wg_steps coop_wg_steps;
  uint32_t coop_wg_reserved;
  /* their A and B panels loaded through tensor layouts (the extension's tensor addressing; where
   * PORTC_VULKAN_KERNELS takes coopwgtensor: opt-in, not faster on the H100) */
  bool coop_wg_tensor;
  /* their elementwise epilogues (after at most a bias) finished on the matrices' elements, not in a
   * second dispatch (where PORTC_VULKAN_KERNELS takes coopwgelements) */
  bool coop_wg_elements;
  /* f16 convolutions channels-last on the cooperative-matrix kernel (with coop_matrix, where
   * PORTC_VULKAN_KERNELS takes it: vk_own_kernels; else NCHW on the SIMT kernel) */
  bool coop_conv;
  /* f16 attention on cooperative matrices (attention.c; with coop_matrix, where
   * PORTC_VULKAN_KERNELS takes it, as by default) */
  bool coop_attention;
  bool exec_stats; /* the driver's statistics of each pipeline (PORTC_LOG=shader_stats) */
  uint32_t subgroup_size;
  uint32_t units; /* multiprocessors or compute units where a vendor extension says (else 0) */
} vk_features;

typedef struct vk_context {
  VkInstance inst;
  vk_device_api d;
  VkPhysicalDevice phys;
  VkDevice dev;
  VkQueue queue;
  uint32_t qfam;
  VkPhysicalDeviceProperties props;
  VkPhysicalDeviceMemoryProperties mem;
  vk_features f;
  double ns_per_tick;
  uint32_t wg; /* invocations per work group of 1-D kernels on this device */
  uint32_t dev_local_type, host_type; /* memory type indices */
  bool dev_local_mappable;            /* device-local memory the host can map (software, ReBAR) */
  pthread_mutex_t lock;               /* the queue, the staging buffer and the pipeline cache */
  VkCommandPool xfer_pool;
  VkCommandBuffer xfer_cb;
  VkFence xfer_fence;
  struct vk_buffer *staging;
  VkPipelineCache pcache;
  int index;
  char name[1024];    /* "NVIDIA H100 80GB HBM3 (vulkan:0, driver NVIDIA 580.159.04, Vulkan 1.4)" */
  char cache_id[320]; /* device and driver, for cache keys */
  char driver[2 * VK_MAX_DRIVER_NAME_SIZE + 2]; /* "NVIDIA 580.159.04" */
} vk_context;

/* the context of device `index` (-1: $PORTC_VULKAN_DEVICE, else the best GPU), made once */
vk_context *vk_context_get(int index, char *why, size_t len);
bool vk_available(char *why, size_t len);
/* the tune key of device `index` (-1: the default) and the facts that filter candidates */
void vk_device_key(int index, tune_device *d);
const char *vk_default_device_name(void);
void vk_describe(FILE *out);
/* writes the pipeline cache beside the kernel cache */
void vk_pipeline_cache_save(vk_context *c);

typedef struct vk_buffer {
  VkBuffer buf;
  VkDeviceMemory mem;
  int64_t bytes;
  void *map; /* when the host can see it */
  uint64_t serial; /* unique per process: a freed buffer's struct may come back at the same address */
} vk_buffer;

portc_status vk_buffer_new(vk_context *c, int64_t bytes, bool host, vk_buffer **out);
void vk_buffer_free(vk_context *c, vk_buffer *b);
portc_status vk_buffer_write(vk_context *c, vk_buffer *b, int64_t offset, const void *src, int64_t bytes);
portc_status vk_buffer_read(vk_context *c, vk_buffer *b, int64_t offset, void *dst, int64_t bytes);
/* submits one command buffer and waits for its fence, under the context's lock */
portc_status vk_submit_wait(vk_context *c, VkCommandBuffer cb, VkFence fence);

/* GLSL to validated SPIR-V for the device (words in *spirv, free with free()); defines is a
 * NULL-terminated list of macro names, each defined as 1 */
/* the macros (PC_INT64, PC_ROW_KERNEL, ...) kernel i is built with on c, from its "needs" words
 * (line): up to 9 into defines, NULL-terminated, counted in *nd; an error names the first
 * feature the device lacks */
portc_status vk_kernel_defines(const vk_context *c, int i, const char *line, const char **defines, int *nd);
portc_status vk_compile(vk_context *c, const char *glsl, const char *name, const char *const *defines, uint32_t **spirv, size_t *words);
/* the cooperative-matrix matmul's SPIR-V, compiled for VK_NV_cooperative_matrix, rewritten for
 * VK_KHR_cooperative_matrix in place (spirv_coop.c) */
portc_status vk_spirv_coop_khr(uint32_t **code, size_t *words);
/* what the two rewrites write with: n words appended at out[*at] (the caller sized out); an
 * OpExtension naming `name` (size bytes, its NUL included), NUL-padded to whole words, into s,
 * its length in words */
void vk_spirv_put(uint32_t *out, size_t *at, const uint32_t *w, size_t n);
uint32_t vk_spirv_extension(uint32_t s[12], const char *name, size_t size);
/* that module's loads of the work group's A and B panels (matmul_wg.c, wg_matrices=2) rewritten
 * as loads through tensor layouts (SPV_NV_tensor_addressing), in place (spirv_tensor.c) */
portc_status vk_spirv_tensor_loads(uint32_t **code, size_t *words);
/* shaderc's options for a kernel, in glslc's spelling, exactly as vk_compile applies them (the
 * cache key covers them) */
void vk_compile_options(const vk_context *c, const char *const *defines, build_args *a);
/* the compiler's identity for cache keys */
const char *vk_compiler_id(void);

/* limits, and the tiles of the rules (schedule.c): the SIMT matmul's, the cooperative-matrix
 * matmul's and its threads (four subgroups of 32) */
enum { VK_MAX_GROUPS = 65535, VK_MM_TILE = 64, VK_COOP_TILE = 128, VK_COOP_THREADS = 128, VK_COOP_K = 32, VK_MAX_SPLIT = 64,
       VK_MIN_SHARED = 16384, /* the shared memory every Vulkan device has, assumed where none is known */
       VK_COOP_SHARED = 48 << 10, /* what vk_coop_schedule takes a device to have: NVIDIA's 48 KiB */
       /* the work group's matrices (matmul_wg.c): invocations, tile (its columns where the tiles
        * are fewer than the multiprocessors: narrow) and k-step of the rule, the most bytes of one
        * accumulator's sums in shared memory, the sizes' steps where no device is known (the H100's:
        * 32x32x16 at 256 invocations, 32x16x16 at 128) */
       VK_WG_THREADS = 256, VK_WG_TILE_M = 128, VK_WG_TILE_N = 256, VK_WG_TILE_NARROW = 128, VK_WG_K = 64, VK_WG_EPILOGUE = 32 << 10,
       VK_WG_STEP_MN = 32, VK_WG_STEP_N128 = 16, VK_WG_STEP_K = 16 };
/* the cooperative-matrix schedule for matmul kernel i where it qualifies, and for attention kernel
 * i within VK_COOP_SHARED bytes (whatever the device: the runtime's hook calls it only on devices
 * with cooperative matrices, and schedules attention for the device's own shared memory); false
 * where not */
bool vk_coop_schedule(kir_module *m, int i);
/* matmul_wg.c, the f16 matmul on cooperative matrices of the whole work group: whether matmul
 * kernel i is a GEMM it takes; whether schedule s fits it on a device whose matrices' sizes go in
 * `steps` and that leaves `shared` bytes of shared memory beside the driver's (why not, where not);
 * the steps where no device is known; the rule's schedule; its declarations and body */
bool vk_coop_wg_eligible(const kir_module *m, int i);
bool vk_coop_wg_fit(const kir_module *m, int i, const kir_schedule *s, const vk_wg_steps *steps, size_t shared, char *why, size_t len);
const vk_wg_steps *vk_coop_wg_default_steps(void);
void vk_coop_wg_schedule(kir_schedule *s);
/* whether the rule takes them for kernel i: a GEMM they take whose sums leave from the matrices,
 * plain or finished by a second dispatch (H100: with an epilogue through shared memory they ran at
 * half the subgroup kernel's speed) */
bool vk_coop_wg_rule(const kir_module *m, int i);
/* whether kernel k stores its output from those matrices (a plain output of f16 or f32, or its sums
 * there, finished after), through the output's 16-byte words `bIv` (vk_declare_buffers); the
 * invocations of its second dispatch, the epilogue over those sums (PC_PHASE 1: one a word of
 * the output), 0 where it has none */
bool vk_coop_wg_stores_matrices(const kir_module *m, const kir_kernel *k);
int64_t vk_coop_wg_after(const kir_module *m, const kir_kernel *k);
/* whether kernel k finishes its epilogue on the matrices' elements before it stores them (an
 * epilogue elementwise on the sums, or on the sums plus a row vector, a bias: the sums then start
 * from it); the buffer of that vector, -1 where none */
bool vk_coop_wg_on_elements(const kir_module *m, const kir_kernel *k);
int vk_coop_wg_row_vector(const kir_module *m, const kir_kernel *k);
void vk_coop_wg_declare(emitter *e, int index);
void vk_coop_wg(emitter *e);
/* portc's own Vulkan kernels beyond the matmuls, taken where PORTC_VULKAN_KERNELS lists them
 * (comma-separated; "none"), else by default: coopconv, f16 convolutions channels-last on the
 * cooperative-matrix kernel (matmul.c), opt-in until timed against the SIMT kernel on a GPU;
 * coopattention, f16 attention on cooperative matrices (attention.c), taken by default;
 * coopwg, f16 GEMMs whose sums leave from cooperative matrices of the whole work group
 * (matmul_wg.c), taken by default (the H100's matmul_8192_f16: 3.36-3.45 ms against the subgroup
 * kernel's 3.83-3.86; with bias and GELU 3.57 against 4.05); coopwgtensor, those GEMMs' panels
 * loaded through tensor layouts (spirv_tensor.c), opt-in: on the H100 not faster (matmul_8192_f16
 * 3.46 ms against 3.35 with plain loads unrolled 4; 8.16 before their offsets named rows and
 * columns); coopwgelements, their elementwise epilogues (after at most a bias) finished on the
 * matrices' elements, opt-in: on the H100 slower than the second dispatch (the f16 MLP 0.565 ms
 * against 0.552). A list naming another kernel is an error that names it (vk_own_kernels_known). */
enum {
  VK_OWN_COOPCONV = 1u << 0,
  VK_OWN_COOPATTENTION = 1u << 1,
  VK_OWN_COOPWG = 1u << 2,
  VK_OWN_COOPWG_TENSOR = 1u << 3,
  VK_OWN_COOPWG_ELEMENTS = 1u << 4,
  VK_OWN_DEFAULT = VK_OWN_COOPATTENTION | VK_OWN_COOPWG
};
unsigned vk_own_kernels(const char *list);
bool vk_own_kernels_known(const char *list, char *why, size_t len);
/* the dtypes whose convolutions the device computes channels-last (the target's hook) */
unsigned vk_channels_last(int device);
/* matmul.c, the target's own matmuls: whether the cooperative-matrix matmul takes the schedule's
 * tile, k-step (tile_k) and threads within the device's shared memory (false with why); the
 * k-step of the f32 word matmul (the schedule's tile_k, or where that is 0 the shortest its tile
 * allows: 1024 / tile), and whether the kernel and the device's shared memory take its tile and
 * k-step (false with why) */
bool vk_coop_fit(const kir_schedule *s, size_t shared_max, char *why, size_t len);
int vk_words_k_step(const kir_schedule *s);
bool vk_words_fit(const kir_schedule *s, int kind, size_t shared_max, char *why, size_t len);
bool vk_words_store_words(const kir_module *m, const kir_kernel *k);
/* whether kernel k runs one of the target's own matmuls (matmul.c: cooperative matrices, or f32
 * in 16-byte words, which also serves convolutions), and that kernel's shader */
bool vk_matmul_own(const kir_kernel *k);
void vk_matmul(emitter *e, int index);
/* attention.c, attention on cooperative matrices: whether attention kernel i qualifies within the
 * device's shared memory (false with why), its schedule where it does (variant mma), the check of
 * a schedule of that variant, and its shader */
bool vk_attention_coop_fits(const kir_module *m, int i, size_t shared_max, char *why, size_t len);
bool vk_attention_coop_schedule(kir_module *m, int i, size_t shared_max);
bool vk_attention_coop_check(const kir_module *m, int i, size_t shared_max, char *why, size_t len);
void vk_attention_coop(emitter *e, int index);
/* Split-K: the slices of kernel k's reduction (1: whole), a convolution's (gpu_conv_split) or
 * the f32 word matmul's of one GEMM; the M x N of its partial sums (a slice's: f32 in the
 * module's scratch buffer, pc_acc[slice][M][N]); and its shader: phase0 (the slices' partial
 * sums) and phase1 (their sum, and the epilogue) under the specialization constant PC_PHASE */
int vk_split(const kir_kernel *k);
void vk_split_mn(const kir_module *m, int i, const int64_t *S, int64_t mn[2]);
void vk_split_phases(emitter *e, void (*phase0)(emitter *e), void (*phase1)(emitter *e));
/* dialect.c: kernel index's buffer declarations; words: the matmul operands are declared a
 * second time as 16-byte words (bNv) */
void vk_declare_buffers(emitter *e, int index, bool words);
/* the schedule hook (schedule.c): every launch decision of a kernel, in k->sched; and what a
 * tune entry may change of it, and the candidates the tuner times */
void vk_schedule(kir_module *m, int i, int device);
/* dialect.c: whether row kernel i's float buffers can all move in 16-byte words */
bool vk_vector_dtypes(const kir_module *m, int index);
/* whether kernel k's vector width is its buffers' (row, pointwise and concat kernels with one) */
bool vk_vector_kernel(const kir_kernel *k);
bool vk_schedule_check(kir_module *m, int i, int device, char *why, size_t len);
int vk_tune_space(const kir_module *m, int i, const tune_device *d, tune_knobs *out, int max);

extern const dialect vulkan_dialect;

#endif
