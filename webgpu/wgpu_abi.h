/*
 * wgpu_abi.h: the part of webgpu.h that the WebGPU target calls, declared here because no
 * package reachable from portc's build ships the header. It is pinned to the ABI of the library
 * portc installs (scripts/deps.sh: npm's bun-webgpu-linux-x64 0.1.7, Dawn with Tint of late June
 * 2025), which predates webgpu.h's stable release: the instance descriptor holds capabilities,
 * instance capabilities come from wgpuGetInstanceCapabilities, the feature numbers are Dawn's
 * of then (TimestampQuery 0x03, ShaderF16 0x0A, Subgroups 0x11) and WGPULimits ends with four
 * per-stage storage limits. Only what the target uses is declared. loader.c tells this ABI from later ones by its symbols;
 * tests/webgpu_abi_test.c checks the layouts below against the library's behaviour.
 */
#ifndef PORTC_WEBGPU_WGPU_ABI_H
#define PORTC_WEBGPU_WGPU_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t WGPUBool;
typedef uint64_t WGPUFlags;
typedef struct WGPUInstanceImpl *WGPUInstance;
typedef struct WGPUAdapterImpl *WGPUAdapter;
typedef struct WGPUSurfaceImpl *WGPUSurface;
typedef struct WGPUDeviceImpl *WGPUDevice;
typedef struct WGPUQueueImpl *WGPUQueue;
typedef struct WGPUBufferImpl *WGPUBuffer;
typedef struct WGPUShaderModuleImpl *WGPUShaderModule;
typedef struct WGPUComputePipelineImpl *WGPUComputePipeline;
typedef struct WGPUPipelineLayoutImpl *WGPUPipelineLayout;
typedef struct WGPUBindGroupLayoutImpl *WGPUBindGroupLayout;
typedef struct WGPUBindGroupImpl *WGPUBindGroup;
typedef struct WGPUCommandEncoderImpl *WGPUCommandEncoder;
typedef struct WGPUComputePassEncoderImpl *WGPUComputePassEncoder;
typedef struct WGPUCommandBufferImpl *WGPUCommandBuffer;
typedef struct WGPUSamplerImpl *WGPUSampler;
typedef struct WGPUTextureViewImpl *WGPUTextureView;
typedef struct WGPUQuerySetImpl *WGPUQuerySet;

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
typedef enum { WGPUSType_ShaderSourceWGSL = 0x02, WGPUSType_DawnTogglesDescriptor = 0x0005000A, WGPUSType_Force32 = 0x7FFFFFFF } WGPUSType;
typedef enum { WGPUQueryType_Timestamp = 0x02, WGPUQueryType_Force32 = 0x7FFFFFFF } WGPUQueryType;
typedef enum {
  WGPURequestDeviceStatus_Success = 1,
  WGPURequestDeviceStatus_CallbackCancelled = 2,
  WGPURequestDeviceStatus_Error = 3,
  WGPURequestDeviceStatus_Force32 = 0x7FFFFFFF
} WGPURequestDeviceStatus;
typedef enum {
  WGPUErrorType_NoError = 1,
  WGPUErrorType_Validation = 2,
  WGPUErrorType_OutOfMemory = 3,
  WGPUErrorType_Internal = 4,
  WGPUErrorType_Unknown = 5,
  WGPUErrorType_Force32 = 0x7FFFFFFF
} WGPUErrorType;
typedef enum { WGPUDeviceLostReason_Force32 = 0x7FFFFFFF } WGPUDeviceLostReason;
typedef enum { WGPUMapAsyncStatus_Success = 1, WGPUMapAsyncStatus_Force32 = 0x7FFFFFFF } WGPUMapAsyncStatus;
typedef enum { WGPUCompilationInfoRequestStatus_Success = 1, WGPUCompilationInfoRequestStatus_Force32 = 0x7FFFFFFF } WGPUCompilationInfoRequestStatus;
typedef enum {
  WGPUCompilationMessageType_Error = 1,
  WGPUCompilationMessageType_Warning = 2,
  WGPUCompilationMessageType_Info = 3,
  WGPUCompilationMessageType_Force32 = 0x7FFFFFFF
} WGPUCompilationMessageType;

typedef WGPUFlags WGPUBufferUsage;
#define WGPUBufferUsage_MapRead ((WGPUBufferUsage)0x1)
#define WGPUBufferUsage_CopySrc ((WGPUBufferUsage)0x4)
#define WGPUBufferUsage_CopyDst ((WGPUBufferUsage)0x8)
#define WGPUBufferUsage_Storage ((WGPUBufferUsage)0x80)
#define WGPUBufferUsage_QueryResolve ((WGPUBufferUsage)0x200)
typedef WGPUFlags WGPUMapMode;
#define WGPUMapMode_Read ((WGPUMapMode)0x1)
#define WGPU_WHOLE_SIZE UINT64_MAX

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

/* ---- devices, buffers, pipelines, dispatches ---- */

