/*
 * runtime.c: the Vulkan target. load cuts the module's GLSL into one shader per kernel, checks
 * each against the device's features, compiles it (or finds its SPIR-V in the kernel cache) and
 * makes a compute pipeline through the pipeline cache. The shared GPU queue
 * (targets/gpu_queue.c) collects a run's launches; this file records every dispatch into one
 * command buffer, with a barrier between dependent dispatches and timestamps around them, and
 * submits it and waits; in reduce-overhead mode the queue resubmits the command buffer while
 * the buffers and symbol values stay the same. A split-K kernel is two dispatches of one
 * shader (its phases, two pipelines) through the module's scratch buffer of partial sums; so is
 * a matmul on the work group's matrices whose epilogue follows over the output (matmul_wg.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../codegen/emit.h"
#include "../codegen/gpu_kernels.h"
#include "../codegen/grid.h"
#include "../targets/cache.h"
#include "../targets/gpu_queue.h"
#include "../targets/regional.h"
#include "vk.h"

typedef struct vk_kernel {
  VkShaderModule shader;
  VkDescriptorSetLayout dsl;
  VkPipelineLayout layout;
  VkPipeline pipe;
  VkPipeline sum;                /* the second phase: a split-K kernel's slices added, or a work group matmul's epilogue */
  int owner;                     /* the kernel whose shader and pipeline these are (identical kernels share them) */
  VkDescriptorSet set;          /* binding j is the kernel's buffer j; the status word is binding nbind */
  dev_buf bound[GPU_MAX_ARGS];   /* what the descriptor set holds now */
  uint64_t serial[GPU_MAX_ARGS]; /* of the buffers it holds: the pointers alone may be reused */
  uint64_t scratch_serial;       /* of the scratch buffer it holds (split-K), 0: none yet */
  bool written;
} vk_kernel;

typedef struct vk_module {
  vk_context *c;
  const kir_module *km;
  int nk, nsym;
  vk_kernel *k;
  gpu_queue q;
  gpu_limits lim;
  double host_seconds; /* the last submission, on the host's clock */
  VkDescriptorPool pool;
  VkCommandPool cpool;
  VkCommandBuffer cb;
  VkFence fence;
  VkQueryPool queries;
  vk_buffer *status;
  vk_buffer *scratch; /* split-K kernels' partial sums (f32), grown to the largest launch */
} vk_module;

/* a driver, and no unknown name in PORTC_VULKAN_KERNELS (which every compile would refuse) */
static bool available(char *why, size_t len) { return vk_available(why, len) && vk_own_kernels_known(getenv("PORTC_VULKAN_KERNELS"), why, len); }
static const char *device(void) { return vk_default_device_name(); }

static void unload(void *handle) {
  vk_module *m = handle;
  if (!m) return;
  vk_context *c = m->c;
  for (int i = 0; m->k && i < m->nk; i++) {
    vk_kernel *k = &m->k[i];
    if (k->owner != i) continue; /* another kernel's */
    if (k->pipe) c->d.vkDestroyPipeline(c->dev, k->pipe, NULL);
    if (k->sum) c->d.vkDestroyPipeline(c->dev, k->sum, NULL);
    if (k->layout) c->d.vkDestroyPipelineLayout(c->dev, k->layout, NULL);
    if (k->dsl) c->d.vkDestroyDescriptorSetLayout(c->dev, k->dsl, NULL);
    if (k->shader) c->d.vkDestroyShaderModule(c->dev, k->shader, NULL);
  }
  if (m->queries) c->d.vkDestroyQueryPool(c->dev, m->queries, NULL);
  if (m->fence) c->d.vkDestroyFence(c->dev, m->fence, NULL);
  if (m->cpool) c->d.vkDestroyCommandPool(c->dev, m->cpool, NULL);
  if (m->pool) c->d.vkDestroyDescriptorPool(c->dev, m->pool, NULL);
  vk_buffer_free(c, m->status);
  vk_buffer_free(c, m->scratch);
  free(m->k);
  gpu_queue_free(&m->q);
  free(m);
}

static portc_status vk_fail(VkResult r, const char *what, const vk_context *c) {
  return err_set(r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY ? PORTC_ERR_NOMEM : PORTC_ERR_DEVICE,
                 "vulkan: %s failed on %s: %s", what, c->props.deviceName, vk_result_name(r));
}

