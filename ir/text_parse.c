/*
 * text_parse.c: reads the .ptg text format (grammar in docs/ptg.md) into a graph.
 *
 * The parser does not stop at the first problem. A statement with an error is reported with its
 * line and column and skipped; a later statement that uses a value whose definition failed is
 * skipped silently (it would only repeat the first error). All messages are returned together,
 * one per line, in the form "SOURCE:LINE:COL: what was expected / what is wrong".
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "text_parse.h"

#define MAX_ERRORS 50


/* ---- lexer ---- */

static void lex(parser *ps) {
  const char *p = ps->p;
  while (*p == ' ' || *p == '\t' || *p == '\r') p++;
  if (*p == '#')
    while (*p && *p != '\n') p++;
  tok t = {.s = p, .line = ps->line, .col = (int)(p - ps->bol) + 1};
  if (!*p) {
    t.k = T_END;
  } else if (*p == '\n') {
    t.k = T_EOL;
    t.len = 1;
  } else if (isalpha((unsigned char)*p) || *p == '_') {
    t.k = T_IDENT;
    while (isalnum((unsigned char)p[t.len]) || p[t.len] == '_' || p[t.len] == '.') t.len++;
  } else if (isdigit((unsigned char)*p) || ((*p == '-' || *p == '+' || *p == '.') && (isdigit((unsigned char)p[1]) || p[1] == '.' || (*p != '.' && (strncmp(p + 1, "inf", 3) == 0 || strncmp(p + 1, "nan", 3) == 0))))) {
    const char *q = p;
    if (*q == '-' || *q == '+') q++;
    if (strncmp(q, "inf", 3) == 0 || strncmp(q, "nan", 3) == 0) {
      t.k = T_FLOAT;
      q += 3;
    } else {
      t.k = T_INT;
      while (isdigit((unsigned char)*q)) q++;
      if (*q == '.') {
        t.k = T_FLOAT;
        q++;
        while (isdigit((unsigned char)*q)) q++;
      }
      if ((*q == 'e' || *q == 'E') && (isdigit((unsigned char)q[1]) || ((q[1] == '-' || q[1] == '+') && isdigit((unsigned char)q[2])))) {
        t.k = T_FLOAT;
        q += 2;
        while (isdigit((unsigned char)*q)) q++;
      }
    }
    if (isalpha((unsigned char)*q) || *q == '_') t.k = T_BAD; /* 12abc */
    while (isalnum((unsigned char)*q) || *q == '_') q++;
    t.len = (int)(q - p);
  } else if (*p == '"') {
    t.k = T_STRING;
    t.len = 1;
    while (p[t.len] && p[t.len] != '"' && p[t.len] != '\n') t.len += p[t.len] == '\\' && p[t.len + 1] && p[t.len + 1] != '\n' ? 2 : 1;
    if (p[t.len] == '"') t.len++;
    else t.k = T_BAD;
  } else if (strchr(":=(),[]*", *p)) {
    t.k = T_PUNCT;
    t.len = 1;
  } else {
    t.k = T_BAD;
    t.len = 1;
    while ((unsigned char)p[t.len] >= 0x80 && (p[t.len] & 0xc0) == 0x80) t.len++; /* whole UTF-8 char */
  }
  ps->t = t;
  ps->p = p + t.len;
}

void ps_next(parser *ps) {
  if (ps->t.k == T_EOL) {
    ps->line++;
    ps->bol = ps->p;
  }
  lex(ps);
}

static const char *describe(const tok *t, char *buf, size_t len) {
  switch (t->k) {
  case T_END: return "end of input";
  case T_EOL: return "end of line";
  case T_BAD: snprintf(buf, len, "invalid text '%.*s'", t->len > 40 ? 40 : t->len, t->s); return buf;
  default: snprintf(buf, len, "'%.*s'", t->len > 40 ? 40 : t->len, t->s); return buf;
  }
}

/* ---- errors ---- */

