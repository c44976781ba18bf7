/*
 * bindings.c: what one run of a graph needs from its caller: symbol values, the tensors of
 * inputs and run-time parameters, and a seed for whatever is left unbound. It also produces the
 * value of every source node (for the reference evaluator and for compiled modules alike), as a
 * tensor of the node's dtype, so that every executor starts from the same rounded values.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "bindings.h"
#include "dtype.h"
#include "npz.h"

portc_bindings *portc_bindings_new(const portc_graph *g) {
  if (!g) {
    err_set(PORTC_ERR_INVALID, "bindings: graph is NULL");
    return NULL;
  }
  portc_bindings *b = calloc(1, sizeof *b);
  if (!b) goto oom;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&b->lock, &attr);
  pthread_mutexattr_destroy(&attr);
  b->g = g;
  b->nsyms = g->nsyms;
  b->n = g->n;
  b->sym = calloc((size_t)g->nsyms + 1, sizeof *b->sym);
  b->sym_set = calloc((size_t)g->nsyms + 1, sizeof *b->sym_set);
  b->given = calloc((size_t)g->n + 1, sizeof *b->given);
  b->used = calloc((size_t)g->n + 1, sizeof *b->used);
  b->stamp = calloc((size_t)g->n + 1, sizeof *b->stamp);
  b->remote = calloc((size_t)g->n + 1, sizeof *b->remote);
  static atomic_uint_fast64_t next_id = 1;
  b->id = atomic_fetch_add(&next_id, 1);
  if (b->sym && b->sym_set && b->given && b->used && b->stamp && b->remote) return b;
  portc_bindings_free(b);
oom:
  err_set(PORTC_ERR_NOMEM, "bindings: out of memory");
  return NULL;
}

void bindings_lock(portc_bindings *b) {
  if (b) pthread_mutex_lock(&b->lock);
}

void bindings_unlock(portc_bindings *b) {
  if (b) pthread_mutex_unlock(&b->lock);
}

void portc_bindings_free(portc_bindings *b) {
  if (!b) return;
  for (int h = 0; h < b->holders.n; h++) b->remote_ops->forget(b->holders.p[h], b);
  ptr_set_free(&b->holders);
  free(b->stamp);
  free(b->remote);
  pthread_mutex_destroy(&b->lock);
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

/* Values of derived symbols ("8*N") from their base, or a base from its multiple. */
static portc_status derive_symbols(portc_bindings *b) {
  const portc_graph *g = b->g;
  for (int k = 0; k < b->nsyms; k++) {
    int base = g->sym_base[k];
    if (base < 0) continue;
    int64_t scale = g->sym_scale[k];
    if (b->sym_set[k] && !b->sym_set[base]) {
      if (b->sym[k] % scale)
        return err_set(PORTC_ERR_SHAPE, "symbol %s is %lld, which is not a multiple of %lld", g->syms[k], (long long)b->sym[k], (long long)scale);
      b->sym[base] = b->sym[k] / scale, b->sym_set[base] = true;
    }
    if (!b->sym_set[base]) continue;
    if (b->sym_set[k] && b->sym[k] != scale * b->sym[base])
      return err_set(PORTC_ERR_SHAPE, "symbol %s is %lld, but %s is %lld", g->syms[k], (long long)b->sym[k], g->syms[base], (long long)b->sym[base]);
    b->sym[k] = scale * b->sym[base], b->sym_set[k] = true;
  }
  return PORTC_OK;
}

void bindings_touch(portc_bindings *b, int n) { b->stamp[n] = ++b->clock; }

static void touch_all(portc_bindings *b) {
  for (int n = 0; n < b->n; n++) bindings_touch(b, n);
}

static portc_status bindings_set_symbol_unlocked(portc_bindings *b, const char *name, int64_t value) {
  if (!b || !name) return err_set(PORTC_ERR_INVALID, "bindings_set_symbol: NULL %s", b ? "name" : "bindings");
  int s = graph_find_symbol(b->g, name);
  if (s < 0 || s >= b->nsyms) return err_set(PORTC_ERR_INVALID, "symbol '%s' does not appear in graph %s", name, b->g->name);
  if (value < 0) return err_set(PORTC_ERR_SHAPE, "symbol %s: value %lld is negative", name, (long long)value);
  for (int k = 0; k < b->nsyms; k++) /* a new base value replaces what was derived from the old one */
    if (b->g->sym_base[k] == s) b->sym_set[k] = false;
  b->sym[s] = value;
  b->sym_set[s] = true;
  touch_all(b); /* shapes, and so seeded and initialized values, may change with it */
  return derive_symbols(b);
}

