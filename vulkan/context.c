/*
 * context.c: one Vulkan instance per process and one context per device used: the physical
 * device's properties, features and memory types, a logical device with a compute queue, and
 * the pipeline cache kept beside the kernel cache. With PORTC_VULKAN_VALIDATION=1 the Khronos
 * validation layer is enabled where installed, and every message it sends is printed with the
 * prefix "portc vulkan validation:" (the tests fail on any). PORTC_VULKAN_DISABLE=int64,storage16,
 * storage8,subgroup,timestamps,coopmat,denorm,f16convert makes portc treat a device as lacking those features,
 * which is how the tests reach the fallbacks and the errors of devices that lack them ("khrcoop":
 * the cross-vendor cooperative-matrix extension, so that NVIDIA's is used where offered; "nvcoop":
 * NVIDIA's; "wgcoop": workgroup-scope matrices). PORTC_VULKAN_KERNELS lists the kernels of portc's own to take (vk_own_kernels).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../targets/cache.h"
#include "../targets/kernel_list.h"
#include "vk.h"

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static bool tried, ok;
static char init_why[512];
static VkInstance instance;
static VkPhysicalDevice phys[16];
static uint32_t nphys;
static vk_context *contexts[16];

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev, VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
  (void)type, (void)user;
  if (sev >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT)
    fprintf(stderr, "portc vulkan validation: %s\n", data && data->pMessage ? data->pMessage : "(no message)");
  return VK_FALSE;
}

static bool has_layer(const char *name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || !n) return false;
  VkLayerProperties *l = calloc(n, sizeof *l);
  bool found = false;
  if (l && vkEnumerateInstanceLayerProperties(&n, l) == VK_SUCCESS)
    for (uint32_t i = 0; i < n && !found; i++) found = strcmp(l[i].layerName, name) == 0;
  free(l);
  return found;
}

/* the instance, and the list of physical devices; once per process */
static bool init_instance(void) {
  if (tried) return ok;
  tried = true;
  if (!vk_load_global(init_why, sizeof init_why)) return false;
  uint32_t version = VK_API_VERSION_1_0;
  vkEnumerateInstanceVersion(&version);
  if (version < VK_API_VERSION_1_1) {
    snprintf(init_why, sizeof init_why, "the Vulkan loader offers %u.%u; portc needs 1.1", VK_VERSION_MAJOR(version), VK_VERSION_MINOR(version));
    return false;
  }
  const char *v = getenv("PORTC_VULKAN_VALIDATION");
  bool validate = v && strcmp(v, "1") == 0 && has_layer("VK_LAYER_KHRONOS_validation");
  if (v && strcmp(v, "1") == 0 && !validate) fprintf(stderr, "portc: PORTC_VULKAN_VALIDATION=1, but the validation layer is not installed\n");
  const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
  const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  VkDebugUtilsMessengerCreateInfoEXT dbg = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
      .pfnUserCallback = on_message,
  };
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "portc", .pEngineName = "portc",
                           .apiVersion = version >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2 : VK_API_VERSION_1_1};
  VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
  if (validate) {
    ci.enabledLayerCount = 1, ci.ppEnabledLayerNames = layers;
    ci.enabledExtensionCount = 1, ci.ppEnabledExtensionNames = exts;
    ci.pNext = &dbg; /* reports from instance creation and on, without a messenger object */
  }
  VkResult r = vkCreateInstance(&ci, NULL, &instance);
  if (r == VK_SUCCESS) target_driver_started();
  if (r != VK_SUCCESS) {
    snprintf(init_why, sizeof init_why, "vkCreateInstance failed: %s (no Vulkan driver installed?)", vk_result_name(r));
    return false;
  }
  if (!vk_load_instance(instance, init_why, sizeof init_why)) return false;
  nphys = 16;
  r = vkEnumeratePhysicalDevices(instance, &nphys, phys);
  if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || nphys == 0) {
    snprintf(init_why, sizeof init_why, "the Vulkan loader found no device (%s): install a driver, e.g. mesa-vulkan-drivers",
             r == VK_SUCCESS ? "none listed" : vk_result_name(r));
    nphys = 0;
    return false;
  }
  return ok = true;
}

static int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
  case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
  default: return 0;
  }
}

/* the discrete GPU before the integrated one before the rest */
static int best_device(void) {
  int best = 0, rank = -1;
  for (uint32_t i = 0; i < nphys; i++) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(phys[i], &p);
    if (type_rank(p.deviceType) > rank) rank = type_rank(p.deviceType), best = (int)i;
  }
  return best;
}

static bool has_device_ext(VkPhysicalDevice pd, const char *name) {
  uint32_t n = 0;
  if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || !n) return false;
  VkExtensionProperties *e = calloc(n, sizeof *e);
  bool found = false;
  if (e && vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e) == VK_SUCCESS)
    for (uint32_t i = 0; i < n && !found; i++) found = strcmp(e[i].extensionName, name) == 0;
  free(e);
  return found;
}

