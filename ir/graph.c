/*
 * graph.c: creating and growing graphs. Every node enters through graph_add or graph_add_source,
 * which check inputs, attributes and names and run shape inference first, so a graph held by a
 * caller is always well formed; a failed call leaves the graph exactly as it was.
 */
#include "graph.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"

portc_graph *portc_graph_new(const char *name) {
  portc_graph *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->name = strdup(name && *name ? name : "main");
  if (!g->name) {
    free(g);
    return NULL;
  }
  /* the name is printed as an identifier in .ptg text: keep it one */
  for (char *c = g->name; *c; c++)
    if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '.')) *c = '_';
  if (isdigit((unsigned char)g->name[0]) || g->name[0] == '.') g->name[0] = '_';
  return g;
}

void node_free_data(node *n) {
  free(n->name);
  free(n->in);
  free(n->value.f);
  free(n->value.i);
  free(n->file);
  free(n->file_key);
  pdata_release(n->data);
}

pdata *pdata_new(portc_tensor *t) {
  pdata *d = t ? malloc(sizeof *d) : NULL;
  if (!d) {
    portc_tensor_free(t);
    return NULL;
  }
  d->refs = 1;
  d->t = t;
  return d;
}

/* Compiles copy a graph, and so retain its values, on many threads at once (the tuner compiles
 * its candidates so): the count changes atomically. */
void pdata_retain(pdata *d) {
  if (d) __atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
}

void pdata_release(pdata *d) {
  if (!d || __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
  portc_tensor_free(d->t);
  free(d);
}

void portc_graph_free(portc_graph *g) {
  if (!g) return;
  for (int i = 0; i < g->n; i++) node_free_data(&g->nodes[i]);
  for (int i = 0; i < g->nsyms; i++) free(g->syms[i]);
  free(g->nodes);
  free(g->syms);
  free(g->sym_base);
  free(g->sym_scale);
  free(g->outputs);
  free(g->upd_param);
  free(g->upd_value);
  free(g->name);
  free(g->basedir);
  free(g->name_slot);
  free(g);
}

bool valid_ident(const char *s) {
  if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
  for (s++; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '.')) return false;
  return true;
}

bool is_reserved(const char *s) {
  static const char *const words[] = {"graph", "input", "param", "const", "output"};
  for (unsigned i = 0; i < sizeof words / sizeof *words; i++)
    if (strcmp(s, words[i]) == 0) return true;
  return false;
}

int graph_find_symbol(const portc_graph *g, const char *name) {
  for (int i = 0; i < g->nsyms; i++)
    if (strcmp(g->syms[i], name) == 0) return i;
  return -1;
}

int graph_symbol(portc_graph *g, const char *name) {
  int i = graph_find_symbol(g, name);
  if (i >= 0) return i;
  int base = -1;
  int64_t scale = 1;
  const char *star = strchr(name, '*');
  if (star) {
    char *end;
    long long k = strtoll(name, &end, 10);
    if (end != star || k < 2 || k > ((int64_t)1 << 40) || !valid_ident(star + 1) || (base = graph_symbol(g, star + 1)) < 0) return -1;
    scale = k;
  }
  char **syms = realloc(g->syms, (size_t)(g->nsyms + 1) * sizeof *syms);
  int32_t *bases = realloc(g->sym_base, (size_t)(g->nsyms + 1) * sizeof *bases);
  if (syms) g->syms = syms;
  if (bases) g->sym_base = bases;
  int64_t *scales = realloc(g->sym_scale, (size_t)(g->nsyms + 1) * sizeof *scales);
  if (scales) g->sym_scale = scales;
  if (!syms || !bases || !scales || !(syms[g->nsyms] = strdup(name))) return -1;
  bases[g->nsyms] = base, scales[g->nsyms] = scale;
  return g->nsyms++;
}

int graph_symbol_scaled(portc_graph *g, int base, int64_t scale) {
  if (scale == 1) return base;
  if (g->sym_base[base] >= 0) scale *= g->sym_scale[base], base = g->sym_base[base];
  char name[160];
  snprintf(name, sizeof name, "%lld*%s", (long long)scale, g->syms[base]);
  return graph_symbol(g, name);
}

bool dim_eq(dim a, dim b) { return a.sym == b.sym && (a.sym >= 0 || a.c == b.c); }

bool shape_eq(const shape *a, const shape *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (!dim_eq(a->d[d], b->d[d])) return false;
  return true;
}

