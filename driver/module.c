/*
 * module.c: the public face of compilation: portc_compile lowers a graph, renders it in the
 * target's dialect and loads it; portc_module_run binds inputs, plans the arena, and launches
 * the kernels in order. A module compiled without `dynamic` is specialized to the symbol values
 * it was compiled for; a run with other values runs a variant compiled for them (recompile.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ir/api_struct.h"
#include "../ir/bindings.h"
#include "../ir/dtype.h"
#include "../lower/pipeline.h"
#include "../targets/cache.h"
#include "../codegen/emit.h"
#include "module.h"


static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int portc_target_count(void) { return target_count(); }
const char *portc_target_name(int i) { return target_at(i) ? target_at(i)->name : NULL; }
/* a GPU target in a process forked after its parent started the GPU drivers is not available */
bool portc_target_available(int i, char *why, size_t len) {
  const target *t = target_at(i);
  return t && (!t->gpu || target_fork_check(t->name, why, len)) && t->available(why, len);
}
const char *portc_target_device(int i) { return target_at(i) ? target_at(i)->device() : NULL; }
void portc_target_describe(int i, void *file) {
  const target *t = target_at(i);
  char why[512];
  if (t && t->gpu && !target_fork_check(t->name, why, sizeof why)) fprintf(file, "  %s\n", why);
  else if (t && t->describe) t->describe(file);
}

portc_status portc_cache_info(char *dir, size_t len, int64_t *entries, int64_t *bytes) {
  if (!dir || !len || !entries || !bytes) return err_set(PORTC_ERR_INVALID, "cache_info: NULL argument");
  return cache_stats(dir, len, entries, bytes);
}

portc_status portc_cache_clear(int64_t *removed) {
  int64_t n = 0;
  portc_status st = cache_clear(&n);
  if (removed) *removed = n;
  return st;
}

/* device allocations are kept per buffer, with one more slot for the arena */
static void dev_release(portc_module *m) {
  for (int b = 0; m->dev_obj && b <= m->km->nbuf; b++)
    if (m->dev_obj[b]) m->t->gpu->free(m->handle, m->dev_obj[b]);
  free(m->dev_obj);
  free(m->dev_bytes);
  m->dev_obj = NULL;
  m->dev_bytes = NULL;
}

void portc_module_free(portc_module *m) {
  if (!m) return;
  module_variants_free(m);
  char why[512];
  /* in a process forked from the one whose GPU driver holds the module's device objects, those
   * stay where they are: the driver is not here to release them */
  bool device_here = !m->t || !m->t->gpu || target_fork_check(m->target_name ? m->target_name : m->t->name, why, sizeof why);
  if (m->km && m->handle && device_here) resident_release(m); /* values kept on the device go back to their bindings */
  free(m->target_name);
  pthread_mutex_destroy(&m->lock);
  partition_free(m->parts);
  if (m->km && m->handle && device_here) dev_release(m);
  else free(m->dev_obj), free(m->dev_bytes);
  if (m->handle && device_here) m->t->unload(m->handle);
  kir_module_free(m->km);
  free(m->symvals);
  free(m->ksym);
  free(m->src_node);
  portc_graph_free(m->owned_graph); /* last: the variants and the lowered graph are done with it */
  free(m->file);
  free(m);
}

static portc_status write_dump(const char *dir, const char *name, const char *source) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.c", dir, name);
  FILE *f = fopen(path, "w");
  if (!f || fputs(source, f) < 0) {
    if (f) fclose(f);
    return err_set(PORTC_ERR_IO, "--dump %s: cannot write %s", dir, path);
  }
  fclose(f);
  return PORTC_OK;
}

static portc_status map_module(portc_module *m) {
  const portc_graph *lg = m->km->g;
  m->ksym = calloc((size_t)lg->nsyms + 1, sizeof *m->ksym);
  m->src_node = malloc(sizeof *m->src_node * (size_t)(m->km->nbuf + 1));
  if (!m->ksym || !m->src_node) return err_set(PORTC_ERR_NOMEM, "compile: out of memory");
  for (int k = 0; k < lg->nsyms; k++) m->ksym[k] = graph_find_symbol(m->g, lg->syms[k]);
  for (int b = 0; b < m->km->nbuf; b++) {
    const kir_buf *kb = &m->km->buf[b];
    m->src_node[b] = kb->role == BUF_INPUT || kb->role == BUF_PARAM ? graph_find(m->g, lg->nodes[kb->node].name) : -1;
  }
  return PORTC_OK;
}

