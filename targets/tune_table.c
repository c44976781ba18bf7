/*
 * tune_table.c: the tune-table syntax (tune.h): parsing every line into an entry, linting its
 * values, matching entries to a device and a kernel, and writing an entry back as one line.
 * The knobs are a table of data: a name, the kir_schedule field it sets, its form and its
 * range; every other part of portc reads knobs through the schedule.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../codegen/gpu_kernels.h"
#include "tune.h"

/* ---- the knobs ---- */

typedef enum { KF_INT, KF_PAIR, KF_TRIPLE, KF_I64, KF_OFF } knob_form;
static const struct knob {
  const char *name;
  knob_form form;
  size_t off; /* in kir_schedule */
  int64_t lo, hi;
  const char *doc;
} knobs[] = {
    {"threads", KF_TRIPLE, offsetof(kir_schedule, threads), 1, 1024, "threads per work group: N, NxM or NxMxL"},
    {"tile", KF_PAIR, offsetof(kir_schedule, tile_m), 16, 256, "output tile per work group: MxN (multiples of 16)"},
    {"tile_k", KF_INT, offsetof(kir_schedule, tile_k), 0, 256, "the k-step of a tile (0: the target derives it from the tile)"},
    {"stages", KF_INT, offsetof(kir_schedule, stages), 1, 8, "pipeline stages"},
    {"vector", KF_INT, offsetof(kir_schedule, vector), 1, 16, "elements per vector access"},
    {"min_groups", KF_INT, offsetof(kir_schedule, min_groups), 0, 16, "work groups per multiprocessor to compile for"},
    {"library", KF_OFF, offsetof(kir_schedule, library), 0, 0, "off: never the vendor library"},
    {"chunk", KF_I64, offsetof(kir_schedule, chunk), 64, INT64_C(1) << 24, "CPU: elements of the last dimension per work item"},
    {"mr", KF_INT, offsetof(kir_schedule, mr), 6, 6, "CPU matmul: rows of the register tile"},
    {"nr", KF_INT, offsetof(kir_schedule, nr), 16, 32, "CPU matmul: columns of the register tile (16 or 32)"},
    {"mc", KF_INT, offsetof(kir_schedule, mc), 6, 4096, "CPU matmul: rows of A per cache block (the target checks: a multiple of mr)"},
    {"nc", KF_INT, offsetof(kir_schedule, nc), 16, 8192, "CPU matmul: columns of B per cache block (the target checks: a multiple of nr)"},
    {"kc", KF_INT, offsetof(kir_schedule, kc), 16, 4096, "CPU matmul: the contraction block"},
    {"algo", KF_INT, offsetof(kir_schedule, library_algo), 0, 7, "the vendor library's algorithm: its heuristic's choice N (0: first)"},
    {"split_k", KF_INT, offsetof(kir_schedule, split_k), 1, 64, "the reduction in N slices, summed by an epilogue kernel"},
    {"run", KF_INT, offsetof(kir_schedule, run), 0, 8, "the direct convolution: consecutive outputs of a row per invocation (0 or 1: one)"},
    {"cluster", KF_INT, offsetof(kir_schedule, cluster), 1, 2, "work groups per cluster, which share their operands' loads (CUDA on Hopper)"},
    {"wg_matrices", KF_INT, offsetof(kir_schedule, wg_matrices), 0, 2,
     "1: the matmul on cooperative matrices of the whole work group (Vulkan, VK_NV_cooperative_matrix2); 2: its panels loaded through "
     "tensor layouts"},
    {"wg_elements", KF_INT, offsetof(kir_schedule, wg_elements), 0, 1,
     "1: Vulkan's work-group matmul finishes an elementwise epilogue (after at most a bias) on its matrices' elements, 0: in a second "
     "dispatch"},
    {"unroll", KF_INT, offsetof(kir_schedule, unroll), 1, 16, "k-steps one pass of the k-loop issues, unrolled (Vulkan's work-group matmul)"},
};
enum { NKNOBS = sizeof knobs / sizeof knobs[0] };

const char *tune_knob_name(int b) { return b >= 0 && b < NKNOBS ? knobs[b].name : NULL; }

