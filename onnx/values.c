/*
 * values.c: the importer's table of ONNX values (by name), turning known values into graph
 * nodes when an op needs them there, and reading the current node's attributes.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "onnx_import.h"

static uint32_t hash_name(const char *s) {
  uint32_t h = 2166136261u;
  while (*s) h = (h ^ (unsigned char)*s++) * 16777619u;
  return h;
}

oval *val_find(imp *c, const char *name) {
  if (!c->hcap) return NULL;
  for (uint32_t h = hash_name(name) & (uint32_t)(c->hcap - 1);; h = (h + 1) & (uint32_t)(c->hcap - 1)) {
    int k = c->hash[h];
    if (k < 0) return NULL;
    if (strcmp(c->v[k].name, name) == 0) return &c->v[k];
  }
}

static bool rehash(imp *c, int cap) {
  int *h = malloc(sizeof(int) * (size_t)cap);
  if (!h) return false;
  for (int i = 0; i < cap; i++) h[i] = -1;
  for (int k = 0; k < c->nv; k++) {
    uint32_t p = hash_name(c->v[k].name) & (uint32_t)(cap - 1);
    while (h[p] >= 0) p = (p + 1) & (uint32_t)(cap - 1);
    h[p] = k;
  }
  free(c->hash);
  c->hash = h, c->hcap = cap;
  return true;
}

oval *val_new(imp *c, const char *name) {
  if (val_find(c, name)) {
    fail(c, PORTC_ERR_PARSE, "value '%s' is defined twice", name);
    return NULL;
  }
  if (c->nv == c->cap) {
    int cap = c->cap ? 2 * c->cap : 256;
    oval *v = realloc(c->v, sizeof *v * (size_t)cap);
    if (!v) {
      fail(c, PORTC_ERR_NOMEM, "out of memory");
      return NULL;
    }
    c->v = v, c->cap = cap;
  }
  if (2 * (c->nv + 1) > c->hcap && !rehash(c, c->hcap ? 2 * c->hcap : 512)) {
    fail(c, PORTC_ERR_NOMEM, "out of memory");
    return NULL;
  }
  oval *v = &c->v[c->nv];
  memset(v, 0, sizeof *v);
  v->name = name, v->node = -1, v->producer = -1;
  uint32_t p = hash_name(name) & (uint32_t)(c->hcap - 1);
  while (c->hash[p] >= 0) p = (p + 1) & (uint32_t)(c->hcap - 1);
  c->hash[p] = c->nv++;
  return v;
}

portc_status fail(imp *c, portc_status st, const char *fmt, ...) {
  char msg[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (c->np)
    return err_set(st, "%s: node '%s' (%s, opset %d): %s", c->source, c->np->name && *c->np->name ? c->np->name : "(unnamed)",
                   c->np->op_type ? c->np->op_type : "?", c->opset, msg);
  return err_set(st, "%s: %s", c->source, msg);
}

int64_t val_numel(const oval *v) {
  int64_t n = 1;
  for (int i = 0; i < v->rank; i++) n *= v->shape[i];
  return n;
}

void sanitize(const char *in, char *out, size_t len) {
  size_t n = 0;
  if (!*in || isdigit((unsigned char)*in) || *in == '.') out[n++] = 'v';
  for (; *in && n + 1 < len; in++) out[n++] = isalnum((unsigned char)*in) || *in == '_' || *in == '.' ? *in : '_';
  out[n] = 0;
  if (is_reserved(out) && n + 2 < len) {
    memmove(out + 2, out, n + 1);
    out[0] = 'v', out[1] = '_';
  }
}

portc_status unique_name(imp *c, const char *onnx_name, char *out, size_t len) {
  char base[120];
  sanitize(onnx_name, base, sizeof base);
  snprintf(out, len, "%s", base);
  for (int k = 2; node_name_taken(c->g, out) || graph_find_symbol(c->g, out) >= 0; k++) str_cut(out, len, "%s_%d", base, k);
  return PORTC_OK;
}

int val_shape(imp *c, const oval *v, dim *d) {
  if (v->node >= 0) {
    const node *n = &c->g->nodes[v->node];
    memcpy(d, n->sh.d, sizeof(dim) * (size_t)n->sh.rank);
    return n->sh.rank;
  }
  if (v->grid) {
    memcpy(d, v->grid->shape, sizeof(dim) * (size_t)v->grid->rank);
    return v->grid->rank;
  }
  for (int i = 0; i < v->rank; i++) d[i] = (dim){v->shape[i], -1};
  return v->rank;
}

portc_node val_node(imp *c, oval *v) {
  if (v->node >= 0) return v->node;
  if (v->is_seq)
    return -(portc_node)fail(c, PORTC_ERR_INVALID, "value '%s' is a sequence of %d tensors; only the Sequence operators, ConcatFromSequence and Loop take sequences",
                             v->name, v->nseq);
  if (v->grid) {
    portc_node n = onnx_grid_node(c, v);
    if (n >= 0) v->node = n;
    return n;
  }
  if (!v->known) return err_node(PORTC_ERR_INTERNAL, "value %s has no node", v->name);
  int64_t n = val_numel(v);
  if (v->dt == PORTC_F64) return -(portc_node)fail(c, PORTC_ERR_DTYPE, "value '%s' is a double tensor; portc graphs hold f32, f16 or bf16", v->name);
  char name[128];
  unique_name(c, v->name, name, sizeof name);
  if (v->f && n > 16) {
    v->node = graph_add_param_data(c->g, name, v->f);
  } else {
    double *vals = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!vals) return err_node(PORTC_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < n; k++) {
      if (v->f) vals[k] = portc_tensor_get(v->f->t, k);
      else if (v->i[k].sym >= 0 || v->i[k].unknown) {
        free(vals);
        return -(portc_node)fail(c, PORTC_ERR_SHAPE,
                                 "value '%s' depends on sizes known only at run time (%s); portc folds shape arithmetic at import and needs it to end in a shape",
                                 v->name, v->i[k].unknown ? "an expression of symbols" : c->g->syms[v->i[k].sym]);
      } else {
        /* int64 constants beyond 2^53 do not survive doubles: clamp the slice-style extremes */
        const int64_t x = v->i[k].c, big = (int64_t)1 << 53;
        vals[k] = (double)(v->dt == PORTC_I64 && x > big ? big : v->dt == PORTC_I64 && x < -big ? -big : x);
      }
    }
    v->node = portc_const(c->g, v->dt, v->rank, v->shape, vals, n);
    free(vals);
    if (v->node >= 0) portc_set_name(c->g, v->node, name);
  }
  if (v->node < 0) {
    char e[1024];
    snprintf(e, sizeof e, "%s", portc_last_error());
    return -(portc_node)fail(c, portc_node_status(v->node), "value '%s': %s", v->name, e);
  }
  return v->node;
}

