/*
 * builder.c: the public one-call-per-op API. Each call fills a node_spec (op, inputs, attributes)
 * and hands it to graph_add, which checks and infers; the elementwise calls are generated from
 * ops.def so that adding an op there adds its call here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_struct.h"
#include "dtype.h"
#include "api_struct.h"
#include "graph.h"

static portc_node add(portc_graph *g, node_spec *s) {
  if (!g) return err_node(PORTC_ERR_INVALID, "%s: graph is NULL", op_get(s->op)->name);
  return graph_add(g, s);
}

/* Drops trailing PORTC_NONE optional inputs; one in the middle is an error caught by graph_add. */
static int trim_optional(const portc_node *in, int n) {
  while (n > 0 && in[n - 1] == PORTC_NONE) n--;
  return n;
}

static attr *aset(node_spec *s, const char *name) {
  attr *a = &s->a[attr_index(s->op, name)];
  a->set = true;
  return a;
}
static void set_int(node_spec *s, const char *name, int64_t v) { aset(s, name)->v[0] = v; }
static void set_float(node_spec *s, const char *name, double v) { aset(s, name)->f = v; }
static bool set_ints(node_spec *s, const char *name, int n, const int64_t *v) {
  if (n < 0 || n > MAX_LIST || (n > 0 && !v)) return false;
  attr *a = aset(s, name);
  a->n = n;
  for (int i = 0; i < n; i++) a->v[i] = v[i], a->sym[i] = -1;
  return true;
}

/* A portc_dim array into shape form, interning symbols. */
static portc_status dims_in(portc_graph *g, const char *what, int rank, const portc_dim *dims, int64_t *v, int32_t *sym) {
  if (rank < 0 || rank > PORTC_MAX_RANK) return err_set(PORTC_ERR_SHAPE, "%s: rank %d is outside 0..%d", what, rank, PORTC_MAX_RANK);
  if (rank > 0 && !dims) return err_set(PORTC_ERR_INVALID, "%s: dims is NULL", what);
  for (int i = 0; i < rank; i++) {
    v[i] = dims[i].size;
    sym[i] = -1;
    if (!dims[i].symbol) continue;
    bool scaled = strchr(dims[i].symbol, '*') != NULL; /* "8*N", a derived symbol */
    if (!scaled && !valid_ident(dims[i].symbol)) return err_set(PORTC_ERR_INVALID, "%s: '%s' is not a valid symbol name", what, dims[i].symbol);
    if ((sym[i] = graph_symbol(g, dims[i].symbol)) < 0)
      return scaled ? err_set(PORTC_ERR_INVALID, "%s: '%s' is not a valid multiple of a symbol (K*NAME, K >= 2)", what, dims[i].symbol)
                    : err_set(PORTC_ERR_NOMEM, "%s: out of memory", what);
    v[i] = 0;
  }
  return PORTC_OK;
}

static portc_node set_dims(portc_graph *g, node_spec *s, const char *name, int rank, const portc_dim *dims) {
  attr *a = aset(s, name);
  portc_status st = dims_in(g, op_get(s->op)->name, rank, dims, a->v, a->sym);
  a->n = rank;
  return st == PORTC_OK ? 0 : -(portc_node)st;
}

#define UNARY(id, acc, fx, ix)                                                                      \
  portc_node portc_##id(portc_graph *g, portc_node x) {                                            \
    node_spec s;                                                                                    \
    spec_init(&s, OP_##id, 1, &x);                                                                  \
    return add(g, &s);                                                                              \
  }
#define BINARY(id, acc, fx, ix)                                                                     \
  portc_node portc_##id(portc_graph *g, portc_node a, portc_node b) {                              \
    portc_node in[2] = {a, b};                                                                      \
    node_spec s;                                                                                    \
    spec_init(&s, OP_##id, 2, in);                                                                  \
    return add(g, &s);                                                                              \
  }
#define COMPARE(id, acc, fx) BINARY(id, acc, fx, 0)
#define OP(id, mi, ma, k, at)
#include "ops.def"

portc_node portc_where(portc_graph *g, portc_node cond, portc_node a, portc_node b) {
  portc_node in[3] = {cond, a, b};
  node_spec s;
  spec_init(&s, OP_where, 3, in);
  return add(g, &s);
}