unsigned tune_knob_bit(const char *name) {
  for (int b = 0; b < NKNOBS; b++)
    if (strcmp(knobs[b].name, name) == 0) return 1u << b;
  return 0;
}

/* how many ints knob b sets (KF_I64 and KF_OFF: one value) */
static int knob_width(int b) { return knobs[b].form == KF_TRIPLE ? 3 : knobs[b].form == KF_PAIR ? 2 : 1; }

static int *knob_int(kir_schedule *s, int b) { return (int *)((char *)s + knobs[b].off); }
static const int *knob_cint(const kir_schedule *s, int b) { return (const int *)((const char *)s + knobs[b].off); }

void tune_knobs_apply(const tune_knobs *k, kir_schedule *s) {
  for (int b = 0; b < NKNOBS; b++) {
    if (!(k->mask & (1u << b))) continue;
    if (knobs[b].form == KF_I64) *(int64_t *)((char *)s + knobs[b].off) = *(const int64_t *)((const char *)&k->v + knobs[b].off);
    else memcpy(knob_int(s, b), knob_cint(&k->v, b), sizeof(int) * (size_t)knob_width(b));
  }
}

void tune_knobs_format(const tune_knobs *k, char *out, size_t len) {
  size_t u = 0;
  out[0] = 0;
  for (int b = 0; b < NKNOBS && u < len; b++) {
    if (!(k->mask & (1u << b))) continue;
    const int *v = knob_cint(&k->v, b);
    const char *sep = u ? " " : "";
    switch (knobs[b].form) {
    case KF_INT: u += (size_t)snprintf(out + u, len - u, "%s%s=%d", sep, knobs[b].name, v[0]); break;
    case KF_PAIR: u += (size_t)snprintf(out + u, len - u, "%s%s=%dx%d", sep, knobs[b].name, v[0], v[1]); break;
    case KF_TRIPLE:
      u += (size_t)snprintf(out + u, len - u, "%s%s=%d", sep, knobs[b].name, v[0]);
      if (u < len && (v[1] > 1 || v[2] > 1)) u += (size_t)snprintf(out + u, len - u, "x%d", v[1]);
      if (u < len && v[2] > 1) u += (size_t)snprintf(out + u, len - u, "x%d", v[2]);
      break;
    case KF_I64:
      u += (size_t)snprintf(out + u, len - u, "%s%s=%lld", sep, knobs[b].name, (long long)*(const int64_t *)((const char *)&k->v + knobs[b].off));
      break;
    case KF_OFF: u += (size_t)snprintf(out + u, len - u, "%s%s=off", sep, knobs[b].name); break;
    }
  }
}

void tune_candidates(const char *knob, const int *values, int nvalues, int current, tune_knobs *out, int max, int *n) {
  bool tile = strcmp(knob, "tile") == 0;
  for (int i = 0; i < nvalues && *n < max; i++) {
    if (values[i] == current) continue;
    tune_knobs k = {.mask = tune_knob_bit(knob)};
    if (tile) k.v.tile_m = k.v.tile_n = values[i];
    else k.v.threads[0] = values[i], k.v.threads[1] = k.v.threads[2] = 1;
    out[(*n)++] = k;
  }
}

int tune_useful_tiles(const kir_module *m, int i, int tiles[3]) {
  static const int all[] = {32, 64, 128};
  int n = 0;
  for (int t = 0; t < 3; t++)
    if (gpu_tile_useful(m, i, all[t])) tiles[n++] = all[t];
  return n;
}

void tune_conv_candidates(const kir_module *m, int i, int units, int max_split, tune_knobs *out, int max, int *n) {
  const kir_schedule *s = &m->k[i].sched;
  int tiles[3], nt = tune_useful_tiles(m, i, tiles);
  unsigned mask = tune_knob_bit("tile") | tune_knob_bit("split_k");
  for (int t = 0; t < nt; t++)
    for (int split = 1; split <= max_split && *n < max; split *= 2) {
      if (split > 1 && !gpu_conv_split_useful(m, i, tiles[t], split, units)) continue;
      if (tiles[t] == s->tile_m && split == (s->split_k > 1 ? s->split_k : 1)) continue;
      tune_knobs c = {.mask = mask};
      c.v.tile_m = c.v.tile_n = tiles[t], c.v.split_k = split;
      out[(*n)++] = c;
    }
}