typedef void (*WGPURequestDeviceCallback)(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void *userdata1, void *userdata2);
typedef void (*WGPUDeviceLostCallback)(const WGPUDevice *device, WGPUDeviceLostReason reason, WGPUStringView message, void *userdata1, void *userdata2);
typedef void (*WGPUUncapturedErrorCallback)(const WGPUDevice *device, WGPUErrorType type, WGPUStringView message, void *userdata1, void *userdata2);
typedef void (*WGPUBufferMapCallback)(WGPUMapAsyncStatus status, WGPUStringView message, void *userdata1, void *userdata2);
struct WGPUCompilationInfo;
typedef void (*WGPUCompilationInfoCallback)(WGPUCompilationInfoRequestStatus status, const struct WGPUCompilationInfo *info, void *userdata1,
                                            void *userdata2);

typedef struct WGPURequestDeviceCallbackInfo {
  WGPUChainedStruct *nextInChain;
  WGPUCallbackMode mode;
  WGPURequestDeviceCallback callback;
  void *userdata1, *userdata2;
} WGPURequestDeviceCallbackInfo;

typedef struct WGPUDeviceLostCallbackInfo {
  WGPUChainedStruct *nextInChain;
  WGPUCallbackMode mode;
  WGPUDeviceLostCallback callback;
  void *userdata1, *userdata2;
} WGPUDeviceLostCallbackInfo;

typedef struct WGPUUncapturedErrorCallbackInfo { /* no mode: it is called where the error arises */
  WGPUChainedStruct *nextInChain;
  WGPUUncapturedErrorCallback callback;
  void *userdata1, *userdata2;
} WGPUUncapturedErrorCallbackInfo;

typedef struct WGPUBufferMapCallbackInfo {
  WGPUChainedStruct *nextInChain;
  WGPUCallbackMode mode;
  WGPUBufferMapCallback callback;
  void *userdata1, *userdata2;
} WGPUBufferMapCallbackInfo;

typedef struct WGPUCompilationInfoCallbackInfo {
  WGPUChainedStruct *nextInChain;
  WGPUCallbackMode mode;
  WGPUCompilationInfoCallback callback;
  void *userdata1, *userdata2;
} WGPUCompilationInfoCallbackInfo;

typedef struct WGPUQueueDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
} WGPUQueueDescriptor;

typedef struct WGPUDeviceDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  size_t requiredFeatureCount;
  const WGPUFeatureName *requiredFeatures;
  const WGPULimits *requiredLimits;
  WGPUQueueDescriptor defaultQueue;
  WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
  WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;

typedef struct WGPUBufferDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  WGPUBufferUsage usage;
  uint64_t size;
  WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;

typedef struct WGPUShaderSourceWGSL {
  WGPUChainedStruct chain;
  WGPUStringView code;
} WGPUShaderSourceWGSL;

typedef struct WGPUShaderModuleDescriptor {
  WGPUChainedStruct *nextInChain; /* the WGSL source, chained */
  WGPUStringView label;
} WGPUShaderModuleDescriptor;

typedef struct WGPUCompilationMessage {
  WGPUChainedStruct *nextInChain;
  WGPUStringView message;
  WGPUCompilationMessageType type;
  uint64_t lineNum, linePos, offset, length; /* line and column from 1, in UTF-8 bytes */
} WGPUCompilationMessage;

typedef struct WGPUCompilationInfo {
  WGPUChainedStruct *nextInChain;
  size_t messageCount;
  const WGPUCompilationMessage *messages;
} WGPUCompilationInfo;

typedef struct WGPUConstantEntry {
  WGPUChainedStruct *nextInChain;
  WGPUStringView key;
  double value;
} WGPUConstantEntry;

typedef struct WGPUComputeState {
  WGPUChainedStruct *nextInChain;
  WGPUShaderModule module;
  WGPUStringView entryPoint;
  size_t constantCount;
  const WGPUConstantEntry *constants;
} WGPUComputeState;

typedef struct WGPUComputePipelineDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  WGPUPipelineLayout layout; /* NULL: derived from the shader */
  WGPUComputeState compute;
} WGPUComputePipelineDescriptor;

typedef struct WGPUBindGroupEntry {
  WGPUChainedStruct *nextInChain;
  uint32_t binding;
  WGPUBuffer buffer;
  uint64_t offset, size;
  WGPUSampler sampler;
  WGPUTextureView textureView;
} WGPUBindGroupEntry;

typedef struct WGPUBindGroupDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  WGPUBindGroupLayout layout;
  size_t entryCount;
  const WGPUBindGroupEntry *entries;
} WGPUBindGroupDescriptor;

typedef struct WGPUCommandEncoderDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
} WGPUCommandEncoderDescriptor;

/* where a pass writes a timestamp as it begins and as it ends (nanoseconds once resolved) */
typedef struct WGPUPassTimestampWrites {
  WGPUChainedStruct *nextInChain;
  WGPUQuerySet querySet;
  uint32_t beginningOfPassWriteIndex, endOfPassWriteIndex;
} WGPUPassTimestampWrites;

typedef struct WGPUComputePassDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  const WGPUPassTimestampWrites *timestampWrites;
} WGPUComputePassDescriptor;