static bool convertible(portc_dtype from, portc_dtype to) {
  if (from == to) return true;
  if (dtype_is_float(to)) return from == PORTC_F64 || from == PORTC_F32; /* rounded to `to` */
  if (dtype_is_int(to)) return dtype_is_int(from);
  return false;
}

/* an i64 value bound to an i32 tensor must fit: the first that does not is an error, not a
 * silent wrap */
static portc_status check_fits(const char *name, const portc_tensor *t, portc_dtype to) {
  if (t->dtype != PORTC_I64 || to != PORTC_I32) return PORTC_OK;
  int64_t n = portc_tensor_numel(t);
  const int64_t *v = t->data;
  for (int64_t k = 0; k < n; k++)
    if (v[k] < INT32_MIN || v[k] > INT32_MAX)
      return err_set(PORTC_ERR_DTYPE, "%s: element %lld is %lld, which does not fit the graph's i32", name, (long long)k, (long long)v[k]);
  return PORTC_OK;
}

static portc_status bindings_set_unlocked(portc_bindings *b, const char *name, const portc_tensor *t) {
  if (!b || !name || !t) return err_set(PORTC_ERR_INVALID, "bindings_set: NULL %s", !b ? "bindings" : !name ? "name" : "tensor");
  portc_node n = graph_find(b->g, name);
  if (n < 0 || n >= b->n) return err_set(PORTC_ERR_INVALID, "graph %s has no input or parameter named '%s'", b->g->name, name);
  const node *x = &b->g->nodes[n];
  if (x->op != OP_input && x->op != OP_param)
    return err_set(PORTC_ERR_INVALID, "'%s' is a %s, not an input or parameter", name, op_get(x->op)->name);
  if (!convertible(t->dtype, x->dt))
    return err_set(PORTC_ERR_DTYPE, "%s: the tensor is %s, the graph wants %s", name, portc_dtype_name(t->dtype), portc_dtype_name(x->dt));
  if (t->rank != x->sh.rank)
    return err_set(PORTC_ERR_SHAPE, "%s: the tensor has rank %d, the graph wants %d", name, t->rank, x->sh.rank);
  portc_status fits = check_fits(name, t, x->dt);
  if (fits) return fits;
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
  b->remote[n] = NULL; /* a value held on a device is replaced */
  bindings_touch(b, n);
  return PORTC_OK;
}

static void bindings_set_seed_unlocked(portc_bindings *b, uint64_t seed) {
  if (!b) return;
  b->seeded = true;
  b->seed = seed;
  touch_all(b);
}

