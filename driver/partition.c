/*
 * partition.c: graph breaks. A target says which nodes it can run (its `supports` hook: op,
 * dtypes, attributes); when a graph holds others, the graph is cut into regions, each the
 * largest run of nodes one side can take, and each region compiles to a module of its own: on
 * the target, or on the fallback (the CPU target). A run runs the regions in order, handing each
 * the tensors it takes from the user's bindings or from earlier regions, as torch.compile runs
 * the code between its graph breaks in Python and ONNX Runtime hands a node its provider cannot
 * run to the CPU one.
 *
 *   x -> matmul -> softmax -> matmul -> y    with a target that lacks softmax:
 *   region 0 (target): x, w0 -> matmul -> t        (t: a region output, an input of region 1)
 *   region 1 (cpu):    t -> softmax -> s
 *   region 2 (target): s, w1 -> matmul -> y
 *
 * Regions are found by a topological walk that keeps taking nodes for the side it is on while
 * any is ready, so independent nodes never cause breaks of their own. `--fullgraph` makes any
 * break an error naming the node; PORTC_LOG=graph_breaks logs each one with the reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ir/bindings.h"
#include "module.h"

static const char *const fallback_name = "cpu";

typedef struct region {
  bool fallback;     /* runs on the fallback target */
  portc_graph *g;    /* the region as a graph: its inputs are what it takes */
  portc_module *m;
  int nin, *in_node; /* per input of g, in order: the user's node whose value it takes */
  int nout, *out_node; /* per output of g: the user's node it computes */
} region;

struct partition {
  int n;
  region *r;
  char *breaks; /* a line per node that breaks, with the reason (for explain) */
};

static bool is_source(enum op op) { return op_get(op)->kind == K_SOURCE; }

/* whether target t can run node i; why gets the reason when not */
static bool node_supported(const target *t, const portc_graph *g, int i, char *why, size_t len) {
  if (is_source(g->nodes[i].op) || !t->supports) return true;
  return t->supports(g, i, why, len);
}

bool graph_needs_breaks(const target *t, const portc_graph *g, bool fullgraph, portc_status *st) {
  *st = PORTC_OK;
  for (int i = 0; i < g->n && t->supports; i++) {
    char why[256] = "";
    if (node_supported(t, g, i, why, sizeof why)) continue;
    if (fullgraph)
      *st = err_set(PORTC_ERR_INVALID, "fullgraph: target %s cannot run node '%s' (%s): %s", t->name, g->nodes[i].name,
                    op_get(g->nodes[i].op)->name, why);
    return true;
  }
  return false;
}

void partition_free(partition *p) {
  for (int k = 0; p && k < p->n; k++) {
    portc_module_free(p->r[k].m);
    portc_graph_free(p->r[k].g);
    free(p->r[k].in_node);
    free(p->r[k].out_node);
  }
  if (p) free(p->r), free(p->breaks);
  free(p);
}

/* each compute node's region: a walk in topological order that stays on one side while it can */
static int assign_regions(const portc_graph *g, const bool *off, int *reg, bool *reg_fallback) {
  int *pending = calloc((size_t)g->n + 1, sizeof *pending);
  if (!pending) return -1;
  int left = 0;
  for (int i = 0; i < g->n; i++) {
    reg[i] = -1;
    if (is_source(g->nodes[i].op)) continue;
    left++;
    for (int j = 0; j < g->nodes[i].nin; j++) pending[i] += !is_source(g->nodes[g->nodes[i].in[j]].op);
  }
  int nreg = 0;
  bool side = false; /* the target's side first */
  while (left > 0) {
    bool took = false;
    for (int i = 0; i < g->n; i++) { /* nodes come after their operands: one pass takes a ready chain */
      if (is_source(g->nodes[i].op) || reg[i] >= 0 || pending[i] || off[i] != side) continue;
      if (!took) reg_fallback[nreg] = side, nreg++;
      took = true;
      reg[i] = nreg - 1;
      left--;
      for (int c = i + 1; c < g->n; c++)
        for (int j = 0; j < g->nodes[c].nin; j++) pending[c] -= g->nodes[c].in[j] == i;
    }
    side = !side;
  }
  free(pending);
  return nreg;
}