void tune_run_candidates(const kir_module *m, int i, tune_knobs *out, int max, int *n) {
  const kir_kernel *k = &m->k[i];
  if (!gpu_conv_takes_runs(k)) return;
  for (int run = 1; run <= GPU_MAX_RUN && *n < max; run *= 2)
    if (run != gpu_conv_run(k)) out[(*n)++] = (tune_knobs){.mask = tune_knob_bit("run"), .v.run = run};
}

/* "64", "64x64", "16x16x1" into up to n ints; false when malformed */
static bool parse_dims(const char *s, int n, int *v, int *got) {
  *got = 0;
  while (*got < n) {
    char *end;
    long x = strtol(s, &end, 10);
    if (end == s || x < 0 || x > 1 << 30) return false;
    v[(*got)++] = (int)x;
    if (!*end) return true;
    if (*end != 'x') return false;
    s = end + 1;
  }
  return false;
}

/* sets knob b from text; false with why */
static bool knob_parse(tune_knobs *k, int b, const char *val, char *why, size_t len) {
  const struct knob *kb = &knobs[b];
  int v[3] = {0, 1, 1}, got = 0;
  switch (kb->form) {
  case KF_OFF:
    if (strcmp(val, "off") != 0) return str_cut(why, len, "%s=%s: the only value is off", kb->name, val), false;
    *knob_int(&k->v, b) = 0;
    break;
  case KF_I64: {
    char *end;
    long long x = strtoll(val, &end, 10);
    if (end == val || *end) return str_cut(why, len, "%s=%s: not a number", kb->name, val), false;
    *(int64_t *)((char *)&k->v + kb->off) = x;
    break;
  }
  default:
    if (!parse_dims(val, knob_width(b), v, &got)) return str_cut(why, len, "%s=%s: expected %s", kb->name, val, kb->doc), false;
    if (kb->form == KF_PAIR && got == 1) v[1] = v[0]; /* tile=64 is 64x64 */
    memcpy(knob_int(&k->v, b), v, sizeof(int) * (size_t)knob_width(b));
  }
  k->mask |= 1u << b;
  return true;
}

/* ---- the match fields ---- */

static const struct field {
  const char *name;
  bool device; /* else kernel */
  size_t off, size;
} fields[] = {
    {"api", true, offsetof(tune_device, api), sizeof(((tune_device *)0)->api)},
    {"vendor", true, offsetof(tune_device, vendor), sizeof(((tune_device *)0)->vendor)},
    {"type", true, offsetof(tune_device, type), sizeof(((tune_device *)0)->type)},
    {"family", true, offsetof(tune_device, family), sizeof(((tune_device *)0)->family)},
    {"arch", true, offsetof(tune_device, arch), sizeof(((tune_device *)0)->arch)},
    {"model", true, offsetof(tune_device, model), sizeof(((tune_device *)0)->model)},
    {"driver", true, offsetof(tune_device, driver), sizeof(((tune_device *)0)->driver)},
    {"compiler", true, offsetof(tune_device, compiler), sizeof(((tune_device *)0)->compiler)},
    {"kind", false, offsetof(tune_kernel, kind), sizeof(((tune_kernel *)0)->kind)},
    {"dtype", false, offsetof(tune_kernel, dtype), sizeof(((tune_kernel *)0)->dtype)},
    {"layout", false, offsetof(tune_kernel, layout), sizeof(((tune_kernel *)0)->layout)},
    {"epilogue", false, offsetof(tune_kernel, epilogue), sizeof(((tune_kernel *)0)->epilogue)},
    {"params", false, offsetof(tune_kernel, params), sizeof(((tune_kernel *)0)->params)},
};
enum { NFIELDS = sizeof fields / sizeof fields[0] };

static const char *const ext_names[TX_COUNT] = {"b", "m", "n", "k", "c", "h", "w", "o", "rows", "len", "elems"};

static char *field_of(tune_entry *e, int f) { return (char *)(fields[f].device ? (void *)&e->dev : (void *)&e->kern) + fields[f].off; }
static const char *cfield(const void *dev, const void *kern, int f) { return (const char *)(fields[f].device ? dev : kern) + fields[f].off; }