portc_status vk_kernel_defines(const vk_context *c, int i, const char *line, const char **defines, int *nd) {
  /* feature NULL: optional, the kernel has a variant for devices without it; else required (the
   * schedule asked for it on a device that has it: a module file moved to one without fails here) */
  const struct { const char *word, *define, *feature; bool have; } table[] = {
      {"int64", "PC_INT64", "64-bit integers (shaderInt64)", c->f.int64},
      {"storage16", "PC_STORAGE16", "16-bit storage buffers (storageBuffer16BitAccess)", c->f.storage16},
      {"storage8", "PC_STORAGE8", "8-bit storage buffers (storageBuffer8BitAccess)", c->f.storage8},
      {"row", "PC_ROW_KERNEL", NULL, true},
      {"exp16", "PC_EXP16", NULL, true},
      {"coopmat", "PC_COOPMAT", "cooperative matrices (f16 16x16x16 on subgroups of 32)", c->f.coop_matrix},
      {"coopmat", "PC_COOPMAT_KHR", NULL, c->f.coop_khr}, /* through VK_KHR_cooperative_matrix */
      {"coopwg", "PC_COOPMAT_WG", "cooperative matrices of a work group of 256 (VK_NV_cooperative_matrix2)", c->f.coop_workgroup},
      {"coopwgtensor", "PC_WG_TENSOR", "tensor addressing of a work group's cooperative matrices (VK_NV_cooperative_matrix2)", c->f.coop_wg_tensor},
  };
  for (size_t t = 0; t < sizeof table / sizeof *table; t++) {
    const char *w = strstr(line, table[t].word);
    size_t n = strlen(table[t].word);
    if (!w || (w[n] && w[n] != ' ' && w[n] != '\n')) continue;
    if (!table[t].have && table[t].feature)
      return err_set(PORTC_ERR_DEVICE, "vulkan: kernel %d needs %s, which %s does not offer", i, table[t].feature, c->props.deviceName);
    if (!table[t].have) continue;
    log_line("kernels", "vulkan: kernel %d: %s", i, table[t].define);
    defines[(*nd)++] = table[t].define;
  }
  defines[*nd] = NULL;
  return PORTC_OK;
}

typedef struct spirv_build {
  vk_context *c;
  const char *glsl, *name;
  const char *const *defines;
} spirv_build;

static portc_status build_spirv(void *ctx, void **data, size_t *bytes) {
  const spirv_build *b = ctx;
  size_t words = 0;
  portc_status st = vk_compile(b->c, b->glsl, b->name, b->defines, (uint32_t **)data, &words);
  *bytes = words * 4;
  return st;
}

/* the macros a kernel is built with, as one string: part of its module-file key */
static void variant_of(const char *const *defines, char *out, size_t len) {
  size_t at = 0;
  out[0] = 0;
  for (int i = 0; defines && defines[i] && at < len; i++) at += (size_t)snprintf(out + at, len - at, "%s ", defines[i]);
}

/* SPIR-V of one kernel's shader: from the module file being loaded (req->from), else from the
 * kernel cache or compiled and stored there, and then recorded for a module file being written */
static portc_status spirv_for(vk_context *c, const load_request *req, const char *glsl, const char *const *defines, const char *name,
                              int kernel, uint32_t **code, size_t *words, bool *hit) {
  char variant[256], key[33];
  variant_of(defines, variant, sizeof variant);
  if (req->from || req->record) prebuilt_key("vulkan", glsl, variant, key);
  if (req->from) {
    const prebuilt_entry *e = prebuilt_find(req->from, key);
    if (!e) return prebuilt_missing("vulkan", req->graph_name, kernel);
    if (e->bytes % 4 || !e->bytes) return err_set(PORTC_ERR_INVALID, "vulkan: kernel %d of the module file is not SPIR-V", kernel);
    if (!(*code = malloc(e->bytes))) return err_set(PORTC_ERR_NOMEM, "vulkan: out of memory");
    memcpy(*code, e->data, e->bytes);
    *words = e->bytes / 4;
    *hit = true;
    return PORTC_OK;
  }
  build_args args = {0};
  vk_compile_options(c, defines, &args);
  build_key k = {.target = "vulkan", .source = glsl, .args = &args, .compiler = vk_compiler_id(), .device = c->cache_id};
  spirv_build b = {c, glsl, name, defines};
  const uint32_t spirv_magic = 0x07230203u; /* SPIR-V's first word, as this host writes it */
  size_t bytes = 0;
  portc_status st = cache_or_build(&k, "spv", &spirv_magic, 4, name, build_spirv, &b, (void **)code, &bytes, hit, NULL, NULL);
  if (!st && bytes % 4) st = err_set(PORTC_ERR_INTERNAL, "vulkan: kernel %s: SPIR-V of %zu bytes is not whole words", name, bytes);
  if (!st && req->record) st = prebuilt_add(req->record, key, *code, bytes);
  *words = bytes / 4;
  return st;
}

