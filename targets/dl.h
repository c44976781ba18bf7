/*
 * dl.h: all dynamic loading goes through here: compiled kernel objects today, GPU drivers and
 * their compilers later. Failures return NULL with the loader's message.
 */
#ifndef PORTC_TARGETS_DL_H
#define PORTC_TARGETS_DL_H

#include <stddef.h>

void *dl_open(const char *path, char *why, size_t len);
void *dl_sym(void *handle, const char *name, char *why, size_t len);
void dl_close(void *handle);

#endif