static portc_status compile_module(const portc_graph *g, const portc_compile_options *o, portc_bindings *b, const tune_knobs *const *force,
                                   const module_extra *x, portc_module **out);

portc_status module_options(const portc_graph *g, const portc_compile_options *opts, portc_bindings *b, portc_compile_options *whole) {
  api_struct_in(whole, sizeof *whole, opts, API_FIRST_SIZE(portc_compile_options, dump_after));
  if (whole->mode == PORTC_MODE_MAX_AUTOTUNE) {
    /* time what the tables do not hold yet, store it in the user's table, then compile as usual */
    portc_tune_options to = PORTC_TUNE_OPTIONS_INIT;
    to.target = whole->target, to.dynamic = whole->dynamic, to.eager = whole->eager, to.missing_only = true;
    portc_status st = portc_tune(g, &to, b, NULL);
    if (st) return st;
    whole->mode = PORTC_MODE_DEFAULT;
  }
  return PORTC_OK;
}

portc_status portc_compile(const portc_graph *g, const portc_compile_options *opts, portc_bindings *b, portc_module **out) {
  if (!g || !out) return err_set(PORTC_ERR_INVALID, "compile: NULL argument");
  *out = NULL;
  portc_compile_options whole;
  portc_status st = module_options(g, opts, b, &whole);
  return st ? st : module_compile(g, &whole, b, NULL, out);
}

portc_status module_compile(const portc_graph *g, const portc_compile_options *o, portc_bindings *b, const tune_knobs *const *force,
                            portc_module **out) {
  return compile_module(g, o, b, force, NULL, out);
}

portc_status module_compile_extra(const portc_graph *g, const portc_compile_options *o, portc_bindings *b, const module_extra *x,
                                  portc_module **out) {
  return compile_module(g, o, b, NULL, x, out);
}

/* the schedules a module file's kernels were built with, on kernels lowered the same way */
static portc_status file_schedules(kir_module *km, const module_extra *x, const char *graph) {
  if (x->nsched != km->nk)
    return err_set(PORTC_ERR_INVALID, "module file: graph %s lowers to %d kernels here, and the file holds %d: it was written by a portc that lowers it differently; compile it again",
                   graph, km->nk, x->nsched);
  for (int i = 0; i < km->nk; i++) km->k[i].sched = x->sched[i];
  return PORTC_OK;
}