static void driver_version(const VkPhysicalDeviceProperties *p, char *out, size_t len) {
  uint32_t v = p->driverVersion;
  if (p->vendorID == 0x10de)
    snprintf(out, len, "%u.%u.%u", v >> 22, (v >> 14) & 0xff, (v >> 6) & 0xff);
  else
    snprintf(out, len, "%u.%u.%u", VK_VERSION_MAJOR(v), VK_VERSION_MINOR(v), VK_VERSION_PATCH(v));
}

/* VK_NV_cooperative_matrix with 16x16x16 f16 x f16 + f32 on subgroups of 32, and the features its
 * shaders use (shaderFloat16, vulkanMemoryModel); Debian's glslang knows the NV extension only.
 * *device_scope: whether the memory model also takes device scope, which the status flag's
 * atomicOr uses (the validation layer reports it where the device enables the model without it) */
static bool coop_matrix_nv(VkPhysicalDevice pd, bool *device_scope) {
  *device_scope = false;
  if (!has_device_ext(pd, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) return false;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceVulkanMemoryModelFeatures mm = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES, .pNext = &cm};
  VkPhysicalDeviceShaderFloat16Int8Features f16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, .pNext = &mm};
  VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f16};
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  *device_scope = mm.vulkanMemoryModelDeviceScope;
  if (!cm.cooperativeMatrix || !mm.vulkanMemoryModel || !f16.shaderFloat16) return false;
  PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV get =
      (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
  uint32_t n = 0;
  if (!get || get(pd, &n, NULL) != VK_SUCCESS || !n) return false;
  VkCooperativeMatrixPropertiesNV *p = calloc(n, sizeof *p);
  bool found = false;
  for (uint32_t i = 0; p && i < n; i++) p[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
  if (p && get(pd, &n, p) == VK_SUCCESS)
    for (uint32_t i = 0; i < n && !found; i++)
      found = p[i].MSize == 16 && p[i].NSize == 16 && p[i].KSize == 16 && p[i].AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
              p[i].BType == VK_COMPONENT_TYPE_FLOAT16_NV && p[i].CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
              p[i].DType == VK_COMPONENT_TYPE_FLOAT32_NV && p[i].scope == VK_SCOPE_SUBGROUP_NV;
  free(p);
  return found;
}

/* VK_KHR_cooperative_matrix with 16x16x16 f16 x f16 + f32 at subgroup scope, and shaderFloat16:
 * the cross-vendor extension, the only one outside NVIDIA; the shaders are rewritten for it
 * (spirv_coop.c) */
static bool coop_matrix_khr(VkPhysicalDevice pd) {
  if (!has_device_ext(pd, PC_KHR_COOPERATIVE_MATRIX_NAME)) return false;
  pc_coop_features_khr cm = {.sType = (VkStructureType)PC_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceShaderFloat16Int8Features f16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, .pNext = &cm};
  VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f16};
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  if (!cm.cooperativeMatrix || !f16.shaderFloat16) return false;
  pc_coop_properties_fn get = (pc_coop_properties_fn)vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
  uint32_t n = 0;
  if (!get || get(pd, &n, NULL) != VK_SUCCESS || !n) return false;
  pc_coop_properties_khr *p = calloc(n, sizeof *p);
  bool found = false;
  for (uint32_t i = 0; p && i < n; i++) p[i].sType = (VkStructureType)PC_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
  if (p && get(pd, &n, p) == VK_SUCCESS)
    for (uint32_t i = 0; i < n && !found; i++)
      found = p[i].MSize == 16 && p[i].NSize == 16 && p[i].KSize == 16 && p[i].AType == PC_COMPONENT_FLOAT16_KHR &&
              p[i].BType == PC_COMPONENT_FLOAT16_KHR && p[i].CType == PC_COMPONENT_FLOAT32_KHR &&
              p[i].ResultType == PC_COMPONENT_FLOAT32_KHR && p[i].scope == PC_SCOPE_SUBGROUP_KHR;
  free(p);
  return found;
}

/* a component type of a cooperative matrix (VkComponentTypeKHR) as `portc devices` names it */
static const char *component_name(int32_t t, char *buf, size_t len) {
  static const char *const names[] = {"f16", "f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"};
  if (t >= 0 && t < (int32_t)(sizeof names / sizeof *names)) return names[t];
  if (t == PC_COMPONENT_BFLOAT16_KHR) return "bf16";
  snprintf(buf, len, "type %d", (int)t);
  return buf;
}

/* VK_NV_cooperative_matrix2 on a device that offers it: its features, its properties, and its
 * flexible sizes (*n of them, to be freed; NULL where there are none) */
static pc_coop_flexible_nv *coop2_query(VkPhysicalDevice pd, pc_coop2_features_nv *f, pc_coop2_properties_nv *p, uint32_t *n) {
  *f = (pc_coop2_features_nv){.sType = (VkStructureType)PC_STRUCTURE_TYPE_COOPERATIVE_MATRIX2_FEATURES_NV};
  VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = f};
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  *p = (pc_coop2_properties_nv){.sType = (VkStructureType)PC_STRUCTURE_TYPE_COOPERATIVE_MATRIX2_PROPERTIES_NV};
  VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = p};
  vkGetPhysicalDeviceProperties2(pd, &p2);
  pc_coop_flexible_fn get = (pc_coop_flexible_fn)vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
  *n = 0;
  if (!get || get(pd, n, NULL) != VK_SUCCESS || !*n) return NULL;
  pc_coop_flexible_nv *s = calloc(*n, sizeof *s);
  for (uint32_t i = 0; s && i < *n; i++) s[i].sType = (VkStructureType)PC_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV;
  if (s && get(pd, n, s) == VK_SUCCESS) return s;
  free(s);
  *n = 0;
  return NULL;
}