void shape_str(const portc_graph *g, const shape *s, char *buf, size_t len) {
  size_t at = 0;
  at += (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < s->rank && at < len; i++) {
    const char *sep = i ? ", " : "";
    if (s->d[i].sym >= 0)
      at += (size_t)snprintf(buf + at, len - at, "%s%s", sep,
                             s->d[i].sym < g->nsyms ? g->syms[s->d[i].sym] : "?");
    else
      at += (size_t)snprintf(buf + at, len - at, "%s%lld", sep, (long long)s->d[i].c);
  }
  if (at < len) snprintf(buf + at, len - at, "]");
}

void shape_dims(const portc_graph *g, const shape *s, portc_dim *out) {
  for (int i = 0; i < s->rank; i++) out[i] = (portc_dim){s->d[i].c, s->d[i].sym >= 0 ? g->syms[s->d[i].sym] : NULL};
}

int64_t shape_numel_const(const shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    if (s->d[i].sym >= 0) return -1;
    n *= s->d[i].c;
  }
  return n;
}

static uint32_t name_hash(const char *s) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

/* node i into a slot (the index has room) */
static void names_place(portc_graph *g, int i) {
  uint32_t at = name_hash(g->nodes[i].name) & (uint32_t)(g->name_cap - 1);
  while (g->name_slot[at] >= 0) at = (at + 1) & (uint32_t)(g->name_cap - 1);
  g->name_slot[at] = i;
  g->name_used++;
}

void graph_names_rebuild(portc_graph *g) {
  free(g->name_slot);
  g->name_used = 0, g->name_cap = 64;
  while (g->name_cap < 4 * (g->n + 1)) g->name_cap *= 2;
  if (!(g->name_slot = malloc(sizeof *g->name_slot * (size_t)g->name_cap))) {
    g->name_cap = 0; /* lookups scan */
    return;
  }
  memset(g->name_slot, 0xff, sizeof *g->name_slot * (size_t)g->name_cap);
  for (int i = 0; i < g->n; i++) names_place(g, i);
}

/* node i has a new name (it was just added, or renamed): an entry for it, the index rebuilt
 * (dropping entries whose node is gone or renamed) when it is half full. A stale entry is
 * harmless meanwhile: a lookup checks the node's name. */
static void names_put(portc_graph *g, int i) {
  if (!g->name_slot && g->n > 1) return; /* scanning since an allocation failed */
  if (2 * (g->name_used + 1) > g->name_cap) graph_names_rebuild(g);
  else names_place(g, i);
}

int graph_find_before(const portc_graph *g, const char *name, int before) {
  if (before > g->n) before = g->n;
  if (!g->name_slot) {
    for (int i = 0; i < before; i++)
      if (g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0) return i;
    return -1;
  }
  for (uint32_t at = name_hash(name) & (uint32_t)(g->name_cap - 1); g->name_slot[at] >= 0; at = (at + 1) & (uint32_t)(g->name_cap - 1)) {
    int i = g->name_slot[at];
    if (i < before && g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0) return i;
  }
  return -1;
}

portc_node graph_find(const portc_graph *g, const char *name) {
  int i = graph_find_before(g, name, g->n);
  return i >= 0 ? i : -(portc_node)PORTC_ERR_INVALID;
}

bool node_name_taken(const portc_graph *g, const char *name) { return graph_find(g, name) >= 0; }

bool graph_is_output(const portc_graph *g, int i) {
  for (int k = 0; k < g->nout; k++)
    if (g->outputs[k] == i) return true;
  return false;
}

static bool grow(portc_graph *g) {
  if (g->n < g->cap) return true;
  int cap = g->cap ? g->cap * 2 : 32;
  node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
  if (!nodes) return false;
  g->nodes = nodes;
  g->cap = cap;
  return true;
}

/* A fresh automatic name, or a copy of the requested one after checking it. */
static portc_status take_name(portc_graph *g, const char *want, const char *op, char **out) {
  char buf[32];
  if (want) {
    if (!valid_ident(want))
      return err_set(PORTC_ERR_INVALID, "%s: '%s' is not a valid name (a letter or '_', then letters, digits, '_' or '.')", op, want);
    if (is_reserved(want))
      return err_set(PORTC_ERR_INVALID, "%s: '%s' is a reserved word of the text format and cannot name a node", op, want);
    if (node_name_taken(g, want)) return err_set(PORTC_ERR_INVALID, "%s: the name '%s' is already used by another node", op, want);
  } else {
    do snprintf(buf, sizeof buf, "t%d", g->next_auto++);
    while (node_name_taken(g, buf));
    want = buf;
  }
  if (!(*out = strdup(want))) return err_set(PORTC_ERR_NOMEM, "%s: out of memory", op);
  return PORTC_OK;
}

