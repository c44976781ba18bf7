/*
 * reference_nn.c: reference semantics of matmul, conv2d, pooling and the composites (softmax,
 * log_softmax, layer_norm, rms_norm, attention), in float64. The matmul loop order keeps the
 * innermost access contiguous and rows are spread over threads, so that a 1024x4096 MLP runs in
 * seconds; everything else favours the plain form.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"
#include "reference_util.h"

/* offset of batch `bi` of an operand whose batch dims (irank of them) broadcast to obatch */
static int64_t batch_offset(const int64_t *obatch, int orank, const int64_t *ibatch, int irank, int64_t mat, int64_t bi) {
  int64_t off = 0, stride = mat;
  for (int d = orank - 1; d >= 0; d--) {
    int64_t idx = bi % obatch[d];
    bi /= obatch[d];
    int id = d - (orank - irank);
    if (id < 0) continue;
    if (ibatch[id] != 1) off += idx * stride;
    stride *= ibatch[id];
  }
  return off;
}

/* the batch dims of out that come before the last `tail` dims */
static int64_t batch_count(const rval *out, int tail, int *rank) {
  *rank = out->rank - tail;
  int64_t n = 1;
  for (int d = 0; d < *rank; d++) n *= out->shape[d];
  return n;
}

portc_status ref_matmul(const rval *a, const rval *b, rval *out) {
  int64_t M = a->rank == 1 ? 1 : a->shape[a->rank - 2], K = a->shape[a->rank - 1];
  int64_t N = b->rank == 1 ? 1 : b->shape[b->rank - 1];
  int ab = a->rank >= 2 ? a->rank - 2 : 0, bb = b->rank >= 2 ? b->rank - 2 : 0;
  int tail = (a->rank > 1) + (b->rank > 1), orank;
  int64_t nb = batch_count(out, tail, &orank);
  int64_t total = nb * M;
  bool isf = out->f != NULL;
  if (isf) memset(out->f, 0, sizeof(double) * (size_t)out->numel);
  else memset(out->i, 0, sizeof(int64_t) * (size_t)out->numel);
#pragma omp parallel for schedule(static) if (total * K * N > 100000)
  for (int64_t r = 0; r < total; r++) {
    int64_t bi = r / M, i = r % M;
    int64_t ao = batch_offset(out->shape, orank, a->shape, ab, M * K, bi) + i * K;
    int64_t bo = batch_offset(out->shape, orank, b->shape, bb, K * N, bi);
    int64_t oo = r * N;
    for (int64_t k = 0; k < K; k++) {
      if (isf) {
        double av = a->f[ao + k];
        const double *brow = b->f + bo + k * N;
        double *orow = out->f + oo;
        for (int64_t j = 0; j < N; j++) orow[j] += av * brow[j];
      } else {
        uint64_t av = (uint64_t)a->i[ao + k];
        for (int64_t j = 0; j < N; j++)
          out->i[oo + j] = (int64_t)((uint64_t)out->i[oo + j] + av * (uint64_t)b->i[bo + k * N + j]);
      }
    }
    if (!isf)
      for (int64_t j = 0; j < N; j++) out->i[oo + j] = wrap_int(out->i[oo + j], out->dt);
  }
  return PORTC_OK;
}