/* VK_NV_cooperative_matrix2's workgroup scope and flexible sizes with f16 x f16 + f32 -> f32 on
 * work groups of 256 (matmul_wg.c), and of 128 where offered too: the sizes' steps and the shared
 * memory the driver keeps */
static bool coop_matrix_wg(VkPhysicalDevice pd, vk_wg_steps *steps, uint32_t *reserved, bool *tensor) {
  *steps = (vk_wg_steps){0};
  *tensor = false;
  if (!has_device_ext(pd, PC_NV_COOPERATIVE_MATRIX2_NAME)) return false;
  pc_coop2_features_nv f;
  pc_coop2_properties_nv p;
  uint32_t n;
  pc_coop_flexible_nv *s = coop2_query(pd, &f, &p, &n);
  for (uint32_t i = 0; f.workgroupScope && f.flexibleDimensions && p.workgroupScopeMaxWorkgroupSize >= VK_WG_THREADS && i < n; i++)
    if (s[i].AType == PC_COMPONENT_FLOAT16_KHR && s[i].BType == PC_COMPONENT_FLOAT16_KHR && s[i].CType == PC_COMPONENT_FLOAT32_KHR &&
        s[i].ResultType == PC_COMPONENT_FLOAT32_KHR && !s[i].saturatingAccumulation && s[i].scope == PC_SCOPE_WORKGROUP_KHR &&
        (s[i].workgroupInvocations == 128 || s[i].workgroupInvocations == 256) && s[i].MGranularity && s[i].NGranularity && s[i].KGranularity) {
      uint32_t *step = steps->of[s[i].workgroupInvocations == 256];
      step[0] = s[i].MGranularity, step[1] = s[i].NGranularity, step[2] = s[i].KGranularity;
    }
  free(s);
  *reserved = p.workgroupScopeReservedSharedMemory;
  *tensor = f.tensorAddressing;
  return steps->of[1][0] != 0;
}

/* VK_NV_cooperative_matrix2 as `portc devices` tells it: whether the device offers workgroup-scope
 * matrices (the driver stages them through shared memory, as Hopper's wgmma wants), at which
 * sizes, and its other features, which portc's kernels do not use */
static void describe_coop2(FILE *out, VkPhysicalDevice pd) {
  if (!has_device_ext(pd, PC_NV_COOPERATIVE_MATRIX2_NAME)) {
    fprintf(out, "      cooperative matrix 2 (NV): no\n");
    return;
  }
  pc_coop2_features_nv f;
  pc_coop2_properties_nv p;
  uint32_t n;
  pc_coop_flexible_nv *s = coop2_query(pd, &f, &p, &n);
  fprintf(out,
          "      cooperative matrix 2 (NV): workgroup scope %s (work groups up to %u, %u bytes of shared memory reserved), flexible "
          "sizes %s (up to %u), reductions %s, conversions %s, per-element operations %s, tensor addressing %s, block loads %s\n",
          f.workgroupScope ? "yes" : "no", p.workgroupScopeMaxWorkgroupSize, p.workgroupScopeReservedSharedMemory,
          f.flexibleDimensions ? "yes" : "no", p.flexibleDimensionsMaxDimension, f.reductions ? "yes" : "no", f.conversions ? "yes" : "no",
          f.perElementOperations ? "yes" : "no", f.tensorAddressing ? "yes" : "no", f.blockLoads ? "yes" : "no");
  for (uint32_t i = 0; i < n; i++) {
    char a[16], b[16], c[16], r[16];
    fprintf(out, "        %s x %s + %s -> %s%s, %s scope, %u invocations: sizes in steps of %ux%ux%u\n", component_name(s[i].AType, a, sizeof a),
            component_name(s[i].BType, b, sizeof b), component_name(s[i].CType, c, sizeof c), component_name(s[i].ResultType, r, sizeof r),
            s[i].saturatingAccumulation ? " (saturating)" : "", s[i].scope == PC_SCOPE_WORKGROUP_KHR ? "workgroup" : "subgroup",
            s[i].workgroupInvocations, s[i].MGranularity, s[i].NGranularity, s[i].KGranularity);
  }
  free(s);
}

/* whether a pipeline may require subgroups of 32 where the device's default differs (AMD's
 * wave64 by default, say): VK_EXT_subgroup_size_control with 32 in range for compute */
static bool subgroups_of_32_on_request(VkPhysicalDevice pd) {
  if (!has_device_ext(pd, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME)) return false;
  VkPhysicalDeviceSubgroupSizeControlFeaturesEXT f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
  VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f};
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  VkPhysicalDeviceSubgroupSizeControlPropertiesEXT p = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
  VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &p};
  vkGetPhysicalDeviceProperties2(pd, &p2);
  return f.subgroupSizeControl && p.minSubgroupSize <= 32 && p.maxSubgroupSize >= 32 && (p.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
}