void spec_init(node_spec *s, enum op op, int nin, const int32_t *in) {
  memset(s, 0, sizeof *s);
  s->op = op;
  s->nin = nin;
  s->in = in;
}

static portc_node graph_add_autocast(portc_graph *g, node_spec *s);

portc_node graph_add(portc_graph *g, node_spec *s) {
  if (g->autocast != PORTC_F32 && !g->in_autocast && (s->op == OP_matmul || s->op == OP_conv2d || s->op == OP_attention))
    return graph_add_autocast(g, s);
  const op_info *info = op_get(s->op);
  if (!info || info->kind == K_SOURCE)
    return err_node(PORTC_ERR_INVALID, "graph_add: not a computing op");
  if (s->nin < info->min_in || s->nin > info->max_in) {
    if (info->min_in == info->max_in)
      return err_node(PORTC_ERR_INVALID, "%s takes %d input%s, got %d", info->name, info->min_in,
                      info->min_in == 1 ? "" : "s", s->nin);
    return err_node(PORTC_ERR_INVALID, "%s takes %d to %d inputs, got %d", info->name,
                    info->min_in, info->max_in, s->nin);
  }
  for (int i = 0; i < s->nin; i++) {
    if (s->in[i] >= 0 && s->in[i] < g->n) continue;
    if (s->in[i] < 0 && s->in[i] != PORTC_NONE)
      return err_node(portc_node_status(s->in[i]), "%s: input %d is a failed node (%s)", info->name,
                      i, portc_status_name(portc_node_status(s->in[i])));
    return err_node(PORTC_ERR_INVALID, "%s: input %d is not a node of this graph", info->name, i);
  }
  for (int i = 0; i < info->nattrs; i++) {
    const attr_spec *sp = &info->attrs[i];
    if (s->a[i].set) continue;
    if (sp->required)
      return err_node(PORTC_ERR_INVALID, "%s: missing attribute '%s'", info->name, sp->name);
    if (sp->def.set) s->a[i] = sp->def;
  }
  if (!grow(g)) return err_node(PORTC_ERR_NOMEM, "%s: out of memory", info->name);
  node *n = &g->nodes[g->n];
  memset(n, 0, sizeof *n);
  n->op = s->op;
  n->nin = s->nin;
  n->in = (int32_t *)s->in; /* borrowed until inference passes */
  memcpy(n->a, s->a, sizeof n->a);
  portc_status st = infer(g, n, &n->dt, &n->sh);
  if (st == PORTC_OK) st = take_name(g, s->name, info->name, &n->name);
  if (st != PORTC_OK) return -(portc_node)st;
  if (!(n->in = malloc((size_t)(s->nin ? s->nin : 1) * sizeof *n->in))) {
    free(n->name);
    return err_node(PORTC_ERR_NOMEM, "%s: out of memory", info->name);
  }
  memcpy(n->in, s->in, (size_t)s->nin * sizeof *n->in);
  g->n++;
  names_put(g, g->n - 1);
  return g->n - 1;
}

/* autocast (torch.autocast's rule for these ops): f32 operands cast to the autocast dtype, the op
 * there (its sums in f32 on every target), the result cast back to f32 under the node's name;
 * anything else (an operand of another dtype, a failed or foreign input) is built as it is */
static portc_node graph_add_autocast(portc_graph *g, node_spec *s) {
  bool all_f32 = s->nin > 0 && s->nin <= 8 && (!s->name || (valid_ident(s->name) && !is_reserved(s->name) && !node_name_taken(g, s->name)));
  for (int i = 0; i < s->nin && all_f32; i++)
    all_f32 = s->in[i] == PORTC_NONE || (s->in[i] >= 0 && s->in[i] < g->n && g->nodes[s->in[i]].dt == PORTC_F32);
  g->in_autocast = true;
  portc_node r;
  if (!all_f32) {
    r = graph_add(g, s);
  } else {
    int32_t in[8];
    portc_dtype t = g->autocast;
    r = 0;
    for (int i = 0; i < s->nin && r >= 0; i++) {
      in[i] = s->in[i];
      if (in[i] == PORTC_NONE) continue;
      r = in[i] = portc_cast(g, s->in[i], t);
    }
    node_spec low = *s;
    low.in = in;
    low.name = NULL;
    if (r >= 0) r = graph_add(g, &low);
    if (r >= 0) {
      node_spec back;
      int32_t one = r;
      spec_init(&back, OP_cast, 1, &one);
      back.a[attr_index(OP_cast, "to")] = (attr){.set = true, .v = {PORTC_F32}};
      back.name = s->name;
      r = graph_add(g, &back);
      if (r >= 0) g->nodes[r].autocast_widening = true;
    }
  }
  g->in_autocast = false;
  return r;
}