void ps_errorf_at(parser *ps, int line, int col, portc_status s, const char *fmt, ...) {
  if (ps->stmt_failed) return;
  ps->stmt_failed = true;
  if (!ps->nerr) ps->first = s;
  if (ps->nerr++ >= MAX_ERRORS) return;
  sb_printf(&ps->errs, "%s:%d:%d: ", ps->src, line, col);
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&ps->errs, fmt, ap);
  va_end(ap);
  sb_printf(&ps->errs, "\n");
}

/* "expected X, found Y" at the current token */
bool ps_expected(parser *ps, const char *what) {
  char buf[80];
  ps_errorf_at(ps, ps->t.line, ps->t.col, PORTC_ERR_PARSE, "expected %s, found %s", what, describe(&ps->t, buf, sizeof buf));
  return false;
}

bool ps_is_punct(const parser *ps, char c) { return ps->t.k == T_PUNCT && *ps->t.s == c; }
bool ps_is_word(const parser *ps, const char *w) {
  return ps->t.k == T_IDENT && (size_t)ps->t.len == strlen(w) && strncmp(ps->t.s, w, (size_t)ps->t.len) == 0;
}

bool ps_accept(parser *ps, char c) {
  if (!ps_is_punct(ps, c)) return false;
  ps_next(ps);
  return true;
}

bool ps_expect(parser *ps, char c, const char *what) {
  if (ps_accept(ps, c)) return true;
  return ps_expected(ps, what);
}

bool ps_ident(parser *ps, char *out, size_t len, const char *what) {
  if (ps->t.k != T_IDENT) return ps_expected(ps, what);
  if ((size_t)ps->t.len >= len) {
    ps_errorf_at(ps, ps->t.line, ps->t.col, PORTC_ERR_PARSE, "name is longer than %zu characters", len - 1);
    return false;
  }
  memcpy(out, ps->t.s, (size_t)ps->t.len);
  out[ps->t.len] = 0;
  ps_next(ps);
  return true;
}

/* ---- values ---- */

static bool int_value(parser *ps, int64_t *out) {
  if (ps->t.k != T_INT) return ps_expected(ps, "an integer");
  char buf[64];
  snprintf(buf, sizeof buf, "%.*s", ps->t.len, ps->t.s);
  errno = 0;
  long long v = strtoll(buf, NULL, 10);
  if (errno == ERANGE) {
    ps_errorf_at(ps, ps->t.line, ps->t.col, PORTC_ERR_PARSE, "integer %s is out of range", buf);
    return false;
  }
  *out = v;
  ps_next(ps);
  return true;
}

/* a seed: any 64-bit pattern, written unsigned (as printed) or negative (two's complement) */
static bool seed_value(parser *ps, uint64_t *out) {
  if (ps->t.k != T_INT) return ps_expected(ps, "an integer");
  char buf[64];
  snprintf(buf, sizeof buf, "%.*s", ps->t.len, ps->t.s);
  errno = 0;
  uint64_t v = buf[0] == '-' ? (uint64_t)strtoll(buf, NULL, 10) : strtoull(buf, NULL, 10);
  if (errno == ERANGE || buf[0] == '+') {
    ps_errorf_at(ps, ps->t.line, ps->t.col, PORTC_ERR_PARSE, "seed %s is out of range", buf);
    return false;
  }
  *out = v;
  ps_next(ps);
  return true;
}

bool ps_float_value(parser *ps, double *out) {
  if (ps->t.k != T_INT && ps->t.k != T_FLOAT && !ps_is_word(ps, "inf") && !ps_is_word(ps, "nan")) return ps_expected(ps, "a number");
  char buf[64];
  snprintf(buf, sizeof buf, "%.*s", ps->t.len, ps->t.s);
  *out = strtod(buf, NULL); /* overflow gives inf, as written */
  ps_next(ps);
  return true;
}

static bool bool_value(parser *ps, int64_t *out) {
  if (ps_is_word(ps, "true")) *out = 1;
  else if (ps_is_word(ps, "false")) *out = 0;
  else return ps_expected(ps, "true or false");
  ps_next(ps);
  return true;
}

static bool dtype_value(parser *ps, portc_dtype *out) {
  char buf[16] = "";
  if (ps->t.k == T_IDENT && ps->t.len < 16) snprintf(buf, sizeof buf, "%.*s", ps->t.len, ps->t.s);
  if (!portc_dtype_parse(buf, out) || !dtype_valid_in_graph(*out)) return ps_expected(ps, "a dtype (f32, f16, bf16, i32, i64, bool)");
  ps_next(ps);
  return true;
}

