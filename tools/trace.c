/*
 * trace.c: `portc bench --trace FILE.json`: a run's kernels in the Chrome trace event format, which
 * chrome://tracing and Perfetto open: one complete event ("ph": "X") per kernel, named as
 * `portc explain` names it ("kernel 3: conv over [32, 64, 56, 56]"), with the nodes it fuses, its
 * bytes, FLOPs and rates as args. A duration is the kernel's median time alone
 * (portc_module_profile, device timers where the target has them); the events lie end to end in
 * launch order: the run as the device executes it, without the host's gaps between launches.
 * Kernels whose results are kept from the first run (driver/derived.c) are left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* the text after `key` on explain's line for kernel k ("kernel K: ..." itself for key NULL), up
 * to the end of that line, into out */
static void explain_field(const char *explain, int k, const char *key, char *out, size_t len) {
  char head[32];
  snprintf(head, sizeof head, "kernel %d: ", k);
  out[0] = 0;
  const char *p = explain ? strstr(explain, head) : NULL;
  if (p && key) {
    const char *next = strstr(p + 1, "\nkernel "), *q = strstr(p, key);
    p = q && (!next || q < next) ? q + strlen(key) : NULL;
  }
  if (p) snprintf(out, len, "%.*s", (int)strcspn(p, "\n"), p);
}

bool trace_write(const trace *t, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return false;
  fprintf(f, "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"graph\": ");
  json_string(f, t->graph);
  fprintf(f, ", \"target\": ");
  json_string(f, t->target);
  fprintf(f, ", \"device\": ");
  json_string(f, t->device);
  fprintf(f, ", \"timing\": \"each kernel's median time alone, laid end to end in launch order (kernels kept from the first run left out)\"},\n \"traceEvents\": [\n");
  fprintf(f, "  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": ");
  json_string(f, t->device);
  fprintf(f, "}}");
  double at = 0;
  for (int k = 0; k < t->n; k++) {
    char name[512], fuses[1024], kept[256];
    explain_field(t->explain, k, "kept:   ", kept, sizeof kept);
    if (kept[0]) continue; /* computed from parameters alone: not in a run after the first */
    explain_field(t->explain, k, NULL, name, sizeof name);
    explain_field(t->explain, k, "fuses:  ", fuses, sizeof fuses);
    if (!name[0]) snprintf(name, sizeof name, "kernel %d", k);
    double us = t->seconds[k] * 1e6;
    fprintf(f, ",\n  {\"name\": ");
    json_string(f, name);
    fprintf(f, ", \"cat\": \"kernel\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"fuses\": ", at, us);
    json_string(f, fuses);
    fprintf(f, ", \"bytes\": %lld, \"flops\": %lld, \"GB/s\": %.2f, \"GFLOP/s\": %.2f}}", (long long)t->bytes[k], (long long)t->flops[k],
            us > 0 ? (double)t->bytes[k] / us / 1e3 : 0, us > 0 ? (double)t->flops[k] / us / 1e3 : 0);
    at += us;
  }
  fprintf(f, "\n]}\n");
  return fclose(f) == 0;
}
