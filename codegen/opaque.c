/*
 * opaque.c: the templates of the ops the kernel IR's body cannot express (argmax, pooling,
 * concat, pad, gather), written once for every dialect. Each is a loop over output elements
 * that the dialect spreads over its threads: an OpenMP loop on the CPU (the dialect's
 * parallel_for), a grid-stride loop on GPUs (from its thread-index spellings). Index
 * arithmetic is in the dialect's index type; PC_IDX and PC_I64 (every prelude has them) convert
 * to it and to int64; bad_index is how a dialect records a gather index out of range.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"
#include "emit.h"
#include "gpu_kernels.h"

static const char *const idxnames[] = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"};

void emit_parallel_loop(emitter *e, const char *count) {
  const char *it = e->d->index_type;
  if (e->d->gpu) {
    emit_line(e, "for (%s t = %s; t < %s; t += %s) {", it, e->d->gpu->global_id, count, e->d->gpu->global_threads);
  } else {
    char head[600];
    snprintf(head, sizeof head, e->d->parallel_for, count);
    for (char *line = head, *nl; line; line = nl) { /* the format may hold a pragma line */
      if ((nl = strchr(line, '\n'))) *nl++ = 0;
      emit_line(e, "%s", line);
    }
  }
  e->indent++;
}

static void argmax(emitter *e, const node *n, int xb, int ob) {
  const shape *xs = &e->m->buf[xb].sh;
  const char *it = e->d->index_type, *ct = compute_type(e->m->buf[xb].dt);
  char outer[256], len[64], inner[256], ld[512];
  int64_t axis = norm_axis(attr_i(n, "axis"), xs->rank);
  emit_count(e, xs, 0, (int)axis, outer, sizeof outer);
  emit_dim(e, xs->d[axis], len, sizeof len);
  emit_count(e, xs, (int)axis + 1, xs->rank, inner, sizeof inner);
  emit_line(e, "const %s OU = %s, LEN = %s, IN = %s;", it, outer, len, inner);
  emit_parallel_loop(e, "OU * IN");
  emit_line(e, "const %s o = t / IN, i = t %% IN;", it);
  emit_load(e, xb, "o * LEN * IN + i", ld, sizeof ld);
  emit_line(e, "%s best = 0; %s bv = %s;", it, ct, ld);
  emit_load(e, xb, "(o * LEN + q) * IN + i", ld, sizeof ld);
  emit_line(e, "for (%s q = 1; q < LEN; q++) {", it);
  emit_line(e, "  const %s v = %s;", ct, ld);
  if (dtype_is_float(e->m->buf[xb].dt)) emit_line(e, "  if (!isnan(bv) && (isnan(v) || v > bv)) { bv = v; best = q; }");
  else emit_line(e, "  if (v > bv) { bv = v; best = q; }");
  emit_line(e, "}");
  emit_store(e, ob, "t", "PC_I64(best)");
  gpu_loop_end(e);
}