/* [a, b, ...] of ints, or of ints and symbols when syms is set */
static bool list_value(parser *ps, attr *a, bool syms) {
  if (!ps_expect(ps, '[', "'['")) return false;
  a->n = 0;
  if (ps_accept(ps, ']')) return true;
  do {
    if (a->n == MAX_LIST) {
      ps_errorf_at(ps, ps->t.line, ps->t.col, PORTC_ERR_PARSE, "list is longer than %d", MAX_LIST);
      return false;
    }
    a->sym[a->n] = -1;
    a->v[a->n] = 0;
    if (syms && ps->t.k == T_IDENT) {
      char name[64];
      if (!ps_ident(ps, name, sizeof name, "a symbol")) return false;
      if ((a->sym[a->n] = graph_symbol(ps->g, name)) < 0) {
        ps_errorf_at(ps, ps->t.line, ps->t.col, PORTC_ERR_NOMEM, "out of memory");
        return false;
      }
    } else if (!int_value(ps, &a->v[a->n])) {
      return false;
    } else if (syms && ps_accept(ps, '*')) { /* 8*N: a multiple of a symbol */
      char name[64], scaled[96];
      if (!ps_ident(ps, name, sizeof name, "a symbol after '*'")) return false;
      snprintf(scaled, sizeof scaled, "%lld*%s", (long long)a->v[a->n], name);
      if ((a->sym[a->n] = graph_symbol(ps->g, scaled)) < 0) {
        ps_errorf_at(ps, ps->t.line, ps->t.col, PORTC_ERR_INVALID, "'%s' is not a valid multiple of a symbol (a factor of 2 or more)", scaled);
        return false;
      }
      a->v[a->n] = 0;
    }
    a->n++;
  } while (ps_accept(ps, ','));
  return ps_expect(ps, ']', "',' or ']'");
}

static bool attr_value(parser *ps, const attr_spec *sp, attr *a) {
  a->set = true;
  switch (sp->kind) {
  case A_INT: return int_value(ps, &a->v[0]);
  case A_FLOAT: return ps_float_value(ps, &a->f);
  case A_BOOL: return bool_value(ps, &a->v[0]);
  case A_DTYPE: {
    portc_dtype t;
    if (!dtype_value(ps, &t)) return false;
    a->v[0] = t;
    return true;
  }
  case A_INTS: return list_value(ps, a, false);
  case A_DIMS: return list_value(ps, a, true);
  }
  return false;
}

/* NAME=VALUE for op; the current token is NAME */
static bool attribute(parser *ps, enum op op, attr *attrs) {
  const op_info *info = op_get(op);
  tok at = ps->t;
  char name[64];
  if (!ps_ident(ps, name, sizeof name, "an attribute name")) return false;
  int i = attr_index(op, name);
  if (i < 0) {
    strbuf b = {0};
    for (int k = 0; k < info->nattrs; k++) sb_printf(&b, "%s%s", k ? ", " : "", info->attrs[k].name);
    char *list = sb_take(&b);
    ps_errorf_at(ps, at.line, at.col, PORTC_ERR_INVALID, "%s has no attribute '%s' (it has: %s)", info->name, name,
              list && *list ? list : "none");
    free(list);
    return false;
  }
  if (attrs[i].set) {
    ps_errorf_at(ps, at.line, at.col, PORTC_ERR_INVALID, "attribute '%s' is given twice", name);
    return false;
  }
  if (!ps_expect(ps, '=', "'=' after the attribute name")) return false;
  return attr_value(ps, &info->attrs[i], &attrs[i]);
}