/* PORTC_LOG=shader_stats: what the driver says of kernel i's compiled code (registers, spills,
 * instructions: each driver names its own statistics), one line per executable */
static void log_stats(vk_module *m, int i) {
  vk_context *c = m->c;
  if (!c->d.vkGetPipelineExecutablePropertiesKHR || !c->d.vkGetPipelineExecutableStatisticsKHR) return;
  VkPipelineInfoKHR pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = m->k[i].pipe};
  VkPipelineExecutablePropertiesKHR props[4];
  uint32_t n = 4;
  for (uint32_t e = 0; e < n; e++) props[e] = (VkPipelineExecutablePropertiesKHR){.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR};
  if (c->d.vkGetPipelineExecutablePropertiesKHR(c->dev, &pi, &n, props) < 0) return;
  for (uint32_t e = 0; e < n; e++) {
    VkPipelineExecutableInfoKHR ei = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, .pipeline = m->k[i].pipe, .executableIndex = e};
    VkPipelineExecutableStatisticKHR st[32];
    uint32_t ns = 32;
    for (uint32_t k = 0; k < ns; k++) st[k] = (VkPipelineExecutableStatisticKHR){.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
    if (c->d.vkGetPipelineExecutableStatisticsKHR(c->dev, &ei, &ns, st) < 0) continue;
    char line[2048];
    size_t len = 0;
    for (uint32_t k = 0; k < ns && len < sizeof line; k++) {
      const VkPipelineExecutableStatisticKHR *x = &st[k];
      int w = x->format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR ? snprintf(line + len, sizeof line - len, "; %s %s", x->name, x->value.b32 ? "yes" : "no")
              : x->format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR   ? snprintf(line + len, sizeof line - len, "; %s %lld", x->name, (long long)x->value.i64)
              : x->format == VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR  ? snprintf(line + len, sizeof line - len, "; %s %llu", x->name, (unsigned long long)x->value.u64)
                                                                                 : snprintf(line + len, sizeof line - len, "; %s %g", x->name, x->value.f64);
      len += w > 0 ? (size_t)w : 0;
    }
    const kir_kernel *k = &m->km->k[i];
    log_line("shader_stats", "vulkan %s kernel %d (computes %s), %s%s", m->km->g->name ? m->km->g->name : "graph", i,
             k->nnodes ? m->km->g->nodes[k->nodes[k->nnodes - 1]].name : "-", props[e].name, len ? line : ": no statistics");
  }
}

