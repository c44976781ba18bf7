/*
 * text_print.c: writes a graph in the .ptg text format (docs/ptg.md).
 *
 * The output is normalized: one statement per line, every value with its inferred type, only
 * attributes that differ from their defaults, numbers in the shortest form that reads back to
 * the same double. Parsing the output gives an equal graph, and printing that gives the same
 * text. Nodes whose inputs are broken still print (with "?"), so the verifier can annotate them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "graph.h"

/* shortest %g form that strtod reads back exactly */
static void fmt_double(char *buf, size_t len, double v) {
  if (isnan(v)) {
    snprintf(buf, len, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, len, v < 0 ? "-inf" : "inf");
    return;
  }
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, len, "%.*g", p, v);
    if (strtod(buf, NULL) == v) return;
  }
}

static void print_double(strbuf *b, double v) {
  char buf[40];
  fmt_double(buf, sizeof buf, v);
  sb_printf(b, "%s", buf);
}

static void print_type(const portc_graph *g, portc_dtype t, const shape *s, strbuf *b) {
  char buf[512];
  shape_str(g, s, buf, sizeof buf);
  sb_printf(b, "%s%s", portc_dtype_name(t), buf);
}

static bool attr_equal(const attr *a, const attr *b, enum attr_kind k) {
  if (a->set != b->set) return false;
  switch (k) {
  case A_FLOAT: return a->f == b->f || (isnan(a->f) && isnan(b->f));
  case A_INTS:
  case A_DIMS:
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++)
      if (a->v[i] != b->v[i] || (k == A_DIMS && a->sym[i] != b->sym[i])) return false;
    return true;
  default: return a->v[0] == b->v[0];
  }
}

static void print_attr(const portc_graph *g, const attr_spec *sp, const attr *a, strbuf *b) {
  sb_printf(b, "%s=", sp->name);
  switch (sp->kind) {
  case A_INT: sb_printf(b, "%lld", (long long)a->v[0]); break;
  case A_FLOAT: print_double(b, a->f); break;
  case A_BOOL: sb_printf(b, "%s", a->v[0] ? "true" : "false"); break;
  case A_DTYPE: sb_printf(b, "%s", portc_dtype_name((portc_dtype)a->v[0])); break;
  case A_INTS:
  case A_DIMS:
    sb_printf(b, "[");
    for (int i = 0; i < a->n; i++) {
      if (i) sb_printf(b, ", ");
      if (sp->kind == A_DIMS && a->sym[i] >= 0) sb_printf(b, "%s", a->sym[i] < g->nsyms ? g->syms[a->sym[i]] : "?");
      else sb_printf(b, "%lld", (long long)a->v[i]);
    }
    sb_printf(b, "]");
    break;
  }
}

static void print_value(const node *n, int64_t i, strbuf *b) {
  if (n->value.f) print_double(b, n->value.f[i]);
  else if (n->dt == PORTC_BOOL) sb_printf(b, "%s", n->value.i[i] ? "true" : "false");
  else sb_printf(b, "%lld", (long long)n->value.i[i]);
}

static bool all_same(const node *n) {
  for (int64_t i = 1; i < n->value.n; i++) {
    if (n->value.f ? memcmp(&n->value.f[i], &n->value.f[0], sizeof(double)) : n->value.i[i] != n->value.i[0]) return false;
  }
  return n->value.n > 1;
}

static void print_string(const char *s, strbuf *b) {
  sb_printf(b, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') sb_printf(b, "\\%c", *s);
    else sb_printf(b, "%c", *s);
  }
  sb_printf(b, "\"");
}

static void print_source(const portc_graph *g, const node *n, strbuf *b) {
  sb_printf(b, "%s %s: ", op_get(n->op)->name, n->name);
  print_type(g, n->dt, &n->sh, b);
  if (n->op == OP_const) {
    sb_printf(b, " = ");
    if (n->sh.rank == 0 || all_same(n)) {
      if (n->value.n) print_value(n, 0, b);
      else sb_printf(b, "[]");
    } else {
      sb_printf(b, "[");
      for (int64_t i = 0; i < n->value.n; i++) {
        if (i) sb_printf(b, ", ");
        print_value(n, i, b);
      }
      sb_printf(b, "]");
    }
  } else if (n->op == OP_param && n->file) {
    sb_printf(b, " = file(");
    print_string(n->file, b);
    if (n->file_key) {
      sb_printf(b, ", key=");
      print_string(n->file_key, b);
    }
    sb_printf(b, ")");
  } else if (n->op == OP_param && n->data) {
    sb_printf(b, "  # values held in memory: `portc convert` writes them to a file");
  } else if (n->op == OP_param && n->has_init) {
    static const char *const names[] = {"zeros", "ones", "normal", "uniform"};
    static const char *const p[][2] = {{0, 0}, {0, 0}, {"mean", "std"}, {"low", "high"}};
    sb_printf(b, " = %s", names[n->init]);
    if (n->init >= PORTC_INIT_NORMAL) {
      sb_printf(b, "(%s=", p[n->init][0]);
      print_double(b, n->p0);
      sb_printf(b, ", %s=", p[n->init][1]);
      print_double(b, n->p1);
      sb_printf(b, ", seed=%llu)", (unsigned long long)n->seed);
    }
  }
}

void graph_print_node(const portc_graph *g, const node *n, strbuf *b) {
  const op_info *info = op_get(n->op);
  if (!info) {
    sb_printf(b, "%s = <bad op %d>", n->name ? n->name : "?", (int)n->op);
    return;
  }
  if (info->kind == K_SOURCE) {
    print_source(g, n, b);
    return;
  }
  sb_printf(b, "%s: ", n->name ? n->name : "?");
  print_type(g, n->dt, &n->sh, b);
  sb_printf(b, " = %s(", info->name);
  int k = 0;
  for (int i = 0; i < n->nin; i++, k++) {
    int32_t in = n->in[i];
    sb_printf(b, "%s%s", k ? ", " : "", in >= 0 && in < g->n && g->nodes[in].name ? g->nodes[in].name : "?");
  }
  for (int i = 0; i < info->nattrs; i++) {
    const attr_spec *sp = &info->attrs[i];
    if (!n->a[i].set || (sp->def.set && attr_equal(&n->a[i], &sp->def, sp->kind))) continue;
    sb_printf(b, "%s", k++ ? ", " : "");
    print_attr(g, sp, &n->a[i], b);
  }
  sb_printf(b, ")");
}

static void print_outputs(const portc_graph *g, strbuf *b) {
  if (!g->nout) return;
  sb_printf(b, "output ");
  for (int i = 0; i < g->nout; i++) {
    int32_t o = g->outputs[i];
    sb_printf(b, "%s%s", i ? ", " : "", o >= 0 && o < g->n ? g->nodes[o].name : "?");
  }
  sb_printf(b, "\n");
  for (int k = 0; k < g->nupd; k++) sb_printf(b, "update %s = %s\n", g->nodes[g->upd_param[k]].name, g->nodes[g->upd_value[k]].name);
}

char *portc_graph_print(const portc_graph *g) {
  if (!g) return NULL;
  strbuf b = {0};
  sb_printf(&b, "graph %s\n", g->name);
  for (int i = 0; i < g->n; i++) {
    graph_print_node(g, &g->nodes[i], &b);
    sb_printf(&b, "\n");
  }
  print_outputs(g, &b);
  return sb_take(&b);
}
