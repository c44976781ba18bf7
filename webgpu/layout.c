/*
 * layout.c: the WGSL dialect's data-movement kernels that are not views of one buffer, written
 * as codegen/opaque.c writes them for the other dialects: concat (a grid-stride loop per input,
 * each writing its slab of the output) and pad (an invocation per output element, which reads
 * its input element or writes the fill value). Symbolic dims are read from the symbol values.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../codegen/emit.h"
#include "../codegen/gpu_kernels.h"
#include "../ir/dtype.h"
#include "wg.h"

static const char *const idxnames[] = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"};

static void grid_loop(emitter *e, const char *count) {
  emit_line(e, "for (var t: i32 = i32(pc_gid.x); t < %s; t += i32(pc_groups.x) * %d) {", count, WG_THREADS);
  e->indent++;
}

static void concat(emitter *e, const node *n) {
  const kir_kernel *k = e->k;
  int64_t axis = norm_axis(attr_i(n, "axis"), k->dom.rank);
  char outer[256], inner[256], ld[512], count[160], off[200];
  emit_count(e, &k->dom, 0, (int)axis, outer, sizeof outer);
  emit_count(e, &k->dom, (int)axis + 1, k->dom.rank, inner, sizeof inner);
  emit_line(e, "let OU: i32 = %s;", outer);
  emit_line(e, "let IN: i32 = %s;", inner);
  int64_t at = 0;
  for (int j = 0; j < k->nin; j++) {
    int64_t xl = e->m->buf[k->in_buf[j]].sh.d[axis].c; /* the graph refuses a concat along a symbolic dim */
    snprintf(count, sizeof count, "OU * %lld * IN", (long long)xl);
    grid_loop(e, count);
    emit_line(e, "let o: i32 = t / (%lld * IN);", (long long)xl);
    emit_line(e, "let r: i32 = t %% (%lld * IN);", (long long)xl);
    emit_load(e, k->in_buf[j], "t", ld, sizeof ld);
    snprintf(off, sizeof off, "(o * %lld + %lld) * IN + r", (long long)k->dom.d[axis].c, (long long)at);
    emit_store(e, k->store[0].buf, off, ld);
    gpu_loop_end(e);
    at += xl;
  }
}

static void pad(emitter *e, const node *n) {
  const kir_kernel *k = e->k;
  const attr *pads = attr_get(n, "pads");
  const shape *xs = &e->m->buf[k->in_buf[0]].sh;
  int ob = k->store[0].buf;
  char val[64], ld[512], count[256];
  double v = attr_f(n, "value");
  if (dtype_is_float(e->m->buf[ob].dt)) emit_float(e->d, v, val, sizeof val);
  else snprintf(val, sizeof val, "%lld", (long long)v);
  emit_count(e, &k->dom, 0, k->dom.rank, count, sizeof count);
  grid_loop(e, count);
  emit_unravel(e, &k->dom, 0, k->dom.rank, "t", idxnames);
  strbuf off = {0}, in = {0};
  for (int d = 0; d < xs->rank; d++) {
    char stride[256];
    emit_count(e, xs, d + 1, xs->rank, stride, sizeof stride);
    emit_line(e, "let p%d: i32 = %s - %lld;", d, idxnames[d], (long long)pads->v[2 * d]);
    char len[64];
    sb_printf(&in, "%sp%d >= 0 && p%d < %s", d ? " && " : "", d, d, emit_dim(e, xs->d[d], len, sizeof len));
    sb_printf(&off, "%sp%d * %s", d ? " + " : "", d, stride);
  }
  char *os = emit_take(e, &off), *is = emit_take(e, &in);
  emit_line(e, "if (%s) {", is && *is ? is : "true");
  e->indent++;
  emit_load(e, k->in_buf[0], os && *os ? os : "0", ld, sizeof ld);
  emit_store(e, ob, "t", ld);
  e->indent--;
  emit_line(e, "} else {");
  e->indent++;
  emit_store(e, ob, "t", val);
  gpu_loop_end(e);
  free(os);
  free(is);
  gpu_loop_end(e);
}

void wg_layout(emitter *e) {
  const node *n = &e->m->g->nodes[e->k->node];
  if (n->op == OP_concat) concat(e, n);
  else pad(e, n);
}
