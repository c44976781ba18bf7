/*
 * artifact.c: module files (.portc), what AOTInductor's .pt2 and IREE's .vmfb are to their
 * compilers: a compiled model that a deployment loads and runs with no compiler present.
 *
 * The file keeps what is needed to rebuild the module without building any code: the graph (as
 * .ptg text), its parameters' values, and per target the device the kernels were built for,
 * the compile options and guards (symbol values), every kernel's schedule and the kernels'
 * binaries by key (targets/prebuilt.h). Loading parses the graph, lowers it again (the passes are
 * deterministic and need no compiler), puts the file's schedules on the kernels, and lets the
 * target load the file's binaries. The writer and the reader must be the same portc version,
 * which the file says; a different lowering would not find its kernels.
 *
 * Layout, little-endian, every string a u32 length and its bytes:
 *   "PORTCMOD"  u32 format  str portc-version  str graph-text
 *   u32 nweights, each: str name, u64 bytes, .npy bytes
 *   u32 ntargets, each: str target  str device  u8 dynamic eager mode  u32 nsym  i64 values[nsym]
 *                       u32 nkernels  u32 sizeof(kir_schedule)  schedules  u32 nbin, each: 32-byte key, u64 bytes, bytes
 *   u64 XXH3-64 of everything before it
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL /* the header alone: nothing to link, no symbol to export */
#include <xxhash.h>

#include "../ir/bindings.h"
#include "../ir/npz.h"
#include "module.h"

static const char magic[8] = {'P', 'O', 'R', 'T', 'C', 'M', 'O', 'D'};
enum { FORMAT = 1, MAX_TARGETS = 8 };

/* ---- writing ---- */

static void put(FILE *f, const void *p, size_t n) { fwrite(p, 1, n, f); }
static void put_u8(FILE *f, unsigned v) { fputc((int)(v & 0xff), f); }
static void put_u32(FILE *f, uint32_t v) {
  unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
  put(f, b, 4);
}
static void put_u64(FILE *f, uint64_t v) {
  put_u32(f, (uint32_t)v);
  put_u32(f, (uint32_t)(v >> 32));
}
static void put_str(FILE *f, const char *s) {
  put_u32(f, (uint32_t)strlen(s));
  put(f, s, strlen(s));
}

/* the device a target builds for, as the file records it: what decides whether its binaries run */
static void device_string(const target *t, int device, char *out, size_t len) {
  if (!t->device_key) {
    snprintf(out, len, "%s", t->device());
    return;
  }
  tune_device d = {0};
  t->device_key(device, &d);
  snprintf(out, len, "%s %s %s %s: %s", d.api, d.vendor, d.family, d.arch, d.model);
}

/* the parameters whose values the module would use: bound, held, read from a file or generated */
static portc_status put_weights(FILE *f, const portc_graph *g, portc_bindings *b) {
  uint32_t n = 0;
  for (int i = 0; i < g->n; i++) {
    const node *x = &g->nodes[i];
    n += x->op == OP_param && (b->given[i] || x->data || x->file || x->has_init);
  }
  put_u32(f, n);
  for (int i = 0; i < g->n; i++) {
    const node *x = &g->nodes[i];
    if (x->op != OP_param || !(b->given[i] || x->data || x->file || x->has_init)) continue;
    portc_tensor *t;
    portc_status st = bindings_source(g, b, i, &t);
    if (st) return err_set(st, "module file: parameter %s: %s", x->name, portc_last_error());
    char *npy = NULL;
    size_t bytes = 0;
    FILE *m = open_memstream(&npy, &bytes);
    bool ok = m && npy_write(m, t);
    if (m && fclose(m) != 0) ok = false;
    portc_tensor_free(t);
    if (!ok) {
      free(npy);
      return err_set(PORTC_ERR_NOMEM, "module file: out of memory for parameter %s", x->name);
    }
    put_str(f, x->name);
    put_u64(f, bytes);
    put(f, npy, bytes);
    free(npy);
  }
  return PORTC_OK;
}

