/*
 * import.c: portc_graph_from_onnx(), the driver of the ONNX importer. It unpacks the model,
 * checks the opset, lists every operator it cannot translate in one message, orders the nodes
 * (refusing cycles and values nobody defines), folds each BatchNormalization into the Conv
 * before it, and translates node by node with the tables of ops_*.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

#define MIN_OPSET 13
#define MAX_OPSET 18
#define MAX_MODEL_BYTES ((size_t)INT32_MAX) /* protobuf's own limit */

op_fn onnx_op_lookup(const char *op_type) {
  const onnx_op *tables[] = {onnx_ops_elementwise, onnx_ops_nn, onnx_ops_shape, onnx_ops_resize, onnx_ops_recurrent, onnx_ops_index, onnx_ops_einsum,
                                onnx_ops_control, onnx_ops_sequence};
  for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
    for (const onnx_op *o = tables[t]; o->name; o++)
      if (!strcmp(o->name, op_type)) return o->fn;
  return NULL;
}

static bool default_domain(const char *d) { return !d || !*d || !strcmp(d, "ai.onnx"); }

static portc_status check_opset(imp *c) {
  Onnx__ModelProto *m = c->model;
  for (size_t i = 0; i < m->n_opset_import; i++)
    if (default_domain(m->opset_import[i]->domain)) c->opset = (int)m->opset_import[i]->version;
  if (!c->opset) return fail(c, PORTC_ERR_INVALID, "the model imports no version of the default ONNX opset");
  if (c->opset < MIN_OPSET || c->opset > MAX_OPSET)
    return fail(c, PORTC_ERR_INVALID, "opset %d is not supported: portc imports opsets %d to %d (re-export with opset_version=%d, say)", c->opset,
                MIN_OPSET, MAX_OPSET, c->opset < MIN_OPSET ? 13 : 17);
  return PORTC_OK;
}

/* the nodes of gp, and of the subgraphs within (Loop bodies), whose operators have no translator */
static void list_unsupported(imp *c, const Onnx__GraphProto *gp, strbuf *b, int *n) {
  for (size_t i = 0; i < gp->n_node; i++) {
    const Onnx__NodeProto *np = gp->node[i];
    const char *op = np->op_type ? np->op_type : "";
    if (!default_domain(np->domain) || !onnx_op_lookup(op)) {
      sb_printf(b, "\n  %s%s%s (node '%s', opset %d)", default_domain(np->domain) ? "" : np->domain, default_domain(np->domain) ? "" : "::", op,
                np->name && *np->name ? np->name : "(unnamed)", c->opset);
      (*n)++;
    }
    for (size_t a = 0; a < np->n_attribute; a++) {
      const Onnx__AttributeProto *at = np->attribute[a];
      if (at->g) list_unsupported(c, at->g, b, n);
      for (size_t k = 0; k < at->n_graphs; k++) list_unsupported(c, at->graphs[k], b, n);
    }
  }
}

/* every node whose operator has no translator, in one message */
static portc_status check_supported(imp *c) {
  strbuf b = {0};
  int n = 0;
  list_unsupported(c, c->model->graph, &b, &n);
  if (!n) return PORTC_OK;
  char *list = sb_take(&b);
  portc_status st = fail(c, PORTC_ERR_INVALID, "%d node%s operators portc does not import:%s", n, n == 1 ? " uses" : "s use", list ? list : "");
  free(list);
  return st;
}

