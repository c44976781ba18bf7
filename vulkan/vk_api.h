/*
 * vk_api.h: the Vulkan entry points, through volk (Debian's libvulkan-volk-dev, compiled into
 * libportc). Nothing links against libvulkan: loader.c opens libvulkan.so.1 at run time and hands
 * its vkGetInstanceProcAddr to volk, which fills the global and instance entry points (volk's
 * process-wide pointers, called by their plain names) and a table of device entry points per
 * device (struct VolkDeviceTable, called as c->d.vkCmdDispatch). The lists below are the
 * functions portc needs: loader.c checks each, so a driver that lacks one is named.
 */
#ifndef PORTC_VULKAN_VK_API_H
#define PORTC_VULKAN_VK_API_H

#include <volk.h> /* defines VK_NO_PROTOTYPES and includes vulkan.h */

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

typedef struct VolkDeviceTable vk_device_api;

/* opens the loader once and starts volk; false with the reason when it is missing
 * ($PORTC_VULKAN_LOADER names another file, for tests and unusual installs) */
bool vk_load_global(char *why, size_t len);
/* the instance's entry points (volk's globals); false naming the first one missing */
bool vk_load_instance(VkInstance inst, char *why, size_t len);
/* the device's entry points into *api; false naming the first one missing */
bool vk_load_device(VkDevice dev, vk_device_api *api, char *why, size_t len);
/* "VK_ERROR_OUT_OF_DEVICE_MEMORY" and friends */
const char *vk_result_name(VkResult r);

/* VK_KHR_cooperative_matrix, newer than Debian 12's Vulkan headers: the structures portc uses,
 * as the Vulkan registry defines them */
#define PC_KHR_COOPERATIVE_MATRIX_NAME "VK_KHR_cooperative_matrix"
enum { PC_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FEATURES_KHR = 1000506000, PC_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR = 1000506001 };
enum { PC_COMPONENT_FLOAT16_KHR = 0, PC_COMPONENT_FLOAT32_KHR = 1, PC_COMPONENT_BFLOAT16_KHR = 1000141000 };
enum { PC_SCOPE_WORKGROUP_KHR = 2, PC_SCOPE_SUBGROUP_KHR = 3 };
typedef struct pc_coop_features_khr {
  VkStructureType sType;
  void *pNext;
  VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
} pc_coop_features_khr;
typedef struct pc_coop_properties_khr {
  VkStructureType sType;
  void *pNext;
  uint32_t MSize, NSize, KSize;
  int32_t AType, BType, CType, ResultType; /* VkComponentTypeKHR */
  VkBool32 saturatingAccumulation;
  int32_t scope; /* VkScopeKHR */
} pc_coop_properties_khr;
typedef VkResult (*pc_coop_properties_fn)(VkPhysicalDevice, uint32_t *, pc_coop_properties_khr *);

/* VK_NV_cooperative_matrix2 (workgroup-scope matrices, staged through shared memory by the driver;
 * flexible sizes), likewise newer than those headers: `portc devices` reports what a device offers */
#define PC_NV_COOPERATIVE_MATRIX2_NAME "VK_NV_cooperative_matrix2"
enum {
  PC_STRUCTURE_TYPE_COOPERATIVE_MATRIX2_FEATURES_NV = 1000593000,
  PC_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV = 1000593001,
  PC_STRUCTURE_TYPE_COOPERATIVE_MATRIX2_PROPERTIES_NV = 1000593002
};
typedef struct pc_coop2_features_nv {
  VkStructureType sType;
  void *pNext;
  VkBool32 workgroupScope, flexibleDimensions, reductions, conversions, perElementOperations, tensorAddressing, blockLoads;
} pc_coop2_features_nv;
typedef struct pc_coop2_properties_nv {
  VkStructureType sType;
  void *pNext;
  uint32_t workgroupScopeMaxWorkgroupSize, flexibleDimensionsMaxDimension, workgroupScopeReservedSharedMemory;
} pc_coop2_properties_nv;
typedef struct pc_coop_flexible_nv {
  VkStructureType sType;
  void *pNext;
  uint32_t MGranularity, NGranularity, KGranularity;
  int32_t AType, BType, CType, ResultType; /* VkComponentTypeKHR */
  VkBool32 saturatingAccumulation;
  int32_t scope; /* VkScopeKHR */
  uint32_t workgroupInvocations;
} pc_coop_flexible_nv;
typedef VkResult (*pc_coop_flexible_fn)(VkPhysicalDevice, uint32_t *, pc_coop_flexible_nv *);

#endif