static void put_target(FILE *f, const portc_module *m, const char *name, int device, const prebuilt *rec) {
  char dev[512];
  device_string(m->t, device, dev, sizeof dev);
  put_str(f, name);
  put_str(f, dev);
  put_u8(f, m->dynamic);
  put_u8(f, m->opts.eager);
  put_u8(f, (unsigned)m->opts.mode);
  uint32_t nsym = m->dynamic ? 0 : (uint32_t)m->g->nsyms;
  put_u32(f, nsym);
  for (uint32_t k = 0; k < nsym; k++) put_u64(f, (uint64_t)m->symvals[k]);
  put_u32(f, (uint32_t)m->km->nk);
  put_u32(f, (uint32_t)sizeof(kir_schedule));
  for (int i = 0; i < m->km->nk; i++) put(f, &m->km->k[i].sched, sizeof(kir_schedule));
  put_u32(f, (uint32_t)rec->n);
  for (int i = 0; i < rec->n; i++) {
    put(f, rec->e[i].key, 32);
    put_u64(f, rec->e[i].bytes);
    put(f, rec->e[i].data, rec->e[i].bytes);
  }
}

/* the file's bytes under a temporary name in its folder, then renamed into place */
static portc_status write_whole(const char *path, const char *data, size_t bytes) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) return err_set(PORTC_ERR_IO, "module file %s: cannot write: %s", path, strerror(errno));
  bool ok = fwrite(data, 1, bytes, f) == bytes;
  int err = errno;
  if (fclose(f) != 0 && ok) ok = false, err = errno;
  if (ok && rename(tmp, path) != 0) ok = false, err = errno;
  if (!ok) {
    unlink(tmp);
    return err_set(PORTC_ERR_IO, "module file %s: cannot write: %s", path, strerror(err));
  }
  return PORTC_OK;
}

/* one target's module, compiled with its binaries recorded, into the file */
static portc_status compile_target(FILE *f, const portc_graph *g, const portc_compile_options *whole, portc_bindings *b, const char *name) {
  portc_compile_options co = *whole;
  co.target = name;
  prebuilt rec = PREBUILT_INIT;
  module_extra x = {.record = &rec};
  portc_module *m;
  portc_status st = module_compile_extra(g, &co, b, &x, &m);
  if (!st) {
    int device = -1;
    target_find(name, &device);
    put_target(f, m, name, device, &rec);
    portc_module_free(m);
  }
  prebuilt_free(&rec);
  return st;
}

portc_status portc_compile_file(const portc_graph *g, const portc_compile_options *opts, portc_bindings *b, const char *path) {
  if (!g || !path) return err_set(PORTC_ERR_INVALID, "compile_file: NULL argument");
  portc_compile_options whole;
  portc_status st = module_options(g, opts, b, &whole);
  if (st) return st;
  char names[MAX_TARGETS][64];
  int nt = 0;
  const char *list = whole.target ? whole.target : "cpu";
  for (const char *p = list; *p && nt < MAX_TARGETS;) {
    size_t n = strcspn(p, ",");
    if (n == 0 || n >= sizeof names[0]) return err_set(PORTC_ERR_INVALID, "compile_file: targets '%s': an empty or overlong name", list);
    snprintf(names[nt++], sizeof names[0], "%.*s", (int)n, p);
    p += n + (p[n] == ',');
  }
  char *text = portc_graph_print(g);
  portc_bindings *own = b ? NULL : portc_bindings_new(g);
  portc_bindings *bb = b ? b : own;
  char *data = NULL;
  size_t bytes = 0;
  FILE *f = text && bb ? open_memstream(&data, &bytes) : NULL;
  if (!f) st = err_set(PORTC_ERR_NOMEM, "compile_file: out of memory");
  if (!st) {
    put(f, magic, sizeof magic);
    put_u32(f, FORMAT);
    put_str(f, portc_version());
    put_str(f, text);
    bindings_lock(bb);
    st = put_weights(f, g, bb);
    bindings_unlock(bb);
  }
  if (!st) put_u32(f, (uint32_t)nt);
  for (int i = 0; i < nt && !st; i++) st = compile_target(f, g, &whole, b, names[i]);
  if (f && fclose(f) != 0 && !st) st = err_set(PORTC_ERR_NOMEM, "compile_file: out of memory");
  if (!st) {
    uint64_t sum = XXH3_64bits(data, bytes);
    unsigned char tail[8];
    for (int i = 0; i < 8; i++) tail[i] = (unsigned char)(sum >> (8 * i));
    char *whole_file = realloc(data, bytes + 8);
    if (!whole_file) st = err_set(PORTC_ERR_NOMEM, "compile_file: out of memory");
    else data = whole_file, memcpy(data + bytes, tail, 8), st = write_whole(path, data, bytes + 8);
  }
  free(data);
  free(text);
  portc_bindings_free(own);
  return st;
}

