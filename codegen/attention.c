/*
 * attention.c: the template of an attention node computed whole (lower/decompose.c keeps it one
 * node where the target asks and kir_attention_fits), written once for every dialect like the
 * other opaque templates. Each invocation takes one query row: it keeps the scaled query and its
 * output row in registers and walks the keys in blocks of ATT_BLOCK with the online softmax (a
 * running maximum m and sum l; a block whose maximum raises m rescales l and the output row once),
 * so the scores are never written to memory:
 *
 *   for each block of keys j:  s_j = q . k_j * scale + mask_ij      (-inf past a causal query)
 *                              m' = max(m, max_j s_j);  c = exp(m - m')
 *                              l = l c + sum_j exp(s_j - m');  o = o c + sum_j exp(s_j - m') v_j
 *   y = o / l
 *
 * Invocations next to each other take query rows of the same batch, so on GPUs they read the same
 * key and value rows at the same time (one broadcast load). The inputs are materialized buffers
 * (fusion materializes an opaque op's inputs); batch dimensions broadcast as numpy's do.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../ir/dtype.h"
#include "emit.h"
#include "gpu_kernels.h"

enum { ATT_BLOCK = 16 };

static const char *const batchnames[] = {"ab0", "ab1", "ab2", "ab3", "ab4", "ab5", "ab6", "ab7"};

/* the offset of the current batch's matrix in buffer b, whose batch dims broadcast to the
 * output's first `orank` dims (named batchnames) */
static void batch_offset(emitter *e, int b, int orank, char *out, size_t len) {
  const shape *s = &e->m->buf[b].sh;
  int brank = s->rank - 2;
  size_t at = (size_t)snprintf(out, len, "0");
  for (int d = 0; d < brank && at < len; d++) {
    if (s->d[d].sym < 0 && s->d[d].c == 1) continue; /* broadcast: index 0 */
    char stride[256];
    emit_count(e, s, d + 1, s->rank, stride, sizeof stride);
    at += (size_t)snprintf(out + at, len - at, " + %s * (%s)", batchnames[orank - brank + d], stride);
  }
}

/* `for` over a constant count, unrolled on GPUs so that the arrays it indexes stay in registers */
static void unrolled_for(emitter *e, const char *var, int64_t count) {
  emit_line(e, "%sfor (int %s = 0; %s < %lld; %s++)", e->d->gpu ? e->d->gpu->unroll : "", var, var, (long long)count, var);
}

