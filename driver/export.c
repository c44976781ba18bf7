/*
 * export.c: `portc export G -t webgpu -o DIR` (portc_export_web): a model as a folder a web page
 * runs. The graph is compiled for the WebGPU target as for a run (the whole of it: a browser has
 * no CPU fallback), and one run is written down instead of issued: the device buffers (one per
 * input, parameter, constant and output, one arena for the temporaries at the memory plan's
 * offsets, the status word and the symbol values), each kernel's WGSL, and the dispatches in
 * order with their bindings and work groups, exactly as webgpu/runtime.c issues them. The page
 * (webgpu/web/index.html) and its runner (runner.js, over navigator.gpu) replay that list.
 *
 * A sample comes along: the inputs b binds (or its seed makes) and the float64 reference's
 * outputs for them, which the page checks the browser's results against, elementwise within
 * rtol x (|reference| + the output's largest |reference|).
 *
 * The files: manifest.json, kernels/kN.wgsl, weights.bin (parameters and constants, raw, at
 * 256-byte offsets), inputs.bin, expected.bin (float64), index.html, runner.js. Each is written
 * to a temporary name and renamed, so a folder holds whole files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../codegen/emit.h"
#include "../ir/bindings.h"
#include "../targets/gpu_queue.h"
#include "module.h"

extern const char *const web_file_name[], *const web_file_text[]; /* webgpu/web/, embedded (cmake/embed_text.cmake) */

enum {
  WEB_ALIGN = 256,          /* offsets in the data files: any dtype's alignment, and WebGPU's copy rules */
  WEB_MAX_GROUPS = 65535,   /* maxComputeWorkgroupsPerDimension every WebGPU device has */
  WEB_DEFAULT_BINDINGS = 8, /* maxStorageBuffersPerShaderStage every WebGPU device has */
};

/* a growing byte file (weights.bin, inputs.bin, expected.bin) */
typedef struct blob {
  unsigned char *p;
  int64_t len, cap;
} blob;

static int64_t blob_add(blob *b, const void *data, int64_t bytes) {
  int64_t at = (b->len + WEB_ALIGN - 1) / WEB_ALIGN * WEB_ALIGN;
  if (at + bytes > b->cap) {
    int64_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < at + bytes) cap *= 2;
    unsigned char *p = realloc(b->p, (size_t)cap);
    if (!p) return -1;
    b->p = p, b->cap = cap;
  }
  memset(b->p + b->len, 0, (size_t)(at - b->len));
  if (bytes) memcpy(b->p + at, data, (size_t)bytes);
  b->len = at + bytes;
  return at;
}

/* bindings and buffers are whole 4-byte words, and no buffer is empty (as webgpu/runtime.c) */
static int64_t words(int64_t bytes) { return bytes < 4 ? 4 : (bytes + 3) & ~(int64_t)3; }

static void json_str(strbuf *s, const char *text) {
  sb_printf(s, "\"");
  for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
    if (*c == '"' || *c == '\\') sb_printf(s, "\\%c", *c);
    else if (*c < 0x20) sb_printf(s, "\\u%04x", *c);
    else sb_printf(s, "%c", *c);
  }
  sb_printf(s, "\"");
}

static void json_shape(strbuf *s, int rank, const int64_t *shape) {
  sb_printf(s, "[");
  for (int d = 0; d < rank; d++) sb_printf(s, "%s%lld", d ? ", " : "", (long long)shape[d]);
  sb_printf(s, "]");
}

/* dir/name, whole or not at all */
static portc_status put_file(const char *dir, const char *name, const void *data, size_t bytes) {
  char path[4096], tmp[4200];
  str_cut(path, sizeof path, "%s/%s", dir, name);
  str_cut(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) return err_set(PORTC_ERR_IO, "export: cannot write %s: %s", tmp, strerror(errno));
  bool ok = fwrite(data, 1, bytes, f) == bytes;
  ok = fclose(f) == 0 && ok;
  if (ok && rename(tmp, path) == 0) return PORTC_OK;
  int e = errno;
  remove(tmp);
  return err_set(PORTC_ERR_IO, "export: cannot write %s: %s", path, strerror(e));
}

static portc_status make_dir(const char *path) {
  if (mkdir(path, 0777) == 0 || errno == EEXIST) {
    struct stat s;
    if (stat(path, &s) == 0 && S_ISDIR(s.st_mode)) return PORTC_OK;
    return err_set(PORTC_ERR_IO, "export: %s exists and is not a folder", path);
  }
  return err_set(PORTC_ERR_IO, "export: cannot make the folder %s: %s", path, strerror(errno));
}

/* the check's tolerance for an output of dtype t: the dtype's rounding with room for a model's
 * depth; integers and booleans exactly */
