/*
 * vk_api.h: the Vulkan functions portc calls, as tables filled at run time. Nothing links
 * against libvulkan: loader.c opens libvulkan.so.1, asks vkGetInstanceProcAddr for the global
 * and instance functions and vkGetDeviceProcAddr for the device functions, in the manner of
 * volk. Each list below is an X-macro, so a new function is one line.
 */
#ifndef PORTC_VULKAN_VK_API_H
#define PORTC_VULKAN_VK_API_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <stdbool.h>
#include <stddef.h>

#define VK_GLOBAL_FUNCS(X)                 \
  X(vkCreateInstance)                      \
  X(vkEnumerateInstanceExtensionProperties) \
  X(vkEnumerateInstanceLayerProperties)    \
  X(vkEnumerateInstanceVersion)

#define VK_INSTANCE_FUNCS(X)                  \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

#define VK_DEVICE_FUNCS(X)          \
  X(vkDestroyDevice)                \
  X(vkGetDeviceQueue)               \
  X(vkDeviceWaitIdle)               \
  X(vkQueueSubmit)                  \
  X(vkCreateBuffer)                 \
  X(vkDestroyBuffer)                \
  X(vkGetBufferMemoryRequirements)  \
  X(vkAllocateMemory)               \
  X(vkFreeMemory)                   \
  X(vkBindBufferMemory)             \
  X(vkMapMemory)                    \
  X(vkUnmapMemory)                  \
  X(vkCreateShaderModule)           \
  X(vkDestroyShaderModule)          \
  X(vkCreateDescriptorSetLayout)    \
  X(vkDestroyDescriptorSetLayout)   \
  X(vkCreatePipelineLayout)         \
  X(vkDestroyPipelineLayout)        \
  X(vkCreateComputePipelines)       \
  X(vkDestroyPipeline)              \
  X(vkCreatePipelineCache)          \
  X(vkGetPipelineCacheData)         \
  X(vkDestroyPipelineCache)         \
  X(vkCreateDescriptorPool)         \
  X(vkDestroyDescriptorPool)        \
  X(vkAllocateDescriptorSets)       \
  X(vkUpdateDescriptorSets)         \
  X(vkCreateCommandPool)            \
  X(vkDestroyCommandPool)           \
  X(vkAllocateCommandBuffers)       \
  X(vkBeginCommandBuffer)           \
  X(vkEndCommandBuffer)             \
  X(vkResetCommandBuffer)           \
  X(vkCmdBindPipeline)              \
  X(vkCmdBindDescriptorSets)        \
  X(vkCmdPushConstants)             \
  X(vkCmdDispatch)                  \
  X(vkCmdPipelineBarrier)           \
  X(vkCmdCopyBuffer)                \
  X(vkCmdFillBuffer)                \
  X(vkCmdResetQueryPool)            \
  X(vkCmdWriteTimestamp)            \
  X(vkCreateQueryPool)              \
  X(vkDestroyQueryPool)             \
  X(vkGetQueryPoolResults)          \
  X(vkCreateFence)                  \
  X(vkDestroyFence)                 \
  X(vkWaitForFences)                \
  X(vkResetFences)

#define VK_DECLARE(f) PFN_##f f;
typedef struct vk_global_api {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
  VK_GLOBAL_FUNCS(VK_DECLARE)
} vk_global_api;
typedef struct vk_instance_api {
  VK_INSTANCE_FUNCS(VK_DECLARE)
} vk_instance_api;
typedef struct vk_device_api {
  VK_DEVICE_FUNCS(VK_DECLARE)
} vk_device_api;
#undef VK_DECLARE

/* opens the loader once; false with the reason when it is missing ($PORTC_VULKAN_LOADER names
 * another file, for tests and unusual installs) */
bool vk_load_global(vk_global_api *g, char *why, size_t len);
bool vk_load_instance(const vk_global_api *g, VkInstance inst, vk_instance_api *api, char *why, size_t len);
bool vk_load_device(const vk_instance_api *i, VkDevice dev, vk_device_api *api, char *why, size_t len);
/* "VK_ERROR_OUT_OF_DEVICE_MEMORY" and friends */
const char *vk_result_name(VkResult r);

#endif