void emit_attention(emitter *e) {
  const kir_kernel *k = e->k;
  const node *n = &e->m->g->nodes[k->node];
  const int qb = k->in_buf[0], kb = k->in_buf[1], vb = k->in_buf[2], mb = k->nin > 3 ? k->in_buf[3] : -1, ob = k->store[0].buf;
  const shape *qs = &e->m->buf[qb].sh, *ks = &e->m->buf[kb].sh, *ms = mb >= 0 ? &e->m->buf[mb].sh : NULL;
  const int orank = k->dom.rank - 2;
  const int64_t D = qs->d[qs->rank - 1].c, DV = k->dom.d[k->dom.rank - 1].c;
  const char *it = e->d->index_type;
  const attr *sc = attr_get(n, "scale");
  char sq[64], sk[64], rows[256], off[1024], ld[1200], scale[64], ninf[64], zero[64], one[64], tmp[1400], tmp2[1400];
  emit_dim(e, k->dom.d[orank], sq, sizeof sq);
  emit_dim(e, ks->d[ks->rank - 2], sk, sizeof sk);
  emit_count(e, &k->dom, 0, orank + 1, rows, sizeof rows);
  emit_float(e->d, sc->set ? sc->f : 1.0 / sqrt((double)D), scale, sizeof scale);
  emit_float(e->d, -INFINITY, ninf, sizeof ninf);
  emit_float(e->d, 0.0, zero, sizeof zero);
  emit_float(e->d, 1.0, one, sizeof one);
  emit_line(e, "const %s SQ = %s, SK = %s;", it, sq, sk);
  emit_parallel_loop(e, rows);
  emit_line(e, "const %s bt = t / SQ, i = t %% SQ;", it);
  if (orank) emit_unravel(e, &k->dom, 0, orank, "bt", batchnames);
  batch_offset(e, qb, orank, off, sizeof off);
  emit_line(e, "const %s qo = %s + i * %lld;", it, off, (long long)D);
  batch_offset(e, kb, orank, off, sizeof off);
  emit_line(e, "const %s ko = %s;", it, off);
  batch_offset(e, vb, orank, off, sizeof off);
  emit_line(e, "const %s vo = %s;", it, off);
  bool mrow = false, mcol = false; /* does the mask vary along the queries, the keys */
  if (ms) {
    mrow = !(ms->d[ms->rank - 2].sym < 0 && ms->d[ms->rank - 2].c == 1);
    mcol = !(ms->d[ms->rank - 1].sym < 0 && ms->d[ms->rank - 1].c == 1);
    batch_offset(e, mb, orank, off, sizeof off);
    emit_line(e, "const %s mo = %s%s;", it, off, mrow ? (mcol ? " + i * SK" : " + i") : "");
  }
  /* the scaled query and the output row, in registers */
  emit_line(e, "float pq[%lld];", (long long)D);
  emit_load(e, qb, "qo + d", ld, sizeof ld);
  unrolled_for(e, "d", D);
  emit_line(e, "  pq[d] = %s * %s;", ld, scale);
  emit_line(e, "float po[%lld];", (long long)DV);
  unrolled_for(e, "c", DV);
  emit_line(e, "  po[c] = %s;", zero);
  emit_line(e, "float pm = %s, pl = %s;", ninf, zero);
  emit_line(e, "const %s JE = %s;", it, attr_i(n, "causal") ? "(i + 1 < SK ? i + 1 : SK)" : "SK");
  emit_line(e, "for (%s j0 = 0; j0 < JE; j0 += %d) {", it, ATT_BLOCK);
  e->indent++;
  /* the block's scores */
  emit_line(e, "float ps[%d];", ATT_BLOCK);
  emit_line(e, "float pt = %s;", ninf);
  unrolled_for(e, "u", ATT_BLOCK);
  emit_line(e, "{");
  e->indent++;
  emit_line(e, "float x = %s;", ninf);
  emit_line(e, "if (j0 + u < JE) {");
  emit_line(e, "  const %s kr = ko + (j0 + u) * %lld;", it, (long long)D);
  emit_line(e, "  x = %s;", zero);
  emit_load(e, kb, "kr + d", ld, sizeof ld);
  emit_line(e, "  %sfor (int d = 0; d < %lld; d++) x += pq[d] * %s;", e->d->gpu ? e->d->gpu->unroll : "", (long long)D, ld);
  if (ms) {
    emit_load(e, mb, mcol ? "mo + j0 + u" : "mo", ld, sizeof ld);
    emit_line(e, "  x += %s;", ld);
  }
  emit_line(e, "}");
  emit_line(e, "ps[u] = x;");
  emit_float_op(e, OP_maximum, "pt", "x", tmp, sizeof tmp);
  emit_line(e, "pt = %s;", tmp);
  e->indent--;
  emit_line(e, "}");
  /* the running maximum, and what it rescales */
  emit_float_op(e, OP_maximum, "pm", "pt", tmp, sizeof tmp);
  emit_line(e, "const float pn = %s;", tmp);
  emit_line(e, "if (pn == %s) continue; /* every key so far hidden */", ninf);
  emit_float_op(e, OP_sub, "pm", "pn", tmp2, sizeof tmp2);
  emit_float_op(e, OP_exp, tmp2, NULL, tmp, sizeof tmp);
  emit_line(e, "const float pc = pm == %s ? %s : %s;", ninf, zero, tmp);
  emit_line(e, "pl *= pc;");
  unrolled_for(e, "c", DV);
  emit_line(e, "  po[c] *= pc;");
  unrolled_for(e, "u", ATT_BLOCK);
  emit_line(e, "if (j0 + u < JE) {");
  e->indent++;
  emit_float_op(e, OP_sub, "ps[u]", "pn", tmp2, sizeof tmp2);
  emit_float_op(e, OP_exp, tmp2, NULL, tmp, sizeof tmp);
  emit_line(e, "const float pp = %s;", tmp);
  emit_line(e, "pl += pp;");
  emit_line(e, "const %s vr = vo + (j0 + u) * %lld;", it, (long long)DV);
  emit_load(e, vb, "vr + c", ld, sizeof ld);
  unrolled_for(e, "c", DV);
  emit_line(e, "  po[c] += pp * %s;", ld);
  e->indent--;
  emit_line(e, "}");
  emit_line(e, "pm = pn;");
  e->indent--;
  emit_line(e, "}");
  /* every key hidden leaves l = 0: 0/0, as the softmax over them gives */
  emit_line(e, "const float pr = %s / pl;", one);
  emit_line(e, "const %s oo = t * %lld;", it, (long long)DV);
  unrolled_for(e, "c", DV);
  emit_line(e, "{");
  e->indent++;
  emit_store(e, ob, "oo + c", "po[c] * pr");
  e->indent--;
  emit_line(e, "}");
  gpu_loop_end(e);
}