/* the device's multiprocessors (NVIDIA's SMs, AMD's compute units) where a vendor extension
 * says, for split-K's rule; 0 where none does (Intel, Arm, software drivers) */
static uint32_t compute_units(VkPhysicalDevice pd) {
  if (has_device_ext(pd, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV p = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &p};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    return p.shaderSMCount;
  }
  if (has_device_ext(pd, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderCorePropertiesAMD p = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &p};
    vkGetPhysicalDeviceProperties2(pd, &p2);
    return p.shaderEngineCount * p.shaderArraysPerEngineCount * p.computeUnitsPerShaderArray;
  }
  return 0;
}

/* features, subgroup properties and the compute queue family of a physical device */
typedef struct device_info {
  VkPhysicalDeviceProperties props;
  char driver[2 * VK_MAX_DRIVER_NAME_SIZE + 2]; /* "NVIDIA 580.159.04", "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)" */
  VkPhysicalDeviceMemoryProperties mem;
  vk_features f;
  bool memory_model_device_scope; /* with NV's cooperative matrices: coop_matrix_nv */
  int qfam;
  uint32_t ts_bits;
} device_info;

static void query(VkPhysicalDevice pd, device_info *di) {
  VkPhysicalDeviceDriverProperties dp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceFloatControlsProperties fc = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  bool float_controls = has_device_ext(pd, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);
  bool driver_props = has_device_ext(pd, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  if (float_controls) sg.pNext = &fc;
  if (driver_props) dp.pNext = sg.pNext, sg.pNext = &dp;
  VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg};
  vkGetPhysicalDeviceProperties2(pd, &p2);
  di->props = p2.properties;
  if (driver_props && dp.driverName[0]) snprintf(di->driver, sizeof di->driver, "%s %s", dp.driverName, dp.driverInfo);
  else driver_version(&di->props, di->driver, sizeof di->driver);
  VkPhysicalDevice8BitStorageFeatures s8 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, .pNext = &s8};
  VkPhysicalDeviceShaderFloat16Int8Features h = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES, .pNext = &s16};
  bool float16 = di->props.apiVersion >= VK_API_VERSION_1_2 || has_device_ext(pd, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = float16 ? (void *)&h : (void *)&s16};
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  vkGetPhysicalDeviceMemoryProperties(pd, &di->mem);
  /* a width's float-controls mode may be set alone only where the driver lets widths differ:
   * with 32_BIT_ONLY, 16 and 64 bits go together; with NONE, all three */
  const VkShaderFloatControlsIndependence ri = fc.roundingModeIndependence, di_ = fc.denormBehaviorIndependence;
  const bool rte16 = float_controls && fc.shaderRoundingModeRTEFloat16 &&
                     (ri != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE || fc.shaderRoundingModeRTEFloat32) &&
                     (ri == VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_ALL || fc.shaderRoundingModeRTEFloat64);
  const bool keep16 = float_controls && fc.shaderDenormPreserveFloat16 &&
                      (di_ == VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_ALL || fc.shaderDenormPreserveFloat64);
  const bool denorm_alone = di_ != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE;
  di->f = (vk_features){
      .storage16 = s16.storageBuffer16BitAccess,
      .storage8 = s8.storageBuffer8BitAccess && has_device_ext(pd, VK_KHR_8BIT_STORAGE_EXTENSION_NAME),
      .int64 = f2.features.shaderInt64,
      .subgroup_arith = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                        (sg.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT),
      .coop_matrix = coop_matrix_nv(pd, &di->memory_model_device_scope), /* or KHR's, below */
      .denorm_preserve = float_controls && fc.shaderDenormPreserveFloat32,
      .f16_convert = rte16 && keep16 && h.shaderFloat16,
      .rte32 = ri == VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE, /* NVIDIA's softmax f32 took 12% longer with it */
      .rte64 = ri != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_ALL,
      .keep64 = di_ != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_ALL,
      .subgroup_size = sg.subgroupSize,
      .units = compute_units(pd),
      .exec_stats = log_enabled("shader_stats") && has_device_ext(pd, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME),
  };
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
  VkQueueFamilyProperties q[32];
  if (nq > 32) nq = 32;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, q);
  di->qfam = -1;
  for (uint32_t i = 0; i < nq; i++) { /* a compute queue, a compute-only one when there is one */
    if (!(q[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (di->qfam < 0 || !(q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) di->qfam = (int)i, di->ts_bits = q[i].timestampValidBits;
  }
  di->f.timestamps = di->ts_bits > 0 && di->props.limits.timestampPeriod > 0;
  /* the KHR extension where offered: on NVIDIA's driver (580) the same kernel ran 1.45x faster
   * through it than through NV's; NV's where KHR is missing (older drivers) */
  const char *off = getenv("PORTC_VULKAN_DISABLE");
  if (off && strstr(off, "nvcoop")) di->f.coop_matrix = false;
  if (!(off && strstr(off, "khrcoop")) && coop_matrix_khr(pd)) di->f.coop_matrix = di->f.coop_khr = true;
  di->f.coop_size32 = di->f.coop_matrix && di->f.subgroup_size != 32 && subgroups_of_32_on_request(pd);
  /* four subgroups of 32 per tile */
  di->f.coop_matrix = di->f.coop_matrix && (di->f.subgroup_size == 32 || di->f.coop_size32) && di->f.storage16;
  const unsigned own = vk_own_kernels(getenv("PORTC_VULKAN_KERNELS"));
  di->f.coop_conv = own & VK_OWN_COOPCONV, di->f.coop_attention = own & VK_OWN_COOPATTENTION;
  bool tensor = false;
  di->f.coop_workgroup = (own & VK_OWN_COOPWG) && coop_matrix_wg(pd, &di->f.coop_wg_steps, &di->f.coop_wg_reserved, &tensor);
  if (off) {
    struct { const char *name; bool *flag; } list[] = {{"int64", &di->f.int64}, {"storage16", &di->f.storage16}, {"storage8", &di->f.storage8},
                                                       {"subgroup", &di->f.subgroup_arith}, {"timestamps", &di->f.timestamps},
                                                       {"coopmat", &di->f.coop_matrix},
                                                       {"denorm", &di->f.denorm_preserve}, {"f16convert", &di->f.f16_convert}};
    for (size_t i = 0; i < sizeof list / sizeof *list; i++)
      if (strstr(off, list[i].name)) *list[i].flag = false;
  }
  di->f.coop_khr = di->f.coop_khr && di->f.coop_matrix, di->f.coop_size32 = di->f.coop_size32 && di->f.coop_matrix;
  di->f.coop_conv = di->f.coop_conv && di->f.coop_matrix, di->f.coop_attention = di->f.coop_attention && di->f.coop_matrix;
  di->f.coop_workgroup = di->f.coop_workgroup && di->f.coop_khr && !(off && strstr(off, "wgcoop"));
  di->f.coop_wg_tensor = di->f.coop_workgroup && (own & VK_OWN_COOPWG_TENSOR) && tensor;
  di->f.coop_wg_elements = di->f.coop_workgroup && (own & VK_OWN_COOPWG_ELEMENTS);
  /* 16-bit stores need 16-bit storage; DenormPreserve for 16 bits alone conflicts with the
   * 32-bit default where the widths must agree (both as left after PORTC_VULKAN_DISABLE) */
  di->f.f16_convert = di->f.f16_convert && di->f.storage16 && (denorm_alone || di->f.denorm_preserve);
}

static const char *vendor_name(uint32_t id) {
  switch (id) {
  case 0x10de: return "NVIDIA";
  case 0x1002: return "AMD";
  case 0x8086: return "Intel";
  case 0x13b5: return "ARM";
  case 0x5143: return "Qualcomm";
  case 0x106b: return "Apple";
  case 0x10005: return "Mesa";
  default: return "unknown vendor";
  }
}

/* the architecture family a device's name says, for tune keys; "" when the name says none.
 * Patterns are lower case; the first that the lower-cased name contains wins. */
static const struct { const char *pattern, *family; } families[] = {
    {"llvmpipe", "llvmpipe"}, {"swiftshader", "swiftshader"},
    {"h100", "hopper"}, {"h200", "hopper"}, {"h800", "hopper"}, {"gh200", "hopper"},
    {"rtx 40", "ada"}, {"l40", "ada"}, {"l4 ", "ada"}, {"ada generation", "ada"},
    {"a100", "ampere"}, {"a800", "ampere"}, {"rtx 30", "ampere"}, {"a40", "ampere"}, {"a10", "ampere"}, {"a30", "ampere"},
    {"b200", "blackwell"}, {"rtx 50", "blackwell"},
    {"gfx11", "rdna3"}, {"navi3", "rdna3"}, {"rx 7", "rdna3"}, {"780m", "rdna3"}, {"760m", "rdna3"},
    {"gfx103", "rdna2"}, {"navi2", "rdna2"}, {"rx 6", "rdna2"}, {"680m", "rdna2"}, {"vangogh", "rdna2"}, {"rembrandt", "rdna2"},
    {"gfx94", "cdna3"}, {"mi300", "cdna3"}, {"gfx90a", "cdna2"}, {"mi250", "cdna2"}, {"mi210", "cdna2"},
    {"renoir", "gcn5"}, {"cezanne", "gcn5"}, {"vega", "gcn5"},
    {"arc(tm) a", "xe-hpg"}, {"dg2", "xe-hpg"}, {"arc(tm) b", "xe2"}, {"arc(tm) graphics", "xe-lpg"}, {"meteor lake", "xe-lpg"},
    {"iris(r) xe", "xe-lp"}, {"xe graphics", "xe-lp"}, {"uhd graphics", "gen9"}, {"hd graphics", "gen9"},
    {"immortalis", "valhall"}, {"mali-g57", "valhall"}, {"mali-g68", "valhall"}, {"mali-g77", "valhall"}, {"mali-g78", "valhall"},
    {"mali-g310", "valhall"}, {"mali-g510", "valhall"}, {"mali-g610", "valhall"}, {"mali-g710", "valhall"}, {"mali-g615", "valhall"},
    {"mali-g715", "valhall"}, {"mali-g", "bifrost"},
    {"adreno (tm) 7", "adreno7xx"}, {"adreno (tm) 6", "adreno6xx"},
};

void vk_device_key(int index, tune_device *d) {
  snprintf(d->api, sizeof d->api, "vulkan");
  char why[512];
  const vk_context *c = vk_context_get(index, why, sizeof why);
  if (!c) return;
  const VkPhysicalDeviceProperties *p = &c->props;
  snprintf(d->vendor, sizeof d->vendor, "%s", vendor_name(p->vendorID));
  for (char *v = d->vendor; *v; v++) *v = (char)tolower((unsigned char)*v);
  static const char *const types[] = {"other", "integrated", "discrete", "virtual", "cpu"};
  snprintf(d->type, sizeof d->type, "%s", p->deviceType <= VK_PHYSICAL_DEVICE_TYPE_CPU ? types[p->deviceType] : "other");
  char lower[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
  snprintf(lower, sizeof lower, "%s", p->deviceName);
  for (char *v = lower; *v; v++) *v = (char)tolower((unsigned char)*v);
  for (size_t i = 0; i < sizeof families / sizeof *families && !d->family[0]; i++)
    if (strstr(lower, families[i].pattern)) snprintf(d->family, sizeof d->family, "%s", families[i].family);
  str_cut(d->model, sizeof d->model, "%s", p->deviceName);
  str_cut(d->driver, sizeof d->driver, "%s", c->driver);
  snprintf(d->compiler, sizeof d->compiler, "%s", vk_compiler_id());
  d->subgroup = (int)c->f.subgroup_size;
  d->units = (int)c->f.units;
  d->shared_bytes = (int)p->limits.maxComputeSharedMemorySize;
}

static int find_memory(const VkPhysicalDeviceMemoryProperties *mp, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) {
  for (uint32_t i = 0; i < mp->memoryTypeCount; i++)
    if ((mp->memoryTypes[i].propertyFlags & want) == want && !(mp->memoryTypes[i].propertyFlags & avoid)) return (int)i;
  return -1;
}

/* the key of this device's pipeline cache in the kernel cache folder */
static void pipeline_cache_key(vk_context *c, char *key) {
  const char *parts[] = {"vulkan pipeline cache", c->cache_id, NULL};
  cache_key(parts, key);
}

/* the pipeline cache from disk when it is intact and made by this device and driver */
static void pipeline_cache_load(vk_context *c) {
  char key[33];
  cache_folder cf;
  pipeline_cache_key(c, key);
  size_t n = 0;
  void *data = NULL;
  if (cache_open(&cf) == PORTC_OK) data = cache_read(&cf, key, "vkpc", &n);
  cache_close(&cf);
  /* the header names the vendor, device and cache UUID: refuse another device's data */
  const uint32_t *h = data;
  if (n < 32 || h[1] != 1 || h[2] != c->props.vendorID || h[3] != c->props.deviceID ||
      memcmp(h + 4, c->props.pipelineCacheUUID, VK_UUID_SIZE) != 0)
    n = 0;
  VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO, .initialDataSize = n, .pInitialData = n ? data : NULL};
  if (c->d.vkCreatePipelineCache(c->dev, &ci, NULL, &c->pcache) != VK_SUCCESS) c->pcache = VK_NULL_HANDLE;
  log_line("cache", "vulkan pipeline cache: %zu bytes from disk", n);
  free(data);
}

void vk_pipeline_cache_save(vk_context *c) {
  char key[33];
  cache_folder cf;
  if (!c->pcache || cache_open(&cf) != PORTC_OK) return;
  pipeline_cache_key(c, key);
  pthread_mutex_lock(&c->lock);
  size_t n = 0;
  void *data = NULL;
  if (c->d.vkGetPipelineCacheData(c->dev, c->pcache, &n, NULL) == VK_SUCCESS && n && (data = malloc(n)) &&
      c->d.vkGetPipelineCacheData(c->dev, c->pcache, &n, data) == VK_SUCCESS && cache_write(&cf, key, "vkpc", data, n) != PORTC_OK)
    log_line("cache", "could not store the vulkan pipeline cache: %s", portc_last_error());
  free(data);
  pthread_mutex_unlock(&c->lock);
  cache_close(&cf);
}

static bool make_device(vk_context *c, const device_info *di, char *why, size_t len) {
  float prio = 1.0f;
  VkDeviceQueueCreateInfo q = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = (uint32_t)di->qfam,
                               .queueCount = 1, .pQueuePriorities = &prio};
  VkPhysicalDevice8BitStorageFeatures s8 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
                                            .storageBuffer8BitAccess = c->f.storage8};
  VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
                                              .pNext = &s8, .storageBuffer16BitAccess = c->f.storage16};
  /* the feature structures, each put in front of the chain where the device uses it */
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
                                                    .cooperativeMatrix = VK_TRUE};
  VkPhysicalDeviceVulkanMemoryModelFeatures mm = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
                                                  .vulkanMemoryModel = VK_TRUE,
                                                  .vulkanMemoryModelDeviceScope = di->memory_model_device_scope};
  pc_coop_features_khr kcm = {.sType = (VkStructureType)PC_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FEATURES_KHR, .cooperativeMatrix = VK_TRUE};
  pc_coop2_features_nv wg = {.sType = (VkStructureType)PC_STRUCTURE_TYPE_COOPERATIVE_MATRIX2_FEATURES_NV, .workgroupScope = VK_TRUE,
                             .flexibleDimensions = VK_TRUE};
  VkPhysicalDeviceSubgroupSizeControlFeaturesEXT ssc = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT,
                                                        .subgroupSizeControl = VK_TRUE};
  VkPhysicalDeviceShaderFloat16Int8Features f16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
                                                   .shaderFloat16 = VK_TRUE};
  void *chain = &s16;
  if (c->f.coop_matrix && !c->f.coop_khr) cm.pNext = chain, mm.pNext = &cm, chain = &mm;
  if (c->f.coop_khr) kcm.pNext = chain, chain = &kcm;
  if (c->f.coop_workgroup) wg.pNext = chain, chain = &wg;
  if (c->f.coop_size32) ssc.pNext = chain, chain = &ssc;
  if (c->f.coop_matrix || c->f.f16_convert) f16.pNext = chain, chain = &f16;
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR ep = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR, .pNext = chain, .pipelineExecutableInfo = VK_TRUE};
  VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = c->f.exec_stats ? (void *)&ep : ep.pNext};
  f2.features.shaderInt64 = c->f.int64;
  const char *exts[12];
  uint32_t next = 0;
  if (c->f.storage8) exts[next++] = VK_KHR_8BIT_STORAGE_EXTENSION_NAME;
  if (c->f.denorm_preserve || c->f.f16_convert) exts[next++] = VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME;
  if (c->f.exec_stats) exts[next++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
  if (c->f.coop_matrix && !c->f.coop_khr) {
    exts[next++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
    if (has_device_ext(c->phys, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME)) exts[next++] = VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME;
  }
  if (c->f.coop_khr) exts[next++] = PC_KHR_COOPERATIVE_MATRIX_NAME;
  if (c->f.coop_workgroup) exts[next++] = PC_NV_COOPERATIVE_MATRIX2_NAME;
  if (c->f.coop_size32) exts[next++] = VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME;
  if ((c->f.coop_matrix || c->f.f16_convert) && has_device_ext(c->phys, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME))
    exts[next++] = VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME;
  VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &f2, .queueCreateInfoCount = 1,
                           .pQueueCreateInfos = &q, .enabledExtensionCount = next, .ppEnabledExtensionNames = exts};
  VkResult r = vkCreateDevice(c->phys, &ci, NULL, &c->dev);
  if (r != VK_SUCCESS) {
    snprintf(why, len, "vkCreateDevice failed on %s: %s", c->props.deviceName, vk_result_name(r));
    return false;
  }
  if (!vk_load_device(c->dev, &c->d, why, len)) return false;
  c->d.vkGetDeviceQueue(c->dev, c->qfam, 0, &c->queue);
  VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, .queueFamilyIndex = c->qfam};
  VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if (c->d.vkCreateCommandPool(c->dev, &pi, NULL, &c->xfer_pool) != VK_SUCCESS ||
      c->d.vkCreateFence(c->dev, &fi, NULL, &c->xfer_fence) != VK_SUCCESS) {
    snprintf(why, len, "cannot create a command pool on %s", c->props.deviceName);
    return false;
  }
  VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = c->xfer_pool,
                                    .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
  if (c->d.vkAllocateCommandBuffers(c->dev, &ai, &c->xfer_cb) != VK_SUCCESS) {
    snprintf(why, len, "cannot allocate a command buffer on %s", c->props.deviceName);
    return false;
  }
  return true;
}