portc_status ref_conv2d(const node *n, const rval *x, const rval *w, const rval *bias, rval *out) {
  const attr *st = attr_get(n, "stride"), *pd = attr_get(n, "padding"), *dl = attr_get(n, "dilation");
  int64_t groups = attr_i(n, "groups");
  const bool last = attr_i(n, "channels_last"); /* x [N,H,W,C], w [KH,KW,Cg,O], out [N,OH,OW,O] */
  const conv_axes a = conv_axes_of(n);
  int64_t N = x->shape[0], C = x->shape[a.c], H = x->shape[a.h], W = x->shape[a.w];
  int64_t O = w->shape[a.wo], Cg = w->shape[a.wc], KH = w->shape[a.wh], KW = w->shape[a.ww];
  int64_t OH = out->shape[a.h], OW = out->shape[a.w], Og = O / groups;
#pragma omp parallel for schedule(static) if (out->numel * Cg * KH * KW > 100000)
  for (int64_t no = 0; no < N * O; no++) {
    int64_t b = no / O, o = no % O, g = o / Og;
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        double acc = bias ? bias->f[o] : 0;
        for (int64_t c = 0; c < Cg; c++)
          for (int64_t kh = 0; kh < KH; kh++) {
            int64_t ih = oh * st->v[0] - pd->v[0] + kh * dl->v[0];
            if (ih < 0 || ih >= H) continue;
            for (int64_t kw = 0; kw < KW; kw++) {
              int64_t iw = ow * st->v[1] - pd->v[1] + kw * dl->v[1];
              if (iw < 0 || iw >= W) continue;
              const int64_t ci = g * Cg + c;
              acc += last ? x->f[((b * H + ih) * W + iw) * C + ci] * w->f[((kh * KW + kw) * Cg + c) * O + o]
                          : x->f[((b * C + ci) * H + ih) * W + iw] * w->f[((o * Cg + c) * KH + kh) * KW + kw];
            }
          }
        out->f[last ? ((b * OH + oh) * OW + ow) * O + o : ((b * O + o) * OH + oh) * OW + ow] = acc;
      }
  }
  return PORTC_OK;
}

portc_status ref_pool2d(const node *n, const rval *x, rval *out) {
  const attr *k = attr_get(n, "kernel"), *pd = attr_get(n, "padding"), *sa = attr_get(n, "stride");
  const int64_t *s = sa->set ? sa->v : k->v;
  const bool last = attr_i(n, "channels_last"); /* x [N,H,W,C] and out [N,OH,OW,C] */
  const int64_t C = x->shape[last ? 3 : 1], H = x->shape[last ? 1 : 2], W = x->shape[last ? 2 : 3];
  const int64_t OH = out->shape[last ? 1 : 2], OW = out->shape[last ? 2 : 3];
  bool is_max = n->op == OP_max_pool2d;
  for (int64_t nc = 0; nc < x->shape[0] * C; nc++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        const int64_t b = nc / C, ch = nc % C;
        double acc = is_max ? -INFINITY : 0;
        int64_t iacc = INT64_MIN;
        for (int64_t kh = 0; kh < k->v[0]; kh++)
          for (int64_t kw = 0; kw < k->v[1]; kw++) {
            int64_t ih = oh * s[0] - pd->v[0] + kh, iw = ow * s[1] - pd->v[1] + kw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue; /* padding: -inf for max, 0 for avg */
            int64_t at = last ? ((b * H + ih) * W + iw) * C + ch : (nc * H + ih) * W + iw;
            if (!x->f) iacc = x->i[at] > iacc ? x->i[at] : iacc;
            else if (!is_max) acc += x->f[at];
            else if (isnan(x->f[at]) || x->f[at] > acc) acc = isnan(acc) ? acc : x->f[at];
          }
        int64_t o = last ? ((b * OH + oh) * OW + ow) * C + ch : (nc * OH + oh) * OW + ow;
        if (!x->f) out->i[o] = iacc;
        else out->f[o] = is_max ? acc : acc / (double)(k->v[0] * k->v[1]);
      }
  return PORTC_OK;
}

static void softmax(const node *n, const rval *x, rval *out, bool log_form) {
  int64_t outer, len, inner;
  split_axis(x, norm_axis(attr_i(n, "axis"), x->rank), &outer, &len, &inner);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      const double *row = x->f + o * len * inner + i;
      double *orow = out->f + o * len * inner + i;
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < len; j++) m = isnan(row[j * inner]) || row[j * inner] > m ? row[j * inner] : m;
      for (int64_t j = 0; j < len; j++) sum += exp(row[j * inner] - m);
      for (int64_t j = 0; j < len; j++)
        orow[j * inner] = log_form ? row[j * inner] - m - log(sum) : exp(row[j * inner] - m) / sum;
    }
}