/* dtype[dims] */
static bool type(parser *ps, portc_dtype *dt, shape *sh) {
  if (!dtype_value(ps, dt)) return false;
  attr a = {0};
  tok at = ps->t;
  if (!list_value(ps, &a, true)) return false;
  if (a.n > PORTC_MAX_RANK) {
    ps_errorf_at(ps, at.line, at.col, PORTC_ERR_SHAPE, "rank %d is more than %d", a.n, PORTC_MAX_RANK);
    return false;
  }
  sh->rank = a.n;
  for (int i = 0; i < a.n; i++) {
    if (a.sym[i] < 0 && a.v[i] < 0) {
      ps_errorf_at(ps, at.line, at.col, PORTC_ERR_SHAPE, "dimension %d is negative (%lld)", i, (long long)a.v[i]);
      return false;
    }
    sh->d[i] = (dim){a.v[i], a.sym[i]};
  }
  return true;
}

bool ps_end_of_statement(parser *ps) {
  if (ps->t.k == T_EOL || ps->t.k == T_END) return true;
  return ps_expected(ps, "end of line");
}

/* ---- names ---- */

static bool is_poisoned(const parser *ps, const char *name) {
  for (int i = 0; i < ps->npoisoned; i++)
    if (strcmp(ps->poisoned[i], name) == 0) return true;
  return false;
}

static void poison(parser *ps, const char *name) {
  char **p = realloc(ps->poisoned, (size_t)(ps->npoisoned + 1) * sizeof *p);
  if (!p) return;
  ps->poisoned = p;
  if ((p[ps->npoisoned] = strdup(name))) ps->npoisoned++;
}

/* a name about to be defined */
static bool new_name(parser *ps, char *out, size_t len) {
  tok at = ps->t;
  if (!ps_ident(ps, out, len, "a name")) return false;
  if (is_reserved(out)) {
    ps_errorf_at(ps, at.line, at.col, PORTC_ERR_INVALID, "'%s' is a reserved word and cannot name a value", out);
    return false;
  }
  if (node_name_taken(ps->g, out) || is_poisoned(ps, out)) {
    ps_errorf_at(ps, at.line, at.col, PORTC_ERR_INVALID, "'%s' is already defined", out);
    return false;
  }
  snprintf(ps->defining, sizeof ps->defining, "%s", out);
  return true;
}

/* a use of an earlier value; -1 with quiet_fail set when it was poisoned */
int32_t ps_use(parser *ps) {
  tok at = ps->t;
  char name[128];
  if (!ps_ident(ps, name, sizeof name, "a value name")) return -1;
  portc_node n = graph_find(ps->g, name);
  if (n >= 0) return n;
  if (is_poisoned(ps, name)) ps->quiet_fail = true;
  else ps_errorf_at(ps, at.line, at.col, PORTC_ERR_INVALID, "'%s' is not defined", name);
  return -1;
}

/* reports the builder's last error at a position, prefixed with the value being defined */
void ps_report_build_error(parser *ps, tok at, const char *name, portc_node n) {
  ps_errorf_at(ps, at.line, at.col, portc_node_status(n), "%s: %s", name, portc_last_error());
}

/* ---- statements ---- */

static void stmt_graph(parser *ps) {
  char name[128];
  if (!ps_ident(ps, name, sizeof name, "a graph name") || !ps_end_of_statement(ps)) return;
  char *copy = strdup(name);
  if (!copy) return;
  free(ps->g->name);
  ps->g->name = copy;
}

/* the text of the current string token, without its quotes and escapes */
static char *string_value(parser *ps) {
  strbuf b = {0};
  for (int i = 1; i < ps->t.len - 1; i++) {
    if (ps->t.s[i] == '\\') i++;
    sb_printf(&b, "%c", ps->t.s[i]);
  }
  return sb_take(&b);
}