static portc_status compile_module(const portc_graph *g, const portc_compile_options *o, portc_bindings *b, const tune_knobs *const *force,
                                   const module_extra *x, portc_module **out) {
  *out = NULL;
  const char *tname = o->target ? o->target : "cpu";
  int device = -1;
  const target *t = target_find(tname, &device);
  if (!t) return err_set(PORTC_ERR_INVALID, "compile: unknown target '%s'", tname);
  char why[512] = "";
  if (t->gpu && !target_fork_check(tname, why, sizeof why)) return err_set(PORTC_ERR_DEVICE, "compile: %s", why);
  bool (*can_run)(char *, size_t) = x && x->from && t->runs_prebuilt ? t->runs_prebuilt : t->available;
  if (!can_run(why, sizeof why)) return err_set(PORTC_ERR_INVALID, "compile: target %s is not available: %s", tname, why);
  if (x && (x->from || x->record) && !t->artifacts)
    return err_set(PORTC_ERR_INVALID, "compile: target %s cannot write or run module files (.portc) yet", tname);
  if (o->mode != PORTC_MODE_DEFAULT && o->mode != PORTC_MODE_REDUCE_OVERHEAD && o->mode != PORTC_MODE_MAX_AUTOTUNE)
    return err_set(PORTC_ERR_INVALID, "compile: unknown mode %d (default 0, reduce-overhead 1, max-autotune 2)", (int)o->mode);
  if (o->dump_after) {
    bool known = false;
    for (int i = 0; lower_pass_names[i]; i++) known = known || strcmp(o->dump_after, lower_pass_names[i]) == 0;
    if (!known) {
      char list[512] = "";
      for (int i = 0; lower_pass_names[i]; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", lower_pass_names[i]);
      return err_set(PORTC_ERR_INVALID, "compile: dump_after '%s' is not a pass (%s)", o->dump_after, list);
    }
  }
  char *report = NULL;
  if (portc_graph_verify(g, &report) != PORTC_OK) {
    portc_status s = err_set(PORTC_ERR_INVALID, "%s", report ? report : portc_last_error());
    free(report);
    return s;
  }
  portc_status st = PORTC_OK;
  bool breaks = graph_needs_breaks(t, g, o->fullgraph, &st);
  if (st) return st;
  if (breaks && x && (x->from || x->record))
    return err_set(PORTC_ERR_INVALID, "compile: graph %s has nodes target %s cannot run; module files of graphs with breaks are not written yet", g->name, tname);
  double t0 = now();
  portc_module *m = calloc(1, sizeof *m);
  if (!m) return err_set(PORTC_ERR_NOMEM, "compile: out of memory");
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&m->lock, &attr);
  pthread_mutexattr_destroy(&attr);
  m->t = t;
  m->g = g;
  m->opts = *o, m->opts.dump_dir = m->opts.dump_after = NULL; /* a recompile writes no dumps */
  if (!(m->target_name = strdup(tname))) {
    portc_module_free(m);
    return err_set(PORTC_ERR_NOMEM, "compile: out of memory");
  }
  m->opts.target = m->target_name;
  if (breaks) { /* the regions' modules keep their own guards */
    m->dynamic = true;
    if ((st = partition_compile(g, o, b, t, &m->parts))) {
      portc_module_free(m);
      return st;
    }
    m->compile_seconds = now() - t0;
    *out = m;
    return PORTC_OK;
  }
  m->dynamic = o->dynamic || g->nsyms == 0;
  if (!m->dynamic) {
    if (!b) {
      portc_module_free(m);
      return err_set(PORTC_ERR_SHAPE, "compile: graph %s has symbol %s: give its value (bindings), or compile with dynamic", g->name, g->syms[0]);
    }
    if ((st = bindings_bind_symbols(g, b))) {
      portc_module_free(m);
      return st;
    }
    m->symvals = calloc((size_t)g->nsyms, sizeof *m->symvals);
    for (int k = 0; m->symvals && k < g->nsyms; k++) {
      if (!b->sym_set[k]) {
        portc_module_free(m);
        return err_set(PORTC_ERR_SHAPE, "compile: symbol %s has no value: set it, or compile with dynamic", g->syms[k]);
      }
      m->symvals[k] = b->sym[k];
    }
    if (!m->symvals) {
      portc_module_free(m);
      return err_set(PORTC_ERR_NOMEM, "compile: out of memory");
    }
  }
  /* PORTC_ATTENTION=decomposed: matmul, softmax, matmul everywhere; =kernel: the attention kernel
   * for every float dtype where the target has one (A/B runs) */
  const char *att = getenv("PORTC_ATTENTION");
  unsigned whole = t->attention_kernel;
  if (att && strcmp(att, "decomposed") == 0) whole = 0;
  else if (att && strcmp(att, "kernel") == 0 && whole) whole = TARGET_ATTENTION_FLOATS;
  lower_options lo = {.eager = o->eager, .symvals = m->dynamic ? NULL : m->symvals, .dump_after = o->dump_after, .attention = whole,
                      .channels_last = t->channels_last_convs ? t->channels_last_convs(device) : 0,
                      .max_loads = t->max_kernel_loads ? t->max_kernel_loads(device) : 0, .copy_merged_rows = t->copy_merged_rows};
  if (!(st = lower_graph(g, &lo, &m->km)) && lo.max_loads && !lo.eager && kernels_wider_than(m->km, lo.max_loads + 1)) {
    /* a row kernel joined more than the target binds (fusion bounds expressions, not the stores
     * and operands a row kernel gathers): the graph lowers again, one kernel per op */
    log_line("fusion", "graph %s: a fused kernel binds more than the %d buffers target %s allows; one kernel per op instead", g->name,
             lo.max_loads + 1, t->name);
    kir_module_free(m->km);
    m->km = NULL;
    lo.eager = true;
    st = lower_graph(g, &lo, &m->km);
  }
  if (st || (st = map_module(m))) {
    portc_module_free(m);
    return st;
  }
  if (x && x->sched) {
    if ((st = file_schedules(m->km, x, g->name))) {
      portc_module_free(m);
      return st;
    }
  } else {
    for (int i = 0; i < m->km->nk && t->schedule; i++) t->schedule(m->km, i, device);
    if (!o->rules_only) tune_schedules(t, m->km, device, force);
    for (int i = 0; i < m->km->nk && o->rules_only; i++) snprintf(m->km->k[i].sched.source, sizeof m->km->k[i].sched.source, "rules");
  }
  if ((st = derived_mark(m))) {
    portc_module_free(m);
    return st;
  }
  if (log_enabled("fusion")) kir_print(m->km, stderr);
  char *source = emit_module(t->dialect, m->km);
  if (!source) {
    portc_module_free(m);
    return PORTC_ERR_NOMEM;
  }
  if (log_enabled("kernels")) fprintf(stderr, "%s\n", source);
  if (o->dump_dir && (st = write_dump(o->dump_dir, g->name, source))) {
    free(source);
    portc_module_free(m);
    return st;
  }
  load_request req = {.source = source, .km = m->km, .graph_name = g->name, .device = device,
                      .reduce_overhead = o->mode == PORTC_MODE_REDUCE_OVERHEAD, /* a target without launches to record runs as usual */
                      .from = x ? x->from : NULL, .record = x ? x->record : NULL};
  st = t->load(&req, &m->handle, &m->cache_hit);
  free(source);
  if (st) {
    portc_module_free(m);
    return st;
  }
  m->compile_seconds = now() - t0;
  *out = m;
  return PORTC_OK;
}