static const portc_tensor *bindings_get_unlocked(const portc_bindings *b, const char *name) {
  if (!b || !name) return NULL;
  portc_node n = graph_find(b->g, name);
  if (n < 0 || n >= b->n) return NULL;
  for (int k = 0; k < b->g->nupd; k++) /* a parameter a run updates: its value for the next run */
    if (b->g->upd_param[k] == n && b->given[n]) return b->given[n];
  return b->used[n];
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

static void fill_seeded(const node *x, uint64_t seed, portc_tensor *t) {
  uint64_t s = stream(seed, x->name);
  int64_t n = portc_tensor_numel(t);
  for (int64_t k = 0; k < n; k++) {
    if (dtype_is_float(t->dtype)) portc_tensor_set(t, k, rng_uniform(&s) * 2.0 - 1.0);
    else if (t->dtype == PORTC_BOOL) portc_tensor_set(t, k, (double)(rng_next(&s) >> 63));
    else portc_tensor_set(t, k, (double)(rng_next(&s) >> 61));
  }
}

static void fill_init(const node *x, portc_tensor *t) {
  uint64_t s = stream(x->seed, "param");
  int64_t n = portc_tensor_numel(t);
  for (int64_t k = 0; k < n; k++) {
    double r = 0;
    switch (x->init) {
    case PORTC_INIT_ZEROS: r = 0; break;
    case PORTC_INIT_ONES: r = 1; break;
    case PORTC_INIT_NORMAL: r = x->p0 + x->p1 * rng_normal(&s); break;
    case PORTC_INIT_UNIFORM: r = x->p0 + (x->p1 - x->p0) * rng_uniform(&s); break;
    }
    portc_tensor_set(t, k, r);
  }
}

/* src converted into dst (same shape): floats rounded to dst's dtype, integers that fit (check_fits) */
static void convert(const portc_tensor *src, portc_tensor *dst) {
  int64_t n = portc_tensor_numel(dst);
  if (src->dtype == dst->dtype) {
    memcpy(dst->data, src->data, (size_t)n * portc_dtype_size(dst->dtype));
    return;
  }
  for (int64_t k = 0; k < n; k++) {
    if (src->dtype == PORTC_I64 && dst->dtype == PORTC_I32)
      ((int32_t *)dst->data)[k] = (int32_t)wrap_int(((const int64_t *)src->data)[k], PORTC_I32);
    else if (src->dtype == PORTC_I32 && dst->dtype == PORTC_I64)
      ((int64_t *)dst->data)[k] = ((const int32_t *)src->data)[k];
    else
      portc_tensor_set(dst, k, portc_tensor_get(src, k));
  }
}

static portc_status load_file(const portc_graph *g, const node *x, portc_tensor *dst) {
  char path[4096];
  if (x->file[0] != '/' && g->basedir) snprintf(path, sizeof path, "%s/%s", g->basedir, x->file);
  else snprintf(path, sizeof path, "%s", x->file);
  portc_tensor *t;
  portc_status st = x->file_key ? npz_load(path, x->file_key, &t) : portc_tensor_load_npy(path, &t);
  if (st) return err_set(st, "param %s: %s", x->name, portc_last_error());
  bool ok = t->rank == dst->rank && convertible(t->dtype, dst->dtype);
  for (int k = 0; ok && k < dst->rank; k++) ok = t->shape[k] == dst->shape[k];
  if (!ok) {
    portc_tensor_free(t);
    return err_set(PORTC_ERR_SHAPE, "param %s: %s does not hold a %s tensor of the declared shape", x->name, path,
                   portc_dtype_name(dst->dtype));
  }
  if ((st = check_fits(path, t, dst->dtype)) == PORTC_OK) convert(t, dst);
  portc_tensor_free(t);
  return st ? err_set(st, "param %s: %s", x->name, portc_last_error()) : PORTC_OK;
}

portc_status bindings_bind_symbols(const portc_graph *g, portc_bindings *b) {
  if (b->g != g || b->n != g->n || b->nsyms != g->nsyms)
    return err_set(PORTC_ERR_INVALID, "the bindings were made for another graph, or the graph changed since");
  for (int n = 0; n < g->n; n++) {
    const portc_tensor *t = b->given[n];
    if (!t) continue;
    const node *x = &g->nodes[n];
    for (int d = 0; d < x->sh.rank; d++) {
      int s = x->sh.d[d].sym;
      if (s < 0) continue;
      if (b->sym_set[s] && b->sym[s] != t->shape[d])
        return err_set(PORTC_ERR_SHAPE, "symbol %s is %lld, but %s has %lld at dimension %d", g->syms[s], (long long)b->sym[s],
                       x->name, (long long)t->shape[d], d);
      b->sym[s] = t->shape[d];
      b->sym_set[s] = true;
    }
  }
  return derive_symbols(b);
}

#define MAX_ELEMENTS ((int64_t)1 << 36)

portc_status bindings_shape(const portc_graph *g, const portc_bindings *b, const node *x, int64_t *shape) {
  int64_t numel = 1;
  for (int d = 0; d < x->sh.rank; d++) {
    int s = x->sh.d[d].sym;
    if (s >= 0 && !b->sym_set[s])
      return err_set(PORTC_ERR_SHAPE, "symbol %s has no value: set it (portc run --set %s=...), or bind an input that has it",
                     g->syms[s], g->syms[s]);
    shape[d] = s >= 0 ? b->sym[s] : x->sh.d[d].c;
    if (shape[d] && numel > MAX_ELEMENTS / shape[d])
      return err_set(PORTC_ERR_NOMEM, "%s would have more than 2^36 elements", x->name);
    numel *= shape[d];
  }
  return PORTC_OK;
}

/* ---- values held on a module's device (driver/resident.c) ---- */

/* node n's value from its owner into given[n] (b locked; the owner locked, or by wait, waited for) */
static portc_status fetch_remote(portc_bindings *b, int n, bool wait) {
  void *owner = b->remote[n];
  const bindings_remote *ops = b->remote_ops;
  if (!wait && !ops->trylock(owner))
    return err_set(PORTC_ERR_INVALID, "%s: its newest value is on the device of a module another thread is running with these bindings; "
                   "run the modules of one bindings object from one thread at a time", b->g->nodes[n].name);
  if (wait) ops->lock(owner);
  portc_tensor *t = NULL;
  portc_status st = ops->fetch(owner, b, n, &t);
  ops->unlock(owner);
  if (st) return st;
  portc_tensor_free(b->given[n]);
  b->given[n] = t;
  b->remote[n] = NULL; /* the device still holds the same value: the stamp stays */
  return PORTC_OK;
}

portc_status bindings_hold(portc_bindings *b, void *owner, const bindings_remote *ops) {
  b->remote_ops = ops;
  return ptr_set_add(&b->holders, owner) ? PORTC_OK : err_set(PORTC_ERR_NOMEM, "bindings: out of memory");
}

void bindings_set_remote(portc_bindings *b, int n, void *owner) {
  b->remote[n] = owner;
  bindings_touch(b, n);
}

portc_status bindings_pull(portc_bindings *b, const void *except, int node) {
  for (;;) {
    bindings_lock(b);
    void *owner = NULL;
    for (int n = node < 0 ? 0 : node; n < (node < 0 ? b->n : node + 1) && !owner; n++)
      if (b->remote[n] && b->remote[n] != except) owner = b->remote[n];
    bindings_unlock(b);
    if (!owner) return PORTC_OK;
    /* the owner's lock before b's, as its runs take them */
    b->remote_ops->lock(owner);
    bindings_lock(b);
    portc_status st = PORTC_OK;
    for (int n = node < 0 ? 0 : node; n < (node < 0 ? b->n : node + 1) && !st; n++)
      if (b->remote[n] == owner) st = fetch_remote(b, n, true);
    bindings_unlock(b);
    b->remote_ops->unlock(owner);
    if (st) return st;
  }
}

portc_status bindings_release_owner(portc_bindings *b, void *owner) {
  bindings_lock(b);
  portc_status st = PORTC_OK;
  for (int n = 0; n < b->n; n++) {
    if (b->remote[n] != owner) continue;
    portc_status s = fetch_remote(b, n, true);
    if (s && !st) st = s;
    b->remote[n] = NULL; /* lost only if the device could not be read: the error says so */
  }
  ptr_set_remove(&b->holders, owner);
  bindings_unlock(b);
  return st;
}

portc_status bindings_source(const portc_graph *g, portc_bindings *b, int id, portc_tensor **out) {
  const node *x = &g->nodes[id];
  int64_t shape[PORTC_MAX_RANK];
  portc_status st = bindings_shape(g, b, x, shape);
  if (st) return st;
  if (b->remote[id] && (st = fetch_remote(b, id, false))) return st; /* the newest value is on a device */
  portc_tensor *t = portc_tensor_new(x->dt, x->sh.rank, shape);
  if (!t) return err_set(PORTC_ERR_NOMEM, "%s: out of memory", x->name);
  if (x->op == OP_const) {
    for (int64_t k = 0; k < x->value.n; k++) {
      if (x->value.f) portc_tensor_set(t, k, x->value.f[k]);
      else if (x->dt == PORTC_I64) ((int64_t *)t->data)[k] = x->value.i[k];
      else portc_tensor_set(t, k, (double)x->value.i[k]);
    }
  } else if (b->given[id]) {
    convert(b->given[id], t);
  } else if (x->op == OP_param && x->data) {
    convert(x->data->t, t);
  } else if (x->op == OP_param && x->file) {
    st = load_file(g, x, t);
  } else if (x->op == OP_param && x->has_init) {
    fill_init(x, t);
  } else if (b->seeded) {
    fill_seeded(x, b->seed, t);
  } else {
    st = err_set(PORTC_ERR_INVALID, "%s %s has no value: bind a tensor to it, or give a seed", op_get(x->op)->name, x->name);
  }
  if (st) {
    portc_tensor_free(t);
    return st;
  }
  if (x->op != OP_const) { /* what the run used, for portc_bindings_get */
    portc_tensor *copy = portc_tensor_new(t->dtype, t->rank, t->shape);
    if (copy) memcpy(copy->data, t->data, (size_t)portc_tensor_numel(t) * portc_dtype_size(t->dtype));
    portc_tensor_free(b->used[id]);
    b->used[id] = copy;
  }
  *out = t;
  return PORTC_OK;
}

/* ---- the public calls: each holds the object's lock (portc.h's threading contract) ---- */

portc_status portc_bindings_set_symbol(portc_bindings *b, const char *name, int64_t value) {
  bindings_lock(b);
  portc_status r = bindings_set_symbol_unlocked(b, name, value);
  bindings_unlock(b);
  return r;
}

portc_status portc_bindings_set(portc_bindings *b, const char *name, const portc_tensor *t) {
  bindings_lock(b);
  portc_status r = bindings_set_unlocked(b, name, t);
  bindings_unlock(b);
  return r;
}

void portc_bindings_set_seed(portc_bindings *b, uint64_t seed) {
  bindings_lock(b);
  bindings_set_seed_unlocked(b, seed);
  bindings_unlock(b);
}

const portc_tensor *portc_bindings_get(const portc_bindings *b, const char *name) {
  portc_node n = b && name ? graph_find(b->g, name) : -1;
  if (n >= 0 && n < b->n && bindings_pull((portc_bindings *)b, NULL, n)) return NULL;
  bindings_lock((portc_bindings *)b);
  const portc_tensor *r = bindings_get_unlocked(b, name);
  bindings_unlock((portc_bindings *)b);
  return r;
}