static double check_rtol(portc_dtype t) {
  switch (t) {
  case PORTC_F32: return 1e-4;
  case PORTC_F16: return 2e-2;
  case PORTC_BF16: return 6e-2;
  default: return 0;
  }
}

typedef struct export_state {
  portc_module *m;
  int64_t S[64];
  int64_t *offsets; /* the memory plan's, per buffer */
  int64_t arena;    /* bytes */
  int *gpu;         /* per kernel buffer: its device buffer in the manifest (temporaries: the arena's) */
  int arena_id, status_id, sym_id, ngpu;
  blob weights, inputs, expected;
  strbuf json;
  int64_t most_binding, most_buffer; /* bytes, for the limits the page asks of the device */
  int most_bindings;
} export_state;

/* the device buffers: sources with their data, outputs, the arena, the status word, the symbols */
static portc_status put_buffers(export_state *x, portc_bindings *b) {
  const kir_module *km = x->m->km;
  strbuf *s = &x->json;
  sb_printf(s, "  \"buffers\": [\n");
  portc_status st = PORTC_OK;
  for (int i = 0; i < km->nbuf && !st; i++) {
    const kir_buf *kb = &km->buf[i];
    if (kb->role == BUF_TEMP) continue;
    int64_t shape[PORTC_MAX_RANK];
    for (int d = 0; d < kb->sh.rank; d++) shape[d] = dim_value(kb->sh.d[d], x->S);
    int64_t bytes = shape_count(&kb->sh, x->S) * (int64_t)portc_dtype_size(kb->dt);
    portc_tensor *t = NULL; /* a source's value */
    if (kb->role == BUF_INPUT || kb->role == BUF_PARAM) st = bindings_source(x->m->g, b, x->m->src_node[i], &t);
    else if (kb->role == BUF_CONST) st = module_const_tensor(&km->g->nodes[kb->node], shape, &t);
    if (st) break;
    static const char *const role[] = {[BUF_INPUT] = "input", [BUF_PARAM] = "param", [BUF_CONST] = "const", [BUF_OUTPUT] = "output"};
    x->gpu[i] = x->ngpu++;
    sb_printf(s, "    {\"name\": ");
    json_str(s, km->g->nodes[kb->node].name);
    sb_printf(s, ", \"role\": \"%s\", \"dtype\": \"%s\", \"shape\": ", role[kb->role], portc_dtype_name(kb->dt));
    json_shape(s, kb->sh.rank, shape);
    sb_printf(s, ", \"bytes\": %lld, \"size\": %lld", (long long)bytes, (long long)words(bytes));
    if (kb->role != BUF_OUTPUT) {
      blob *into = kb->role == BUF_INPUT ? &x->inputs : &x->weights;
      int64_t at = blob_add(into, t->data, bytes);
      if (at < 0) st = err_set(PORTC_ERR_NOMEM, "export: out of memory");
      sb_printf(s, ", \"file\": \"%s\", \"offset\": %lld", kb->role == BUF_INPUT ? "inputs.bin" : "weights.bin", (long long)at);
    }
    sb_printf(s, "},\n");
    if (words(bytes) > x->most_buffer) x->most_buffer = words(bytes);
    portc_tensor_free(t);
  }
  x->arena_id = x->ngpu++, x->status_id = x->ngpu++, x->sym_id = x->ngpu++;
  sb_printf(s, "    {\"name\": \"arena\", \"role\": \"arena\", \"size\": %lld},\n", (long long)words(x->arena));
  sb_printf(s, "    {\"name\": \"status\", \"role\": \"status\", \"size\": 4},\n");
  int nsym = km->g->nsyms;
  sb_printf(s, "    {\"name\": \"symbols\", \"role\": \"symbols\", \"size\": %d, \"values\": [", 4 * (nsym ? nsym : 1));
  for (int k = 0; k < nsym; k++) sb_printf(s, "%s%lld", k ? ", " : "", (long long)x->S[k]);
  sb_printf(s, "]}\n  ],\n");
  if (words(x->arena) > x->most_buffer) x->most_buffer = words(x->arena);
  return st;
}