/* symbol values for the lowered graph's kernels, checked against the specialization */
portc_status module_symbols(portc_module *m, portc_bindings *b, int64_t *S) {
  portc_status st = bindings_bind_symbols(m->g, b);
  if (st) return st;
  for (int k = 0; k < m->g->nsyms; k++) {
    if (!b->sym_set[k])
      return err_set(PORTC_ERR_SHAPE, "symbol %s has no value: set it, or bind an input that has it", m->g->syms[k]);
    if (m->symvals && m->symvals[k] != b->sym[k])
      return err_set(PORTC_ERR_SHAPE, "this module was compiled for %s=%lld, and this run has %s=%lld: compile with dynamic, or again",
                     m->g->syms[k], (long long)m->symvals[k], m->g->syms[k], (long long)b->sym[k]);
  }
  for (int k = 0; k < m->km->g->nsyms; k++) S[k] = m->ksym[k] >= 0 ? b->sym[m->ksym[k]] : 0;
  return PORTC_OK;
}

typedef struct run_state {
  void **bufs;
  portc_tensor **owned; /* per buffer: a tensor we allocated (sources and outputs) */
  void *arena;
  dev_buf *dev;         /* targets with their own memory: per buffer, what bufs point to */
  bool *on_device;      /* per buffer: a parameter the device holds already, or an update's value that stays there */
  bool derived_ready;   /* the kept buffers hold the derived kernels' results: they are not launched (derived.c) */
  int64_t S[64];
} run_state;

static void run_state_free(portc_module *m, run_state *r) {
  for (int b = 0; r->owned && b < m->km->nbuf; b++) portc_tensor_free(r->owned[b]);
  free(r->owned);
  free(r->bufs);
  free(r->arena);
  free(r->dev);
  free(r->on_device);
}