portc_node portc_cast(portc_graph *g, portc_node x, portc_dtype to) {
  node_spec s;
  spec_init(&s, OP_cast, 1, &x);
  set_int(&s, "to", to);
  return add(g, &s);
}

static portc_node reduction(portc_graph *g, enum op op, portc_node x, int naxes, const int64_t *axes, bool keepdim) {
  node_spec s;
  spec_init(&s, op, 1, &x);
  if (!set_ints(&s, "axes", naxes, axes))
    return err_node(PORTC_ERR_INVALID, "%s: %d axes given; 0 to %d expected", op_get(op)->name, naxes, PORTC_MAX_RANK);
  set_int(&s, "keepdim", keepdim);
  return add(g, &s);
}
portc_node portc_sum(portc_graph *g, portc_node x, int n, const int64_t *axes, bool keep) { return reduction(g, OP_sum, x, n, axes, keep); }
portc_node portc_mean(portc_graph *g, portc_node x, int n, const int64_t *axes, bool keep) { return reduction(g, OP_mean, x, n, axes, keep); }
portc_node portc_max(portc_graph *g, portc_node x, int n, const int64_t *axes, bool keep) { return reduction(g, OP_max, x, n, axes, keep); }
portc_node portc_min(portc_graph *g, portc_node x, int n, const int64_t *axes, bool keep) { return reduction(g, OP_min, x, n, axes, keep); }
portc_node portc_prod(portc_graph *g, portc_node x, int n, const int64_t *axes, bool keep) { return reduction(g, OP_prod, x, n, axes, keep); }

portc_node portc_argmax(portc_graph *g, portc_node x, int64_t axis, bool keepdim) {
  node_spec s;
  spec_init(&s, OP_argmax, 1, &x);
  set_int(&s, "axis", axis);
  set_int(&s, "keepdim", keepdim);
  return add(g, &s);
}

portc_node portc_matmul(portc_graph *g, portc_node a, portc_node b) {
  portc_node in[2] = {a, b};
  node_spec s;
  spec_init(&s, OP_matmul, 2, in);
  return add(g, &s);
}

static int64_t or1(int64_t v) { return v ? v : 1; }

portc_node portc_conv2d(portc_graph *g, portc_node x, portc_node w, portc_node bias, const portc_conv2d_opts *o) {
  portc_node in[3] = {x, w, bias};
  portc_conv2d_opts d;
  api_struct_in(&d, sizeof d, o, API_FIRST_SIZE(portc_conv2d_opts, groups));
  int64_t stride[2] = {or1(d.stride[0]), or1(d.stride[1])}, dil[2] = {or1(d.dilation[0]), or1(d.dilation[1])};
  node_spec s;
  spec_init(&s, OP_conv2d, trim_optional(in, 3), in);
  set_ints(&s, "stride", 2, stride);
  set_ints(&s, "padding", 2, d.padding);
  set_ints(&s, "dilation", 2, dil);
  set_int(&s, "groups", or1(d.groups));
  if (d.channels_last) set_int(&s, "channels_last", 1);
  return add(g, &s);
}

static portc_node pool(portc_graph *g, enum op op, portc_node x, const portc_pool2d_opts *opts) {
  if (!opts) return err_node(PORTC_ERR_INVALID, "%s: options (the kernel size) are required", op_get(op)->name);
  portc_pool2d_opts whole, *o = &whole;
  api_struct_in(o, sizeof whole, opts, API_FIRST_SIZE(portc_pool2d_opts, padding));
  node_spec s;
  spec_init(&s, op, 1, &x);
  set_ints(&s, "kernel", 2, o->kernel);
  if (o->stride[0] || o->stride[1]) {
    int64_t st[2] = {o->stride[0] ? o->stride[0] : o->kernel[0], o->stride[1] ? o->stride[1] : o->kernel[1]};
    set_ints(&s, "stride", 2, st);
  }
  set_ints(&s, "padding", 2, o->padding);
  if (o->channels_last) set_int(&s, "channels_last", 1);
  return add(g, &s);
}
portc_node portc_max_pool2d(portc_graph *g, portc_node x, const portc_pool2d_opts *o) { return pool(g, OP_max_pool2d, x, o); }
portc_node portc_avg_pool2d(portc_graph *g, portc_node x, const portc_pool2d_opts *o) { return pool(g, OP_avg_pool2d, x, o); }