static portc_status grow(int **v, int n) {
  int *r = realloc(*v, sizeof **v * (size_t)(n + 1));
  if (!r) return err_set(PORTC_ERR_NOMEM, "compile: out of memory");
  *v = r;
  return PORTC_OK;
}

/* region k's nodes as a graph of their own */
static portc_status build_region(const portc_graph *g, const int *reg, int k, region *r) {
  char name[256];
  snprintf(name, sizeof name, "%s.region%d", g->name, k);
  portc_graph *sg = portc_graph_new(name);
  int *map = calloc((size_t)g->n + 1, sizeof *map);
  if (!sg || !map) {
    portc_graph_free(sg);
    free(map);
    return err_set(PORTC_ERR_NOMEM, "compile: out of memory");
  }
  r->g = sg;
  portc_status st = PORTC_OK;
  for (int s = 0; s < g->nsyms && !st; s++) /* the same symbols in the same order: shapes carry over as they are */
    if (graph_symbol(sg, g->syms[s]) != s) st = err_set(PORTC_ERR_NOMEM, "compile: out of memory");
  for (int i = 0; i < g->n; i++) map[i] = -1;
  for (int i = 0; i < g->n && !st; i++) {
    if (reg[i] != k) continue;
    const node *n = &g->nodes[i];
    int32_t in[KIR_MAX_IN];
    for (int j = 0; j < n->nin && !st; j++) {
      int p = n->in[j];
      const node *x = &g->nodes[p];
      if (map[p] < 0 && x->op == OP_const) {
        map[p] = graph_add_const(sg, x->name, x->dt, &x->sh, &x->value);
      } else if (map[p] < 0) { /* a user's source or an earlier region's value: an input here */
        map[p] = graph_add_source(sg, OP_input, x->name, x->dt, &x->sh);
        if (!(st = grow(&r->in_node, r->nin))) r->in_node[r->nin++] = p;
      }
      if (!st && map[p] < 0) st = portc_node_status(map[p]);
      in[j] = map[p];
    }
    if (st) break;
    node_spec spec;
    spec_init(&spec, n->op, n->nin, in);
    memcpy(spec.a, n->a, sizeof spec.a);
    spec.name = n->name;
    if ((map[i] = graph_add(sg, &spec)) < 0) st = portc_node_status(map[i]);
  }
  /* outputs: the user's outputs made here, and what later regions take */
  for (int i = 0; i < g->n && !st; i++) {
    if (reg[i] != k) continue;
    bool out = false;
    for (int o = 0; o < g->nout && !out; o++) out = g->outputs[o] == i;
    for (int c = i + 1; c < g->n && !out; c++)
      for (int j = 0; j < g->nodes[c].nin && !out; j++) out = g->nodes[c].in[j] == i && reg[c] != k;
    if (!out) continue;
    if (!(st = portc_output(sg, map[i])) && !(st = grow(&r->out_node, r->nout))) r->out_node[r->nout++] = i;
  }
  free(map);
  return st;
}

/* bindings for region r's graph with the user's symbol values */
static portc_bindings *region_bindings(const region *r, const portc_graph *g, const portc_bindings *b) {
  portc_bindings *rb = portc_bindings_new(r->g);
  for (int s = 0; rb && b && s < g->nsyms; s++)
    if (b->sym_set[s]) portc_bindings_set_symbol(rb, g->syms[s], b->sym[s]);
  return rb;
}

