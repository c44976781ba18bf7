/*
 * webgpu_fake_stable.c: a library with the entry points by which webgpu.h's stable release
 * differs from the ABI portc declares (wgpuGetInstanceFeatures where Dawn's of June 2025 has
 * wgpuGetInstanceCapabilities), for webgpu_test's wrong-library case. Nothing calls them.
 */
#define EXPORT __attribute__((visibility("default")))
EXPORT void *wgpuCreateInstance(const void *descriptor) { return (void *)descriptor; }
EXPORT void wgpuGetInstanceFeatures(void *features) { (void)features; }