/* the graph's outputs: where each lies, and the reference's values for the sample */
static portc_status put_outputs(export_state *x, portc_tensor **ref) {
  const kir_module *km = x->m->km;
  const portc_graph *g = x->m->g;
  strbuf *s = &x->json;
  sb_printf(s, "  \"outputs\": [\n");
  for (int k = 0; k < km->g->nout; k++) {
    int buf = km->out_buf[k];
    const kir_buf *kb = &km->buf[buf];
    const portc_tensor *r = ref[k];
    int64_t n = portc_tensor_numel(r);
    double *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    if (!v) return err_set(PORTC_ERR_NOMEM, "export: out of memory");
    for (int64_t e = 0; e < n; e++) v[e] = portc_tensor_get(r, e);
    int64_t at = blob_add(&x->expected, v, 8 * n);
    free(v);
    if (at < 0) return err_set(PORTC_ERR_NOMEM, "export: out of memory");
    sb_printf(s, "    {\"name\": ");
    json_str(s, portc_node_name(g, portc_graph_output(g, k)));
    sb_printf(s, ", \"buffer\": %d, \"offset\": %lld, \"bytes\": %lld, \"dtype\": \"%s\", \"shape\": ", kb->role == BUF_TEMP ? x->arena_id : x->gpu[buf],
              (long long)(kb->role == BUF_TEMP ? x->offsets[buf] : 0), (long long)(n * (int64_t)portc_dtype_size(kb->dt)),
              portc_dtype_name(kb->dt));
    json_shape(s, r->rank, r->shape);
    sb_printf(s, ", \"expected\": {\"file\": \"expected.bin\", \"offset\": %lld}, \"rtol\": %g}%s\n", (long long)at, check_rtol(kb->dt),
              k + 1 < km->g->nout ? "," : "");
  }
  sb_printf(s, "  ],\n");
  return PORTC_OK;
}

/* the kernels' files, and the run's dispatches as the runtime issues them: the kernel's buffers
 * (kernel_buffers' order), then the status word where it checks, then the symbols where there
 * are any */
static portc_status put_kernels(export_state *x, const char *dir) {
  const kir_module *km = x->m->km;
  const target *t = x->m->t;
  strbuf *s = &x->json;
  char *source = emit_module(t->dialect, km);
  if (!source) return err_set(PORTC_ERR_NOMEM, "export: out of memory");
  portc_status st = PORTC_OK;
  sb_printf(s, "  \"kernels\": [\n");
  for (int i = 0; i < km->nk && !st; i++) {
    char *text = t->web->kernel_source(source, i);
    char name[64];
    snprintf(name, sizeof name, "kernels/k%d.%s", i, t->web->language);
    if (!text) st = err_set(PORTC_ERR_INTERNAL, "export: kernel %d is not in the module's source", i);
    else st = put_file(dir, name, text, strlen(text));
    free(text);
    const kir_kernel *k = &km->k[i];
    sb_printf(s, "    {\"file\": \"%s\", \"entry\": \"main\", \"node\": ", name);
    json_str(s, km->g->nodes[k->node >= 0 ? k->node : 0].name);
    sb_printf(s, "}%s\n", i + 1 < km->nk ? "," : "");
  }
  free(source);
  sb_printf(s, "  ],\n  \"dispatches\": [\n");
  gpu_queue q = {0}; /* each kernel's buffers and status word, as the runtime's queue has them */
  if (!st) st = gpu_queue_init(&q, "export", km, false);
  bool first = true;
  for (int i = 0; i < km->nk && !st; i++) {
    uint32_t groups[3];
    if (!t->web->groups(km, i, x->S, WEB_MAX_GROUPS, groups)) continue; /* nothing to do at these sizes */
    const gpu_args *a = &q.args[i];
    sb_printf(s, "%s    {\"kernel\": %d, \"groups\": [%u, %u, %u], \"bind\": [", first ? "" : ",\n", i, groups[0], groups[1], groups[2]);
    first = false;
    int n = a->nbind;
    for (int j = 0; j < n; j++) {
      const kir_buf *kb = &km->buf[a->bind[j]];
      int64_t bytes = words(shape_count(&kb->sh, x->S) * (int64_t)portc_dtype_size(kb->dt));
      int64_t off = kb->role == BUF_TEMP ? x->offsets[a->bind[j]] : 0;
      sb_printf(s, "%s[%d, %lld, %lld]", j ? ", " : "", kb->role == BUF_TEMP ? x->arena_id : x->gpu[a->bind[j]], (long long)off, (long long)bytes);
      if (bytes > x->most_binding) x->most_binding = bytes;
    }
    if (a->status) sb_printf(s, "%s[%d, 0, 4]", n++ ? ", " : "", x->status_id);
    if (km->g->nsyms) sb_printf(s, "%s[%d, 0, %d]", n++ ? ", " : "", x->sym_id, 4 * km->g->nsyms);
    sb_printf(s, "]}");
    if (n > x->most_bindings) x->most_bindings = n;
  }
  gpu_queue_free(&q);
  sb_printf(s, "\n  ],\n");
  return st;
}