static oval *out_val(imp *c, int k) {
  if (k >= (int)c->np->n_output || !*c->np->output[k]) return NULL;
  return val_find(c, c->np->output[k]);
}

portc_status out_node(imp *c, int k, portc_node n) {
  if (n < 0) {
    portc_status st = portc_node_status(n);
    const char *e = portc_last_error();
    if (strstr(e, c->source) == e) return st; /* already names the node */
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", e);
    return fail(c, st, "%s", copy);
  }
  oval *v = out_val(c, k);
  if (v) v->node = n, v->known = false;
  return PORTC_OK;
}

portc_status out_ints(imp *c, int k, portc_dtype dt, int rank, const int64_t *shape, sval *vals) {
  oval *v = out_val(c, k);
  if (!v) {
    free(vals);
    return PORTC_OK;
  }
  v->known = true, v->dt = dt, v->rank = rank, v->i = vals;
  if (rank) memcpy(v->shape, shape, sizeof(int64_t) * (size_t)rank);
  return PORTC_OK;
}

portc_status out_floats(imp *c, int k, pdata *d) {
  oval *v = out_val(c, k);
  if (!v) {
    pdata_release(d);
    return PORTC_OK;
  }
  v->known = true, v->dt = d->t->dtype, v->rank = d->t->rank, v->f = d;
  memcpy(v->shape, d->t->shape, sizeof(int64_t) * (size_t)d->t->rank);
  return PORTC_OK;
}

portc_status val_copy(imp *c, oval *v, const oval *src) {
  v->node = src->node, v->known = src->known, v->dt = src->dt, v->rank = src->rank;
  memcpy(v->shape, src->shape, sizeof v->shape);
  pdata_retain(v->f = src->f);
  if (src->i) {
    int64_t n = val_numel(src);
    if (!(v->i = malloc(sizeof(sval) * (size_t)(n ? n : 1)))) return fail(c, PORTC_ERR_NOMEM, "out of memory");
    memcpy(v->i, src->i, sizeof(sval) * (size_t)n);
  }
  if (src->grid) {
    if (!(v->grid = malloc(sizeof *v->grid))) return fail(c, PORTC_ERR_NOMEM, "out of memory");
    *v->grid = *src->grid;
  }
  v->is_seq = src->is_seq, v->nseq = src->nseq;
  if (src->is_seq) {
    if (!(v->seq = malloc(sizeof(int) * (size_t)(src->nseq + 1)))) return fail(c, PORTC_ERR_NOMEM, "out of memory");
    memcpy(v->seq, src->seq, sizeof(int) * (size_t)src->nseq);
  }
  return PORTC_OK;
}