/* provenance keys: which prov needs which */
static const char *const prov_keys[] = {"source", "device", "driver", "date", "median_us", "samples", "from", "rescaled", "note", NULL};
static const char *const prov_names[] = {"measured", "heuristic", "transferred"};

/* "A..B", "A..", "..B", "N" or "dyn" */
static bool parse_range(const char *s, tune_range *r) {
  r->set = true;
  if (strcmp(s, "dyn") == 0) return r->lo = r->hi = TUNE_DYN, true;
  const char *dots = strstr(s, "..");
  char *end;
  if (!dots) {
    r->lo = r->hi = strtoll(s, &end, 10);
    return end != s && !*end && r->lo >= 0;
  }
  r->lo = 0, r->hi = INT64_MAX;
  if (dots != s) {
    r->lo = strtoll(s, &end, 10);
    if (end != dots) return false;
  }
  if (dots[2]) {
    r->hi = strtoll(dots + 2, &end, 10);
    if (*end || end == dots + 2) return false;
  }
  return r->lo >= 0 && r->lo <= r->hi;
}

/* the next token "key=value" or key="quoted value" of *p; false at the end of the line */
static bool next_token(const char **p, char *key, size_t klen, char *val, size_t vlen, bool *bad) {
  const char *s = *p;
  while (*s == ' ' || *s == '\t') s++;
  if (!*s || *s == '#') return false;
  size_t n = 0;
  while (*s && *s != '=' && *s != ' ' && *s != '\t') {
    if (n + 1 < klen) key[n++] = *s;
    s++;
  }
  key[n] = 0;
  n = 0;
  *bad = *s != '=';
  if (*s == '=') s++;
  if (*s == '"') {
    for (s++; *s && *s != '"'; s++) {
      if (*s == '\\' && (s[1] == '"' || s[1] == '\\')) s++;
      if (n + 1 < vlen) val[n++] = *s;
    }
    if (*s != '"') *bad = true;
    else s++;
  } else {
    while (*s && *s != ' ' && *s != '\t') {
      if (n + 1 < vlen) val[n++] = *s;
      s++;
    }
  }
  val[n] = 0;
  *p = s;
  return true;
}

static void append(char *buf, size_t len, const char *fmt, const char *a, const char *b) {
  size_t u = strlen(buf);
  if (u < len) snprintf(buf + u, len - u, fmt, a, b);
}

/* one value for the line, quoted when it has a space */
static void quoted(char *buf, size_t len, const char *key, const char *v) {
  append(buf, len, strpbrk(v, " \t\"#") || !*v ? "%s=\"%s\" " : "%s=%s ", key, v);
}

/* parses one line into e; false with why */
static bool parse_line(const char *line, tune_entry *e, char *why, size_t len) {
  memset(e, 0, sizeof *e);
  char key[32], val[256];
  bool bad, has_prov = false;
  const char *p = line;
  while (next_token(&p, key, sizeof key, val, sizeof val, &bad)) {
    if (bad) return str_cut(why, len, "'%s': expected key=value", key), false;
    int f, b, x;
    for (f = 0; f < NFIELDS && strcmp(key, fields[f].name) != 0; f++) {}
    if (f < NFIELDS) {
      if (strlen(val) >= fields[f].size) return str_cut(why, len, "%s: value too long", key), false;
      strcpy(field_of(e, f), val);
      continue;
    }
    for (x = 0; x < TX_COUNT && strcmp(key, ext_names[x]) != 0; x++) {}
    if (x < TX_COUNT) {
      if (!parse_range(val, &e->ext[x])) return str_cut(why, len, "%s=%s: expected N, A..B or dyn", key, val), false;
      continue;
    }
    for (b = 0; b < NKNOBS && strcmp(key, knobs[b].name) != 0; b++) {}
    if (b < NKNOBS) {
      if (!knob_parse(&e->knobs, b, val, why, len)) return false;
      continue;
    }
    if (strcmp(key, "prov") == 0) {
      int k;
      for (k = 0; k < 3 && strcmp(val, prov_names[k]) != 0; k++) {}
      if (k == 3) return str_cut(why, len, "prov=%s: expected measured, heuristic or transferred", val), false;
      e->prov = (tune_prov)k, has_prov = true;
      continue;
    }
    int k;
    for (k = 0; prov_keys[k] && strcmp(key, prov_keys[k]) != 0; k++) {}
    if (!prov_keys[k]) return str_cut(why, len, "unknown key '%s'", key), false;
    if (strcmp(key, "median_us") == 0) e->median_us = strtod(val, NULL);
    quoted(e->why, sizeof e->why, key, val);
  }
  size_t w = strlen(e->why);
  if (w && e->why[w - 1] == ' ') e->why[w - 1] = 0;
  if (!has_prov) return str_cut(why, len, "no prov= (measured, heuristic or transferred)"), false;
  return tune_lint(e, why, len);
}

