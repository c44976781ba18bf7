/*
 * loader.c: opens the Vulkan loader at run time and starts volk with it (vk_api.h), so that
 * libportc runs, and says why Vulkan is missing, on a machine without it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../targets/dl.h"
#include "vk_api.h"

bool vk_load_global(char *why, size_t len) {
  static void *lib;
  if (!lib) {
    const char *path = getenv("PORTC_VULKAN_LOADER");
    char msg[400];
    if (!(lib = dl_open(path && *path ? path : "libvulkan.so.1", msg, sizeof msg))) {
      snprintf(why, len, "the Vulkan loader (%s) cannot be opened: %s; install libvulkan1 and a driver",
               path && *path ? path : "libvulkan.so.1", msg);
      return false;
    }
  }
  char msg[400];
  PFN_vkGetInstanceProcAddr gipa = (PFN_vkGetInstanceProcAddr)dl_sym(lib, "vkGetInstanceProcAddr", msg, sizeof msg);
  if (!gipa) {
    snprintf(why, len, "the Vulkan loader has no vkGetInstanceProcAddr: %s", msg);
    return false;
  }
  volkInitializeCustom(gipa);
#define CHECK(f)                                                              \
  if (!f) {                                                                   \
    snprintf(why, len, "the Vulkan loader lacks %s (Vulkan 1.1 needed)", #f); \
    return false;                                                             \
  }
  VK_GLOBAL_FUNCS(CHECK)
#undef CHECK
  return true;
}

bool vk_load_instance(VkInstance inst, char *why, size_t len) {
  volkLoadInstanceOnly(inst);
#define CHECK(f)                                                                \
  if (!f) {                                                                     \
    snprintf(why, len, "the Vulkan instance lacks %s (Vulkan 1.1 needed)", #f); \
    return false;                                                               \
  }
  VK_INSTANCE_FUNCS(CHECK)
#undef CHECK
  return true;
}

bool vk_load_device(VkDevice dev, vk_device_api *api, char *why, size_t len) {
  volkLoadDeviceTable(api, dev);
#define CHECK(f)                                               \
  if (!api->f) {                                               \
    snprintf(why, len, "the Vulkan device lacks %s", #f);      \
    return false;                                              \
  }
  VK_DEVICE_FUNCS(CHECK)
#undef CHECK
  return true;
}

const char *vk_result_name(VkResult r) {
  switch (r) {
  case VK_SUCCESS: return "VK_SUCCESS";
  case VK_NOT_READY: return "VK_NOT_READY";
  case VK_TIMEOUT: return "VK_TIMEOUT";
  case VK_INCOMPLETE: return "VK_INCOMPLETE";
  case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
  case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
  case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
  case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
  case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
  case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
  case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
  case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
  case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
  case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
  case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
  case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
  case VK_ERROR_INVALID_SHADER_NV: return "VK_ERROR_INVALID_SHADER_NV";
  default: return "VK_ERROR_UNKNOWN";
  }
}