static bool param_init(parser *ps, node *n) {
  static const char *const inits[] = {"zeros", "ones", "normal", "uniform"};
  if (ps_is_word(ps, "file")) {
    ps_next(ps);
    if (!ps_expect(ps, '(', "'(' after file")) return false;
    if (ps->t.k != T_STRING) return ps_expected(ps, "a quoted path");
    n->file = string_value(ps);
    ps_next(ps);
    if (ps_accept(ps, ',')) {
      if (!ps_is_word(ps, "key")) return ps_expected(ps, "key=\"MEMBER\" (the array's name in an .npz file)");
      ps_next(ps);
      if (!ps_expect(ps, '=', "'='")) return false;
      if (ps->t.k != T_STRING) return ps_expected(ps, "a quoted member name");
      n->file_key = string_value(ps);
      ps_next(ps);
    }
    return ps_expect(ps, ')', "')'");
  }
  for (int k = 0; k < 4; k++) {
    if (!ps_is_word(ps, inits[k])) continue;
    ps_next(ps);
    n->has_init = true;
    n->init = (portc_init)k;
    n->p1 = k == PORTC_INIT_NORMAL || k == PORTC_INIT_UNIFORM ? 1 : 0;
    if (k < PORTC_INIT_NORMAL) return true;
    if (!ps_expect(ps, '(', "'(' and the generator's settings")) return false;
    if (ps_accept(ps, ')')) return true;
    do {
      tok at = ps->t;
      char key[16];
      if (!ps_ident(ps, key, sizeof key, "mean, std, low, high or seed") || !ps_expect(ps, '=', "'='")) return false;
      bool normal = k == PORTC_INIT_NORMAL;
      if (strcmp(key, "seed") == 0) {
        if (!seed_value(ps, &n->seed)) return false;
      } else if (strcmp(key, normal ? "mean" : "low") == 0) {
        if (!ps_float_value(ps, &n->p0)) return false;
      } else if (strcmp(key, normal ? "std" : "high") == 0) {
        if (!ps_float_value(ps, &n->p1)) return false;
      } else {
        ps_errorf_at(ps, at.line, at.col, PORTC_ERR_PARSE, "%s takes %s, not '%s'", inits[k], normal ? "mean, std and seed" : "low, high and seed", key);
        return false;
      }
    } while (ps_accept(ps, ','));
    return ps_expect(ps, ')', "',' or ')'");
  }
  return ps_expected(ps, "zeros, ones, normal(...), uniform(...) or file(\"...\")");
}

static void stmt_param(parser *ps, tok at) {
  char name[128];
  portc_dtype dt;
  shape sh;
  if (!new_name(ps, name, sizeof name) || !ps_expect(ps, ':', "':' and a type") || !type(ps, &dt, &sh)) return;
  node tmp = {0};
  if ((ps_accept(ps, '=') && !param_init(ps, &tmp)) || !ps_end_of_statement(ps)) {
    free(tmp.file);
    free(tmp.file_key);
    return;
  }
  portc_dim dims[PORTC_MAX_RANK];
  for (int i = 0; i < sh.rank; i++) dims[i] = (portc_dim){sh.d[i].c, sh.d[i].sym >= 0 ? ps->g->syms[sh.d[i].sym] : NULL};
  portc_node n;
  if (tmp.file_key) n = portc_param_npz(ps->g, name, dt, sh.rank, dims, tmp.file, tmp.file_key);
  else if (tmp.file) n = portc_param_file(ps->g, name, dt, sh.rank, dims, tmp.file);
  else if (tmp.has_init) n = portc_param_init(ps->g, name, dt, sh.rank, dims, tmp.init, tmp.seed, tmp.p0, tmp.p1);
  else n = portc_param(ps->g, name, dt, sh.rank, dims);
  free(tmp.file);
  free(tmp.file_key);
  if (n < 0) ps_report_build_error(ps, at, name, n);
}

static void stmt_input(parser *ps, tok at) {
  char name[128];
  portc_dtype dt;
  shape sh;
  if (!new_name(ps, name, sizeof name) || !ps_expect(ps, ':', "':' and a type") || !type(ps, &dt, &sh) || !ps_end_of_statement(ps)) return;
  portc_node n = graph_add_source(ps->g, OP_input, name, dt, &sh);
  if (n < 0) ps_report_build_error(ps, at, name, n);
}

static bool const_scalar(parser *ps, portc_dtype dt, cdata *v, int64_t i) {
  if (dtype_is_float(dt)) return ps_float_value(ps, &v->f[i]);
  if (dt == PORTC_BOOL) return bool_value(ps, &v->i[i]);
  return int_value(ps, &v->i[i]);
}