static void pool(emitter *e, const node *n, int xb, int ob) {
  const shape *xs = &e->m->buf[xb].sh;
  const attr *ka = attr_get(n, "kernel"), *sa = attr_get(n, "stride"), *pa = attr_get(n, "padding");
  const int64_t *st = sa->set ? sa->v : ka->v;
  const char *it = e->d->index_type;
  bool mx = n->op == OP_max_pool2d, f = dtype_is_float(e->m->buf[xb].dt);
  const conv_axes a = conv_axes_of(n); /* channels last: [N, H, W, C], a thread's neighbours the next channels */
  char ld[512], count[300], nc[256], zero[64], area[64], ch[64];
  emit_count(e, xs, 0, 1, nc, sizeof nc);
  emit_dim(e, xs->d[a.c], ch, sizeof ch);
  emit_float(e->d, 0.0, zero, sizeof zero);
  emit_float(e->d, (double)(ka->v[0] * ka->v[1]), area, sizeof area);
  emit_line(e, "const %s C = %s, H = %lld, W = %lld, OH = %lld, OW = %lld;", it, ch, (long long)xs->d[a.h].c, (long long)xs->d[a.w].c,
            (long long)e->k->dom.d[a.h].c, (long long)e->k->dom.d[a.w].c);
  snprintf(count, sizeof count, "(%s) * C * OH * OW", nc);
  emit_parallel_loop(e, count);
  if (a.c == 3) emit_line(e, "const %s c = t %% C, ow = t / C %% OW, oh = t / (C * OW) %% OH, img = t / (C * OW * OH);", it);
  else emit_line(e, "const %s nc = t / (OH * OW), oh = t / OW %% OH, ow = t %% OW;", it);
  emit_line(e, "%s acc = %s;", compute_type(e->m->buf[xb].dt), mx ? (f ? "(-INFINITY)" : "INT64_MIN") : zero);
  emit_line(e, "for (%s kh = 0; kh < %lld; kh++)", it, (long long)ka->v[0]);
  emit_line(e, "  for (%s kw = 0; kw < %lld; kw++) {", it, (long long)ka->v[1]);
  emit_line(e, "    const %s ih = oh * %lld - %lld + kh, iw = ow * %lld - %lld + kw;", it, (long long)st[0], (long long)pa->v[0],
            (long long)st[1], (long long)pa->v[1]);
  emit_line(e, "    if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;");
  emit_load(e, xb, a.c == 3 ? "((img * H + ih) * W + iw) * C + c" : "(nc * H + ih) * W + iw", ld, sizeof ld);
  if (!mx) emit_line(e, "    acc += %s;", ld);
  else if (f) emit_line(e, "    { const float v = %s; if (!isnan(acc) && (isnan(v) || v > acc)) acc = v; }", ld);
  else emit_line(e, "    { const int64_t v = %s; if (v > acc) acc = v; }", ld);
  emit_line(e, "  }");
  if (!mx) emit_line(e, "acc /= %s;", area);
  emit_store(e, ob, "t", "acc");
  gpu_loop_end(e);
}

/* one loop per input, each writing its slab of the output: an element per iteration, or PC_VEC
 * of them in one vector load and store where the schedule has a vector width
 * (gpu_concat_vector: every slab a run of whole vectors) */
static void concat(emitter *e, const node *n, int ob) {
  const kir_kernel *k = e->k;
  const char *it = e->d->index_type;
  const bool vec = k->sched.vector > 1 && e->d->gpu && e->d->gpu->vload;
  int64_t axis = norm_axis(attr_i(n, "axis"), k->dom.rank);
  char outer[256], inner[256], ld[512], count[160], off[200];
  emit_count(e, &k->dom, 0, (int)axis, outer, sizeof outer);
  emit_count(e, &k->dom, (int)axis + 1, k->dom.rank, inner, sizeof inner);
  emit_line(e, "const %s OU = %s, IN = %s, OL = %lld;", it, outer, inner, (long long)k->dom.d[axis].c);
  int64_t at = 0;
  for (int j = 0; j < k->nin; j++) {
    int64_t xl = e->m->buf[k->in_buf[j]].sh.d[axis].c;
    snprintf(count, sizeof count, "OU * %lld * IN%s", (long long)xl, vec ? " / PC_VEC" : "");
    emit_parallel_loop(e, count);
    if (vec) emit_line(e, "const %s v = t * PC_VEC;", it);
    emit_line(e, "const %s o = %s / (%lld * IN), r = %s %% (%lld * IN);", it, vec ? "v" : "t", (long long)xl, vec ? "v" : "t", (long long)xl);
    snprintf(off, sizeof off, "(o * OL + %lld) * IN + r", (long long)at);
    if (vec) {
      char src[16], dst[16];
      snprintf(src, sizeof src, "%s", emit_buf(e, k->in_buf[j]));
      snprintf(dst, sizeof dst, "%s", emit_buf(e, ob));
      emit_line(e, "float cv[PC_VEC];");
      emit_line(e, e->d->gpu->vload, src, "v", "cv", "0");
      emit_line(e, e->d->gpu->vstore, dst, off, "cv");
    } else {
      emit_load(e, k->in_buf[j], "t", ld, sizeof ld);
      emit_store(e, ob, off, ld);
    }
    gpu_loop_end(e);
    at += xl;
  }
}