static void norm(const node *n, rval *const *in, rval *out) {
  const rval *x = in[0], *w = n->nin > 1 ? in[1] : NULL, *b = n->nin > 2 ? in[2] : NULL;
  int64_t D = x->rank ? x->shape[x->rank - 1] : 1, rows = D ? x->numel / D : 0;
  double eps = attr_f(n, "eps");
  bool rms = n->op == OP_rms_norm;
  for (int64_t r = 0; r < rows; r++) {
    const double *row = x->f + r * D;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < D; j++) mean += row[j];
    mean /= (double)D;
    for (int64_t j = 0; j < D; j++) {
      double c = rms ? row[j] : row[j] - mean;
      var += c * c;
    }
    double inv = 1.0 / sqrt(var / (double)D + eps);
    for (int64_t j = 0; j < D; j++) {
      double y = ((rms ? row[j] : row[j] - mean)) * inv;
      if (w) y *= w->f[j];
      if (b) y += b->f[j];
      out->f[r * D + j] = y;
    }
  }
}

static portc_status attention(const node *n, rval *const *in, rval *out) {
  const rval *q = in[0], *k = in[1], *v = in[2];
  int64_t Lq = q->shape[q->rank - 2], D = q->shape[q->rank - 1];
  int64_t Lk = k->shape[k->rank - 2], Dv = v->shape[v->rank - 1];
  const attr *sc = attr_get(n, "scale");
  double scale = sc->set ? sc->f : 1.0 / sqrt((double)D);
  bool causal = attr_i(n, "causal");
  int orank;
  int64_t nb = batch_count(out, 2, &orank);
  double *p = malloc(sizeof(double) * (size_t)(Lk ? Lk : 1));
  if (!p) return err_set(PORTC_ERR_NOMEM, "attention: out of memory");
  for (int64_t bi = 0; bi < nb; bi++) {
    const double *qb = q->f + batch_offset(out->shape, orank, q->shape, q->rank - 2, Lq * D, bi);
    const double *kb = k->f + batch_offset(out->shape, orank, k->shape, k->rank - 2, Lk * D, bi);
    const double *vb = v->f + batch_offset(out->shape, orank, v->shape, v->rank - 2, Lk * Dv, bi);
    double *ob = out->f + bi * Lq * Dv;
    /* the mask [..., Mq, Mk], each of its last two 1 or the scores' */
    const rval *mk = n->nin > 3 ? in[3] : NULL;
    int64_t Mq = mk ? mk->shape[mk->rank - 2] : 1, Mk = mk ? mk->shape[mk->rank - 1] : 1;
    const double *mb = mk ? mk->f + batch_offset(out->shape, orank, mk->shape, mk->rank - 2, Mq * Mk, bi) : NULL;
    for (int64_t i = 0; i < Lq; i++) {
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < Lk; j++) {
        double s = 0;
        for (int64_t d = 0; d < D; d++) s += qb[i * D + d] * kb[j * D + d];
        s *= scale;
        if (mb) s += mb[(Mq > 1 ? i : 0) * Mk + (Mk > 1 ? j : 0)];
        p[j] = causal && j > i ? -INFINITY : s;
        m = isnan(p[j]) || p[j] > m ? p[j] : m;
      }
      for (int64_t j = 0; j < Lk; j++) sum += (p[j] = exp(p[j] - m)); /* every key hidden: 0/0, as softmax gives */
      for (int64_t e = 0; e < Dv; e++) {
        double acc = 0;
        for (int64_t j = 0; j < Lk; j++) acc += p[j] * vb[j * Dv + e];
        ob[i * Dv + e] = acc / sum;
      }
    }
  }
  free(p);
  return PORTC_OK;
}

portc_status ref_composite(const node *n, rval *const *in, rval *out) {
  switch (n->op) {
  case OP_softmax: softmax(n, in[0], out, false); return PORTC_OK;
  case OP_log_softmax: softmax(n, in[0], out, true); return PORTC_OK;
  case OP_layer_norm:
  case OP_rms_norm: norm(n, in, out); return PORTC_OK;
  case OP_attention: return attention(n, in, out);
  default: return err_set(PORTC_ERR_INVALID, "%s is not a composite", op_get(n->op)->name);
  }
}
