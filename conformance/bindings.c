/*
 * bindings.c: what one run of a graph needs from its caller: symbol values, the tensors of
 * inputs and run-time parameters, and a seed for whatever is left unbound. It also produces the
 * value of every source node for the reference evaluator, rounding each to its dtype.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"
#include "reference.h"

portc_bindings *portc_bindings_new(const portc_graph *g) {
  if (!g) {
    err_set(PORTC_ERR_INVALID, "bindings: graph is NULL");
    return NULL;
  }
  portc_bindings *b = calloc(1, sizeof *b);
  if (!b) goto oom;
  b->g = g;
  b->nsyms = g->nsyms;
  b->n = g->n;
  b->sym = calloc((size_t)g->nsyms + 1, sizeof *b->sym);
  b->sym_set = calloc((size_t)g->nsyms + 1, sizeof *b->sym_set);
  b->given = calloc((size_t)g->n + 1, sizeof *b->given);
  b->used = calloc((size_t)g->n + 1, sizeof *b->used);
  if (b->sym && b->sym_set && b->given && b->used) return b;
  portc_bindings_free(b);
oom:
  err_set(PORTC_ERR_NOMEM, "bindings: out of memory");
  return NULL;
}

void portc_bindings_free(portc_bindings *b) {
  if (!b) return;
  for (int i = 0; i < b->n; i++) {
    if (b->given) portc_tensor_free(b->given[i]);
    if (b->used) portc_tensor_free(b->used[i]);
  }
  free(b->given);
  free(b->used);
  free(b->sym);
  free(b->sym_set);
  free(b);
}

portc_status portc_bindings_set_symbol(portc_bindings *b, const char *name, int64_t value) {
  int s = graph_find_symbol(b->g, name);
  if (s < 0 || s >= b->nsyms) return err_set(PORTC_ERR_INVALID, "symbol '%s' does not appear in graph %s", name, b->g->name);
  if (value < 0) return err_set(PORTC_ERR_SHAPE, "symbol %s: value %lld is negative", name, (long long)value);
  b->sym[s] = value;
  b->sym_set[s] = true;
  return PORTC_OK;
}

static bool convertible(portc_dtype from, portc_dtype to) {
  if (from == to) return true;
  if (dtype_is_float(to)) return from == PORTC_F64 || from == PORTC_F32; /* rounded to `to` */
  if (dtype_is_int(to)) return dtype_is_int(from);
  return false;
}

portc_status portc_bindings_set(portc_bindings *b, const char *name, const portc_tensor *t) {
  portc_node n = graph_find(b->g, name);
  if (n < 0 || n >= b->n) return err_set(PORTC_ERR_INVALID, "graph %s has no input or parameter named '%s'", b->g->name, name);
  const node *x = &b->g->nodes[n];
  if (x->op != OP_input && x->op != OP_param)
    return err_set(PORTC_ERR_INVALID, "'%s' is a %s, not an input or parameter", name, op_get(x->op)->name);
  if (!convertible(t->dtype, x->dt))
    return err_set(PORTC_ERR_DTYPE, "%s: the tensor is %s, the graph wants %s", name, portc_dtype_name(t->dtype), portc_dtype_name(x->dt));
  if (t->rank != x->sh.rank)
    return err_set(PORTC_ERR_SHAPE, "%s: the tensor has rank %d, the graph wants %d", name, t->rank, x->sh.rank);
  for (int i = 0; i < t->rank; i++) {
    dim d = x->sh.d[i];
    if (d.sym < 0 && d.c != t->shape[i])
      return err_set(PORTC_ERR_SHAPE, "%s: dimension %d is %lld, the graph wants %lld", name, i, (long long)t->shape[i], (long long)d.c);
  }
  portc_tensor *copy = portc_tensor_new(t->dtype, t->rank, t->shape);
  if (!copy) return PORTC_ERR_NOMEM;
  memcpy(copy->data, t->data, (size_t)portc_tensor_numel(t) * portc_dtype_size(t->dtype));
  portc_tensor_free(b->given[n]);
  b->given[n] = copy;
  return PORTC_OK;
}

void portc_bindings_set_seed(portc_bindings *b, uint64_t seed) {
  b->seeded = true;
  b->seed = seed;
}

const portc_tensor *portc_bindings_get(const portc_bindings *b, const char *name) {
  portc_node n = graph_find(b->g, name);
  return n >= 0 && n < b->n ? b->used[n] : NULL;
}

/* ---- random numbers: splitmix64, one stream per (seed, name) ---- */

uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