static portc_status add_inputs(imp *c) {
  const Onnx__GraphProto *gp = c->model->graph;
  for (size_t i = 0; i < gp->n_initializer; i++) {
    const Onnx__TensorProto *t = gp->initializer[i];
    if (!t->name || !*t->name) return fail(c, PORTC_ERR_PARSE, "initializer %zu has no name", i);
    oval *v = val_new(c, t->name);
    portc_status st = v ? tensor_value(c, t, v) : PORTC_ERR_PARSE;
    if (st) return st;
  }
  if (gp->n_sparse_initializer) return fail(c, PORTC_ERR_INVALID, "sparse initializers are not supported");
  for (size_t i = 0; i < gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = gp->input[i];
    if (!vi->name || !*vi->name) return fail(c, PORTC_ERR_PARSE, "graph input %zu has no name", i);
    if (val_find(c, vi->name)) continue; /* an initializer listed as an input (IR version 3) */
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type || !tp->tensor_type->has_elem_type)
      return fail(c, PORTC_ERR_INVALID, "graph input '%s' is not a tensor with an element type", vi->name);
    portc_dtype dt;
    if (!onnx_dtype(tp->tensor_type->elem_type, &dt))
      return fail(c, PORTC_ERR_DTYPE, "graph input '%s' has element type %s; portc takes float, float16, bfloat16, int32, int64 and bool", vi->name,
                  onnx_dtype_name(tp->tensor_type->elem_type));
    const Onnx__TensorShapeProto *sp = tp->tensor_type->shape;
    if (!sp) return fail(c, PORTC_ERR_SHAPE, "graph input '%s' has no shape; portc needs its rank", vi->name);
    if (sp->n_dim > PORTC_MAX_RANK) return fail(c, PORTC_ERR_SHAPE, "graph input '%s' has rank %zu, more than %d", vi->name, sp->n_dim, PORTC_MAX_RANK);
    portc_dim dims[PORTC_MAX_RANK];
    char syms[PORTC_MAX_RANK][96];
    for (size_t d = 0; d < sp->n_dim; d++) {
      const Onnx__TensorShapeProto__Dimension *dm = sp->dim[d];
      if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
        if (dm->dim_value < 0 || dm->dim_value > ((int64_t)1 << 40))
          return fail(c, PORTC_ERR_SHAPE, "graph input '%s' has dimension %zu of size %lld", vi->name, d, (long long)dm->dim_value);
        dims[d] = (portc_dim){dm->dim_value, NULL};
        continue;
      }
      char raw[96];
      if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dm->dim_param && *dm->dim_param) snprintf(raw, sizeof raw, "%s", dm->dim_param);
      else snprintf(raw, sizeof raw, "%s_dim%zu", vi->name, d); /* unnamed: a symbol of its own */
      sanitize(raw, syms[d], sizeof syms[d]);
      dims[d] = (portc_dim){0, syms[d]};
    }
    char name[128];
    unique_name(c, vi->name, name, sizeof name);
    oval *v = val_new(c, vi->name);
    if (!v) return PORTC_ERR_PARSE;
    v->node = portc_input(c->g, name, dt, (int)sp->n_dim, dims);
    if (v->node < 0) return fail(c, portc_node_status(v->node), "graph input '%s': %s", vi->name, portc_last_error());
  }
  return PORTC_OK;
}

/* what node i reads: its inputs, then the names its subgraphs read from the graph (reads[i]) */
typedef struct node_reads {
  const char **outer;
  int nouter;
} node_reads;

static const char *read_name(const Onnx__NodeProto *np, const node_reads *r, int k) {
  return k < (int)np->n_input ? np->input[k] : r->outer[k - (int)np->n_input];
}

/* declares every node output, counts uses, and orders the nodes so that each reads defined values */
static portc_status order_nodes(imp *c, int *order) {
  const Onnx__GraphProto *gp = c->model->graph;
  int n = (int)gp->n_node;
  node_reads *reads = calloc((size_t)n + 1, sizeof *reads);
  if (!reads) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  portc_status st = PORTC_OK;
  for (int i = 0; i < n && !st; i++) {
    const Onnx__NodeProto *np = gp->node[i];
    for (size_t k = 0; k < np->n_output && !st; k++) {
      if (!np->output[k] || !*np->output[k]) continue;
      oval *v = val_new(c, np->output[k]);
      if (!v) st = PORTC_ERR_PARSE;
      else v->producer = i;
    }
    if (!st && (np->n_input > ONNX_MAX_IO || np->n_output > ONNX_MAX_IO)) {
      c->np = np;
      st = fail(c, PORTC_ERR_INVALID, "more than %d inputs or outputs", ONNX_MAX_IO);
    }
    if (!st && (reads[i].nouter = onnx_subgraph_reads(np, &reads[i].outer)) < 0) st = fail(c, PORTC_ERR_NOMEM, "out of memory");
  }
  for (int i = 0; i < n && !st; i++) {
    const Onnx__NodeProto *np = gp->node[i];
    for (int k = 0; k < (int)np->n_input + reads[i].nouter; k++) {
      const char *in = read_name(np, &reads[i], k);
      if (!in || !*in) continue;
      oval *v = val_find(c, in);
      if (!v) {
        c->np = np;
        st = k < (int)np->n_input ? fail(c, PORTC_ERR_INVALID, "reads '%s', which no node, graph input or initializer defines (a missing initializer?)", in)
                                  : fail(c, PORTC_ERR_INVALID, "its body reads '%s', which nothing in or around it defines", in);
        break;
      }
      v->uses++;
    }
  }
  bool *done = st ? NULL : calloc((size_t)n + 1, sizeof *done);
  if (!st && !done) st = fail(c, PORTC_ERR_NOMEM, "out of memory");
  int placed = 0;
  for (bool progress = !st; progress && placed < n;) {
    progress = false;
    for (int i = 0; i < n; i++) {
      if (done[i]) continue;
      bool ready = true;
      for (int k = 0; k < (int)gp->node[i]->n_input + reads[i].nouter && ready; k++) {
        const char *in = read_name(gp->node[i], &reads[i], k);
        if (!in || !*in) continue;
        oval *v = val_find(c, in);
        ready = v->producer < 0 || done[v->producer];
      }
      if (ready) done[i] = true, order[placed++] = i, progress = true;
    }
  }
  for (int i = 0; i < n && placed < n && !st; i++)
    if (!done[i]) {
      c->np = gp->node[i];
      st = fail(c, PORTC_ERR_INVALID, "is part of a cycle: its inputs depend on its own outputs");
    }
  for (int i = 0; i < n; i++) free(reads[i].outer);
  free(reads);
  free(done);
  return st;
}