static void pad(emitter *e, const node *n, int xb, int ob) {
  const kir_kernel *k = e->k;
  const attr *pads = attr_get(n, "pads");
  const shape *xs = &e->m->buf[xb].sh;
  const char *it = e->d->index_type;
  char val[64], ld[512], count[256];
  double v = attr_f(n, "value");
  if (dtype_is_float(e->m->buf[ob].dt)) emit_float(e->d, v, val, sizeof val);
  else snprintf(val, sizeof val, "PC_I64(%lld)", (long long)v);
  emit_count(e, &k->dom, 0, k->dom.rank, count, sizeof count);
  emit_parallel_loop(e, count);
  emit_unravel(e, &k->dom, 0, k->dom.rank, "t", idxnames);
  strbuf off = {0}, in = {0};
  for (int d = 0; d < xs->rank; d++) {
    char ext[32], stride[256];
    emit_dim(e, xs->d[d], ext, sizeof ext);
    emit_count(e, xs, d + 1, xs->rank, stride, sizeof stride);
    emit_line(e, "const %s p%d = %s - %lld;", it, d, idxnames[d], (long long)pads->v[2 * d]);
    sb_printf(&in, "%sp%d >= 0 && p%d < %s", d ? " && " : "", d, d, ext);
    sb_printf(&off, "%sp%d * %s", d ? " + " : "", d, stride);
  }
  char *os = emit_take(e, &off), *is = emit_take(e, &in);
  emit_load(e, xb, os && *os ? os : "0", ld, sizeof ld);
  emit_line(e, "if (%s) {", is && *is ? is : "true");
  e->indent++;
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

static void gather(emitter *e, const node *n, int xb, int ob) {
  const shape *xs = &e->m->buf[xb].sh, *is = &e->m->buf[e->k->in_buf[1]].sh;
  const char *it = e->d->index_type;
  char len[64], inner[256], nidx[256], ld[512], count[256];
  int64_t axis = norm_axis(attr_i(n, "axis"), xs->rank);
  emit_dim(e, xs->d[axis], len, sizeof len);
  emit_count(e, xs, (int)axis + 1, xs->rank, inner, sizeof inner);
  emit_count(e, is, 0, is->rank, nidx, sizeof nidx);
  emit_line(e, "const %s LEN = %s, IN = %s, NI = %s;", it, len, inner, nidx);
  emit_count(e, &e->k->dom, 0, e->k->dom.rank, count, sizeof count);
  emit_parallel_loop(e, count);
  emit_line(e, "const %s o = t / (NI * IN), q = t / IN %% NI, i = t %% IN;", it);
  emit_load(e, e->k->in_buf[1], "q", ld, sizeof ld);
  emit_line(e, "int64_t ix = %s;", ld);
  emit_line(e, "if (ix < PC_I64(0)) ix += PC_I64(LEN);");
  emit_line(e, "if (ix < PC_I64(0) || ix >= PC_I64(LEN)) { %s continue; }", e->d->bad_index);
  emit_load(e, xb, "(o * LEN + PC_IDX(ix)) * IN + i", ld, sizeof ld);
  emit_store(e, ob, "t", ld);
  gpu_loop_end(e);
}

void emit_opaque(emitter *e) {
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  int ob = k->store[0].buf, xb = k->in_buf[0];
  switch (n->op) {
  case OP_argmax: argmax(e, n, xb, ob); break;
  case OP_max_pool2d:
  case OP_avg_pool2d: pool(e, n, xb, ob); break;
  case OP_concat: concat(e, n, ob); break;
  case OP_pad: pad(e, n, xb, ob); break;
  case OP_attention: emit_attention(e); break;
  default: gather(e, n, xb, ob); break;
  }
}