double rng_normal(uint64_t *s) {
  double u = rng_uniform(s), v = rng_uniform(s);
  return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

static uint64_t stream(uint64_t seed, const char *name) {
  uint64_t h = seed ^ 0x5851f42d4c957f2dull;
  for (; *name; name++) h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
  return h;
}

/* ---- source values ---- */

static void fill_seeded(const node *x, uint64_t seed, rval *v) {
  uint64_t s = stream(seed, x->name);
  for (int64_t k = 0; k < v->numel; k++) {
    if (v->f) v->f[k] = round_to_dtype(rng_uniform(&s) * 2.0 - 1.0, v->dt);
    else if (v->dt == PORTC_BOOL) v->i[k] = (int64_t)(rng_next(&s) >> 63);
    else v->i[k] = (int64_t)(rng_next(&s) >> 61);
  }
}

static void fill_init(const node *x, rval *v) {
  uint64_t s = stream(x->seed, "param");
  for (int64_t k = 0; k < v->numel; k++) {
    double r = 0;
    switch (x->init) {
    case PORTC_INIT_ZEROS: r = 0; break;
    case PORTC_INIT_ONES: r = 1; break;
    case PORTC_INIT_NORMAL: r = x->p0 + x->p1 * rng_normal(&s); break;
    case PORTC_INIT_UNIFORM: r = x->p0 + (x->p1 - x->p0) * rng_uniform(&s); break;
    }
    if (v->f) v->f[k] = round_to_dtype(r, v->dt);
    else v->i[k] = wrap_int((int64_t)r, v->dt);
  }
}

static void from_tensor(const portc_tensor *t, rval *v) {
  for (int64_t k = 0; k < v->numel; k++) {
    if (v->f) v->f[k] = round_to_dtype(portc_tensor_get(t, k), v->dt);
    else if (t->dtype == PORTC_I64) v->i[k] = wrap_int(((const int64_t *)t->data)[k], v->dt);
    else v->i[k] = wrap_int((int64_t)portc_tensor_get(t, k), v->dt);
  }
}

static portc_status load_file(const portc_graph *g, const node *x, rval *v) {
  char path[4096];
  if (x->file[0] != '/' && g->basedir) snprintf(path, sizeof path, "%s/%s", g->basedir, x->file);
  else snprintf(path, sizeof path, "%s", x->file);
  portc_tensor *t;
  portc_status st = portc_tensor_load_npy(path, &t);
  if (st) return err_set(st, "param %s: %s", x->name, portc_last_error());
  bool ok = t->rank == v->rank && convertible(t->dtype, v->dt);
  for (int k = 0; ok && k < v->rank; k++) ok = t->shape[k] == v->shape[k];
  if (!ok) {
    portc_tensor_free(t);
    return err_set(PORTC_ERR_SHAPE, "param %s: %s does not hold a %s tensor of the declared shape", x->name, path, portc_dtype_name(v->dt));
  }
  from_tensor(t, v);
  portc_tensor_free(t);
  return PORTC_OK;
}

/* the rounded host copy of what was used, for portc_bindings_get */
static void remember(portc_bindings *b, int id, const rval *v) {
  portc_tensor *t = portc_tensor_new(v->dt, v->rank, v->shape);
  if (!t) return;
  for (int64_t k = 0; k < v->numel; k++) {
    if (v->f) portc_tensor_set(t, k, v->f[k]);
    else if (v->dt == PORTC_I64) ((int64_t *)t->data)[k] = v->i[k];
    else portc_tensor_set(t, k, (double)v->i[k]);
  }
  portc_tensor_free(b->used[id]);
  b->used[id] = t;
}

portc_status ref_source(const portc_graph *g, portc_bindings *b, int id, const int64_t *shape, rval **out) {
  const node *x = &g->nodes[id];
  rval *v = rval_new(x->dt, x->sh.rank, shape);
  if (!v) return err_set(PORTC_ERR_NOMEM, "%s: out of memory", x->name);
  portc_status st = PORTC_OK;
  if (x->op == OP_const) {
    for (int64_t k = 0; k < v->numel; k++) {
      if (v->f) v->f[k] = x->value.f[k];
      else v->i[k] = x->value.i[k];
    }
  } else if (b->given[id]) {
    from_tensor(b->given[id], v);
  } else if (x->op == OP_param && x->file) {
    st = load_file(g, x, v);
  } else if (x->op == OP_param && x->has_init) {
    fill_init(x, v);
  } else if (b->seeded) {
    fill_seeded(x, b->seed, v);
  } else {
    st = err_set(PORTC_ERR_INVALID, "%s %s has no value: bind a tensor to it, or give a seed", op_get(x->op)->name, x->name);
  }
  if (st) {
    rval_free(v);
    return st;
  }
  if (x->op != OP_const) remember(b, id, v);
  *out = v;
  return PORTC_OK;
}