portc_status partition_compile(const portc_graph *g, const portc_compile_options *o, portc_bindings *b, const target *t, partition **out) {
  *out = NULL;
  partition *p = calloc(1, sizeof *p);
  bool *off = calloc((size_t)g->n + 1, sizeof *off), *side = calloc((size_t)g->n + 1, sizeof *side);
  int *reg = calloc((size_t)g->n + 1, sizeof *reg);
  portc_status st = p && off && side && reg ? PORTC_OK : err_set(PORTC_ERR_NOMEM, "compile: out of memory");
  strbuf why_all = {0};
  int nbreak = 0;
  for (int i = 0; i < g->n && !st; i++) {
    char why[256] = "";
    if ((off[i] = !node_supported(t, g, i, why, sizeof why))) {
      nbreak++;
      sb_printf(&why_all, "graph break: node '%s' (%s) runs on %s: target %s %s\n", g->nodes[i].name, op_get(g->nodes[i].op)->name,
                fallback_name, t->name, why);
      log_line("graph_breaks", "graph %s: node '%s' (%s) runs on %s: target %s %s", g->name, g->nodes[i].name,
               op_get(g->nodes[i].op)->name, fallback_name, t->name, why);
    }
  }
  int device;
  const target *fb = target_find(fallback_name, &device);
  char fwhy[512] = "";
  if (!st && (!fb || !fb->available(fwhy, sizeof fwhy)))
    st = err_set(PORTC_ERR_INVALID, "compile: target %s cannot run every node of graph %s, and the fallback target %s is not available: %s",
                 t->name, g->name, fallback_name, fwhy);
  if (!st && (p->n = assign_regions(g, off, reg, side)) < 0) st = err_set(PORTC_ERR_NOMEM, "compile: out of memory");
  if (!st && !(p->r = calloc((size_t)p->n + 1, sizeof *p->r))) st = err_set(PORTC_ERR_NOMEM, "compile: out of memory");
  if (!st && b && (st = bindings_bind_symbols(g, b))) err_set(st, "compile: %s", portc_last_error());
  int kept = 0; /* regions that give something: one of dead nodes alone (a gradient graph's unused view) is dropped */
  for (int k = 0; k < p->n && !st; k++) {
    region *r = &p->r[kept];
    r->fallback = side[k];
    if ((st = build_region(g, reg, k, r))) {
      kept++; /* partition_free frees what it built */
      break;
    }
    if (!r->nout) {
      portc_graph_free(r->g);
      free(r->in_node);
      free(r->out_node);
      memset(r, 0, sizeof *r);
      continue;
    }
    kept++;
    portc_compile_options ro = *o;
    ro.target = r->fallback ? fallback_name : o->target;
    ro.dump_dir = NULL, ro.dump_after = NULL, ro.fullgraph = false;
    portc_bindings *rb = region_bindings(r, g, b);
    st = rb ? module_compile(r->g, &ro, rb, NULL, &r->m) : err_set(PORTC_ERR_NOMEM, "compile: out of memory");
    if (st) err_set(st, "graph %s, region %d (on %s): %s", g->name, k, ro.target, portc_last_error());
    portc_bindings_free(rb);
  }
  if (p && p->r) p->n = kept;
  if (!st) {
    log_line("graph_breaks", "graph %s: %d node%s on %s, %d region%s", g->name, nbreak, nbreak == 1 ? "" : "s", fallback_name, p->n,
             p->n == 1 ? "" : "s");
    if (!(p->breaks = sb_take(&why_all))) st = err_set(PORTC_ERR_NOMEM, "compile: out of memory");
  } else {
    free(sb_take(&why_all));
  }
  free(off), free(side), free(reg);
  if (st) {
    partition_free(p);
    return st;
  }
  *out = p;
  return PORTC_OK;
}