static void stmt_const(parser *ps, tok at) {
  char name[128];
  portc_dtype dt;
  shape sh;
  if (!new_name(ps, name, sizeof name) || !ps_expect(ps, ':', "':' and a type") || !type(ps, &dt, &sh) || !ps_expect(ps, '=', "'=' and the value")) return;
  int64_t cap = 16;
  cdata v = {0};
  bool isf = dtype_is_float(dt), ok = true;
  double *f = NULL;
  int64_t *iv = NULL;
  if (!(isf ? (f = malloc((size_t)cap * 8)) != NULL : (iv = malloc((size_t)cap * 8)) != NULL)) return;
  v.f = f, v.i = iv;
  if (ps_accept(ps, '[')) {
    if (!ps_accept(ps, ']')) {
      do {
        if (v.n == cap) {
          cap *= 2;
          void *p = realloc(isf ? (void *)v.f : (void *)v.i, (size_t)cap * 8);
          if (!p) { ok = false; break; }
          if (isf) v.f = p; else v.i = p;
        }
        if (!(ok = const_scalar(ps, dt, &v, v.n))) break;
        v.n++;
      } while (ps_accept(ps, ','));
      ok = ok && ps_expect(ps, ']', "',' or ']'");
    }
  } else {
    ok = const_scalar(ps, dt, &v, 0);
    v.n = 1;
  }
  if (ok && ps_end_of_statement(ps)) {
    portc_node n = graph_add_const(ps->g, name, dt, &sh, &v);
    if (n < 0) ps_report_build_error(ps, at, name, n);
  }
  free(v.f);
  free(v.i);
}

static void stmt_output(parser *ps) {
  do {
    tok at = ps->t;
    int32_t n = ps_use(ps);
    if (n < 0) return;
    if (portc_output(ps->g, n) != PORTC_OK) {
      ps_errorf_at(ps, at.line, at.col, PORTC_ERR_INVALID, "%s", portc_last_error());
      return;
    }
  } while (ps_accept(ps, ','));
  ps_end_of_statement(ps);
}

/* after a statement word: a name follows (the statement), not '=' or ':' (a value named so) */
static bool word_statement(const parser *ps) {
  const char *q = ps->p;
  while (*q == ' ' || *q == '\t') q++;
  return isalpha((unsigned char)*q) || *q == '_';
}

static bool same_type(portc_dtype a, const shape *sa, portc_dtype b, const shape *sb) { return a == b && shape_eq(sa, sb); }

/* the current token is a NAME followed by '=': an attribute, not an operand */
static bool attribute_ahead(const parser *ps) {
  const char *q = ps->p;
  while (*q == ' ' || *q == '\t') q++;
  return ps->t.k == T_IDENT && *q == '=';
}