/* the module's device allocation in slot b, of at least `bytes` (kept between runs) */
static portc_status dev_slot(portc_module *m, int b, int64_t bytes, void **obj) {
  if (!m->dev_obj) {
    m->dev_obj = calloc((size_t)m->km->nbuf + 1, sizeof *m->dev_obj);
    m->dev_bytes = calloc((size_t)m->km->nbuf + 1, sizeof *m->dev_bytes);
    if (!m->dev_obj || !m->dev_bytes) {
      dev_release(m);
      return err_set(PORTC_ERR_NOMEM, "run: out of memory");
    }
  }
  if (bytes < MODULE_LEAST_ALLOC) bytes = MODULE_LEAST_ALLOC;
  if (m->dev_obj[b] && m->dev_bytes[b] != bytes) {
    m->t->gpu->free(m->handle, m->dev_obj[b]);
    m->dev_obj[b] = NULL;
  }
  if (!m->dev_obj[b]) {
    portc_status st = m->t->gpu->alloc(m->handle, bytes, &m->dev_obj[b]);
    if (st) return st;
    m->dev_bytes[b] = bytes;
  }
  *obj = m->dev_obj[b];
  return PORTC_OK;
}

/* targets with their own memory: device buffers for every buffer, sources and poisoned outputs
 * copied in; temps are ranges of one arena allocation */
static portc_status prepare_device(portc_module *m, run_state *r, const mem_plan *plan, const int64_t *offsets) {
  kir_module *km = m->km;
  if (!(r->dev = calloc((size_t)km->nbuf + 1, sizeof *r->dev))) return err_set(PORTC_ERR_NOMEM, "run: out of memory");
  m->uploaded = m->downloaded = 0;
  void *arena = NULL;
  portc_status st = plan->arena_bytes ? dev_slot(m, km->nbuf, plan->arena_bytes, &arena) : PORTC_OK;
  for (int i = 0; i < km->nbuf && !st; i++) {
    const kir_buf *kb = &km->buf[i];
    int64_t bytes = shape_count(&kb->sh, r->S) * (int64_t)portc_dtype_size(kb->dt);
    if (kb->role == BUF_TEMP && !kb->kept) {
      r->dev[i] = (dev_buf){arena, offsets[i], bytes};
    } else if (kb->kept) { /* its own allocation, kept between runs: a new one holds nothing yet */
      void *had = m->dev_obj ? m->dev_obj[i] : NULL;
      if (!(st = dev_slot(m, i, bytes, &r->dev[i].obj))) r->dev[i].bytes = bytes;
      if (st || r->dev[i].obj != had) m->derived_fresh = false;
    } else if (!(st = dev_slot(m, i, bytes, &r->dev[i].obj))) {
      r->dev[i].bytes = bytes;
      if (bytes && !r->on_device[i]) st = m->t->gpu->write(m->handle, r->dev[i].obj, 0, r->owned[i]->data, bytes);
      if (bytes && !r->on_device[i]) m->uploaded += bytes;
    }
    r->bufs[i] = &r->dev[i];
  }
  return st;
}

portc_status module_const_tensor(const node *n, const int64_t *shape, portc_tensor **out) {
  portc_tensor *t = portc_tensor_new(n->dt, n->sh.rank, shape);
  if (!t) return PORTC_ERR_NOMEM;
  for (int64_t k = 0; k < n->value.n; k++) {
    if (n->value.f) portc_tensor_set(t, k, n->value.f[k]);
    else if (n->dt == PORTC_I64) ((int64_t *)t->data)[k] = n->value.i[k];
    else portc_tensor_set(t, k, (double)n->value.i[k]);
  }
  *out = t;
  return PORTC_OK;
}

/* keep: the updates' values that can stay on the device (resident.c) are neither poisoned nor
 * read back */