/* ---- reading ---- */

typedef struct reader {
  const unsigned char *p, *end;
  bool short_read;
} reader;

static const void *take(reader *r, uint64_t n) {
  if (r->short_read || n > (uint64_t)(r->end - r->p)) {
    r->short_read = true;
    return NULL;
  }
  const void *at = r->p;
  r->p += n;
  return at;
}
static uint32_t get_u32(reader *r) {
  const unsigned char *b = take(r, 4);
  return b ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24 : 0;
}
static uint64_t get_u64(reader *r) {
  uint64_t lo = get_u32(r);
  return lo | (uint64_t)get_u32(r) << 32;
}
static unsigned get_u8(reader *r) {
  const unsigned char *b = take(r, 1);
  return b ? b[0] : 0;
}
/* a string, copied and terminated (NULL when the file ends first or memory runs out) */
static char *get_str(reader *r) {
  uint32_t n = get_u32(r);
  const char *s = take(r, n);
  char *out = s ? malloc((size_t)n + 1) : NULL;
  if (out) memcpy(out, s, n), out[n] = 0;
  return out;
}

typedef struct file_target {
  char *name, *device;
  bool dynamic, eager;
  portc_mode mode;
  uint32_t nsym;
  const unsigned char *symvals; /* nsym little-endian i64 */
  uint32_t nk;
  const unsigned char *sched;   /* nk kir_schedule */
  uint32_t nbin;
  const unsigned char *bins, *bins_end; /* nbin (key, u64 bytes, bytes) */
} file_target;

static portc_status truncated(const char *path) {
  return err_set(PORTC_ERR_INVALID, "module file %s is truncated or damaged: compile it again", path);
}

/* the whole file; checks the magic, the format version and the checksum */
static portc_status read_file(const char *path, unsigned char **data, size_t *bytes) {
  char why[256];
  FILE *f = file_open_read(path, why, sizeof why);
  if (!f) return err_set(PORTC_ERR_IO, "module file %s: %s", path, why);
  struct stat sb;
  unsigned char *d = NULL;
  size_t n = 0;
  portc_status st = PORTC_OK;
  if (fstat(fileno(f), &sb) != 0 || sb.st_size < 0) st = err_set(PORTC_ERR_IO, "module file %s: cannot read: %s", path, strerror(errno));
  else if (!(d = malloc((size_t)sb.st_size + 1))) st = err_set(PORTC_ERR_NOMEM, "module file %s: out of memory for %lld bytes", path, (long long)sb.st_size);
  else if ((n = fread(d, 1, (size_t)sb.st_size, f)) != (size_t)sb.st_size) st = err_set(PORTC_ERR_IO, "module file %s: cannot read it whole", path);
  fclose(f);
  if (!st && (n < sizeof magic || memcmp(d, magic, sizeof magic) != 0))
    st = err_set(PORTC_ERR_INVALID, "%s is not a portc module file (made by `portc compile -o F.portc`)", path);
  if (!st && n < sizeof magic + 4 + 8) st = truncated(path);
  if (!st) {
    reader r = {d + sizeof magic, d + n, false};
    uint32_t format = get_u32(&r);
    if (format != FORMAT)
      st = err_set(PORTC_ERR_INVALID, "module file %s has format %u; this portc (%s) reads format %d: compile it again with this one", path,
                   format, portc_version(), FORMAT);
  }
  if (!st) {
    uint64_t sum = 0;
    for (int i = 0; i < 8; i++) sum |= (uint64_t)d[n - 8 + (size_t)i] << (8 * i);
    if (XXH3_64bits(d, n - 8) != sum) st = truncated(path);
  }
  if (st) free(d);
  else *data = d, *bytes = n - 8;
  return st;
}