typedef struct WGPUQuerySetDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
  WGPUQueryType type;
  uint32_t count;
} WGPUQuerySetDescriptor;

/* Dawn's own: toggles by name, chained on the device descriptor */
typedef struct WGPUDawnTogglesDescriptor {
  WGPUChainedStruct chain;
  size_t enabledToggleCount;
  const char *const *enabledToggles;
  size_t disabledToggleCount;
  const char *const *disabledToggles;
} WGPUDawnTogglesDescriptor;

typedef struct WGPUCommandBufferDescriptor {
  WGPUChainedStruct *nextInChain;
  WGPUStringView label;
} WGPUCommandBufferDescriptor;

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
  WGPUFuture (*AdapterRequestDevice)(WGPUAdapter adapter, const WGPUDeviceDescriptor *descriptor, WGPURequestDeviceCallbackInfo info);
  WGPUQueue (*DeviceGetQueue)(WGPUDevice device);
  WGPUBuffer (*DeviceCreateBuffer)(WGPUDevice device, const WGPUBufferDescriptor *descriptor);
  WGPUShaderModule (*DeviceCreateShaderModule)(WGPUDevice device, const WGPUShaderModuleDescriptor *descriptor);
  WGPUFuture (*ShaderModuleGetCompilationInfo)(WGPUShaderModule module, WGPUCompilationInfoCallbackInfo info);
  WGPUComputePipeline (*DeviceCreateComputePipeline)(WGPUDevice device, const WGPUComputePipelineDescriptor *descriptor);
  WGPUBindGroupLayout (*ComputePipelineGetBindGroupLayout)(WGPUComputePipeline pipeline, uint32_t group);
  WGPUBindGroup (*DeviceCreateBindGroup)(WGPUDevice device, const WGPUBindGroupDescriptor *descriptor);
  WGPUCommandEncoder (*DeviceCreateCommandEncoder)(WGPUDevice device, const WGPUCommandEncoderDescriptor *descriptor);
  WGPUComputePassEncoder (*CommandEncoderBeginComputePass)(WGPUCommandEncoder encoder, const WGPUComputePassDescriptor *descriptor);
  void (*ComputePassEncoderSetPipeline)(WGPUComputePassEncoder pass, WGPUComputePipeline pipeline);
  void (*ComputePassEncoderSetBindGroup)(WGPUComputePassEncoder pass, uint32_t group, WGPUBindGroup bind, size_t offsets, const uint32_t *offset);
  void (*ComputePassEncoderDispatchWorkgroups)(WGPUComputePassEncoder pass, uint32_t x, uint32_t y, uint32_t z);
  void (*ComputePassEncoderEnd)(WGPUComputePassEncoder pass);
  void (*CommandEncoderCopyBufferToBuffer)(WGPUCommandEncoder encoder, WGPUBuffer source, uint64_t source_offset, WGPUBuffer destination,
                                           uint64_t destination_offset, uint64_t size);
  WGPUCommandBuffer (*CommandEncoderFinish)(WGPUCommandEncoder encoder, const WGPUCommandBufferDescriptor *descriptor);
  void (*QueueSubmit)(WGPUQueue queue, size_t count, const WGPUCommandBuffer *commands);
  void (*QueueWriteBuffer)(WGPUQueue queue, WGPUBuffer buffer, uint64_t offset, const void *data, size_t size);
  WGPUFuture (*BufferMapAsync)(WGPUBuffer buffer, WGPUMapMode mode, size_t offset, size_t size, WGPUBufferMapCallbackInfo info);
  const void *(*BufferGetConstMappedRange)(WGPUBuffer buffer, size_t offset, size_t size);
  void (*BufferUnmap)(WGPUBuffer buffer);
  void (*BufferDestroy)(WGPUBuffer buffer);
  void (*BufferRelease)(WGPUBuffer buffer);
  void (*ShaderModuleRelease)(WGPUShaderModule module);
  void (*ComputePipelineRelease)(WGPUComputePipeline pipeline);
  void (*BindGroupLayoutRelease)(WGPUBindGroupLayout layout);
  void (*BindGroupRelease)(WGPUBindGroup bind);
  void (*CommandEncoderRelease)(WGPUCommandEncoder encoder);
  void (*ComputePassEncoderRelease)(WGPUComputePassEncoder pass);
  void (*CommandBufferRelease)(WGPUCommandBuffer commands);
  void (*QueueRelease)(WGPUQueue queue);
  void (*DeviceDestroy)(WGPUDevice device);
  void (*DeviceRelease)(WGPUDevice device);
  WGPUQuerySet (*DeviceCreateQuerySet)(WGPUDevice device, const WGPUQuerySetDescriptor *descriptor);
  void (*CommandEncoderResolveQuerySet)(WGPUCommandEncoder encoder, WGPUQuerySet set, uint32_t first, uint32_t count, WGPUBuffer destination,
                                        uint64_t destination_offset);
  void (*QuerySetDestroy)(WGPUQuerySet set);
  void (*QuerySetRelease)(WGPUQuerySet set);
} wgpu_api;

#endif
