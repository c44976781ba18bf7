/*
 * wgpu_abi.h: the part of webgpu.h that the WebGPU target calls, declared here because no
 * package reachable from portc's build ships the header. It is pinned to the ABI of the library
 * portc installs (scripts/deps.sh: npm's bun-webgpu-linux-x64 0.1.7, Dawn with Tint of late June
 * 2025), which predates webgpu.h's stable release: the instance descriptor holds capabilities,
 * instance capabilities come from wgpuGetInstanceCapabilities, the feature numbers are Dawn's
 * of then (TimestampQuery 0x03, ShaderF16 0x0A, Subgroups 0x11) and WGPULimits ends with four
 * per-stage storage limits. loader.c tells this ABI from later ones by its symbols;
 * tests/webgpu_abi_test.c checks the layouts below against the library's behaviour.
 */
#ifndef PORTC_WEBGPU_WGPU_ABI_H
#define PORTC_WEBGPU_WGPU_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t WGPUBool;
typedef struct WGPUInstanceImpl *WGPUInstance;
typedef struct WGPUAdapterImpl *WGPUAdapter;
typedef struct WGPUSurfaceImpl *WGPUSurface;

#define WGPU_STRLEN SIZE_MAX

typedef enum { WGPUStatus_Success = 1, WGPUStatus_Error = 2, WGPUStatus_Force32 = 0x7FFFFFFF } WGPUStatus;
typedef enum { WGPUCallbackMode_WaitAnyOnly = 1, WGPUCallbackMode_AllowProcessEvents = 2, WGPUCallbackMode_Force32 = 0x7FFFFFFF } WGPUCallbackMode;
typedef enum {
  WGPURequestAdapterStatus_Success = 1,
  WGPURequestAdapterStatus_CallbackCancelled = 2,
  WGPURequestAdapterStatus_Unavailable = 3,
  WGPURequestAdapterStatus_Error = 4,
  WGPURequestAdapterStatus_Force32 = 0x7FFFFFFF
} WGPURequestAdapterStatus;
typedef enum { WGPUFeatureLevel_Undefined = 0, WGPUFeatureLevel_Compatibility = 1, WGPUFeatureLevel_Core = 2, WGPUFeatureLevel_Force32 = 0x7FFFFFFF } WGPUFeatureLevel;
typedef enum { WGPUPowerPreference_Undefined = 0, WGPUPowerPreference_HighPerformance = 2, WGPUPowerPreference_Force32 = 0x7FFFFFFF } WGPUPowerPreference;
typedef enum {
  WGPUBackendType_Undefined = 0,
  WGPUBackendType_Null = 1,
  WGPUBackendType_WebGPU = 2,
  WGPUBackendType_D3D11 = 3,
  WGPUBackendType_D3D12 = 4,
  WGPUBackendType_Metal = 5,
  WGPUBackendType_Vulkan = 6,
  WGPUBackendType_OpenGL = 7,
  WGPUBackendType_OpenGLES = 8,
  WGPUBackendType_Force32 = 0x7FFFFFFF
} WGPUBackendType;
typedef enum {
  WGPUAdapterType_DiscreteGPU = 1,
  WGPUAdapterType_IntegratedGPU = 2,
  WGPUAdapterType_CPU = 3,
  WGPUAdapterType_Unknown = 4,
  WGPUAdapterType_Force32 = 0x7FFFFFFF
} WGPUAdapterType;
typedef enum {
  WGPUFeatureName_TimestampQuery = 0x03,
  WGPUFeatureName_ShaderF16 = 0x0A,
  WGPUFeatureName_Subgroups = 0x11,
  WGPUFeatureName_Force32 = 0x7FFFFFFF
} WGPUFeatureName;
typedef enum { WGPUSType_Force32 = 0x7FFFFFFF } WGPUSType;

typedef struct WGPUChainedStruct {
  struct WGPUChainedStruct *next;
  WGPUSType sType;
} WGPUChainedStruct;

typedef struct WGPUStringView {
  const char *data;
  size_t length; /* WGPU_STRLEN: up to a terminating zero */
} WGPUStringView;

typedef struct WGPUFuture {
  uint64_t id;
} WGPUFuture;

typedef struct WGPUInstanceCapabilities {
  WGPUChainedStruct *nextInChain;
  WGPUBool timedWaitAnyEnable;
  size_t timedWaitAnyMaxCount;
} WGPUInstanceCapabilities;