/* one run: the regions in order, each fed from the user's bindings and earlier regions' outputs */
portc_status partition_run(portc_module *m, portc_bindings *b, portc_tensor **outputs) {
  const portc_graph *g = m->g;
  partition *p = m->parts;
  for (int k = 0; k < g->nout; k++) outputs[k] = NULL;
  portc_tensor **val = calloc((size_t)g->n + 1, sizeof *val);
  if (!val) return err_set(PORTC_ERR_NOMEM, "run: out of memory");
  portc_status st = b && b->g == g ? bindings_bind_symbols(g, b) : err_set(PORTC_ERR_INVALID, "run: the bindings were made for another graph");
  for (int k = 0; k < p->n && !st; k++) {
    region *r = &p->r[k];
    portc_bindings *rb = region_bindings(r, g, b);
    portc_tensor **got = calloc((size_t)r->nout + 1, sizeof *got);
    if (!rb || !got) st = err_set(PORTC_ERR_NOMEM, "run: out of memory");
    for (int j = 0; j < r->nin && !st; j++) {
      int u = r->in_node[j];
      if (!val[u]) st = bindings_source(g, b, u, &val[u]); /* a user's input or parameter, the first time a region takes it */
      if (!st) st = portc_bindings_set(rb, g->nodes[u].name, val[u]);
    }
    if (!st) st = portc_module_run(r->m, rb, got);
    if (st) err_set(st, "region %d (on %s): %s", k, r->m ? r->m->t->name : "?", portc_last_error());
    for (int j = 0; j < r->nout; j++) {
      if (!st) val[r->out_node[j]] = got[j];
      else portc_tensor_free(got[j]);
    }
    free(got);
    portc_bindings_free(rb);
  }
  for (int k = 0; k < g->nout && !st; k++) {
    int u = g->outputs[k];
    if (!val[u]) st = bindings_source(g, b, u, &val[u]); /* an output that is a source */
    portc_tensor *t = st ? NULL : val[u];
    if (t && !(outputs[k] = portc_tensor_new(t->dtype, t->rank, t->shape))) st = err_set(PORTC_ERR_NOMEM, "run: out of memory");
    if (outputs[k]) memcpy(outputs[k]->data, t->data, (size_t)portc_tensor_numel(t) * portc_dtype_size(t->dtype));
  }
  if (st)
    for (int k = 0; k < g->nout; k++) portc_tensor_free(outputs[k]), outputs[k] = NULL;
  for (int i = 0; i < g->n; i++) portc_tensor_free(val[i]);
  free(val);
  return st;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

portc_status partition_time(portc_module *m, portc_bindings *b, int iters, double *seconds) {
  portc_tensor **out = calloc((size_t)m->g->nout + 1, sizeof *out);
  if (!out) return err_set(PORTC_ERR_NOMEM, "time: out of memory");
  portc_status st = PORTC_OK;
  for (int i = 0; i < iters && !st; i++) {
    double t0 = now();
    st = partition_run(m, b, out);
    seconds[i] = now() - t0;
    for (int k = 0; k < m->g->nout; k++) portc_tensor_free(out[k]), out[k] = NULL;
  }
  free(out);
  return st;
}

portc_status partition_info(const portc_module *m, portc_bindings *b, portc_module_info *info) {
  const partition *p = m->parts;
  info->target = m->t->name;
  info->device = m->t->device();
  info->compile_seconds = m->compile_seconds;
  info->cache_hit = true;
  info->timer = "host clock";
  for (int k = 0; k < p->n; k++) {
    portc_bindings *rb = region_bindings(&p->r[k], m->g, b);
    portc_module_info ri = PORTC_MODULE_INFO_INIT;
    portc_status st = rb ? portc_module_info_get(p->r[k].m, rb, &ri) : err_set(PORTC_ERR_NOMEM, "info: out of memory");
    portc_bindings_free(rb);
    if (st) return st;
    info->kernels += ri.kernels, info->tuned_kernels += ri.tuned_kernels;
    info->cache_hit = info->cache_hit && ri.cache_hit;
    info->bytes += ri.bytes, info->flops += ri.flops, info->io_bytes += ri.io_bytes;
    info->uploaded_bytes += ri.uploaded_bytes, info->downloaded_bytes += ri.downloaded_bytes;
    info->intermediate_bytes += ri.intermediate_bytes;
    if (ri.arena_bytes > info->arena_bytes) info->arena_bytes = ri.arena_bytes;
    info->flushes_denormals = info->flushes_denormals || ri.flushes_denormals;
  }
  return PORTC_OK;
}

char *partition_explain(const portc_module *m, portc_bindings *b) {
  const partition *p = m->parts;
  strbuf out = {0};
  sb_printf(&out, "graph %s on %s (%s), with graph breaks: %d regions\n%s", m->g->name, m->t->name, m->t->device(), p->n, p->breaks);
  for (int k = 0; k < p->n; k++) {
    const region *r = &p->r[k];
    sb_printf(&out, "\n== region %d on %s: takes", k, r->m->t->name);
    for (int j = 0; j < r->nin; j++) sb_printf(&out, " %s", m->g->nodes[r->in_node[j]].name);
    sb_printf(&out, "; gives");
    for (int j = 0; j < r->nout; j++) sb_printf(&out, " %s", m->g->nodes[r->out_node[j]].name);
    portc_bindings *rb = region_bindings(r, m->g, b);
    char *text = rb ? portc_module_explain(r->m, rb) : NULL;
    sb_printf(&out, "\n%s", text ? text : portc_last_error());
    free(text);
    portc_bindings_free(rb);
  }
  char *s = sb_take(&out);
  if (!s) err_set(PORTC_ERR_NOMEM, "explain: out of memory");
  return s;
}