portc_status out_alias(imp *c, int k, const oval *src) {
  oval *v = out_val(c, k);
  return v ? val_copy(c, v, src) : PORTC_OK;
}

portc_status out_seq(imp *c, int k, const int *elems, int n) {
  oval *v = out_val(c, k);
  if (!v) return PORTC_OK;
  if (!(v->seq = malloc(sizeof(int) * (size_t)(n + 1)))) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  if (n) memcpy(v->seq, elems, sizeof(int) * (size_t)n);
  v->is_seq = true, v->nseq = n, v->known = false, v->node = -1;
  return PORTC_OK;
}

const char *imp_name(imp *c, const char *prefix, const char *s) {
  if (c->nowned == c->capowned) {
    int cap = c->capowned ? 2 * c->capowned : 64;
    char **o = realloc(c->owned, sizeof *o * (size_t)cap);
    if (!o) return NULL;
    c->owned = o, c->capowned = cap;
  }
  size_t lp = prefix ? strlen(prefix) : 0, ls = strlen(s);
  char *n = malloc(lp + ls + 1);
  if (!n) return NULL;
  if (lp) memcpy(n, prefix, lp);
  memcpy(n + lp, s, ls + 1);
  return c->owned[c->nowned++] = n;
}

oval *val_resolve(imp *c, const char *name) {
  for (int d = c->depth - 1; d >= 0; d--) {
    char small[512], *buf = small;
    size_t lp = strlen(c->scope[d]), ln = strlen(name) + 1;
    if (lp + ln > sizeof small && !(buf = malloc(lp + ln))) return NULL;
    memcpy(buf, c->scope[d], lp);
    memcpy(buf + lp, name, ln);
    oval *v = val_find(c, buf);
    if (buf != small) free(buf);
    if (v) return v;
  }
  return val_find(c, name);
}

portc_status known_ints(imp *c, int k, const char *what, int64_t *out, int max, int *n) {
  const oval *v = k < c->nin ? c->in[k] : NULL;
  if (!v) return fail(c, PORTC_ERR_INVALID, "input %d (%s) is missing", k, what);
  if (!v->known || !v->i)
    return fail(c, PORTC_ERR_INVALID, "input '%s' (%s) must be known when the model is imported (a constant or shape arithmetic)", v->name, what);
  int64_t cnt = val_numel(v);
  if (cnt > max) return fail(c, PORTC_ERR_INVALID, "input '%s' (%s) has %lld values, more than %d", v->name, what, (long long)cnt, max);
  for (int64_t i = 0; i < cnt; i++) {
    if (v->i[i].unknown || v->i[i].sym >= 0)
      return fail(c, PORTC_ERR_SHAPE, "input '%s' (%s) depends on sizes known only at run time", v->name, what);
    out[i] = v->i[i].c;
  }
  *n = (int)cnt;
  return PORTC_OK;
}

bool known_scalar(const oval *v, double *out) {
  if (!v || !v->known || val_numel(v) != 1) return false;
  if (v->f) *out = portc_tensor_get(v->f->t, 0);
  else if (v->i[0].sym < 0 && !v->i[0].unknown) *out = (double)v->i[0].c;
  else return false;
  return true;
}

portc_status op_need(imp *c, int k) {
  return op_in(c, k) ? PORTC_OK : fail(c, PORTC_ERR_INVALID, "input %d is missing", k);
}

/* ---- attributes ---- */

const Onnx__AttributeProto *attr_find(imp *c, const char *name) {
  for (size_t i = 0; i < c->np->n_attribute; i++)
    if (c->np->attribute[i]->name && strcmp(c->np->attribute[i]->name, name) == 0) return c->np->attribute[i];
  return NULL;
}

int64_t attr_int(imp *c, const char *name, int64_t def) {
  const Onnx__AttributeProto *a = attr_find(c, name);
  return a && a->has_i ? a->i : def;
}

double attr_float(imp *c, const char *name, double def) {
  const Onnx__AttributeProto *a = attr_find(c, name);
  return a && a->has_f ? a->f : def;
}

const char *attr_string(imp *c, const char *name, const char *def, char *buf, size_t len) {
  const Onnx__AttributeProto *a = attr_find(c, name);
  if (!a || !a->has_s) return def;
  snprintf(buf, len, "%.*s", (int)(a->s.len < len ? a->s.len : len - 1), (const char *)a->s.data);
  return buf;
}

int attr_ints(imp *c, const char *name, int64_t *out, int max) {
  const Onnx__AttributeProto *a = attr_find(c, name);
  if (!a) return -1;
  if (a->n_ints > (size_t)max) return -2;
  if (a->n_ints) memcpy(out, a->ints, sizeof(int64_t) * a->n_ints);
  return (int)a->n_ints;
}