static portc_status make_pipeline(vk_module *m, int i, const uint32_t *code, size_t words) {
  vk_context *c = m->c;
  vk_kernel *k = &m->k[i];
  const gpu_args *a = &m->q.args[i];
  const bool split = vk_split(&m->km->k[i]) > 1, phases = split || vk_coop_wg_after(m->km, &m->km->k[i]);
  VkResult r;
  if ((uint32_t)(a->nbind + a->status + split) > c->props.limits.maxPerStageDescriptorStorageBuffers)
    return err_set(PORTC_ERR_DEVICE, "vulkan: kernel %d binds %d storage buffers; %s allows %u per shader stage", i, a->nbind + a->status + split,
                   c->props.deviceName, c->props.limits.maxPerStageDescriptorStorageBuffers);
  VkShaderModuleCreateInfo si = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = words * 4, .pCode = code};
  if ((r = c->d.vkCreateShaderModule(c->dev, &si, NULL, &k->shader))) return vk_fail(r, "vkCreateShaderModule", c);
  VkDescriptorSetLayoutBinding b[GPU_MAX_ARGS + 1];
  int nb = 0;
  for (int j = 0; j < a->nbind; j++)
    b[nb++] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)j, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                             .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
  if (a->status)
    b[nb++] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)a->nbind, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                             .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
  if (split) /* the scratch buffer, after the status word */
    b[nb++] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)(a->nbind + a->status), .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                             .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
  VkDescriptorSetLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, .bindingCount = (uint32_t)nb, .pBindings = b};
  if ((r = c->d.vkCreateDescriptorSetLayout(c->dev, &li, NULL, &k->dsl))) return vk_fail(r, "vkCreateDescriptorSetLayout", c);
  VkPushConstantRange pcr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = 4 * (uint32_t)(m->nsym > 0 ? m->nsym : 1)};
  VkPipelineLayoutCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1, .pSetLayouts = &k->dsl,
                                   .pushConstantRangeCount = 1, .pPushConstantRanges = &pcr};
  if ((r = c->d.vkCreatePipelineLayout(c->dev, &pi, NULL, &k->layout))) return vk_fail(r, "vkCreatePipelineLayout", c);
  /* PC_WG, for 1-D kernels; PC_PHASE, for kernels of two phases (0 here, 1 for the second's pipeline) */
  uint32_t constants[2] = {(uint32_t)m->km->k[i].sched.threads[0], 0};
  VkSpecializationMapEntry entries[2] = {{.constantID = 0, .offset = 0, .size = 4}, {.constantID = 3, .offset = 4, .size = 4}};
  VkSpecializationInfo spec = {.mapEntryCount = phases ? 2 : 1, .pMapEntries = entries, .dataSize = phases ? 8 : 4, .pData = constants};
  /* the cooperative-matrix matmul is written for subgroups of 32 */
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfoEXT size32 = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO_EXT, .requiredSubgroupSize = 32};
  bool require32 = c->f.coop_size32 && m->km->k[i].sched.variant == KS_MMA && m->km->k[i].kind == KK_MATMUL;
  VkComputePipelineCreateInfo ci = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .pNext = require32 ? &size32 : NULL,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = k->shader, .pName = "main", .pSpecializationInfo = &spec},
      .layout = k->layout,
      .flags = c->f.exec_stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0};
  pthread_mutex_lock(&c->lock); /* the pipeline cache is shared by the process's modules */
  r = c->d.vkCreateComputePipelines(c->dev, c->pcache, 1, &ci, NULL, &k->pipe);
  if (!r && phases) {
    constants[1] = 1;
    r = c->d.vkCreateComputePipelines(c->dev, c->pcache, 1, &ci, NULL, &k->sum);
  }
  pthread_mutex_unlock(&c->lock);
  if (r) return vk_fail(r, "vkCreateComputePipelines", c);
  if (c->f.exec_stats) log_stats(m, i);
  return PORTC_OK;
}

/* the descriptor pool with one set per kernel, the command buffer, fence, timestamps, status */
static portc_status make_frame(vk_module *m) {
  vk_context *c = m->c;
  VkResult r;
  uint32_t descriptors = 0;
  for (int i = 0; i < m->nk; i++) descriptors += (uint32_t)m->q.args[i].nbind + m->q.args[i].status + (vk_split(&m->km->k[i]) > 1);
  VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = descriptors ? descriptors : 1};
  VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = (uint32_t)(m->nk ? m->nk : 1),
                                    .poolSizeCount = 1, .pPoolSizes = &ps};
  if ((r = c->d.vkCreateDescriptorPool(c->dev, &dpi, NULL, &m->pool))) return vk_fail(r, "vkCreateDescriptorPool", c);
  for (int i = 0; i < m->nk; i++) {
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, .descriptorPool = m->pool,
                                      .descriptorSetCount = 1, .pSetLayouts = &m->k[i].dsl};
    if ((r = c->d.vkAllocateDescriptorSets(c->dev, &ai, &m->k[i].set))) return vk_fail(r, "vkAllocateDescriptorSets", c);
  }
  VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                 .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = c->qfam};
  if ((r = c->d.vkCreateCommandPool(c->dev, &cpi, NULL, &m->cpool))) return vk_fail(r, "vkCreateCommandPool", c);
  VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = m->cpool,
                                     .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
  if ((r = c->d.vkAllocateCommandBuffers(c->dev, &cai, &m->cb))) return vk_fail(r, "vkAllocateCommandBuffers", c);
  VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if ((r = c->d.vkCreateFence(c->dev, &fi, NULL, &m->fence))) return vk_fail(r, "vkCreateFence", c);
  if (c->f.timestamps) {
    VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO, .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 2};
    if ((r = c->d.vkCreateQueryPool(c->dev, &qi, NULL, &m->queries))) return vk_fail(r, "vkCreateQueryPool", c);
  }
  return m->q.status ? vk_buffer_new(c, 4, true, &m->status) : PORTC_OK;
}

/* the kernels of a load: pieces cut from the module, each distinct one built and made once */
typedef struct vk_load {
  vk_module *m;
  kernel_piece *pc;
  const char *(*defines)[10];
  const load_request *req;
  const char *graph_name;
  int *distinct; /* the kernels whose pieces are distinct, in order */
  bool *hit;
} vk_load;