/* one parameter's values, from .npy bytes, onto its node (which holds them from then on, as an
 * imported model's weights are held) */
static portc_status attach_one(portc_graph *g, const char *name, const void *npy, uint64_t bytes, const char *path) {
  portc_node id = graph_find(g, name);
  if (id < 0 || g->nodes[id].op != OP_param) return err_set(PORTC_ERR_INVALID, "module file %s: the graph has no parameter %s", path, name);
  node *x = &g->nodes[id];
  FILE *f = fmemopen((void *)npy, bytes, "rb");
  if (!f) return err_set(PORTC_ERR_NOMEM, "module file %s: out of memory", path);
  portc_tensor *t = NULL;
  portc_status st = npy_read(f, path, &t);
  fclose(f);
  if (st) return st;
  if (t->dtype != x->dt || t->rank != x->sh.rank) {
    portc_tensor_free(t);
    return err_set(PORTC_ERR_INVALID, "module file %s: parameter %s's values do not have its dtype and rank", path, name);
  }
  pdata *d = pdata_new(t);
  if (!d) return err_set(PORTC_ERR_NOMEM, "module file %s: out of memory", path);
  if (x->data) pdata_release(x->data);
  x->data = d;
  free(x->file), free(x->file_key);
  x->file = x->file_key = NULL;
  x->has_init = false;
  return PORTC_OK;
}

static portc_status attach_weights(reader *r, portc_graph *g, const char *path) {
  uint32_t n = get_u32(r);
  portc_status st = PORTC_OK;
  for (uint32_t w = 0; w < n && !st; w++) {
    char *name = get_str(r);
    uint64_t bytes = get_u64(r);
    const void *npy = take(r, bytes);
    st = name && npy ? attach_one(g, name, npy, bytes, path) : truncated(path);
    free(name);
  }
  return st;
}

static portc_status read_target(reader *r, file_target *ft, const char *path) {
  memset(ft, 0, sizeof *ft);
  ft->name = get_str(r);
  ft->device = get_str(r);
  ft->dynamic = get_u8(r), ft->eager = get_u8(r), ft->mode = (portc_mode)get_u8(r);
  ft->nsym = get_u32(r);
  ft->symvals = take(r, (uint64_t)ft->nsym * 8);
  ft->nk = get_u32(r);
  uint32_t size = get_u32(r);
  if (!r->short_read && size != sizeof(kir_schedule))
    return err_set(PORTC_ERR_INVALID, "module file %s was written by a build of portc whose schedules differ from this one's: compile it again", path);
  ft->sched = take(r, (uint64_t)ft->nk * size);
  ft->nbin = get_u32(r);
  ft->bins = r->p;
  for (uint32_t i = 0; i < ft->nbin && !r->short_read; i++) {
    take(r, 32);
    take(r, get_u64(r));
  }
  ft->bins_end = r->p;
  return r->short_read || !ft->name || !ft->device ? truncated(path) : PORTC_OK;
}

static void file_target_free(file_target *ft) {
  free(ft->name);
  free(ft->device);
}

/* the base name of "vulkan:1" */
static bool same_target(const char *a, const char *b) {
  size_t na = strcspn(a, ":"), nb = strcspn(b, ":");
  return na == nb && !strncmp(a, b, na);
}