static vk_context *make_context(int index, char *why, size_t len) {
  if (!vk_own_kernels_known(getenv("PORTC_VULKAN_KERNELS"), why, len)) return NULL;
  device_info di;
  query(phys[index], &di);
  if (di.qfam < 0) {
    snprintf(why, len, "vulkan:%d (%s) has no compute queue", index, di.props.deviceName);
    return NULL;
  }
  int dl = find_memory(&di.mem, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  int host = find_memory(&di.mem, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0);
  if (dl < 0 || host < 0) {
    snprintf(why, len, "vulkan:%d (%s) has no usable memory types", index, di.props.deviceName);
    return NULL;
  }
  vk_context *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(why, len, "out of memory");
    return NULL;
  }
  c->inst = instance, c->phys = phys[index], c->qfam = (uint32_t)di.qfam, c->props = di.props, c->mem = di.mem, c->f = di.f;
  c->index = index;
  c->ns_per_tick = di.props.limits.timestampPeriod;
  /* 256 invocations keep a GPU's memory system busy; a CPU driver (lavapipe) runs a work group's
   * invocations as SIMD lanes and pays for every barrier, so it gets fewer */
  c->wg = di.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 64 : 256;
  c->dev_local_type = (uint32_t)dl, c->host_type = (uint32_t)host;
  VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  c->dev_local_mappable = (di.mem.memoryTypes[dl].propertyFlags & hv) == hv;
  pthread_mutex_init(&c->lock, NULL);
  snprintf(c->name, sizeof c->name, "%s (vulkan:%d, driver %s, Vulkan %u.%u)", di.props.deviceName, index, di.driver,
           VK_VERSION_MAJOR(di.props.apiVersion), VK_VERSION_MINOR(di.props.apiVersion));
  snprintf(c->cache_id, sizeof c->cache_id, "%s %04x:%04x driver %u", di.props.deviceName, di.props.vendorID, di.props.deviceID,
           di.props.driverVersion);
  snprintf(c->driver, sizeof c->driver, "%s", di.driver);
  if (!make_device(c, &di, why, len)) {
    free(c); /* the process keeps a failed device; it is not retried */
    return NULL;
  }
  pipeline_cache_load(c);
  if (log_enabled("shader_stats") && !c->f.exec_stats)
    log_line("shader_stats", "%s: the driver does not offer VK_KHR_pipeline_executable_properties; no statistics", c->name);
  return c;
}