/* distinct kernel j's SPIR-V (cache or shaderc) and pipeline: the jobs run on the host's cores */
static portc_status build_one(void *ctx, int j) {
  vk_load *L = ctx;
  int i = L->distinct[j];
  char name[160];
  snprintf(name, sizeof name, "%s.kernel%d", L->graph_name, i);
  uint32_t *code = NULL;
  size_t words = 0;
  portc_status st = spirv_for(L->m->c, L->req, L->pc[i].source, L->defines[i], name, i, &code, &words, &L->hit[i]);
  if (!st) st = make_pipeline(L->m, i, code, words);
  free(code);
  return st;
}

/* kernel i, whose source is kernel o's: the same pipeline where the work-group size is the same
 * too (it is a specialization constant, not in the text), else a pipeline of o's SPIR-V */
static portc_status share_pipeline(vk_load *L, int i, int o) {
  vk_module *m = L->m;
  if (m->km->k[i].sched.threads[0] == m->km->k[o].sched.threads[0]) {
    m->k[i].owner = o;
    m->k[i].shader = m->k[o].shader, m->k[i].dsl = m->k[o].dsl, m->k[i].layout = m->k[o].layout, m->k[i].pipe = m->k[o].pipe;
    m->k[i].sum = m->k[o].sum;
    L->hit[i] = true;
    return PORTC_OK;
  }
  char name[160];
  snprintf(name, sizeof name, "%s.kernel%d", L->graph_name, i);
  uint32_t *code = NULL;
  size_t words = 0;
  portc_status st = spirv_for(m->c, L->req, L->pc[i].source, L->defines[i], name, i, &code, &words, &L->hit[i]);
  if (!st) st = make_pipeline(m, i, code, words);
  free(code);
  return st;
}

static portc_status load_kernels(vk_module *m, const load_request *req, bool *all_hit) {
  vk_load L = {.m = m, .req = req, .graph_name = req->graph_name};
  int nk = m->nk;
  portc_status st = kernel_pieces(req->source, nk, "vulkan", &L.pc);
  if (st) return st;
  L.defines = calloc((size_t)nk + 1, sizeof *L.defines);
  L.distinct = calloc((size_t)nk + 1, sizeof *L.distinct);
  L.hit = calloc((size_t)nk + 1, sizeof *L.hit);
  if (!L.defines || !L.distinct || !L.hit) st = err_set(PORTC_ERR_NOMEM, "vulkan: out of memory");
  int nd = 0;
  for (int i = 0; i < nk && !st; i++) {
    int n = 0;
    st = vk_kernel_defines(m->c, i, L.pc[i].needs, L.defines[i], &n);
    if (L.pc[i].same_as == i) L.distinct[nd++] = i;
    m->k[i].owner = i;
  }
  if (!st) st = run_parallel(nd, build_one, &L);
  for (int i = 0; i < nk && !st; i++)
    if (L.pc[i].same_as != i) st = share_pipeline(&L, i, L.pc[i].same_as);
  *all_hit = true;
  for (int i = 0; i < nk && !st; i++) *all_hit = *all_hit && L.hit[i];
  if (!st && nd < nk) log_line("cache", "vulkan: graph %s: %d kernels, %d distinct: each built once", req->graph_name, nk, nd);
  kernel_pieces_free(L.pc, nk);
  free(L.defines);
  free(L.distinct);
  free(L.hit);
  return st;
}

static portc_status load(const load_request *req, void **handle, bool *hit) {
  char why[512];
  vk_context *c = vk_context_get(req->device, why, sizeof why);
  if (!c) return err_set(PORTC_ERR_DEVICE, "vulkan: %s", why);
  const kir_module *km = req->km;
  vk_module *m = calloc(1, sizeof *m);
  if (!m) return err_set(PORTC_ERR_NOMEM, "vulkan: out of memory");
  m->c = c, m->km = km, m->nk = km->nk, m->nsym = km->g->nsyms;
  m->lim = (gpu_limits){.max_groups = {VK_MAX_GROUPS, VK_MAX_GROUPS, VK_MAX_GROUPS}};
  portc_status st = gpu_queue_init(&m->q, "vulkan", km, req->reduce_overhead);
  m->k = calloc((size_t)km->nk + 1, sizeof *m->k);
  if (st || !m->k) {
    unload(m);
    return st ? st : err_set(PORTC_ERR_NOMEM, "vulkan: out of memory");
  }
  bool all_hit = true;
  if (!(st = load_kernels(m, req, &all_hit))) st = make_frame(m);
  if (st) {
    unload(m);
    return st;
  }
  if (!all_hit) vk_pipeline_cache_save(c);
  *hit = all_hit;
  *handle = m;
  return PORTC_OK;
}