static bool why_has(const tune_entry *e, const char *key) {
  char k[40];
  snprintf(k, sizeof k, "%s=", key);
  for (const char *p = strstr(e->why, k); p; p = strstr(p + 1, k))
    if (p == e->why || p[-1] == ' ') return true;
  return false;
}

bool tune_lint(const tune_entry *e, char *why, size_t len) {
  if (!e->dev.api[0]) return str_cut(why, len, "no api= (cuda, hip, vulkan, webgpu, cpu)"), false;
  static const char *const apis[] = {"cuda", "hip", "vulkan", "webgpu", "cpu"};
  bool api = false;
  for (int i = 0; i < 5; i++) api = api || strcmp(e->dev.api, apis[i]) == 0;
  if (!api) return str_cut(why, len, "api=%s: expected cuda, hip, vulkan, webgpu or cpu", e->dev.api), false;
  if (!e->knobs.mask) return str_cut(why, len, "no knobs: an entry sets at least one"), false;
  for (int b = 0; b < NKNOBS; b++) {
    if (!(e->knobs.mask & (1u << b)) || knobs[b].form == KF_OFF) continue;
    int n = knob_width(b);
    int64_t v[3];
    if (knobs[b].form == KF_I64) v[0] = *(const int64_t *)((const char *)&e->knobs.v + knobs[b].off);
    else for (int i = 0; i < n; i++) v[i] = knob_cint(&e->knobs.v, b)[i];
    int64_t lo = knobs[b].lo, hi = knobs[b].hi;
    if (knobs[b].form == KF_TRIPLE) { /* each part bounded by hi first, so the product cannot overflow */
      if (v[0] < 1 || v[1] < 1 || v[2] < 1 || v[0] > hi || v[1] > hi || v[2] > hi || v[0] * v[1] * v[2] > hi)
        return str_cut(why, len, "threads=%lldx%lldx%lld: at most %lld in all", (long long)v[0], (long long)v[1], (long long)v[2], (long long)hi), false;
      continue;
    }
    for (int i = 0; i < n; i++)
      if (v[i] < lo || v[i] > hi || (knobs[b].form == KF_PAIR && v[i] % 16))
        return str_cut(why, len, "%s: %lld is outside %lld..%lld%s", knobs[b].name, (long long)v[i], (long long)lo, (long long)hi,
                        knobs[b].form == KF_PAIR ? " or not a multiple of 16" : ""), false;
    if (strcmp(knobs[b].name, "vector") == 0 && (v[0] & (v[0] - 1)))
      return str_cut(why, len, "vector=%lld: not a power of two", (long long)v[0]), false;
    if (strcmp(knobs[b].name, "nr") == 0 && v[0] != 16 && v[0] != 32)
      return str_cut(why, len, "nr=%lld: the CPU micro-kernels have 16 and 32 columns", (long long)v[0]), false;
  }
  switch (e->prov) {
  case PROV_MEASURED:
    if (!why_has(e, "device") || !why_has(e, "date") || !why_has(e, "median_us"))
      return str_cut(why, len, "prov=measured needs device=, date= and median_us="), false;
    break;
  case PROV_HEURISTIC:
    if (!why_has(e, "source")) return str_cut(why, len, "prov=heuristic needs source= (the public source of the numbers)"), false;
    break;
  case PROV_TRANSFERRED:
    if (!why_has(e, "from") || !why_has(e, "rescaled")) return str_cut(why, len, "prov=transferred needs from= and rescaled="), false;
    break;
  }
  return true;
}