static portc_status put_everything(export_state *x, portc_bindings *b, portc_tensor **ref, const char *dir) {
  portc_module *m = x->m;
  strbuf *s = &x->json;
  sb_printf(s, "{\n  \"format\": \"portc-web 1\",\n  \"portc\": \"%s\",\n  \"graph\": ", portc_version());
  json_str(s, m->g->name);
  sb_printf(s, ",\n  \"compiled_on\": ");
  json_str(s, m->t->device());
  sb_printf(s, ",\n");
  char kernels[4200];
  str_cut(kernels, sizeof kernels, "%s/kernels", dir);
  portc_status st = make_dir(kernels);
  if (!st) st = put_buffers(x, b);
  if (!st) st = put_outputs(x, ref);
  if (!st) st = put_kernels(x, dir);
  if (st) return st;
  sb_printf(s, "  \"limits\": {\"maxStorageBuffersPerShaderStage\": %d, \"maxStorageBufferBindingSize\": %lld, \"maxBufferSize\": %lld}\n}\n",
            x->most_bindings > WEB_DEFAULT_BINDINGS ? x->most_bindings : WEB_DEFAULT_BINDINGS, (long long)x->most_binding,
            (long long)x->most_buffer);
  char *json = sb_take(s);
  if (!json) return err_set(PORTC_ERR_NOMEM, "export: out of memory");
  st = put_file(dir, "manifest.json", json, strlen(json));
  free(json);
  if (!st) st = put_file(dir, "weights.bin", x->weights.p ? (void *)x->weights.p : "", (size_t)x->weights.len);
  if (!st) st = put_file(dir, "inputs.bin", x->inputs.p ? (void *)x->inputs.p : "", (size_t)x->inputs.len);
  if (!st) st = put_file(dir, "expected.bin", x->expected.p ? (void *)x->expected.p : "", (size_t)x->expected.len);
  for (int i = 0; web_file_name[i] && !st; i++) st = put_file(dir, web_file_name[i], web_file_text[i], strlen(web_file_text[i]));
  return st;
}

portc_status portc_export_web(const portc_graph *g, const portc_compile_options *opts, portc_bindings *b, const char *dir) {
  if (!g || !dir) return err_set(PORTC_ERR_INVALID, "export: no graph or no folder");
  portc_compile_options o;
  portc_status st = module_options(g, opts, b, &o);
  if (st) return st;
  int device;
  const target *t = target_find(o.target ? o.target : "cpu", &device);
  if (!t || !t->web)
    return err_set(PORTC_ERR_INVALID, "export: target %s does not run in a browser: web bundles are for webgpu", o.target ? o.target : "cpu");
  if (o.dynamic) return err_set(PORTC_ERR_INVALID, "export: a web bundle runs one shape: give the symbols' values instead of dynamic");
  if (!b) return err_set(PORTC_ERR_INVALID, "export: no bindings: the bundle's sample takes its inputs from them (or from their seed)");
  if ((st = bindings_bind_symbols(g, b))) return st;
  for (int k = 0; k < g->nsyms; k++)
    if (!b->sym_set[k]) return err_set(PORTC_ERR_SHAPE, "export: symbol %s has no value: a web bundle runs one shape; give its value (--set %s=...)", g->syms[k], g->syms[k]);
  o.fullgraph = true; /* a page has no CPU to fall back on */
  o.mode = PORTC_MODE_DEFAULT;
  int nout = portc_graph_output_count(g);
  portc_tensor **ref = calloc((size_t)nout + 1, sizeof *ref);
  if (!ref) return err_set(PORTC_ERR_NOMEM, "export: out of memory");
  export_state x = {0};
  if ((st = portc_compile(g, &o, b, &x.m))) return free(ref), st;
  module_lock(x.m, b);
  if (x.m->parts || !x.m->km) st = err_set(PORTC_ERR_INTERNAL, "export: graph %s compiled in parts", g->name);
  if (!st) st = module_symbols(x.m, b, x.S);
  const kir_module *km = x.m->km;
  mem_plan plan = {0};
  if (!st && !(x.offsets = calloc((size_t)km->nbuf + 1, sizeof *x.offsets))) st = err_set(PORTC_ERR_NOMEM, "export: out of memory");
  if (!st && !(x.gpu = calloc((size_t)km->nbuf + 1, sizeof *x.gpu))) st = err_set(PORTC_ERR_NOMEM, "export: out of memory");
  if (!st) st = plan_memory(km, x.S, &plan, x.offsets);
  x.arena = plan.arena_bytes;
  module_unlock(x.m, b);
  if (!st) st = portc_reference_run(g, b, ref);
  if (!st) st = make_dir(dir);
  if (!st) {
    module_lock(x.m, b);
    st = put_everything(&x, b, ref, dir);
    module_unlock(x.m, b);
  }
  for (int k = 0; k < nout; k++) portc_tensor_free(ref[k]);
  free(ref);
  free(sb_take(&x.json));
  free(x.weights.p), free(x.inputs.p), free(x.expected.p);
  free(x.offsets), free(x.gpu);
  portc_module_free(x.m);
  return st;
}
