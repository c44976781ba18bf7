/*
 * dl.h: all dynamic loading goes through here: the CPU target's compiled kernel objects, and the
 * GPU drivers and compilers opened at run time (the CUDA driver, NVRTC and cuBLASLt; the HIP
 * runtime and hiprtc; the Vulkan loader, whose entry points volk then fills; the WebGPU library). Failures return
 * NULL with the loader's message.
 */
#ifndef PORTC_TARGETS_DL_H
#define PORTC_TARGETS_DL_H

#include <stddef.h>

void *dl_open(const char *path, char *why, size_t len);
/* a library that brings its own copies of libraries libportc or the application may also have
 * (the WebGPU library's SPIRV-Tools): its symbols bind to itself first (RTLD_DEEPBIND), except
 * under AddressSanitizer, which refuses deep binding */
void *dl_open_isolated(const char *path, char *why, size_t len);
void *dl_sym(void *handle, const char *name, char *why, size_t len);
void dl_close(void *handle);
/* Keeps an already loaded library mapped for good: the OpenMP runtime that a kernel library pulled
 * in must outlive it, since its worker threads stay alive after the kernel library is closed. */
void dl_keep_loaded(const char *soname);
/* the symbol `name` of library `soname` if that library is already loaded (it is not loaded here) */
void *dl_sym_loaded(const char *soname, const char *name);

#endif