static portc_status launch(void *handle, int i, void *const *bufs, const int64_t *S) {
  vk_module *m = handle;
  const gpu_args *a = &m->q.args[i];
  for (int j = 0; j < a->nbind; j++) {
    const dev_buf *b = bufs[a->bind[j]];
    if (b->bytes > (int64_t)m->c->props.limits.maxStorageBufferRange)
      return err_set(PORTC_ERR_DEVICE, "vulkan: buffer %d has %lld bytes; %s binds at most %u (maxStorageBufferRange)", a->bind[j],
                     (long long)b->bytes, m->c->props.deviceName, m->c->props.limits.maxStorageBufferRange);
  }
  return gpu_queue_launch(&m->q, i, bufs, S);
}

/* bound (with its buffer's serial) against a pending range, whose buffer is alive */
static bool same_buf(const dev_buf *bound, uint64_t serial, const dev_buf *b) {
  return bound->obj == b->obj && serial == ((const vk_buffer *)b->obj)->serial && bound->offset == b->offset && bound->bytes == b->bytes;
}

/* points kernel i's descriptor set at its pending buffers, where they changed */
static void update_set(vk_module *m, int i) {
  vk_kernel *k = &m->k[i];
  const gpu_args *a = &m->q.args[i];
  const gpu_launch *l = &m->q.pending[i];
  const bool split = vk_split(&m->km->k[i]) > 1 && m->scratch; /* no scratch yet: the kernel is not launched */
  bool same = k->written && (!split || k->scratch_serial == m->scratch->serial);
  for (int j = 0; j < a->nbind && same; j++) same = same_buf(&k->bound[j], k->serial[j], &l->b[j]);
  if (same) return;
  VkDescriptorBufferInfo info[GPU_MAX_ARGS + 2];
  VkWriteDescriptorSet w[GPU_MAX_ARGS + 2];
  int n = 0;
  for (int j = 0; j < a->nbind; j++) {
    const vk_buffer *vb = l->b[j].obj;
    /* a size-0 tensor still binds a valid range: the module gives every buffer 4 bytes or more */
    /* whole 32-bit words, as narrow elements are read through them: allocations round up to 4 */
    VkDeviceSize range = ((VkDeviceSize)l->b[j].bytes + 3) & ~(VkDeviceSize)3;
    info[n] = (VkDescriptorBufferInfo){vb->buf, (VkDeviceSize)l->b[j].offset, range ? range : VK_WHOLE_SIZE};
    w[n] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = k->set, .dstBinding = (uint32_t)j,
                                  .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &info[n]};
    n++;
    k->bound[j] = l->b[j];
    k->serial[j] = vb->serial;
  }
  if (a->status) {
    info[n] = (VkDescriptorBufferInfo){m->status->buf, 0, VK_WHOLE_SIZE};
    w[n] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = k->set, .dstBinding = (uint32_t)a->nbind,
                                  .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &info[n]};
    n++;
  }
  if (split) {
    info[n] = (VkDescriptorBufferInfo){m->scratch->buf, 0, VK_WHOLE_SIZE};
    w[n] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = k->set, .dstBinding = (uint32_t)(a->nbind + a->status),
                                  .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &info[n]};
    n++;
    k->scratch_serial = m->scratch->serial;
  }
  m->c->d.vkUpdateDescriptorSets(m->c->dev, (uint32_t)n, w, 0, NULL);
  k->written = true;
}

static void barrier(vk_module *m, VkPipelineStageFlags src, VkAccessFlags sa, VkPipelineStageFlags dst, VkAccessFlags da) {
  VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = sa, .dstAccessMask = da};
  m->c->d.vkCmdPipelineBarrier(m->cb, src, dst, 0, 1, &b, 0, NULL, 0, NULL);
}

/* ---- the shared queue's calls (targets/gpu_queue.h): every run is recorded ---- */

/* the scratch buffer as large as the split-K kernels of this run need (slices x M x N
 * floats), grown where a launch needs more; the last submission has ended, so the old one is free */