static portc_node shaped(portc_graph *g, enum op op, portc_node x, int rank, const portc_dim *dims) {
  if (!g) return err_node(PORTC_ERR_INVALID, "%s: graph is NULL", op_get(op)->name);
  node_spec s;
  spec_init(&s, op, 1, &x);
  portc_node st = set_dims(g, &s, "shape", rank, dims);
  return st < 0 ? st : add(g, &s);
}
portc_node portc_reshape(portc_graph *g, portc_node x, int rank, const portc_dim *dims) { return shaped(g, OP_reshape, x, rank, dims); }
portc_node portc_expand(portc_graph *g, portc_node x, int rank, const portc_dim *dims) { return shaped(g, OP_expand, x, rank, dims); }

portc_node portc_permute(portc_graph *g, portc_node x, int rank, const int64_t *perm) {
  node_spec s;
  spec_init(&s, OP_permute, 1, &x);
  if (!set_ints(&s, "perm", rank, perm)) return err_node(PORTC_ERR_INVALID, "permute: rank %d is out of range", rank);
  return add(g, &s);
}

portc_node portc_slice(portc_graph *g, portc_node x, int64_t axis, int64_t start, int64_t stop, int64_t step) {
  node_spec s;
  spec_init(&s, OP_slice, 1, &x);
  set_int(&s, "axis", axis);
  set_int(&s, "start", start);
  if (stop != PORTC_END) set_int(&s, "stop", stop);
  set_int(&s, "step", step);
  return add(g, &s);
}

portc_node portc_concat(portc_graph *g, int n, const portc_node *xs, int64_t axis) {
  if (n < 0 || (n > 0 && !xs)) return err_node(PORTC_ERR_INVALID, "concat: no inputs given");
  node_spec s;
  spec_init(&s, OP_concat, n, xs);
  set_int(&s, "axis", axis);
  return add(g, &s);
}

portc_node portc_pad(portc_graph *g, portc_node x, int npads, const int64_t *pads, double value) {
  node_spec s;
  spec_init(&s, OP_pad, 1, &x);
  if (!set_ints(&s, "pads", npads, pads)) return err_node(PORTC_ERR_INVALID, "pad: %d pads given; at most %d", npads, MAX_LIST);
  set_float(&s, "value", value);
  return add(g, &s);
}

portc_node portc_gather(portc_graph *g, portc_node x, portc_node idx, int64_t axis) {
  portc_node in[2] = {x, idx};
  node_spec s;
  spec_init(&s, OP_gather, 2, in);
  set_int(&s, "axis", axis);
  return add(g, &s);
}

static portc_node axis_op(portc_graph *g, enum op op, portc_node x, int64_t axis) {
  node_spec s;
  spec_init(&s, op, 1, &x);
  set_int(&s, "axis", axis);
  return add(g, &s);
}
portc_node portc_softmax(portc_graph *g, portc_node x, int64_t axis) { return axis_op(g, OP_softmax, x, axis); }
portc_node portc_log_softmax(portc_graph *g, portc_node x, int64_t axis) { return axis_op(g, OP_log_softmax, x, axis); }

portc_node portc_layer_norm(portc_graph *g, portc_node x, portc_node w, portc_node b, double eps) {
  portc_node in[3] = {x, w, b};
  node_spec s;
  spec_init(&s, OP_layer_norm, trim_optional(in, 3), in);
  set_float(&s, "eps", eps);
  return add(g, &s);
}

portc_node portc_rms_norm(portc_graph *g, portc_node x, portc_node w, double eps) {
  portc_node in[2] = {x, w};
  node_spec s;
  spec_init(&s, OP_rms_norm, trim_optional(in, 2), in);
  set_float(&s, "eps", eps);
  return add(g, &s);
}

portc_node portc_attention(portc_graph *g, portc_node q, portc_node k, portc_node v, bool causal, double scale) {
  return portc_attention_masked(g, q, k, v, PORTC_NONE, causal, scale);
}

portc_node portc_attention_masked(portc_graph *g, portc_node q, portc_node k, portc_node v, portc_node mask, bool causal, double scale) {
  portc_node in[4] = {q, k, v, mask};
  node_spec s;
  spec_init(&s, OP_attention, trim_optional(in, 4), in);
  set_int(&s, "causal", causal);
  if (scale != 0) set_float(&s, "scale", scale);
  return add(g, &s);
}