portc_status portc_graph_autocast(portc_graph *g, portc_dtype t) {
  if (!g) return err_set(PORTC_ERR_INVALID, "autocast: graph is NULL");
  if (t != PORTC_F16 && t != PORTC_BF16 && t != PORTC_F32)
    return err_set(PORTC_ERR_DTYPE, "autocast: %s is not f16, bf16 or f32 (off)", portc_dtype_name(t));
  g->autocast = t;
  return PORTC_OK;
}

portc_node graph_add_source(portc_graph *g, enum op op, const char *name, portc_dtype t, const shape *sh) {
  const char *what = op_get(op)->name;
  if (!name) return err_node(PORTC_ERR_INVALID, "%s: a name is required", what);
  if (!dtype_valid_in_graph(t))
    return err_node(PORTC_ERR_DTYPE, "%s %s: %s is not a graph dtype", what, name, portc_dtype_name(t));
  if (sh->rank < 0 || sh->rank > PORTC_MAX_RANK)
    return err_node(PORTC_ERR_SHAPE, "%s %s: rank %d is outside 0..%d", what, name, sh->rank, PORTC_MAX_RANK);
  for (int i = 0; i < sh->rank; i++)
    if (sh->d[i].sym < 0 && sh->d[i].c < 0)
      return err_node(PORTC_ERR_SHAPE, "%s %s: dimension %d is negative (%lld)", what, name, i,
                      (long long)sh->d[i].c);
  if (!shape_fits(g, sh)) return err_node(PORTC_ERR_SHAPE, "%s %s: more than 2^48 elements", what, name);
  if (!grow(g)) return err_node(PORTC_ERR_NOMEM, "%s %s: out of memory", what, name);
  node *n = &g->nodes[g->n];
  memset(n, 0, sizeof *n);
  n->op = op;
  n->dt = t;
  n->sh = *sh;
  portc_status st = take_name(g, name, what, &n->name);
  if (st != PORTC_OK) return -(portc_node)st;
  g->n++;
  names_put(g, g->n - 1);
  return g->n - 1;
}

/* ---- public accessors ---- */

static const node *get(const portc_graph *g, portc_node n) {
  return g && n >= 0 && n < g->n ? &g->nodes[n] : NULL;
}

/* a NULL graph reads as an empty one (and a NULL name is no name) rather than crashing */
const char *portc_graph_name(const portc_graph *g) { return g ? g->name : NULL; }
int portc_graph_node_count(const portc_graph *g) { return g ? g->n : 0; }
int portc_graph_output_count(const portc_graph *g) { return g ? g->nout : 0; }
portc_node portc_graph_output(const portc_graph *g, int i) {
  return g && i >= 0 && i < g->nout ? g->outputs[i] : err_node(PORTC_ERR_INVALID, "output %d does not exist", i);
}

int portc_graph_input_count(const portc_graph *g) {
  int k = 0;
  for (int i = 0; g && i < g->n; i++) k += g->nodes[i].op == OP_input;
  return k;
}

portc_node portc_graph_input(const portc_graph *g, int idx) {
  for (int i = 0, k = 0; g && i < g->n; i++)
    if (g->nodes[i].op == OP_input && k++ == idx) return i;
  return err_node(PORTC_ERR_INVALID, "input %d does not exist", idx);
}

portc_node portc_graph_find(const portc_graph *g, const char *name) {
  if (!g || !name) return err_node(PORTC_ERR_INVALID, "graph_find: NULL %s", g ? "name" : "graph");
  portc_node n = graph_find(g, name);
  if (n < 0) err_set(PORTC_ERR_INVALID, "no node named '%s'", name);
  return n;
}

