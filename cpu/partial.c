/*
 * partial.c: cpu-partial, a test target: the CPU target with a declared partial set of what it
 * runs (no softmax, no f16 values, no sum over more than one axis), so that graph breaks
 * (driver/partition.c) are exercised where CI has no GPU target that lacks anything. It is
 * available only with PORTC_TEST_TARGETS=1, so that `portc verify` and `portc devices` leave it
 * alone otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

extern const target cpu_target;

static bool available(char *why, size_t len) {
  const char *v = getenv("PORTC_TEST_TARGETS");
  if (!v || strcmp(v, "1") != 0) {
    snprintf(why, len, "a test target of graph breaks: set PORTC_TEST_TARGETS=1");
    return false;
  }
  return cpu_target.available(why, len);
}

static bool supports(const portc_graph *g, int i, char *why, size_t len) {
  const node *n = &g->nodes[i];
  if (n->op == OP_softmax) return snprintf(why, len, "has no softmax"), false;
  if (n->dt == PORTC_F16) return snprintf(why, len, "has no f16 values"), false;
  const attr *axes = n->op == OP_sum ? attr_get(n, "axes") : NULL;
  if (axes && axes->set && axes->n > 1) return snprintf(why, len, "sums over one axis at a time, not %d", axes->n), false;
  return true;
}

/* the CPU target's own hooks: its code, loading and launching are the same */
static const char *device(void) { return cpu_target.device(); }
static portc_status load(const load_request *r, void **handle, bool *hit) { return cpu_target.load(r, handle, hit); }
static portc_status launch(void *handle, int i, void *const *bufs, const int64_t *S) { return cpu_target.launch(handle, i, bufs, S); }
static void unload(void *handle) { cpu_target.unload(handle); }

const target cpu_partial_target = {
    .name = "cpu-partial",
    .summary = "a test target: the CPU without softmax, f16 or sums over several axes (graph breaks)",
    .dialect = &cpu_dialect,
    .available = available,
    .device = device,
    .schedule = cpu_schedule,
    .device_key = cpu_device_key,
    .load = load,
    .launch = launch,
    .unload = unload,
    .supports = supports,
};