/* BatchNormalization after a Conv whose weights are initializers, and that only it reads: fold
 * scale = gamma / sqrt(var + eps) into the weights, (bias - mean) * scale + beta into the bias */
static portc_status fold_batchnorm(imp *c, const int *order) {
  const Onnx__GraphProto *gp = c->model->graph;
  for (int o = 0; o < (int)gp->n_node; o++) {
    int i = order[o];
    const Onnx__NodeProto *bn = gp->node[i];
    if (strcmp(bn->op_type, "BatchNormalization") || bn->n_input != 5 || !default_domain(bn->domain)) continue;
    oval *x = val_find(c, bn->input[0]);
    if (!x || x->producer < 0 || x->uses != 1) continue;
    const Onnx__NodeProto *conv = gp->node[x->producer];
    if (strcmp(conv->op_type, "Conv") || conv->n_input < 2 || !default_domain(conv->domain)) continue;
    oval *w = val_find(c, conv->input[1]), *b = conv->n_input > 2 && *conv->input[2] ? val_find(c, conv->input[2]) : NULL;
    oval *p[4];
    bool ok = w && w->f && w->rank == 4 && w->producer < 0 && (!b || (b->f && b->producer < 0 && b->rank == 1 && b->shape[0] == w->shape[0]));
    for (int k = 0; k < 4 && ok; k++) ok = (p[k] = val_find(c, bn->input[1 + k])) && p[k]->f && p[k]->rank == 1 && p[k]->shape[0] == w->shape[0];
    if (!ok) continue;
    c->np = bn;
    double eps = attr_float(c, "epsilon", 1e-5);
    c->np = NULL;
    int64_t oc = w->shape[0], per = val_numel(w) / (oc ? oc : 1);
    portc_tensor *nw = portc_tensor_new(w->f->t->dtype, 4, w->shape), *nb = portc_tensor_new(w->f->t->dtype, 1, &oc);
    pdata *dw = pdata_new(nw), *db = pdata_new(nb);
    if (!dw || !db) {
      pdata_release(dw), pdata_release(db);
      return fail(c, PORTC_ERR_NOMEM, "out of memory");
    }
    for (int64_t ch = 0; ch < oc; ch++) {
      double g = portc_tensor_get(p[0]->f->t, ch), beta = portc_tensor_get(p[1]->f->t, ch);
      double mean = portc_tensor_get(p[2]->f->t, ch), var = portc_tensor_get(p[3]->f->t, ch);
      double s = g / sqrt(var + eps), bias = b ? portc_tensor_get(b->f->t, ch) : 0;
      for (int64_t k = 0; k < per; k++) portc_tensor_set(nw, ch * per + k, portc_tensor_get(w->f->t, ch * per + k) * s);
      portc_tensor_set(nb, ch, (bias - mean) * s + beta);
    }
    c->fold[x->producer] = (bn_fold){.w = dw, .b = db, .bias_name = bn->input[2]};
    c->fold[i].identity = true;
  }
  return PORTC_OK;
}