static portc_status ensure_scratch(vk_module *m) {
  int64_t need = 0;
  for (int i = 0; i < m->nk; i++) {
    int split = vk_split(&m->km->k[i]);
    if (split <= 1 || !m->q.launched[i]) continue;
    int64_t mn[2];
    vk_split_mn(m->km, i, m->q.pending[i].S, mn);
    int64_t bytes = split * mn[0] * mn[1] * 4;
    if (bytes > (int64_t)m->c->props.limits.maxStorageBufferRange)
      return err_set(PORTC_ERR_DEVICE,
                     "vulkan: kernel %d (a reduction in %d slices) needs %lld bytes of partial sums; %s binds at most %u "
                     "(maxStorageBufferRange): a tune entry with split_k=1 for it runs it whole",
                     i, split, (long long)bytes, m->c->props.deviceName, m->c->props.limits.maxStorageBufferRange);
    if (bytes > need) need = bytes;
  }
  if (!need || (m->scratch && m->scratch->bytes >= need)) return PORTC_OK;
  vk_buffer_free(m->c, m->scratch);
  m->scratch = NULL;
  portc_status st = vk_buffer_new(m->c, need, false, &m->scratch);
  if (!st) return PORTC_OK;
  char why[1024];
  snprintf(why, sizeof why, "%s", portc_last_error());
  return err_set(st, "%s (the scratch buffer of split-K kernels' partial sums, %lld bytes)", why, (long long)need);
}

static portc_status record_begin(void *rt) {
  vk_module *m = rt;
  vk_context *c = m->c;
  portc_status st = ensure_scratch(m);
  if (st) return st;
  for (int i = 0; i < m->nk; i++) update_set(m, i);
  VkResult r = c->d.vkResetCommandBuffer(m->cb, 0);
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  if (r || (r = c->d.vkBeginCommandBuffer(m->cb, &bi))) return vk_fail(r, "vkBeginCommandBuffer", c);
  if (m->queries) c->d.vkCmdResetQueryPool(m->cb, m->queries, 0, 2);
  return PORTC_OK;
}

static void status_clear(void *rt) {
  vk_module *m = rt;
  m->c->d.vkCmdFillBuffer(m->cb, m->status->buf, 0, 4, 0);
}