bool vk_available(char *why, size_t len) {
  pthread_mutex_lock(&init_lock);
  bool r = init_instance();
  if (!r) snprintf(why, len, "%s", init_why);
  pthread_mutex_unlock(&init_lock);
  return r;
}

static const kernel_name own_names[] = {
    {"coopconv", VK_OWN_COOPCONV}, {"coopattention", VK_OWN_COOPATTENTION}, {"coopwg", VK_OWN_COOPWG}, {"coopwgtensor", VK_OWN_COOPWG_TENSOR},
    {"coopwgelements", VK_OWN_COOPWG_ELEMENTS}};

enum { OWN_NAMES = sizeof own_names / sizeof *own_names };

unsigned vk_own_kernels(const char *list) { return list ? kernel_list_bits(list, own_names, OWN_NAMES) : VK_OWN_DEFAULT; }

bool vk_own_kernels_known(const char *list, char *why, size_t len) {
  return kernel_list_known("PORTC_VULKAN_KERNELS", list, own_names, OWN_NAMES, why, len);
}

vk_context *vk_context_get(int index, char *why, size_t len) {
  pthread_mutex_lock(&init_lock);
  vk_context *c = NULL;
  if (!init_instance()) snprintf(why, len, "%s", init_why);
  else {
    if ((index = device_pick("vulkan", index, "PORTC_VULKAN_DEVICE", best_device(), (int)nphys, why, len)) < 0)
      ;
    else if (!(c = contexts[index]) && (c = make_context(index, why, len)))
      contexts[index] = c;
  }
  pthread_mutex_unlock(&init_lock);
  return c;
}

