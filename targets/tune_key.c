/*
 * tune_key.c: the key a tune table matches a kernel by: its kind, dtypes, operand layout,
 * epilogue class, op parameters, and its shape as named extents (a matmul's b, m, n, k; a
 * convolution's n, c, h, w, o; a row kernel's rows and len; elems for the rest). Extents the
 * module keeps symbolic are "dyn".
 */
#include <stdio.h>
#include <string.h>

#include "../codegen/emit.h"
#include "../ir/dtype.h"
#include "tune.h"

static int64_t ext_of(dim d) { return d.sym >= 0 ? TUNE_DYN : d.c; }

/* the product of dims [from, to), or TUNE_DYN when one is symbolic */
static int64_t product(const shape *s, int from, int to) {
  int64_t p = 1;
  for (int d = from; d < to; d++) {
    if (s->d[d].sym >= 0) return TUNE_DYN;
    p *= s->d[d].c;
  }
  return p;
}

/* the dtypes a kernel reads: a contraction's two operands, else each distinct loaded dtype */
static int input_dtypes(const kir_module *m, const kir_kernel *k, portc_dtype in[8]) {
  if (k->kind == KK_MATMUL || k->kind == KK_CONV) {
    in[0] = m->buf[k->in_buf[0]].dt, in[1] = m->buf[k->in_buf[1]].dt;
    return 2;
  }
  int n = 0;
  for (int i = 0; i < k->nin + k->nval; i++) {
    int b = i < k->nin ? k->in_buf[i] : k->val[i - k->nin].kind == KV_LOAD ? k->val[i - k->nin].buf : -1;
    bool seen = b < 0;
    for (int j = 0; j < n && !seen; j++) seen = in[j] == m->buf[b].dt;
    if (!seen && n < 8) in[n++] = m->buf[b].dt;
  }
  return n;
}

/* "f32" when every input and the output share it, else "f16,f16>f32" */
static void dtypes(const kir_module *m, const kir_kernel *k, char *out, size_t len) {
  portc_dtype in[8];
  int n = input_dtypes(m, k, in);
  portc_dtype o = k->nstore ? m->buf[k->store[0].buf].dt : n ? in[0] : PORTC_F32;
  bool same = true;
  for (int j = 0; j < n; j++) same = same && in[j] == o;
  size_t u = 0;
  out[0] = 0;
  for (int j = 0; !same && j < n && u < len; j++) u += (size_t)snprintf(out + u, len - u, "%s%s", j ? "," : "", portc_dtype_name(in[j]));
  if (u < len) snprintf(out + u, len - u, "%s%s", same ? "" : ">", portc_dtype_name(o));
}

/* none: the accumulator is stored (maybe cast); bias: plus a vector; fused: anything else */
static const char *epilogue(const kir_kernel *k) {
  if (k->nstore != 1) return "fused";
  const kir_val *v = &k->val[k->store[0].val];
  if (v->kind == KV_OP && v->op == OP_cast) v = &k->val[v->arg[0]];
  if (v->kind == KV_ACC) return "none";
  if (v->kind == KV_OP && v->op == OP_add) {
    const kir_val *x = &k->val[v->arg[0]], *y = &k->val[v->arg[1]];
    if (y->kind == KV_ACC) x = y, y = &k->val[v->arg[0]];
    if (x->kind == KV_ACC && y->kind == KV_LOAD) return "bias";
  }
  return "fused";
}

void tune_kernel_key(const kir_module *m, int i, tune_kernel *out) {
  const kir_kernel *k = &m->k[i];
  memset(out, 0, sizeof *out);
  for (int x = 0; x < TX_COUNT; x++) out->ext[x] = TUNE_NONE;
  static const char *const kinds[] = {"pointwise", "row", "matmul", "conv", "opaque"};
  snprintf(out->kind, sizeof out->kind, "%s", kinds[k->kind]);
  dtypes(m, k, out->dtype, sizeof out->dtype);
  snprintf(out->layout, sizeof out->layout, "-");
  snprintf(out->epilogue, sizeof out->epilogue, "-");
  snprintf(out->params, sizeof out->params, "-");
  switch (k->kind) {
  case KK_MATMUL: {
    bool plain = k->dom.rank == 2 && matmul_plain_operand(m, k, 0) && matmul_plain_operand(m, k, 1);
    snprintf(out->layout, sizeof out->layout, "%s", plain ? "plain" : "view");
    snprintf(out->epilogue, sizeof out->epilogue, "%s", epilogue(k));
    out->ext[TX_B] = product(&k->dom, 0, k->dom.rank - 2);
    for (int d = 0; d < 3; d++) out->ext[TX_M + d] = ext_of(k->mnk[d]);
    break;
  }
  case KK_CONV: {
    const node *n = &m->g->nodes[k->node];
    const shape *xs = &m->buf[k->in_buf[0]].sh, *ws = &m->buf[k->in_buf[1]].sh;
    const conv_axes a = conv_axes_of(n);
    snprintf(out->layout, sizeof out->layout, attr_i(n, "channels_last") ? "nhwc" : "nchw");
    snprintf(out->epilogue, sizeof out->epilogue, "%s", epilogue(k));
    snprintf(out->params, sizeof out->params, "%lldx%lld/s%lld/p%lld/d%lld/g%lld", (long long)ws->d[a.wh].c, (long long)ws->d[a.ww].c,
             (long long)attr_or_one(n, "stride", 0), (long long)attr_get(n, "padding")->v[0], (long long)attr_or_one(n, "dilation", 0),
             (long long)attr_i(n, "groups"));
    out->ext[TX_N] = ext_of(xs->d[0]), out->ext[TX_C] = ext_of(xs->d[a.c]);
    out->ext[TX_H] = ext_of(xs->d[a.h]), out->ext[TX_W] = ext_of(xs->d[a.w]);
    out->ext[TX_O] = ext_of(k->dom.d[a.c]);
    break;
  }
  case KK_ROW:
    out->ext[TX_ROWS] = product(&k->dom, 0, k->dom.rank);
    out->ext[TX_LEN] = product(&k->red, 0, k->red.rank);
    break;
  case KK_OPAQUE: snprintf(out->params, sizeof out->params, "%s", op_get(m->g->nodes[k->node].op)->name); /* fall through */
  default: out->ext[TX_ELEMS] = product(&k->dom, 0, k->dom.rank); break;
  }
}