/* what the host and earlier copies wrote is visible to the kernels; then the first timestamp */
static void timer_start(void *rt) {
  vk_module *m = rt;
  barrier(m, VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  if (m->queries) m->c->d.vkCmdWriteTimestamp(m->cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, m->queries, 0);
}

static portc_status issue(void *rt, int i, const gpu_launch *l) {
  vk_module *m = rt;
  const vk_device_api *d = &m->c->d;
  vk_kernel *k = &m->k[i];
  uint32_t g[3];
  int32_t S[GPU_MAX_SYMS] = {0};
  for (int s = 0; s < m->nsym; s++) S[s] = (int32_t)l->S[s];
  gpu_grid(m->km, i, l->S, &m->lim, g);
  d->vkCmdBindPipeline(m->cb, VK_PIPELINE_BIND_POINT_COMPUTE, k->pipe);
  d->vkCmdBindDescriptorSets(m->cb, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0, 1, &k->set, 0, NULL);
  d->vkCmdPushConstants(m->cb, k->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4 * (uint32_t)(m->nsym > 0 ? m->nsym : 1), S);
  d->vkCmdDispatch(m->cb, g[0], g[1], g[2]);
  /* the next kernel may read what this one wrote */
  barrier(m, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  const int64_t words = vk_coop_wg_after(m->km, &m->km->k[i]);
  if (vk_split(&m->km->k[i]) > 1 || words) { /* the slices added, or the epilogue: the kernel's work groups over M x N (its words) */
    int64_t mn[2];
    vk_split_mn(m->km, i, l->S, mn);
    const int64_t items = words ? words : mn[0] * mn[1], threads = gpu_group_threads(&m->km->k[i]), groups = (items + threads - 1) / threads;
    d->vkCmdBindPipeline(m->cb, VK_PIPELINE_BIND_POINT_COMPUTE, k->sum);
    d->vkCmdDispatch(m->cb, (uint32_t)(groups < 1 ? 1 : groups > VK_MAX_GROUPS ? VK_MAX_GROUPS : groups), 1, 1);
    barrier(m, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  }
  return PORTC_OK;
}

static void timer_stop(void *rt) {
  vk_module *m = rt;
  if (m->queries) m->c->d.vkCmdWriteTimestamp(m->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, m->queries, 1);
}

static portc_status record_end(void *rt, portc_status st) {
  vk_module *m = rt;
  barrier(m, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT);
  VkResult r = m->c->d.vkEndCommandBuffer(m->cb);
  if (!st && r) st = vk_fail(r, "vkEndCommandBuffer", m->c);
  return st;
}

/* submits the command buffer and waits for it */
static portc_status replay(void *rt) {
  vk_module *m = rt;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  portc_status st = vk_submit_wait(m->c, m->cb, m->fence);
  clock_gettime(CLOCK_MONOTONIC, &t1); /* without timestamps, the host's view of the submission */
  m->host_seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  return st;
}

static portc_status wait(void *rt, double *seconds) {
  vk_module *m = rt;
  *seconds = m->host_seconds;
  if (!m->queries) return PORTC_OK;
  uint64_t ts[2];
  VkResult r = m->c->d.vkGetQueryPoolResults(m->c->dev, m->queries, 0, 2, sizeof ts, ts, sizeof *ts,
                                             VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  if (r) return vk_fail(r, "vkGetQueryPoolResults", m->c);
  *seconds = (double)(ts[1] - ts[0]) * m->c->ns_per_tick * 1e-9;
  return PORTC_OK;
}

static portc_status status_read(void *rt, unsigned *word) {
  vk_module *m = rt;
  *word = *(volatile uint32_t *)m->status->map;
  return PORTC_OK;
}

static const gpu_queue_ops queue_ops = {
    .always_records = true,
    .record_begin = record_begin,
    .record_end = record_end,
    .replay = replay,
    .status_clear = status_clear,
    .timer_start = timer_start,
    .issue = issue,
    .timer_stop = timer_stop,
    .wait = wait,
    .status_read = status_read,
};

static portc_status end(void *handle, double *seconds) {
  vk_module *m = handle;
  return gpu_queue_run(&m->q, &queue_ops, m, seconds);
}

static const char *timer(void *handle) {
  vk_module *m = handle;
  return m->queries ? "device timestamps" : "host clock (the device has no timestamps)";
}

/* Vulkan lets a device flush f32 denormals unless the shader asks to keep them and it can
 * (shaderDenormPreserveFloat32); Mesa's lavapipe keeps them without saying so */
static bool flushes_denormals(void *handle) {
  vk_module *m = handle;
  return !m->c->f.denorm_preserve;
}

static portc_status dev_alloc(void *handle, int64_t bytes, void **obj) {
  vk_module *m = handle;
  return vk_buffer_new(m->c, (bytes + 3) & ~INT64_C(3), false, (vk_buffer **)obj);
}

static void dev_free(void *handle, void *obj) {
  vk_module *m = handle;
  vk_buffer_free(m->c, obj);
}

static portc_status dev_write(void *handle, void *obj, int64_t offset, const void *src, int64_t bytes) {
  vk_module *m = handle;
  return vk_buffer_write(m->c, obj, offset, src, bytes);
}

static portc_status dev_read(void *handle, void *obj, int64_t offset, void *dst, int64_t bytes) {
  vk_module *m = handle;
  return vk_buffer_read(m->c, obj, offset, dst, bytes);
}

static const target_gpu gpu = {.alloc = dev_alloc, .free = dev_free, .write = dev_write, .read = dev_read, .end = end, .timer = timer};

const target vulkan_target = {
    .name = "vulkan",
    .summary = "GLSL compute shaders compiled to SPIR-V by shaderc, run through the Vulkan loader",
    .dialect = &vulkan_dialect,
    .available = available,
    .device = device,
    .schedule = vk_schedule,
    .device_key = vk_device_key,
    .schedule_check = vk_schedule_check,
    .channels_last_convs = vk_channels_last,
    .tune_space = vk_tune_space,
    .load = load,
    .launch = launch,
    .unload = unload,
    .artifacts = true,
    .describe = vk_describe,
    .gpu = &gpu,
    .flushes_denormals = flushes_denormals,
    /* f16 and bf16: on the H200's driver the kernel ran 16x8x512x64 f16 attention 1.02x and causal
     * 8x8x1024x64 f16 1.49x as fast as matmul, softmax, matmul, but f32 0.83x (scripts/gpu_visit.sh
     * attention); PORTC_ATTENTION=kernel takes it for f32 too */
    .attention_kernel = 1u << PORTC_F16 | 1u << PORTC_BF16,
    .copy_merged_rows = 1u << PORTC_F16, /* the cooperative-matrix matmul reads matrices as they lie */
};