int tune_parse(const char *text, tune_table *t, char *err, size_t errlen) {
  int problems = 0, lineno = 0;
  if (err && errlen) err[0] = 0;
  for (const char *p = text; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    char line[2048], why[256];
    lineno++;
    if (n >= sizeof line) {
      problems++;
      if (err) snprintf(err + strlen(err), errlen - strlen(err), "%s:%d: line too long\n", t->name, lineno);
    } else {
      memcpy(line, p, n);
      line[n] = 0;
      const char *s = line;
      while (isspace((unsigned char)*s)) s++;
      tune_entry e;
      if (*s && *s != '#') {
        if (!parse_line(s, &e, why, sizeof why)) {
          problems++;
          if (err && strlen(err) + 1 < errlen) snprintf(err + strlen(err), errlen - strlen(err), "%s:%d: %s\n", t->name, lineno, why);
        } else {
          if (t->n == t->cap) {
            int cap = t->cap ? 2 * t->cap : 16;
            tune_entry *ne = realloc(t->e, sizeof *ne * (size_t)cap);
            if (!ne) return problems + 1;
            t->e = ne, t->cap = cap;
          }
          e.line = lineno;
          t->e[t->n++] = e;
        }
      }
    }
    p = nl ? nl + 1 : NULL;
  }
  return problems;
}

void tune_table_free(tune_table *t) {
  free(t->e);
  free(t->err);
  t->e = NULL, t->err = NULL;
  t->n = t->cap = t->problems = 0;
}

void tune_table_load(tune_table *t, const char *name, const char *origin, const char *text) {
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->origin = origin;
  char err[4096];
  if ((t->problems = tune_parse(text, t, err, sizeof err))) t->err = strdup(err);
}

const char *tune_prov_name(tune_prov p) { return prov_names[p]; }

static void format_match(const tune_device *dev, const tune_kernel *kern, const tune_range *ext, char *out, size_t len) {
  out[0] = 0;
  for (int f = 0; f < NFIELDS; f++) {
    const char *v = cfield(dev, kern, f);
    if (v[0]) quoted(out, len, fields[f].name, v);
  }
  for (int x = 0; x < TX_COUNT; x++) {
    if (!ext[x].set) continue;
    char v[48];
    if (ext[x].lo == TUNE_DYN) snprintf(v, sizeof v, "dyn");
    else if (ext[x].lo == ext[x].hi) snprintf(v, sizeof v, "%lld", (long long)ext[x].lo);
    else if (ext[x].hi == INT64_MAX) snprintf(v, sizeof v, "%lld..", (long long)ext[x].lo);
    else snprintf(v, sizeof v, "%lld..%lld", (long long)ext[x].lo, (long long)ext[x].hi);
    append(out, len, "%s=%s ", ext_names[x], v);
  }
}

void tune_format(const tune_entry *e, char *out, size_t len) {
  char knobs_text[256];
  format_match(&e->dev, &e->kern, e->ext, out, len);
  tune_knobs_format(&e->knobs, knobs_text, sizeof knobs_text);
  size_t u = strlen(out);
  if (u < len) snprintf(out + u, len - u, "%s prov=%s%s%s\n", knobs_text, prov_names[e->prov], e->why[0] ? " " : "", e->why);
}

void tune_kernel_format(const tune_kernel *k, char *out, size_t len) {
  tune_range ext[TX_COUNT];
  for (int x = 0; x < TX_COUNT; x++) ext[x] = (tune_range){k->ext[x], k->ext[x], k->ext[x] != TUNE_NONE};
  format_match(&(tune_device){0}, k, ext, out, len);
  size_t u = strlen(out);
  if (u && out[u - 1] == ' ') out[u - 1] = 0;
}

void tune_device_format(const tune_device *d, char *out, size_t len) {
  tune_range ext[TX_COUNT] = {0};
  format_match(d, &(tune_kernel){0}, ext, out, len);
  size_t u = strlen(out);
  if (u && out[u - 1] == ' ') out[u - 1] = 0;
}

/* ---- matching ---- */

bool tune_match_device(const tune_entry *e, const tune_device *d, int *dev_rank) {
  for (int f = 0; f < NFIELDS; f++) {
    const char *want = cfield(&e->dev, &e->kern, f);
    if (fields[f].device && want[0] && strcasecmp(want, cfield(d, NULL, f)) != 0) return false;
  }
  *dev_rank = e->dev.model[0] ? 5 : e->dev.arch[0] ? 4 : e->dev.family[0] ? 3 : e->dev.type[0] ? 2 : e->dev.vendor[0] ? 1 : 0;
  return true;
}