portc_node portc_causal_mask(portc_graph *g, portc_node x) {
  node_spec s;
  spec_init(&s, OP_causal_mask, 1, &x);
  return add(g, &s);
}

portc_node portc_op(portc_graph *g, const char *opname, int nin, const portc_node *in, const char *attrs) {
  enum op op;
  if (!g || !opname) return err_node(PORTC_ERR_INVALID, "op: graph or op name is NULL");
  if (!op_lookup(opname, &op) || op_get(op)->kind == K_SOURCE)
    return err_node(PORTC_ERR_INVALID, "op: '%s' is not an op (sources have their own calls)", opname);
  if (nin < 0 || (nin > 0 && !in)) return err_node(PORTC_ERR_INVALID, "%s: inputs missing", opname);
  node_spec s;
  spec_init(&s, op, nin, in);
  portc_status st = graph_parse_attrs(g, op, attrs ? attrs : "", s.a);
  if (st) return -(portc_node)st;
  return add(g, &s);
}

/* ---- sources ---- */

static portc_node source(portc_graph *g, enum op op, const char *name, portc_dtype t, int rank, const portc_dim *dims) {
  if (!g) return err_node(PORTC_ERR_INVALID, "%s: graph is NULL", op_get(op)->name);
  shape sh = {.rank = rank};
  char what[160];
  snprintf(what, sizeof what, "%s %s", op_get(op)->name, name ? name : "?");
  if (rank < 0 || rank > PORTC_MAX_RANK) return err_node(PORTC_ERR_SHAPE, "%s: rank %d is outside 0..%d", what, rank, PORTC_MAX_RANK);
  int64_t v[PORTC_MAX_RANK];
  int32_t sym[PORTC_MAX_RANK];
  portc_status st = dims_in(g, what, rank, dims, v, sym);
  if (st) return -(portc_node)st;
  for (int i = 0; i < rank; i++) sh.d[i] = (dim){v[i], sym[i]};
  return graph_add_source(g, op, name, t, &sh);
}

portc_node portc_input(portc_graph *g, const char *name, portc_dtype t, int rank, const portc_dim *dims) {
  return source(g, OP_input, name, t, rank, dims);
}

portc_node portc_param(portc_graph *g, const char *name, portc_dtype t, int rank, const portc_dim *dims) {
  return source(g, OP_param, name, t, rank, dims);
}

portc_node portc_param_file(portc_graph *g, const char *name, portc_dtype t, int rank, const portc_dim *dims, const char *path) {
  if (!path || !*path) return err_node(PORTC_ERR_INVALID, "param %s: no file given", name ? name : "?");
  portc_node n = source(g, OP_param, name, t, rank, dims);
  if (n < 0) return n;
  if (!(g->nodes[n].file = strdup(path))) {
    node_free_data(&g->nodes[n]);
    g->n--; /* its name's entry is stale: lookups check the node's name */
    return err_node(PORTC_ERR_NOMEM, "param %s: out of memory", name);
  }
  return n;
}

portc_node portc_param_npz(portc_graph *g, const char *name, portc_dtype t, int rank, const portc_dim *dims, const char *path,
                           const char *key) {
  if (!key || !*key) return err_node(PORTC_ERR_INVALID, "param %s: no member of %s named", name ? name : "?", path ? path : "?");
  portc_node n = portc_param_file(g, name, t, rank, dims, path);
  if (n < 0) return n;
  if (!(g->nodes[n].file_key = strdup(key))) {
    node_free_data(&g->nodes[n]);
    g->n--; /* its name's entry is stale: lookups check the node's name */
    return err_node(PORTC_ERR_NOMEM, "param %s: out of memory", name);
  }
  return n;
}

portc_node graph_add_param_data(portc_graph *g, const char *name, pdata *data) {
  const portc_tensor *t = data->t;
  shape sh = {.rank = t->rank};
  for (int i = 0; i < t->rank; i++) sh.d[i] = (dim){t->shape[i], -1};
  portc_node n = graph_add_source(g, OP_param, name, t->dtype, &sh);
  if (n < 0) return n;
  g->nodes[n].data = data;
  pdata_retain(data);
  return n;
}

