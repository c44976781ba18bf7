/*
 * kernel_list.h: the lists that name a target's opt-in kernels of portc's own
 * (PORTC_CUDA_KERNELS, PORTC_VULKAN_KERNELS): comma-separated names from the target's table,
 * "none" naming none. Read by one parser, so that every such variable takes the same spelling
 * and refuses an unknown name the same way.
 */
#ifndef PORTC_TARGETS_KERNEL_LIST_H
#define PORTC_TARGETS_KERNEL_LIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct kernel_name {
  const char *name;
  unsigned bit;
} kernel_name;

/* the bits of the names list holds (names not in the table add nothing) */
unsigned kernel_list_bits(const char *list, const kernel_name *names, int n);
/* whether every name list holds is in the table or "none"; false with why, which names the
 * variable var, the unknown name and those known */
bool kernel_list_known(const char *var, const char *list, const kernel_name *names, int n, char *why, size_t len);

#endif
