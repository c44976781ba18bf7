/*
 * memory.c: buffers on a Vulkan device, and copies between them and the host. Buffers live in
 * device-local memory; where the host can map that memory (software drivers, resizable BAR)
 * copies are memcpy, elsewhere they go through a host-visible staging buffer and the queue.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk.h"

enum { STAGING_BYTES = 64 << 20 };

portc_status vk_buffer_new(vk_context *c, int64_t bytes, bool host, vk_buffer **out) {
  *out = NULL;
  static uint64_t next_serial;
  vk_buffer *b = calloc(1, sizeof *b);
  if (b) b->serial = __atomic_add_fetch(&next_serial, 1, __ATOMIC_RELAXED);
  if (!b) return err_set(PORTC_ERR_NOMEM, "vulkan: out of memory");
  b->bytes = bytes;
  VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = (VkDeviceSize)bytes,
                           .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                           .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  VkResult r = c->d.vkCreateBuffer(c->dev, &bi, NULL, &b->buf);
  if (r != VK_SUCCESS) {
    free(b);
    return err_set(r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY ? PORTC_ERR_NOMEM : PORTC_ERR_RUNTIME,
                   "vulkan: cannot create a buffer of %lld bytes on %s: %s", (long long)bytes, c->props.deviceName, vk_result_name(r));
  }
  VkMemoryRequirements req;
  c->d.vkGetBufferMemoryRequirements(c->dev, b->buf, &req);
  uint32_t type = host ? c->host_type : c->dev_local_type;
  if (!(req.memoryTypeBits & (1u << type))) { /* the first allowed type with the properties we need */
    VkMemoryPropertyFlags want = c->mem.memoryTypes[type].propertyFlags;
    for (uint32_t i = 0; i < c->mem.memoryTypeCount; i++)
      if ((req.memoryTypeBits & (1u << i)) && (c->mem.memoryTypes[i].propertyFlags & want) == want) {
        type = i;
        break;
      }
  }
  VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size, .memoryTypeIndex = type};
  r = c->d.vkAllocateMemory(c->dev, &ai, NULL, &b->mem);
  if (r == VK_SUCCESS) r = c->d.vkBindBufferMemory(c->dev, b->buf, b->mem, 0);
  VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if (r == VK_SUCCESS && (c->mem.memoryTypes[type].propertyFlags & hv) == hv)
    r = c->d.vkMapMemory(c->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map);
  if (r != VK_SUCCESS) {
    vk_buffer_free(c, b);
    return err_set(r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY ? PORTC_ERR_NOMEM : PORTC_ERR_RUNTIME,
                   "vulkan: out of %s memory for %lld bytes on %s (%s)", host ? "host-visible" : "device", (long long)bytes,
                   c->props.deviceName, vk_result_name(r));
  }
  log_line("memory", "vulkan: %lld bytes in memory type %u (heap %u, flags 0x%x)%s", (long long)bytes, type,
           c->mem.memoryTypes[type].heapIndex, c->mem.memoryTypes[type].propertyFlags, b->map ? ", mapped" : "");
  *out = b;
  return PORTC_OK;
}

void vk_buffer_free(vk_context *c, vk_buffer *b) {
  if (!b) return;
  if (b->map) c->d.vkUnmapMemory(c->dev, b->mem);
  if (b->buf) c->d.vkDestroyBuffer(c->dev, b->buf, NULL);
  if (b->mem) c->d.vkFreeMemory(c->dev, b->mem, NULL);
  free(b);
}

portc_status vk_submit_wait(vk_context *c, VkCommandBuffer cb, VkFence fence) {
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
  pthread_mutex_lock(&c->lock);
  VkResult r = c->d.vkQueueSubmit(c->queue, 1, &si, fence);
  pthread_mutex_unlock(&c->lock);
  if (r == VK_SUCCESS) r = c->d.vkWaitForFences(c->dev, 1, &fence, VK_TRUE, UINT64_MAX);
  if (r == VK_SUCCESS) r = c->d.vkResetFences(c->dev, 1, &fence);
  if (r != VK_SUCCESS)
    return err_set(PORTC_ERR_RUNTIME, "vulkan: submission failed on %s: %s", c->props.deviceName, vk_result_name(r));
  return PORTC_OK;
}

