/*
 * wg.h: the WebGPU target's shared declarations. What exists so far is the ground the target
 * stands on: the library (Dawn behind webgpu.h) opened at run time and checked for the ABI
 * portc declares (wgpu_abi.h), and its adapters with their limits and features. The WGSL
 * dialect and the runtime that runs kernels come next; until then no target is registered.
 */
#ifndef PORTC_WEBGPU_WG_H
#define PORTC_WEBGPU_WG_H

#include <stdbool.h>

#include "wgpu_abi.h"

/* the place scripts/deps.sh installs the library (the loader's last try) */
#define WG_INSTALLED_LIB "/usr/local/lib/portc-webgpu/libwebgpu_wrapper.so"

/* the library's entry points, opened once per process: $PORTC_WEBGPU_LIB, else Dawn's sonames
 * on the loader's path, else WG_INSTALLED_LIB; NULL with why (what was tried, and how to
 * install it) when none opens, or when the one that opens has another ABI. path: the file
 * that opened. */
const wgpu_api *wg_load(const char **path, char *why, size_t len);
/* why a library with these symbols is not the ABI portc declares, or NULL when it is: lookup
 * returns a symbol's address or NULL (loader.c passes dlsym; the test passes a table) */
const char *wg_abi_mismatch(void *(*lookup)(void *handle, const char *name), void *handle);

/* one adapter as the library reports it */
typedef struct wg_adapter {
  char name[256], vendor[128], architecture[128], driver[256];
  WGPUBackendType backend;
  WGPUAdapterType type;
  uint32_t vendor_id, device_id, subgroup_min, subgroup_max;
  WGPULimits limits;
  bool f16, subgroups, timestamps; /* the features shader-f16, subgroups, timestamp-query */
} wg_adapter;

/* the adapter the library picks for backend (WGPUBackendType_Vulkan: the GPU a user gets;
 * _Null: Dawn's validation-only adapter, which runs nothing); false with why (the library's
 * message) where it has none */
bool wg_adapter_get(WGPUBackendType backend, wg_adapter *out, char *why, size_t len);
/* "Vulkan", "Null", ... */
const char *wg_backend_name(WGPUBackendType b);

#endif
