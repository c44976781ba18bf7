/*
 * kernel_list.c: the parser of the opt-in kernel lists (kernel_list.h).
 */
#include "kernel_list.h"

#include <stdio.h>
#include <string.h>

/* the n-character name at p, from the table or "none" (bit 0): its bit in *bit */
static bool lookup(const char *p, size_t n, const kernel_name *names, int count, unsigned *bit) {
  if (n == 4 && strncmp(p, "none", 4) == 0) return *bit = 0, true;
  for (int i = 0; i < count; i++)
    if (strlen(names[i].name) == n && strncmp(p, names[i].name, n) == 0) return *bit = names[i].bit, true;
  return false;
}

unsigned kernel_list_bits(const char *list, const kernel_name *names, int n) {
  unsigned bits = 0, bit;
  for (const char *p = list ? list : ""; *p;) {
    size_t len = strcspn(p, ",");
    if (lookup(p, len, names, n, &bit)) bits |= bit;
    p += len + (p[len] == ',');
  }
  return bits;
}

bool kernel_list_known(const char *var, const char *list, const kernel_name *names, int n, char *why, size_t len) {
  for (const char *p = list ? list : ""; *p;) {
    size_t l = strcspn(p, ",");
    unsigned bit;
    if (l && !lookup(p, l, names, n, &bit)) {
      int at = snprintf(why, len, "%s lists '%.*s', which is not ", var, (int)(l < 64 ? l : 64), p);
      for (int i = 0; i < n && at >= 0 && (size_t)at < len; i++) at += snprintf(why + at, len - (size_t)at, "%s, ", names[i].name);
      if (at >= 2 && (size_t)at < len) snprintf(why + at - 2, len - (size_t)at + 2, " or none");
      return false;
    }
    p += l + (p[l] == ',');
  }
  return true;
}