/* one copy between b and the staging buffer, recorded, submitted and waited for (lock held) */
static portc_status staged_copy(vk_context *c, vk_buffer *b, int64_t offset, int64_t bytes, bool to_device) {
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                 .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  VkBufferCopy region = {.srcOffset = to_device ? 0 : (VkDeviceSize)offset, .dstOffset = to_device ? (VkDeviceSize)offset : 0,
                         .size = (VkDeviceSize)bytes};
  VkResult r = c->d.vkBeginCommandBuffer(c->xfer_cb, &bi);
  if (r != VK_SUCCESS) return err_set(PORTC_ERR_RUNTIME, "vulkan: cannot record a copy: %s", vk_result_name(r));
  if (to_device) c->d.vkCmdCopyBuffer(c->xfer_cb, c->staging->buf, b->buf, 1, &region);
  else c->d.vkCmdCopyBuffer(c->xfer_cb, b->buf, c->staging->buf, 1, &region);
  if ((r = c->d.vkEndCommandBuffer(c->xfer_cb)) != VK_SUCCESS)
    return err_set(PORTC_ERR_RUNTIME, "vulkan: cannot record a copy: %s", vk_result_name(r));
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &c->xfer_cb};
  r = c->d.vkQueueSubmit(c->queue, 1, &si, c->xfer_fence);
  if (r == VK_SUCCESS) r = c->d.vkWaitForFences(c->dev, 1, &c->xfer_fence, VK_TRUE, UINT64_MAX);
  if (r == VK_SUCCESS) r = c->d.vkResetFences(c->dev, 1, &c->xfer_fence);
  if (r != VK_SUCCESS) return err_set(PORTC_ERR_RUNTIME, "vulkan: a copy failed on %s: %s", c->props.deviceName, vk_result_name(r));
  return PORTC_OK;
}

static portc_status copy(vk_context *c, vk_buffer *b, int64_t offset, void *host, int64_t bytes, bool to_device) {
  if (offset < 0 || bytes < 0 || offset + bytes > b->bytes)
    return err_set(PORTC_ERR_INVALID, "vulkan: a copy of %lld bytes at %lld is outside a buffer of %lld", (long long)bytes,
                   (long long)offset, (long long)b->bytes);
  if (b->map) {
    if (to_device) memcpy((char *)b->map + offset, host, (size_t)bytes);
    else memcpy(host, (char *)b->map + offset, (size_t)bytes);
    return PORTC_OK;
  }
  pthread_mutex_lock(&c->lock);
  portc_status st = c->staging ? PORTC_OK : vk_buffer_new(c, STAGING_BYTES, true, &c->staging);
  for (int64_t done = 0; done < bytes && !st; done += STAGING_BYTES) {
    int64_t n = bytes - done < STAGING_BYTES ? bytes - done : STAGING_BYTES;
    if (to_device) memcpy(c->staging->map, (char *)host + done, (size_t)n);
    st = staged_copy(c, b, offset + done, n, to_device);
    if (!st && !to_device) memcpy((char *)host + done, c->staging->map, (size_t)n);
  }
  pthread_mutex_unlock(&c->lock);
  return st;
}

portc_status vk_buffer_write(vk_context *c, vk_buffer *b, int64_t offset, const void *src, int64_t bytes) {
  return copy(c, b, offset, (void *)src, bytes, true);
}

portc_status vk_buffer_read(vk_context *c, vk_buffer *b, int64_t offset, void *dst, int64_t bytes) {
  return copy(c, b, offset, dst, bytes, false);
}