const char *vk_default_device_name(void) {
  static _Thread_local char none[600]; /* why there is none, for `portc devices` */
  char why[512] = "";
  vk_context *c = vk_context_get(-1, why, sizeof why);
  if (c) return c->name;
  snprintf(none, sizeof none, "no Vulkan device: %s", why);
  return none;
}

void vk_describe(FILE *out) {
  pthread_mutex_lock(&init_lock);
  bool up = init_instance();
  pthread_mutex_unlock(&init_lock);
  if (!up) return;
  int best = best_device();
  for (uint32_t i = 0; i < nphys; i++) {
    device_info di;
    query(phys[i], &di);
    double heap = 0;
    for (uint32_t h = 0; h < di.mem.memoryHeapCount; h++)
      if (di.mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) heap += (double)di.mem.memoryHeaps[h].size;
    const VkPhysicalDeviceLimits *l = &di.props.limits;
    fprintf(out, "    vulkan:%u%s %s, %s (%04x:%04x), driver %s, Vulkan %u.%u\n", i, (int)i == best ? " (default)" : "",
            di.props.deviceName, vendor_name(di.props.vendorID), di.props.vendorID, di.props.deviceID, di.driver,
            VK_VERSION_MAJOR(di.props.apiVersion), VK_VERSION_MINOR(di.props.apiVersion));
    fprintf(out, "      %.1f GiB device-local in %u heaps; subgroup %u%s; shared memory %u KiB; work group %u; storage range %u MiB\n",
            heap / 1073741824.0, di.mem.memoryHeapCount, di.f.subgroup_size, di.f.subgroup_arith ? " with arithmetic" : " (no arithmetic)",
            l->maxComputeSharedMemorySize / 1024, l->maxComputeWorkGroupInvocations, l->maxStorageBufferRange >> 20);
    fprintf(out, "      16-bit storage %s, 8-bit storage %s, int64 %s, timestamps %s, f32 denormals kept %s, cooperative matrix %s\n",
            di.f.storage16 ? "yes" : "no", di.f.storage8 ? "yes" : "no", di.f.int64 ? "yes" : "no", di.f.timestamps ? "yes" : "no",
            di.f.denorm_preserve ? "yes" : "no",
            !di.f.coop_matrix ? "no" : di.f.coop_khr ? (di.f.coop_size32 ? "yes (KHR, f16 16x16x16, subgroups of 32 on request)" : "yes (KHR, f16 16x16x16)")
                                                   : "yes (NV, f16 16x16x16)");
    fprintf(out, "      f32 to f16 by the device (nearest even, denormals kept) %s\n", di.f.f16_convert ? "yes" : "no (portc rounds in software)");
    describe_coop2(out, phys[i]);
    if (di.f.units) fprintf(out, "      %u multiprocessors (split-K's rule for convolutions)\n", di.f.units);
    else fprintf(out, "      multiprocessors not reported (convolutions split their reduction only where a tune table says)\n");
  }
}