bool tune_match(const tune_entry *e, const tune_device *d, const tune_kernel *k, int *dev_rank, int *shape_rank) {
  if (!tune_match_device(e, d, dev_rank)) return false;
  for (int f = 0; f < NFIELDS; f++) {
    const char *want = cfield(&e->dev, &e->kern, f);
    if (!fields[f].device && want[0] && strcasecmp(want, cfield(NULL, k, f)) != 0) return false;
  }
  bool all_exact = true;
  int set = 0;
  for (int x = 0; x < TX_COUNT; x++) {
    const tune_range *r = &e->ext[x];
    if (k->ext[x] == TUNE_NONE) {
      if (r->set) return false;
      continue;
    }
    if (!r->set) {
      all_exact = false;
      continue;
    }
    set++;
    if (k->ext[x] == TUNE_DYN ? r->lo != TUNE_DYN : r->lo == TUNE_DYN || k->ext[x] < r->lo || k->ext[x] > r->hi) return false;
    all_exact = all_exact && r->lo == r->hi;
  }
  *shape_rank = !set ? 0 : all_exact ? 2 : 1;
  return true;
}

const tune_entry *tune_best(const tune_table *t, const tune_device *d, const tune_kernel *k) {
  const tune_entry *best = NULL;
  int bd = -1, bs = -1;
  for (int i = 0; i < t->n; i++) {
    int dr, sr;
    if (!tune_match(&t->e[i], d, k, &dr, &sr)) continue;
    if (dr > bd || (dr == bd && sr >= bs)) best = &t->e[i], bd = dr, bs = sr;
  }
  return best;
}

/* ---- a graph with a kernel like an entry's (tests, compile_all) ---- */

/* the entry's extent x: exact, the range's value nearest dflt, or dflt (small: always dflt) */
static int64_t sample_extent(const tune_entry *e, int x, int64_t dflt, bool small) {
  const tune_range *r = &e->ext[x];
  if (small || !r->set || r->lo == TUNE_DYN) return dflt;
  return dflt < r->lo ? r->lo : dflt > r->hi ? r->hi : dflt;
}

void tune_sample_graph(const tune_entry *e, bool small, char *out, size_t len) {
  const char *dt = e->kern.dtype[0] && !strchr(e->kern.dtype, '>') ? e->kern.dtype : "f32";
  const char *kind = e->kern.kind[0] ? e->kern.kind : "pointwise";
#define X(x, d) (long long)sample_extent(e, x, d, small)
  if (strcmp(kind, "matmul") == 0)
    snprintf(out, len, "graph sample\ninput a: %s[%lld, %lld]\ninput b: %s[%lld, %lld]\ny = matmul(a, b)\noutput y\n", dt, X(TX_M, 128),
             X(TX_K, 128), dt, X(TX_K, 128), X(TX_N, 128));
  else if (strcmp(kind, "conv") == 0)
    snprintf(out, len, "graph sample\ninput x: %s[%lld, %lld, %lld, %lld]\nparam w: %s[%lld, %lld, 3, 3]\ny = conv2d(x, w, padding=[1, 1])\noutput y\n",
             dt, X(TX_N, 2), X(TX_C, 16), X(TX_H, 16), X(TX_W, 16), dt, X(TX_O, 32), X(TX_C, 16));
  else if (strcmp(kind, "row") == 0)
    snprintf(out, len, "graph sample\ninput x: %s[%lld, %lld]\ny = softmax(x, axis=1)\noutput y\n", dt, X(TX_ROWS, 64), X(TX_LEN, 256));
  else if (strcmp(kind, "opaque") == 0)
    snprintf(out, len, "graph sample\ninput x: %s[2, 8, 16, 16]\ny = max_pool2d(x, kernel=[2, 2], stride=[2, 2])\noutput y\n", dt);
  else
    snprintf(out, len, "graph sample\ninput x: %s[%lld]\ny = relu(x)\noutput y\n", dt, X(TX_ELEMS, 65536));
#undef X
}