typedef struct WGPUInstanceDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUInstanceCapabilities capabilities;
} WGPUInstanceDescriptor;

typedef struct WGPURequestAdapterOptions {
  WGPUChainedStruct *nextInChain;
  WGPUFeatureLevel featureLevel;
  WGPUPowerPreference powerPreference;
  WGPUBool forceFallbackAdapter;
  WGPUBackendType backendType;
  WGPUSurface compatibleSurface;
} WGPURequestAdapterOptions;

typedef void (*WGPURequestAdapterCallback)(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message, void *userdata1,
                                           void *userdata2);

typedef struct WGPURequestAdapterCallbackInfo {
  WGPUChainedStruct *nextInChain;
  WGPUCallbackMode mode;
  WGPURequestAdapterCallback callback;
  void *userdata1;
  void *userdata2;
} WGPURequestAdapterCallbackInfo;

typedef struct WGPUAdapterInfo {
  WGPUChainedStruct *nextInChain;
  WGPUStringView vendor, architecture, device, description;
  WGPUBackendType backendType;
  WGPUAdapterType adapterType;
  uint32_t vendorID, deviceID, subgroupMinSize, subgroupMaxSize;
} WGPUAdapterInfo;

typedef struct WGPULimits {
  WGPUChainedStruct *nextInChain;
  uint32_t maxTextureDimension1D, maxTextureDimension2D, maxTextureDimension3D, maxTextureArrayLayers;
  uint32_t maxBindGroups, maxBindGroupsPlusVertexBuffers, maxBindingsPerBindGroup;
  uint32_t maxDynamicUniformBuffersPerPipelineLayout, maxDynamicStorageBuffersPerPipelineLayout;
  uint32_t maxSampledTexturesPerShaderStage, maxSamplersPerShaderStage, maxStorageBuffersPerShaderStage;
  uint32_t maxStorageTexturesPerShaderStage, maxUniformBuffersPerShaderStage;
  uint64_t maxUniformBufferBindingSize, maxStorageBufferBindingSize;
  uint32_t minUniformBufferOffsetAlignment, minStorageBufferOffsetAlignment, maxVertexBuffers;
  uint64_t maxBufferSize;
  uint32_t maxVertexAttributes, maxVertexBufferArrayStride, maxInterStageShaderVariables, maxColorAttachments;
  uint32_t maxColorAttachmentBytesPerSample, maxComputeWorkgroupStorageSize, maxComputeInvocationsPerWorkgroup;
  uint32_t maxComputeWorkgroupSizeX, maxComputeWorkgroupSizeY, maxComputeWorkgroupSizeZ, maxComputeWorkgroupsPerDimension;
  uint32_t maxStorageBuffersInVertexStage, maxStorageTexturesInVertexStage, maxStorageBuffersInFragmentStage;
  uint32_t maxStorageTexturesInFragmentStage;
} WGPULimits;

typedef struct WGPUSupportedFeatures {
  size_t featureCount;
  const WGPUFeatureName *features;
} WGPUSupportedFeatures;

/* the functions, as the loader's table (loader.c fills it with dlsym) */
typedef struct wgpu_api {
  WGPUStatus (*GetInstanceCapabilities)(WGPUInstanceCapabilities *capabilities); /* this ABI's mark */
  WGPUInstance (*CreateInstance)(const WGPUInstanceDescriptor *descriptor);
  WGPUFuture (*InstanceRequestAdapter)(WGPUInstance instance, const WGPURequestAdapterOptions *options, WGPURequestAdapterCallbackInfo info);
  void (*InstanceProcessEvents)(WGPUInstance instance);
  void (*InstanceRelease)(WGPUInstance instance);
  WGPUStatus (*AdapterGetInfo)(WGPUAdapter adapter, WGPUAdapterInfo *info);
  WGPUStatus (*AdapterGetLimits)(WGPUAdapter adapter, WGPULimits *limits);
  void (*AdapterGetFeatures)(WGPUAdapter adapter, WGPUSupportedFeatures *features);
  void (*AdapterRelease)(WGPUAdapter adapter);
  void (*AdapterInfoFreeMembers)(WGPUAdapterInfo info);
  void (*SupportedFeaturesFreeMembers)(WGPUSupportedFeatures features);
} wgpu_api;

#endif