static portc_status prepare(portc_module *m, portc_bindings *b, run_state *r, bool keep) {
  kir_module *km = m->km;
  memset(r, 0, sizeof *r);
  char why[512];
  if (m->t->gpu && !target_fork_check(m->target_name, why, sizeof why)) return err_set(PORTC_ERR_DEVICE, "run: %s", why);
  if (!b || b->g != m->g) return err_set(PORTC_ERR_INVALID, "run: the bindings were made for another graph");
  if (km->g->nsyms > 64) return err_set(PORTC_ERR_INVALID, "run: more than 64 symbols");
  portc_status st = module_symbols(m, b, r->S);
  if (!st && resident_capable(m)) st = resident_handover(m, b);
  if (st) return st;
  mem_plan plan;
  int64_t *offsets = calloc((size_t)km->nbuf + 1, sizeof *offsets);
  if (!offsets) return err_set(PORTC_ERR_NOMEM, "run: out of memory");
  if ((st = plan_memory(km, r->S, &plan, offsets))) {
    free(offsets);
    return st;
  }
  r->bufs = calloc((size_t)km->nbuf + 1, sizeof *r->bufs);
  r->owned = calloc((size_t)km->nbuf + 1, sizeof *r->owned);
  r->on_device = calloc((size_t)km->nbuf + 1, sizeof *r->on_device);
  bool device = m->t->gpu != NULL;
  r->arena = plan.arena_bytes && !device ? aligned_alloc(64, (size_t)plan.arena_bytes) : NULL;
  for (int k = 0; keep && r->on_device && k < m->g->nupd; k++) {
    int bp, bv;
    if (resident_update(m, k, &bp, &bv)) r->on_device[bv] = true;
  }
  if (!r->bufs || !r->owned || !r->on_device || (plan.arena_bytes && !device && !r->arena)) {
    free(offsets);
    return err_set(PORTC_ERR_NOMEM, "run: out of memory for %lld bytes of intermediates", (long long)plan.arena_bytes);
  }
  for (int i = 0; i < km->nbuf && !st; i++) {
    const kir_buf *kb = &km->buf[i];
    int64_t shape[PORTC_MAX_RANK];
    for (int d = 0; d < kb->sh.rank; d++) shape[d] = dim_value(kb->sh.d[d], r->S);
    int64_t bytes = shape_count(&kb->sh, r->S) * (int64_t)portc_dtype_size(kb->dt);
    switch (kb->role) {
    case BUF_PARAM:
    case BUF_INPUT:
      if (device && resident_current(m, i, b, bytes)) r->on_device[i] = true; /* uploaded by an earlier run, unchanged since */
      else st = bindings_source(m->g, b, m->src_node[i], &r->owned[i]);
      if (kb->role == BUF_PARAM && !r->on_device[i]) m->derived_fresh = false; /* a value the derived kernels may read is new */
      break;
    case BUF_CONST:
      if (device && resident_current(m, i, b, bytes)) r->on_device[i] = true;
      else st = module_const_tensor(&km->g->nodes[kb->node], shape, &r->owned[i]);
      if (!r->on_device[i]) m->derived_fresh = false;
      break;
    case BUF_OUTPUT:
      if (r->on_device[i]) break; /* written by the run, read by the next one, never by the host */
      if (!(r->owned[i] = portc_tensor_new(kb->dt, kb->sh.rank, shape))) st = PORTC_ERR_NOMEM;
      else memset(r->owned[i]->data, 0xff, (size_t)portc_tensor_numel(r->owned[i]) * portc_dtype_size(kb->dt)); /* poison: NaN */
      break;
    case BUF_TEMP: r->bufs[i] = device || !r->arena ? NULL : (char *)r->arena + offsets[i]; break; /* no arena: every temporary is empty */
    }
    if (r->owned[i]) r->bufs[i] = r->owned[i]->data;
  }
  if (st == PORTC_ERR_NOMEM) err_set(st, "run: out of memory for inputs and outputs");
  if (!st && device) st = prepare_device(m, r, &plan, offsets);
  free(offsets);
  if (st) m->derived_fresh = false;
  r->derived_ready = m->derived_fresh;
  return st;
}

/* launches every kernel; *seconds gets the device's time for them, or the host clock's */
static portc_status execute(portc_module *m, run_state *r, double *seconds) {
  double t0 = now();
  portc_status st = PORTC_OK;
  m->launched = 0;
  m->derived_fresh = false; /* until the run is through: a failed one may have left them half written */
  for (int i = 0; i < m->km->nk; i++) {
    if (r->derived_ready && m->km->k[i].derived) continue; /* its result is kept from an earlier run */
    if ((st = m->t->launch(m->handle, i, r->bufs, r->S))) {
      const kir_kernel *k = &m->km->k[i];
      return err_set(st, "kernel %d (%s): %s", i, m->km->g->nodes[k->node >= 0 ? k->node : 0].name, portc_last_error());
    }
    m->launched++;
  }
  if (m->t->gpu) st = m->t->gpu->end(m->handle, seconds);
  else *seconds = now() - t0;
  r->derived_ready = m->derived_fresh = !st;
  return st;
}