const char *portc_node_name(const portc_graph *g, portc_node n) {
  const node *x = get(g, n);
  return x ? x->name : NULL;
}
const char *portc_node_op(const portc_graph *g, portc_node n) {
  const node *x = get(g, n);
  return x ? op_get(x->op)->name : NULL;
}
portc_dtype portc_node_dtype(const portc_graph *g, portc_node n) {
  const node *x = get(g, n);
  return x ? x->dt : PORTC_F32;
}
int portc_node_rank(const portc_graph *g, portc_node n) {
  const node *x = get(g, n);
  return x ? x->sh.rank : -1;
}
void portc_node_shape(const portc_graph *g, portc_node n, portc_dim dims[PORTC_MAX_RANK]) {
  const node *x = get(g, n);
  for (int i = 0; x && i < x->sh.rank; i++) {
    dims[i].size = x->sh.d[i].sym >= 0 ? -1 : x->sh.d[i].c;
    dims[i].symbol = x->sh.d[i].sym >= 0 ? g->syms[x->sh.d[i].sym] : NULL;
  }
}

portc_status portc_set_name(portc_graph *g, portc_node n, const char *name) {
  node *x = (node *)get(g, n);
  if (!x) return err_set(PORTC_ERR_INVALID, "set_name: %d is not a node of this graph", n);
  if (strcmp(x->name, name ? name : "") == 0) return PORTC_OK;
  if (!name) return err_set(PORTC_ERR_INVALID, "set_name: no name given");
  char *copy;
  portc_status st = take_name(g, name, "set_name", &copy);
  if (st != PORTC_OK) return st;
  free(x->name);
  x->name = copy;
  names_put(g, n);
  return PORTC_OK;
}

portc_status portc_output(portc_graph *g, portc_node n) {
  if (n < 0 && n != PORTC_NONE)
    return err_set(portc_node_status(n), "output: the node failed to build (%s)", portc_status_name(portc_node_status(n)));
  if (!get(g, n)) return err_set(PORTC_ERR_INVALID, "output: %d is not a node of this graph", n);
  for (int i = 0; i < g->nout; i++)
    if (g->outputs[i] == n)
      return err_set(PORTC_ERR_INVALID, "output: '%s' is already an output", g->nodes[n].name);
  int32_t *o = realloc(g->outputs, (size_t)(g->nout + 1) * sizeof *o);
  if (!o) return err_set(PORTC_ERR_NOMEM, "output: out of memory");
  g->outputs = o;
  o[g->nout++] = n;
  return PORTC_OK;
}

#define CONST_MAX_ELEMENTS ((int64_t)1 << 24) /* constants live in the graph as doubles */

portc_node graph_add_const(portc_graph *g, const char *name, portc_dtype t, const shape *sh, const cdata *v) {
  int64_t numel = 1;
  for (int i = 0; i < sh->rank; i++) {
    if (sh->d[i].sym >= 0) return err_node(PORTC_ERR_SHAPE, "const: dimension %d is symbolic; constants need sizes", i);
    if (sh->d[i].c < 0) return err_node(PORTC_ERR_SHAPE, "const: dimension %d is negative", i);
    if (sh->d[i].c && numel > CONST_MAX_ELEMENTS / sh->d[i].c)
      return err_node(PORTC_ERR_SHAPE, "const: more than 2^24 elements; give a tensor that large as a parameter (a .npy or .npz file)");
    numel *= sh->d[i].c;
  }
  if (v->n != numel && v->n != 1)
    return err_node(PORTC_ERR_SHAPE, "const: %lld values for %lld elements (give all of them, or one to fill)",
                    (long long)v->n, (long long)numel);
  char autoname[32];
  if (!name) {
    do snprintf(autoname, sizeof autoname, "c%d", g->next_auto++);
    while (node_name_taken(g, autoname));
    name = autoname;
  }
  bool isf = dtype_is_float(t);
  double *f = isf ? malloc((size_t)(numel + 1) * sizeof *f) : NULL;
  int64_t *iv = isf ? NULL : malloc((size_t)(numel + 1) * sizeof *iv);
  if (!f && !iv) return err_node(PORTC_ERR_NOMEM, "const %s: out of memory for %lld values", name, (long long)numel);
  for (int64_t i = 0; i < numel; i++) {
    int64_t k = v->n == 1 ? 0 : i;
    if (isf) f[i] = round_to_dtype(v->f[k], t);
    else iv[i] = wrap_int(v->i[k], t);
  }
  portc_node n = graph_add_source(g, OP_const, name, t, sh);
  if (n < 0) {
    free(f);
    free(iv);
    return n;
  }
  g->nodes[n].value = (cdata){.n = numel, .f = f, .i = iv};
  return n;
}