/* NAME [: TYPE] = OP(ARGS), or NAME, NAME... = grad(...) */
static void stmt_op(parser *ps) {
  char name[128];
  if (!new_name(ps, name, sizeof name)) return;
  if (ps_is_punct(ps, ',')) {
    char names[64][128];
    int nn = 1;
    snprintf(names[0], sizeof names[0], "%s", name);
    while (ps_accept(ps, ',')) {
      if (nn == 64) {
        ps_errorf_at(ps, ps->t.line, ps->t.col, PORTC_ERR_INVALID, "more than 64 names");
        return;
      }
      if (!new_name(ps, names[nn], sizeof names[nn])) return;
      for (int k = 0; k < nn; k++)
        if (strcmp(names[k], names[nn]) == 0) {
          ps_errorf_at(ps, ps->t.line, ps->t.col, PORTC_ERR_INVALID, "'%s' is named twice", names[nn]);
          return;
        }
      nn++;
    }
    if (!ps_expect(ps, '=', "'=' and grad(...)")) return;
    tok at = ps->t;
    if (!ps_is_word(ps, "grad")) {
      ps_expected(ps, "grad(...): only grad gives several values");
      return;
    }
    ps_next(ps);
    ptg_grad(ps, names, nn, at);
    return;
  }
  portc_dtype dt = PORTC_F32;
  shape sh = {0};
  bool typed = false;
  tok type_at = ps->t;
  if (ps_accept(ps, ':')) {
    type_at = ps->t;
    if (!type(ps, &dt, &sh)) return;
    typed = true;
  }
  if (!ps_expect(ps, '=', typed ? "'=' and an op" : "':' and a type, or '=' and an op")) return;
  tok op_at = ps->t;
  char opname[64];
  if (!ps_ident(ps, opname, sizeof opname, "an op name")) return;
  if (strcmp(opname, "grad") == 0) {
    if (typed) {
      ps_errorf_at(ps, type_at.line, type_at.col, PORTC_ERR_INVALID, "a gradient takes the type of what it is for: no type here");
      return;
    }
    char one[1][128];
    snprintf(one[0], sizeof one[0], "%s", name);
    ptg_grad(ps, one, 1, op_at);
    return;
  }
  if (strcmp(opname, "cross_entropy") == 0 || strcmp(opname, "mse_loss") == 0) {
    ptg_loss(ps, name, opname, op_at);
    return;
  }
  enum op op;
  if (!op_lookup(opname, &op) || op_get(op)->kind == K_SOURCE) {
    ps_errorf_at(ps, op_at.line, op_at.col, PORTC_ERR_INVALID, "'%s' is not an op", opname);
    return;
  }
  if (!ps_expect(ps, '(', "'(' after the op name")) return;
  int32_t in[64];
  node_spec s;
  spec_init(&s, op, 0, in);
  if (!ps_is_punct(ps, ')')) {
    do {
      if (attribute_ahead(ps)) {
        if (!attribute(ps, op, s.a)) return;
        continue;
      }
      if (s.nin == 64) {
        ps_errorf_at(ps, ps->t.line, ps->t.col, PORTC_ERR_INVALID, "more than 64 inputs");
        return;
      }
      int32_t v = ps_use(ps);
      if (v < 0) return;
      in[s.nin++] = v;
    } while (ps_accept(ps, ','));
  }
  if (!ps_expect(ps, ')', "',' or ')'") || !ps_end_of_statement(ps)) return;
  s.name = name;
  portc_node n = graph_add(ps->g, &s);
  if (n < 0) {
    ps_report_build_error(ps, op_at, name, n);
    return;
  }
  const node *x = &ps->g->nodes[n];
  if (typed && !same_type(dt, &sh, x->dt, &x->sh)) {
    char want[256], got[256];
    shape_str(ps->g, &sh, want, sizeof want);
    shape_str(ps->g, &x->sh, got, sizeof got);
    ps_errorf_at(ps, type_at.line, type_at.col, PORTC_ERR_SHAPE, "%s is declared %s%s but %s gives %s%s", name,
              portc_dtype_name(dt), want, opname, portc_dtype_name(x->dt), got);
  }
}

static void statement(parser *ps) {
  tok at = ps->t;
  if (ps_is_word(ps, "graph")) ps_next(ps), stmt_graph(ps);
  else if (ps_is_word(ps, "input")) ps_next(ps), stmt_input(ps, at);
  else if (ps_is_word(ps, "param")) ps_next(ps), stmt_param(ps, at);
  else if (ps_is_word(ps, "const")) ps_next(ps), stmt_const(ps, at);
  else if (ps_is_word(ps, "output")) ps_next(ps), stmt_output(ps);
  else if (ps_is_word(ps, "update") && word_statement(ps)) ps_next(ps), ptg_update(ps);
  else if (ps_is_word(ps, "step") && word_statement(ps)) ps_next(ps), ptg_step(ps, at);
  else if (ps_is_word(ps, "autocast") && word_statement(ps)) ps_next(ps), ptg_autocast(ps);
  else if (ps->t.k == T_IDENT) stmt_op(ps);
  else ps_expected(ps, "a statement (graph, input, param, const, output, update, step, autocast, or NAME = op(...))");
}

static void skip_line(parser *ps) {
  while (ps->t.k != T_EOL && ps->t.k != T_END) ps_next(ps);
}

static void parser_free(parser *ps) {
  for (int i = 0; i < ps->npoisoned; i++) free(ps->poisoned[i]);
  free(ps->poisoned);
  free(ps->errs.s);
}