/* the module of file target ft, built from its binaries, for target `name` */
static portc_status load_target(const file_target *ft, const char *name, portc_graph *g, const char *path, portc_module **out) {
  prebuilt from = PREBUILT_INIT;
  kir_schedule *sched = calloc((size_t)ft->nk + 1, sizeof *sched);
  portc_bindings *b = portc_bindings_new(g);
  portc_status st = sched && b ? PORTC_OK : err_set(PORTC_ERR_NOMEM, "module file: out of memory");
  if (!st) memcpy(sched, ft->sched, (size_t)ft->nk * sizeof *sched);
  reader r = {ft->bins, ft->bins_end, false}; /* read_target checked that it holds nbin whole entries */
  for (uint32_t i = 0; i < ft->nbin && !st; i++) {
    char key[33];
    memcpy(key, take(&r, 32), 32);
    key[32] = 0;
    uint64_t n = get_u64(&r);
    st = prebuilt_add(&from, key, take(&r, n), (size_t)n);
  }
  for (uint32_t k = 0; k < ft->nsym && !st; k++) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)ft->symvals[8 * k + (uint32_t)i] << (8 * i);
    if ((int)k < g->nsyms) st = portc_bindings_set_symbol(b, g->syms[k], (int64_t)v);
  }
  portc_compile_options o = PORTC_COMPILE_OPTIONS_INIT;
  o.target = name, o.dynamic = ft->dynamic, o.eager = ft->eager, o.mode = ft->mode;
  module_extra x = {.sched = sched, .nsched = (int)ft->nk, .from = &from};
  if (!st) st = module_compile_extra(g, &o, b, &x, out);
  if (st) err_set(st, "module file %s: %s", path, portc_last_error());
  prebuilt_free(&from);
  free(sched);
  portc_bindings_free(b);
  return st;
}

portc_status portc_module_load(const char *path, const char *target_name, portc_module **out) {
  if (!path || !out) return err_set(PORTC_ERR_INVALID, "module_load: NULL argument");
  *out = NULL;
  unsigned char *data = NULL;
  size_t bytes = 0;
  portc_status st = read_file(path, &data, &bytes);
  if (st) return st;
  reader r = {data + sizeof magic + 4, data + bytes, false};
  char *version = get_str(&r), *text = get_str(&r);
  portc_graph *g = NULL;
  if (!version || !text) st = truncated(path);
  else if (strcmp(version, portc_version()) != 0)
    st = err_set(PORTC_ERR_INVALID, "module file %s was written by portc %s; this is portc %s: compile it again with this one", path, version,
                 portc_version());
  if (!st) st = portc_graph_parse(text, path, &g);
  if (!st) st = attach_weights(&r, g, path);
  uint32_t nt = st ? 0 : get_u32(&r);
  if (!st && (r.short_read || nt > MAX_TARGETS)) st = truncated(path);
  file_target ft[MAX_TARGETS];
  int read = 0;
  for (; read < (int)nt && !st; read++) st = read_target(&r, &ft[read], path);
  /* the first target that is asked for (or, asked for none, that can run here) on this device */
  strbuf seen = {0};
  bool found = false;
  for (int i = 0; i < read && !st && !found; i++) {
    const char *name = target_name ? target_name : ft[i].name;
    if (target_name && !same_target(target_name, ft[i].name)) continue;
    int device = -1;
    const target *t = target_find(name, &device);
    char why[512] = "", dev[512] = "";
    bool runs = t && (t->runs_prebuilt ? t->runs_prebuilt : t->available)(why, sizeof why);
    if (runs) device_string(t, device, dev, sizeof dev);
    if (runs && !strcmp(dev, ft[i].device)) {
      found = true;
      st = load_target(&ft[i], name, g, path, out);
    } else {
      sb_printf(&seen, "\n  %s, built for %s: %s", ft[i].name, ft[i].device, !t ? "no such target here" : !runs ? why : "");
      if (runs) sb_printf(&seen, "this machine's device is %s", dev);
    }
  }
  if (!st && !found) {
    char *list = sb_take(&seen);
    char what[96] = "";
    if (target_name) snprintf(what, sizeof what, " for %s", target_name);
    st = err_set(PORTC_ERR_INVALID, "module file %s holds no module%s that runs on this machine; it holds:%s\n(compile it again here)", path, what,
                 list ? list : "");
    free(list);
  } else {
    free(sb_take(&seen));
  }
  for (int i = 0; i < read; i++) file_target_free(&ft[i]);
  free(version);
  free(text);
  free(data);
  if (!st && !((*out)->file = strdup(path))) st = err_set(PORTC_ERR_NOMEM, "module file: out of memory");
  if (st) {
    portc_module_free(*out);
    *out = NULL;
    portc_graph_free(g);
    return st;
  }
  (*out)->owned_graph = g;
  return PORTC_OK;
}

const portc_graph *portc_module_graph(const portc_module *m) { return m ? m->g : NULL; }