/* kernel i alone (its inputs are where the last whole run left them); *seconds as execute's */
static portc_status execute_one(portc_module *m, run_state *r, int i, double *seconds) {
  double t0 = now();
  portc_status st = m->t->launch(m->handle, i, r->bufs, r->S);
  if (!st && m->t->gpu) return m->t->gpu->end(m->handle, seconds);
  *seconds = now() - t0;
  return st;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

portc_status portc_module_profile(portc_module *m, portc_bindings *b, int reps, double *seconds, int64_t *bytes, int64_t *flops) {
  if (!m || !seconds || reps < 1) return err_set(PORTC_ERR_INVALID, "profile: NULL argument or no repetitions");
  portc_status st = module_time_kernels(m, b, reps, NULL, seconds);
  module_lock(m, b);
  int64_t S[64] = {0};
  if (!st && (bytes || flops)) st = module_symbols(m, b, S);
  for (int i = 0; !st && i < m->km->nk && (bytes || flops); i++) {
    int64_t by, fl;
    kir_cost(m->km, &m->km->k[i], S, &by, &fl);
    if (bytes) bytes[i] = by;
    if (flops) flops[i] = fl;
  }
  module_unlock(m, b);
  return st;
}

portc_status module_time_kernels(portc_module *m, portc_bindings *b, int reps, const double *cutoff, double *median) {
  if (m->parts) return err_set(PORTC_ERR_INVALID, "graph %s has graph breaks: its kernels are not timed one by one yet", m->g->name);
  module_lock(m, b);
  run_state r;
  double whole, *t = malloc(sizeof *t * (size_t)(reps + 1));
  portc_status st = t ? prepare(m, b, &r, false) : err_set(PORTC_ERR_NOMEM, "tune: out of memory");
  if (!st) st = execute(m, &r, &whole);
  for (int i = 0; i < m->km->nk && !st; i++) {
    int n = 0;
    st = execute_one(m, &r, i, &t[0]); /* warm-up */
    for (; n < reps && !st; n++) {
      if (m->t->gpu && m->t->gpu->flush_cache) m->t->gpu->flush_cache(m->handle);
      st = execute_one(m, &r, i, &t[n]);
      if (n == 0 && cutoff && cutoff[i] > 0 && t[0] > 3 * cutoff[i]) { /* hopeless: once is enough */
        n++;
        break;
      }
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    median[i] = n ? t[n / 2] : 0;
  }
  if (t) run_state_free(m, &r);
  free(t);
  module_unlock(m, b);
  return st;
}

/* targets with their own memory: the computed outputs back into their host tensors */
static portc_status fetch_outputs(portc_module *m, run_state *r) {
  for (int k = 0; r->dev && k < m->km->g->nout; k++) {
    int b = m->km->out_buf[k];
    if (m->km->buf[b].role != BUF_OUTPUT || !r->dev[b].bytes || r->on_device[b]) continue;
    portc_status st = m->t->gpu->read(m->handle, r->dev[b].obj, r->dev[b].offset, r->owned[b]->data, r->dev[b].bytes);
    if (st) return st;
    m->downloaded += r->dev[b].bytes;
  }
  return PORTC_OK;
}

static portc_status module_run(portc_module *m, portc_bindings *b, portc_tensor **outputs, bool keep) {
  const portc_graph *lg = m->km->g;
  for (int k = 0; k < lg->nout; k++) outputs[k] = NULL;
  run_state r;
  double seconds;
  portc_status st = prepare(m, b, &r, keep);
  if (!st) st = execute(m, &r, &seconds);
  if (!st) st = fetch_outputs(m, &r);
  if (!st && keep) st = resident_adopt(m, b, true); /* the kept values are the parameters' now */
  /* outputs are distinct nodes: a computed one is handed over, one that is a source is copied */
  for (int k = 0; k < lg->nout && !st; k++) {
    int buf = m->km->out_buf[k];
    portc_tensor *src = r.owned[buf];
    if (r.on_device[buf] && m->km->buf[buf].role == BUF_OUTPUT) {
      outputs[k] = NULL; /* kept on the device */
    } else if (m->km->buf[buf].role == BUF_OUTPUT) {
      outputs[k] = src;
      r.owned[buf] = NULL;
    } else if ((outputs[k] = portc_tensor_new(src->dtype, src->rank, src->shape))) {
      memcpy(outputs[k]->data, src->data, (size_t)portc_tensor_numel(src) * portc_dtype_size(src->dtype));
    } else {
      st = err_set(PORTC_ERR_NOMEM, "run: out of memory");
    }
  }
  if (st)
    for (int k = 0; k < lg->nout; k++) portc_tensor_free(outputs[k]), outputs[k] = NULL;
  run_state_free(m, &r);
  return st;
}

static portc_status module_time(portc_module *m, portc_bindings *b, int iters, double *seconds) {
  run_state r;
  portc_status st = prepare(m, b, &r, false);
  for (int i = 0; i < iters && !st; i++) st = execute(m, &r, &seconds[i]);
  run_state_free(m, &r);
  return st;
}

/* ---- the public calls on a module: each holds the module's lock, then the bindings' ---- */

void module_lock(const portc_module *m, portc_bindings *b) {
  pthread_mutex_lock(&((portc_module *)m)->lock);
  bindings_lock(b);
}

void module_unlock(const portc_module *m, portc_bindings *b) {
  bindings_unlock(b);
  pthread_mutex_unlock(&((portc_module *)m)->lock);
}

/* portc_module_run, and with keep portc_module_step */
static portc_status run_module(portc_module *m, portc_bindings *b, portc_tensor **outputs, bool keep) {
  if (!m || !outputs) return err_set(PORTC_ERR_INVALID, "%s: NULL argument", keep ? "step" : "run");
  for (int k = 0; k < m->g->nout; k++) outputs[k] = NULL;
  if (!b) return err_set(PORTC_ERR_INVALID, "%s: the bindings are NULL", keep ? "step" : "run");
  module_lock(m, b);
  portc_status st = PORTC_OK;
  portc_module *use = NULL;
  if (m->parts) st = partition_run(m, b, outputs); /* the regions' modules keep their own guards */
  else if (!(st = module_for_values(m, b, &use))) st = use == m ? module_run(m, b, outputs, keep) : run_module(use, b, outputs, keep);
  /* a training step: the parameters it updates take their new values (the variant run did it) */
  if (!st && (m->parts || use == m)) {
    st = bindings_apply_updates(m->g, b, outputs);
    if (!st && !keep && use == m) st = resident_adopt(m, b, false);
    for (int k = 0; !st && keep && k < m->g->nupd; k++) /* a step gives no update's value: b holds it */
      for (int o = 0; o < m->g->nout; o++)
        if (m->g->outputs[o] == m->g->upd_value[k]) portc_tensor_free(outputs[o]), outputs[o] = NULL;
  }
  if (st)
    for (int k = 0; k < m->g->nout; k++) portc_tensor_free(outputs[k]), outputs[k] = NULL;
  module_unlock(m, b);
  return st;
}

/* values another module keeps on its device come back first, before any lock is held (a variant
 * run inside reads its parent's through bindings_source, under the locks it already holds) */
static portc_status pull_then_run(portc_module *m, portc_bindings *b, portc_tensor **outputs, bool keep) {
  portc_status st = m && b && outputs ? bindings_pull(b, m, -1) : PORTC_OK;
  return st ? st : run_module(m, b, outputs, keep);
}

portc_status portc_module_run(portc_module *m, portc_bindings *b, portc_tensor **outputs) { return pull_then_run(m, b, outputs, false); }

portc_status portc_module_step(portc_module *m, portc_bindings *b, portc_tensor **outputs) { return pull_then_run(m, b, outputs, true); }

portc_status portc_module_time(portc_module *m, portc_bindings *b, int iters, double *seconds) {
  if (!m || !seconds) return err_set(PORTC_ERR_INVALID, "time: NULL argument");
  module_lock(m, b);
  portc_module *use;
  portc_status st;
  if (m->parts) st = partition_time(m, b, iters, seconds);
  else if (!(st = module_for_values(m, b, &use))) st = use == m ? module_time(m, b, iters, seconds) : portc_module_time(use, b, iters, seconds);
  module_unlock(m, b);
  return st;
}