portc_status portc_graph_parse(const char *text, const char *source_name, portc_graph **out) {
  if (!out) return err_set(PORTC_ERR_INVALID, "graph_parse: out is NULL");
  *out = NULL;
  if (!text) return err_set(PORTC_ERR_INVALID, "graph_parse: text is NULL");
  parser ps = {.src = source_name ? source_name : "<text>", .p = text, .bol = text, .line = 1};
  if (!(ps.g = portc_graph_new("main"))) return err_set(PORTC_ERR_NOMEM, "graph_parse: out of memory");
  lex(&ps);
  while (ps.t.k != T_END) {
    ps.stmt_failed = ps.quiet_fail = false;
    ps.defining[0] = 0;
    if (ps.t.k != T_EOL) {
      int line = ps.t.line, before = ps.g->n;
      statement(&ps);
      if (ps.g->n > before) ps.g->nodes[ps.g->n - 1].line = line;
      if (ps.stmt_failed || ps.quiet_fail) {
        /* a failed definition poisons its name so that later uses stay quiet */
        if (ps.defining[0] && !node_name_taken(ps.g, ps.defining)) poison(&ps, ps.defining);
        skip_line(&ps);
      }
    }
    if (ps.t.k == T_EOL) ps_next(&ps);
  }
  if (ps.nerr) {
    if (ps.nerr > MAX_ERRORS) sb_printf(&ps.errs, "... and %d more errors\n", ps.nerr - MAX_ERRORS);
    if (ps.errs.len && ps.errs.s[ps.errs.len - 1] == '\n') ps.errs.s[--ps.errs.len] = 0;
    portc_status s = err_set(ps.first, "%s", ps.errs.s ? ps.errs.s : "parse error");
    portc_graph_free(ps.g);
    parser_free(&ps);
    return s;
  }
  parser_free(&ps);
  *out = ps.g;
  return PORTC_OK;
}

/* "axes=[1], keepdim=true" for portc_op */
portc_status graph_parse_attrs(portc_graph *g, enum op op, const char *text, attr *out) {
  parser ps = {.src = "attributes", .p = text, .bol = text, .line = 1, .g = g};
  lex(&ps);
  while (ps.t.k != T_END && ps.t.k != T_EOL && !ps.stmt_failed) {
    if (!attribute(&ps, op, out)) break;
    if (!ps_accept(&ps, ',') && ps.t.k != T_END) ps_expected(&ps, "',' or the end of the attributes");
  }
  if (ps.t.k == T_EOL && !ps.stmt_failed) ps_expected(&ps, "an attribute");
  portc_status s = PORTC_OK;
  if (ps.nerr) {
    if (ps.errs.len) ps.errs.s[--ps.errs.len] = 0;
    s = err_set(ps.first, "%s: %s", op_get(op)->name, ps.errs.s);
  }
  parser_free(&ps);
  return s;
}

portc_status graph_load_text(const char *path, portc_graph **out) {
  *out = NULL;
  char why[160];
  FILE *fp = file_open_read(path, why, sizeof why);
  if (!fp) return err_set(PORTC_ERR_IO, "%s: cannot open: %s", path ? path : "(null)", why);
  strbuf b = {0};
  char chunk[65536];
  size_t got;
  bool has_nul = false;
  while ((got = fread(chunk, 1, sizeof chunk, fp)) > 0) {
    has_nul = has_nul || memchr(chunk, 0, got) != NULL;
    sb_printf(&b, "%.*s", (int)got, chunk);
  }
  bool bad = ferror(fp);
  fclose(fp);
  char *text = sb_take(&b);
  if (bad || !text) {
    free(text);
    return err_set(bad ? PORTC_ERR_IO : PORTC_ERR_NOMEM, "%s: cannot read", path);
  }
  if (has_nul) {
    free(text);
    return err_set(PORTC_ERR_PARSE, "%s: contains a NUL byte; a .ptg file is text", path);
  }
  portc_status st = portc_graph_parse(text, path, out);
  free(text);
  if (st) return st;
  const char *slash = strrchr(path, '/');
  if (slash && !((*out)->basedir = strndup(path, (size_t)(slash > path ? slash - path : 1)))) {
    portc_graph_free(*out);
    *out = NULL;
    return err_set(PORTC_ERR_NOMEM, "%s: out of memory", path);
  }
  return PORTC_OK;
}