static bool auto_named(const char *s) {
  if (*s++ != 't' || !*s) return false;
  while (*s >= '0' && *s <= '9') s++;
  return !*s;
}

portc_status onnx_translate_node(imp *c, const Onnx__NodeProto *np, int index) {
  c->np = np;
  c->nin = (int)np->n_input;
  for (int k = 0; k < c->nin; k++) {
    c->in[k] = *np->input[k] ? val_find(c, np->input[k]) : NULL;
    if (c->in[k] && c->in[k]->is_seq && !onnx_takes_sequences(np->op_type))
      return fail(c, PORTC_ERR_INVALID, "input %d ('%s') is a sequence; %s takes tensors", k, np->input[k], np->op_type);
  }
  portc_status st;
  const bn_fold *fold = index >= 0 ? &c->fold[index] : NULL;
  if (fold && fold->identity) st = out_alias(c, 0, c->in[0]);
  else if (fold && fold->w) { /* a Conv with folded weights: swap them in */
    oval w = *c->in[1], b = {0};
    char wname[160], bname[160]; /* named for what they came from: explain shows the fold */
    snprintf(wname, sizeof wname, "%s.bn_folded", np->input[1]);
    snprintf(bname, sizeof bname, "%s.bn_folded", fold->bias_name);
    w.f = fold->w, w.node = -1, w.name = wname;
    b.name = bname;
    b.known = true, b.f = fold->b, b.node = -1, b.dt = b.f->t->dtype, b.rank = 1, b.shape[0] = b.f->t->shape[0];
    c->in[1] = &w, c->in[2] = &b, c->nin = 3;
    st = onnx_op_lookup(np->op_type)(c);
  } else if (onnx_grid_takes(c, np->op_type)) st = onnx_grid_op(c, np->op_type);
  else st = onnx_op_lookup(np->op_type)(c);
  if (st) return st;
  c->np = np; /* a Loop has translated its body's nodes */
  for (size_t k = 0; k < np->n_output; k++) {
    oval *v = *np->output[k] ? val_find(c, np->output[k]) : NULL;
    if (v && v->uses && v->node < 0 && !v->known && !v->is_seq && !v->grid)
      return fail(c, PORTC_ERR_INVALID, "output %zu ('%s') is not produced by portc's translation", k, v->name);
    if (v && v->node >= 0 && auto_named(c->g->nodes[v->node].name)) { /* explain and errors speak the model's names */
      char name[128];
      unique_name(c, v->name, name, sizeof name);
      portc_set_name(c->g, v->node, name);
    }
  }
  return PORTC_OK;
}

static portc_status translate(imp *c, const int *order) {
  const Onnx__GraphProto *gp = c->model->graph;
  for (int o = 0; o < (int)gp->n_node; o++) {
    portc_status st = onnx_translate_node(c, gp->node[order[o]], order[o]);
    if (st) return st;
  }
  c->np = NULL;
  return PORTC_OK;
}

static portc_status add_outputs(imp *c) {
  const Onnx__GraphProto *gp = c->model->graph;
  if (!gp->n_output) return fail(c, PORTC_ERR_INVALID, "the graph has no outputs");
  for (size_t i = 0; i < gp->n_output; i++) {
    const char *nm = gp->output[i]->name;
    oval *v = nm ? val_find(c, nm) : NULL;
    if (!v) return fail(c, PORTC_ERR_INVALID, "graph output '%s' is not defined", nm ? nm : "");
    if (v->is_seq) return fail(c, PORTC_ERR_INVALID, "graph output '%s' is a sequence of %d tensors; a portc graph's outputs are tensors", nm, v->nseq);
    portc_node n = val_node(c, v);
    if (n < 0) return portc_node_status(n);
    char name[128];
    sanitize(nm, name, sizeof name);
    if (strcmp(c->g->nodes[n].name, name) != 0) {
      unique_name(c, nm, name, sizeof name);
      portc_set_name(c->g, n, name);
    }
    portc_status st = portc_output(c->g, n);
    if (st) return fail(c, st, "graph output '%s': %s", nm, portc_last_error());
  }
  return PORTC_OK;
}

