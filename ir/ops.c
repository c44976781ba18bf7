/*
 * ops.c: the op table of ops.def as data: names, input counts, kinds, the dtypes elementwise ops
 * accept, and each op's attribute schema, parsed once from its mini-language.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"

#define NUM ACC_NUM
#define FLT ACC_FLT
#define BOOL ACC_BOOL
#define ANY ACC_ANY

struct raw_op {
  const char *name;
  int min_in, max_in;
  enum op_kind kind;
  int accepts;
  const char *attrs;
};

static const struct raw_op raw[OP_COUNT] = {
#define OP(id, mi, ma, k, at) [OP_##id] = {#id, mi, ma, k, 0, at},
#define UNARY(id, acc, fx, ix) [OP_##id] = {#id, 1, 1, K_UNARY, acc, ""},
#define BINARY(id, acc, fx, ix) [OP_##id] = {#id, 2, 2, K_BINARY, acc, ""},
#define COMPARE(id, acc, fx) [OP_##id] = {#id, 2, 2, K_COMPARE, acc, ""},
#include "ops.def"
};

static op_info table[OP_COUNT];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* "[1,1]" or "[]" into a list attribute; the schema is ours, so a malformed one is a bug. */
static void parse_default_list(const char *s, attr *a) {
  a->n = 0;
  s++; /* '[' */
  while (*s && *s != ']') {
    char *end;
    a->v[a->n] = strtoll(s, &end, 10);
    a->sym[a->n++] = -1;
    s = *end == ',' ? end + 1 : end;
  }
}

static void parse_schema(op_info *info, const char *text) {
  static const struct { const char *name; enum attr_kind kind; } kinds[] = {
      {"int", A_INT}, {"ints", A_INTS}, {"float", A_FLOAT},
      {"bool", A_BOOL}, {"dtype", A_DTYPE}, {"dims", A_DIMS}};
  char buf[256];
  strncpy(buf, text, sizeof buf - 1);
  buf[sizeof buf - 1] = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
    attr_spec *sp = &info->attrs[info->nattrs++];
    char *colon = strchr(tok, ':'), *eq = strchr(tok, '=');
    *colon = 0;
    if (eq) *eq = 0;
    sp->name = strdup(tok);
    for (unsigned k = 0; k < sizeof kinds / sizeof *kinds; k++)
      if (strcmp(colon + 1, kinds[k].name) == 0) sp->kind = kinds[k].kind;
    sp->required = eq == NULL;
    if (!eq || strcmp(eq + 1, "?") == 0) continue;
    const char *d = eq + 1;
    sp->def.set = true;
    switch (sp->kind) {
    case A_INT: sp->def.v[0] = strtoll(d, NULL, 10); break;
    case A_FLOAT: sp->def.f = strtod(d, NULL); break;
    case A_BOOL: sp->def.v[0] = strcmp(d, "true") == 0; break;
    case A_INTS: case A_DIMS: parse_default_list(d, &sp->def); break;
    case A_DTYPE: break;
    }
  }
}

static void build_table(void) {
  for (int i = 0; i < OP_COUNT; i++) {
    op_info *t = &table[i];
    t->name = raw[i].name;
    t->min_in = raw[i].min_in;
    t->max_in = raw[i].max_in;
    t->kind = raw[i].kind;
    t->accepts = raw[i].accepts;
    parse_schema(t, raw[i].attrs);
  }
}

const op_info *op_get(enum op op) {
  pthread_once(&table_once, build_table);
  return (unsigned)op < OP_COUNT ? &table[op] : NULL;
}

bool op_lookup(const char *name, enum op *out) {
  for (int i = 0; i < OP_COUNT; i++)
    if (strcmp(op_get((enum op)i)->name, name) == 0) {
      *out = (enum op)i;
      return true;
    }
  return false;
}

int attr_index(enum op op, const char *name) {
  const op_info *info = op_get(op);
  for (int i = 0; i < info->nattrs; i++)
    if (strcmp(info->attrs[i].name, name) == 0) return i;
  return -1;
}

const attr *attr_get(const node *n, const char *name) {
  int i = attr_index(n->op, name);
  return i < 0 ? NULL : &n->a[i];
}

int64_t attr_i(const node *n, const char *name) {
  const attr *a = attr_get(n, name);
  return a ? a->v[0] : 0;
}

conv_axes conv_axes_of(const node *n) {
  return attr_i(n, "channels_last") ? (conv_axes){3, 1, 2, 3, 2, 0, 1} : (conv_axes){1, 2, 3, 0, 1, 2, 3};
}

double attr_f(const node *n, const char *name) {
  const attr *a = attr_get(n, name);
  return a ? a->f : 0;
}

const char *op_kind_name(enum op_kind k) {
  static const char *const names[] = {"source", "unary", "binary", "compare", "where",
                                      "cast", "reduce", "argmax", "matmul", "conv",
                                      "pool", "view", "composite", "mask"};
  return names[k];
}

static void describe_default(const attr_spec *sp, strbuf *b) {
  const attr *d = &sp->def;
  switch (sp->kind) {
  case A_INT: sb_printf(b, "%lld", (long long)d->v[0]); break;
  case A_FLOAT: sb_printf(b, "%g", d->f); break;
  case A_BOOL: sb_printf(b, "%s", d->v[0] ? "true" : "false"); break;
  case A_DTYPE: break;
  case A_INTS:
  case A_DIMS:
    sb_printf(b, "[");
    for (int i = 0; i < d->n; i++) sb_printf(b, "%s%lld", i ? "," : "", (long long)d->v[i]);
    sb_printf(b, "]");
    break;
  }
}

char *portc_ops_describe(void) {
  static const char *const kinds[] = {"int", "ints", "float", "bool", "dtype", "dims"};
  static const char *const acc[] = {"", "float", "int", "", "bool", "", "", "any"};
  strbuf b = {0};
  for (int i = 0; i < OP_COUNT; i++) {
    const op_info *t = op_get((enum op)i);
    if (t->kind == K_SOURCE) continue;
    char inputs[32];
    if (t->min_in == t->max_in) snprintf(inputs, sizeof inputs, "%d", t->min_in);
    else snprintf(inputs, sizeof inputs, "%d..%d", t->min_in, t->max_in);
    sb_printf(&b, "%-12s inputs %-6s %-10s", t->name, inputs, op_kind_name(t->kind));
    if (t->accepts) sb_printf(&b, " %s", t->accepts == ACC_NUM ? "numeric" : acc[t->accepts]);
    for (int k = 0; k < t->nattrs; k++) {
      const attr_spec *sp = &t->attrs[k];
      sb_printf(&b, " %s:%s", sp->name, kinds[sp->kind]);
      if (sp->def.set) {
        sb_printf(&b, "=");
        describe_default(sp, &b);
      } else if (!sp->required) {
        sb_printf(&b, "=?");
      }
    }
    sb_printf(&b, "\n");
  }
  char *s = sb_take(&b);
  if (!s) err_set(PORTC_ERR_NOMEM, "ops: out of memory");
  return s;
}