portc_node portc_param_data(portc_graph *g, const char *name, const portc_tensor *t) {
  if (!g || !t) return err_node(PORTC_ERR_INVALID, "param %s: graph or tensor is NULL", name ? name : "?");
  if (!dtype_valid_in_graph(t->dtype) || t->rank < 0 || t->rank > PORTC_MAX_RANK)
    return err_node(PORTC_ERR_DTYPE, "param %s: a %s tensor of rank %d cannot be a parameter", name ? name : "?",
                    portc_dtype_name(t->dtype), t->rank);
  portc_tensor *copy = portc_tensor_new(t->dtype, t->rank, t->shape);
  if (copy) memcpy(copy->data, t->data, (size_t)portc_tensor_numel(t) * portc_dtype_size(t->dtype));
  pdata *d = pdata_new(copy);
  if (!d) return err_node(PORTC_ERR_NOMEM, "param %s: out of memory", name ? name : "?");
  portc_node n = graph_add_param_data(g, name, d);
  pdata_release(d);
  return n;
}

portc_node portc_param_init(portc_graph *g, const char *name, portc_dtype t, int rank, const portc_dim *dims,
                            portc_init init, uint64_t seed, double a, double b) {
  if ((unsigned)init > PORTC_INIT_UNIFORM) return err_node(PORTC_ERR_INVALID, "param %s: unknown init %d", name ? name : "?", (int)init);
  if (init == PORTC_INIT_NORMAL && !(b >= 0)) return err_node(PORTC_ERR_INVALID, "param %s: normal std must be >= 0", name ? name : "?");
  if (init == PORTC_INIT_UNIFORM && !(a <= b)) return err_node(PORTC_ERR_INVALID, "param %s: uniform low must be <= high", name ? name : "?");
  if ((init == PORTC_INIT_NORMAL || init == PORTC_INIT_UNIFORM) && !dtype_is_float(t))
    return err_node(PORTC_ERR_DTYPE, "param %s: random init needs a floating dtype", name ? name : "?");
  portc_node n = source(g, OP_param, name, t, rank, dims);
  if (n < 0) return n;
  node *x = &g->nodes[n];
  x->has_init = true;
  x->init = init;
  x->seed = seed;
  x->p0 = init == PORTC_INIT_ZEROS || init == PORTC_INIT_ONES ? 0 : a;
  x->p1 = init == PORTC_INIT_ZEROS || init == PORTC_INIT_ONES ? 0 : b;
  return n;
}

portc_node portc_const(portc_graph *g, portc_dtype t, int rank, const int64_t *shp, const double *values, int64_t nvalues) {
  if (!g) return err_node(PORTC_ERR_INVALID, "const: graph is NULL");
  if (rank < 0 || rank > PORTC_MAX_RANK) return err_node(PORTC_ERR_SHAPE, "const: rank %d is outside 0..%d", rank, PORTC_MAX_RANK);
  if (rank > 0 && !shp) return err_node(PORTC_ERR_INVALID, "const: shape is NULL");
  if (nvalues > 0 && !values) return err_node(PORTC_ERR_INVALID, "const: values is NULL");
  shape sh = {.rank = rank};
  for (int i = 0; i < rank; i++) sh.d[i] = (dim){shp[i], -1};
  bool isf = dtype_is_float(t);
  cdata v = {.n = nvalues};
  if (nvalues < 0 || (isf ? !(v.f = malloc((size_t)(nvalues + 1) * 8)) : !(v.i = malloc((size_t)(nvalues + 1) * 8))))
    return err_node(nvalues < 0 ? PORTC_ERR_INVALID : PORTC_ERR_NOMEM, "const: cannot hold %lld values", (long long)nvalues);
  for (int64_t i = 0; i < nvalues; i++) {
    if (isf) {
      v.f[i] = values[i];
    } else if (values[i] != floor(values[i]) || !isfinite(values[i])) {
      free(v.i);
      return err_node(PORTC_ERR_INVALID, "const: value %g at %lld is not a %s", values[i], (long long)i, portc_dtype_name(t));
    } else {
      v.i[i] = float_to_int(values[i], t == PORTC_BOOL ? PORTC_I64 : t);
    }
  }
  portc_node n = graph_add_const(g, NULL, t, &sh, &v);
  free(v.f);
  free(v.i);
  return n;
}

portc_node portc_scalar(portc_graph *g, portc_dtype t, double value) { return portc_const(g, t, 0, NULL, &value, 1); }