static void imp_free(imp *c) {
  for (int i = 0; i < c->nv; i++) {
    pdata_release(c->v[i].f);
    free(c->v[i].i);
    free(c->v[i].seq);
    free(c->v[i].grid);
  }
  for (int i = 0; i < c->nowned; i++) free(c->owned[i]);
  free(c->owned);
  for (size_t i = 0; c->fold && i < c->model->graph->n_node; i++) pdata_release(c->fold[i].w), pdata_release(c->fold[i].b);
  free(c->fold);
  free(c->v);
  free(c->hash);
  if (c->model) onnx__model_proto__free_unpacked(c->model, NULL);
}

static portc_status import(imp *c, const void *data, size_t size, portc_graph **out) {
  if (size > MAX_MODEL_BYTES) return fail(c, PORTC_ERR_INVALID, "%zu bytes is more than a protobuf message can hold (2 GiB)", size);
  c->model = onnx__model_proto__unpack(NULL, size, data);
  if (!c->model) return fail(c, PORTC_ERR_PARSE, "not an ONNX model: the protobuf message is malformed or truncated");
  if (!c->model->graph) return fail(c, PORTC_ERR_PARSE, "the model has no graph");
  portc_status st = check_opset(c);
  if (!st) st = check_supported(c);
  if (st) return st;
  const Onnx__GraphProto *gp = c->model->graph;
  char gname[128];
  sanitize(gp->name && *gp->name ? gp->name : "onnx_model", gname, sizeof gname);
  int n = (int)gp->n_node;
  int *order = malloc(sizeof(int) * (size_t)(n + 1));
  c->fold = calloc((size_t)n + 1, sizeof *c->fold);
  if (!(c->g = portc_graph_new(gname)) || !order || !c->fold) st = fail(c, PORTC_ERR_NOMEM, "out of memory");
  if (!st) st = add_inputs(c);
  if (!st) st = order_nodes(c, order);
  if (!st) st = fold_batchnorm(c, order);
  if (!st) st = translate(c, order);
  if (!st) st = add_outputs(c);
  free(order);
  char *report = NULL;
  if (!st && portc_graph_verify(c->g, &report) != PORTC_OK) st = fail(c, PORTC_ERR_INTERNAL, "the imported graph does not verify:\n%s", report ? report : "");
  free(report);
  if (st) {
    portc_graph_free(c->g);
    return st;
  }
  *out = c->g;
  return PORTC_OK;
}

portc_status portc_graph_from_onnx_memory(const void *data, size_t size, const char *source_name, portc_graph **out) {
  if (!out) return err_set(PORTC_ERR_INVALID, "onnx: out is NULL");
  *out = NULL;
  if (!data && size) return err_set(PORTC_ERR_INVALID, "onnx: data is NULL");
  imp c = {.source = source_name ? source_name : "<memory>"};
  portc_status st = import(&c, data ? data : "", size, out);
  imp_free(&c);
  return st;
}

portc_status portc_graph_from_onnx(const char *path, portc_graph **out) {
  if (!out || !path) return err_set(PORTC_ERR_INVALID, "onnx: path or out is NULL");
  *out = NULL;
  char why[160];
  FILE *fp = file_open_read(path, why, sizeof why);
  if (!fp) return err_set(PORTC_ERR_IO, "%s: cannot open: %s", path, why);
  long size = fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
  unsigned char *buf = size >= 0 && (size_t)size <= MAX_MODEL_BYTES ? malloc((size_t)size + 1) : NULL;
  portc_status st = PORTC_OK;
  if (size < 0) st = err_set(PORTC_ERR_IO, "%s: cannot seek: %m", path);
  else if ((size_t)size > MAX_MODEL_BYTES) st = err_set(PORTC_ERR_INVALID, "%s: %ld bytes is more than an ONNX file can hold (2 GiB); keep the weights as external data", path, size);
  else if (!buf) st = err_set(PORTC_ERR_NOMEM, "%s: out of memory", path);
  else if (fseek(fp, 0, SEEK_SET) != 0 || fread(buf, 1, (size_t)size, fp) != (size_t)size) st = err_set(PORTC_ERR_IO, "%s: read failed", path);
  fclose(fp);
  if (!st) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    imp c = {.source = path, .basedir = dir};
    st = import(&c, buf, (size_t)size, out);
    imp_free(&c);
    if (!st) {
      free((*out)->basedir);
      (*out)->basedir = strdup(dir);
    }
  }
  free(buf);
  return st;
}
