/*
 * emit.c: the shared C-like emitter. Everything here is the same for C, CUDA C, HIP C++ and
 * GLSL-like targets: values as typed constants, index arithmetic from paths, symbolic extents as
 * S[k]. Spellings come from the dialect.
 */
#include "emit.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"

#define NAME 96

void emit_line(emitter *e, const char *fmt, ...) {
  for (int i = 0; i < e->indent; i++) sb_printf(&e->out, "  ");
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&e->out, fmt, ap);
  va_end(ap);
  sb_printf(&e->out, "\n");
}

const char *emit_dim(emitter *e, dim d, char *buf, size_t len) {
  if (d.sym >= 0) snprintf(buf, len, "S[%d]", d.sym);
  else snprintf(buf, len, e->d->index_lit, (long long)d.c);
  return buf;
}

void emit_count(emitter *e, const shape *s, int from, int to, char *buf, size_t len) {
  int64_t c = 1;
  size_t at = 0;
  buf[0] = 0;
  for (int d = from; d < to; d++) {
    if (s->d[d].sym < 0) {
      c *= s->d[d].c;
      continue;
    }
    char dbuf[32];
    at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? " * " : "", emit_dim(e, s->d[d], dbuf, sizeof dbuf));
  }
  char lit[40];
  snprintf(lit, sizeof lit, e->d->index_lit, (long long)c);
  if (!at) snprintf(buf, len, "%s", lit);
  else if (c != 1) snprintf(buf + at, len - at, " * %s", lit);
  if (at) { /* parenthesize */
    char tmp[512];
    snprintf(tmp, sizeof tmp, "(%s)", buf);
    snprintf(buf, len, "%s", tmp);
  }
}

static bool is_one(dim d) { return d.sym < 0 && d.c == 1; }

/* writes "const int64_t xN = <expr>;" and puts the short name xN in name */
static void tmpvar(emitter *e, char *name, const char *expr) {
  snprintf(name, NAME, "x%d", e->tmp++);
  emit_const(e, e->d->index_type, name, expr);
}

/* sum of names[d] * stride(s, d) over the dims of s, into a temporary; name gets its name */
static void flat_index(emitter *e, const shape *s, char names[][NAME], char *name) {
  strbuf b = {0};
  int terms = 0;
  for (int d = 0; d < s->rank; d++) {
    if (strcmp(names[d], "0") == 0) continue;
    char stride[256];
    emit_count(e, s, d + 1, s->rank, stride, sizeof stride);
    sb_printf(&b, "%s%s * %s", terms++ ? " + " : "", names[d], stride);
  }
  char *expr = emit_take(e, &b);
  if (!terms) snprintf(name, NAME, "0");
  else tmpvar(e, name, expr ? expr : "0");
  free(expr);
}

/* the names of the target index of the first nsteps steps of p from the names of its source,
 * writing temporaries */
static void emit_steps(emitter *e, const kir_path *p, int nsteps, const char *const *idx, int rank, char names[][NAME]) {
  char cur[PORTC_MAX_RANK][NAME];
  for (int d = 0; d < rank; d++) snprintf(cur[d], NAME, "%s", idx[d]);
  for (int s = 0; p && s < nsteps; s++) {
    const kir_step *st = &p->s[s];
    char nx[PORTC_MAX_RANK][NAME];
    char expr[512];
    switch (st->kind) {
    case ST_BCAST:
      for (int d = 0; d < st->to.rank; d++) {
        int k = d + st->from.rank - st->to.rank;
        snprintf(nx[d], NAME, "%s", is_one(st->to.d[d]) ? "0" : cur[k]);
      }
      break;
    case ST_PERMUTE:
      for (int j = 0; j < st->from.rank; j++) memcpy(nx[st->a[j]], cur[j], NAME);
      break;
    case ST_SLICE:
      for (int d = 0; d < st->to.rank; d++) memcpy(nx[d], cur[d], NAME);
      char lo[40], step[40];
      snprintf(lo, sizeof lo, e->d->index_lit, (long long)st->a[1]);
      snprintf(step, sizeof step, e->d->index_lit, (long long)st->a[2]);
      snprintf(expr, sizeof expr, "%s + %s * %s", lo, cur[st->a[0]], step);
      tmpvar(e, nx[st->a[0]], expr);
      break;
    case ST_OUTER:
      for (int d = 0, j = 0; d < st->to.rank; d++) {
        if (st->a[d]) snprintf(nx[d], NAME, "0");
        else memcpy(nx[d], cur[j++], NAME);
      }
      break;
    case ST_RESHAPE: {
      char flat[NAME];
      flat_index(e, &st->from, cur, flat);
      for (int d = 0; d < st->to.rank; d++) {
        char stride[256], ext[32];
        emit_count(e, &st->to, d + 1, st->to.rank, stride, sizeof stride);
        if (d == 0) snprintf(expr, sizeof expr, "%s / %s", flat, stride);
        else snprintf(expr, sizeof expr, "(%s / %s) %% %s", flat, stride, emit_dim(e, st->to.d[d], ext, sizeof ext));
        tmpvar(e, nx[d], expr);
      }
      break;
    }
    }
    memcpy(cur, nx, sizeof cur);
  }
  memcpy(names, cur, sizeof cur);
}

static void emit_path(emitter *e, int path, const char *const *idx, int rank, char names[][NAME]) {
  const kir_path *p = path >= 0 ? &e->k->path[path] : NULL;
  emit_steps(e, p, p ? p->n : 0, idx, rank, names);
}

/* the index space a path starts from: its first step's source, else the space it ends in */
static const shape *path_space(const emitter *e, int path, const shape *fallback) {
  if (path >= 0 && e->k->path[path].n) return &e->k->path[path].s[0].from;
  return fallback;
}

void emit_offset(emitter *e, int path, const shape *space, const char *const *idx, char *out, size_t len) {
  const kir_path *p = path >= 0 ? &e->k->path[path] : NULL;
  const shape *from = path_space(e, path, space), *target = p && p->n ? &p->s[p->n - 1].to : space;
  char names[PORTC_MAX_RANK][NAME], name[NAME];
  /* a reshape right before the buffer keeps the flat index: skip unravelling it */
  if (p && p->n && p->s[p->n - 1].kind == ST_RESHAPE) {
    emit_steps(e, p, p->n - 1, idx, from->rank, names);
    flat_index(e, &p->s[p->n - 1].from, names, name);
    snprintf(out, len, "%s", name);
    return;
  }
  emit_path(e, path, idx, from->rank, names);
  flat_index(e, target, names, name);
  snprintf(out, len, "%s", name);
}

const char *compute_type(portc_dtype t) { return dtype_is_float(t) ? "float" : "int64_t"; }

const char *emit_type(const emitter *e, portc_dtype t) {
  const char *own = dtype_is_float(t) ? e->d->float_type : e->d->int_type;
  return own ? own : compute_type(t);
}

/* a declaration line, and `after` on the same line */
static void declare(emitter *e, bool constant, const char *type, const char *name, const char *value, const char *after) {
  const char *fmt = constant ? (e->d->decl_const ? e->d->decl_const : "const %1$s %2$s = %3$s;")
                             : (e->d->decl_var ? e->d->decl_var : "%1$s %2$s = %3$s;");
  for (int i = 0; i < e->indent; i++) sb_printf(&e->out, "  ");
  sb_printf(&e->out, fmt, type, name, value);
  sb_printf(&e->out, "%s\n", after);
}

void emit_const(emitter *e, const char *type, const char *name, const char *value) { declare(e, true, type, name, value, ""); }

void emit_var(emitter *e, const char *type, const char *name, const char *value) { declare(e, false, type, name, value, ""); }

void emit_scope_push(emitter *e) {
  e->stack[e->depth++] = e->scope;
  e->scope = ++e->next_scope;
}

void emit_scope_pop(emitter *e) { e->scope = e->stack[--e->depth]; }

static bool visible(const emitter *e, int v) {
  if (!e->done[v]) return false;
  if (e->done[v] == e->scope) return true;
  for (int i = 0; i < e->depth; i++)
    if (e->done[v] == e->stack[i]) return true;
  return false;
}

void emit_hoisted(emitter *e, int v, const char *const *idx) {
  const kir_val *x = &e->k->val[v];
  if (!x->row) {
    if (x->kind != KV_ACC) emit_value(e, v, idx);
    return;
  }
  for (int i = 0; i < 3 && x->kind == KV_OP; i++)
    if (x->arg[i] >= 0) emit_hoisted(e, x->arg[i], idx);
}

static const char *var(int v) {
  static _Thread_local char names[8][16];
  static _Thread_local int k;
  char *s = names[k++ & 7];
  snprintf(s, 16, "v%d", v);
  return s;
}

void emit_float(const dialect *d, double f, char *buf, size_t len) {
  if (isnan(f)) snprintf(buf, len, "NAN");
  else if (isinf(f)) snprintf(buf, len, f < 0 ? "(-INFINITY)" : "INFINITY");
  else if (d->decimal_floats) snprintf(buf, len, "%.9e", (double)(float)f);
  else snprintf(buf, len, "%af", (double)(float)f);
}

/* substitutes %0 %1 %2 in a spelling */
static void spell(const char *fmt, const char *const *args, char *out, size_t len) {
  size_t at = 0;
  for (const char *p = fmt; *p && at + 1 < len; p++) {
    if (p[0] == '%' && p[1] >= '0' && p[1] <= '2') {
      at += (size_t)snprintf(out + at, len - at, "%s", args[p[1] - '0']);
      p++;
    } else {
      out[at++] = *p;
    }
  }
  out[at < len ? at : len - 1] = 0;
}

void emit_float_op(emitter *e, enum op op, const char *a, const char *b, char *out, size_t len) {
  const char *args[3] = {a, b ? b : "", ""};
  spell(dialect_spelling(e->d, DT_FLOAT_OP, op), args, out, len);
}

static void cast_expr(const dialect *d, portc_dtype from, portc_dtype to, const char *x, char *out, size_t len) {
  bool ff = dtype_is_float(from), tf = dtype_is_float(to);
  if (to == PORTC_BOOL) snprintf(out, len, ff && d->float_to_bool ? d->float_to_bool : "PC_BOOL(%s)", x);
  else if (ff && tf) snprintf(out, len, to == PORTC_F16 ? "pc_round_f16(%s)" : to == PORTC_BF16 ? "pc_round_bf16(%s)" : "(%s)", x);
  else if (ff) snprintf(out, len, to == PORTC_I32 ? "pc_f2i32(%s)" : "pc_f2i64(%s)", x);
  else if (tf) snprintf(out, len, to == PORTC_F16 ? "pc_round_f16(PC_FLOAT(%s))" : to == PORTC_BF16 ? "pc_round_bf16(PC_FLOAT(%s))" : "PC_FLOAT(%s)", x);
  else snprintf(out, len, to == PORTC_I32 ? "PC_I32(%s)" : "(%s)", x);
}

static const char *acc_name(const kir_val *v) {
  static _Thread_local char buf[16];
  snprintf(buf, sizeof buf, "acc%d", v->phase);
  return buf;
}

const char *emit_value(emitter *e, int v, const char *const *idx) {
  const kir_val *x = &e->k->val[v];
  if (visible(e, v)) return var(v);
  if (x->kind == KV_ACC) return acc_name(x);
  char args[3][16] = {"", "", ""};
  char expr[1024], tmp[1024];
  const char *argp[3] = {args[0], args[1], args[2]};
  for (int i = 0; i < 3 && x->kind == KV_OP; i++)
    if (x->arg[i] >= 0) snprintf(args[i], sizeof args[i], "%s", emit_value(e, x->arg[i], idx));
  switch (x->kind) {
  case KV_LOAD: {
    char off[NAME];
    emit_offset(e, x->path, &e->m->buf[x->buf].sh, idx, off, sizeof off);
    emit_load(e, x->buf, off, expr, sizeof expr);
    break;
  }
  case KV_CONST:
    if (dtype_is_float(x->dt)) emit_float(e->d, x->f, expr, sizeof expr);
    else snprintf(expr, sizeof expr, e->d->int_lit, (long long)x->i);
    break;
  case KV_INDEX: {
    char names[PORTC_MAX_RANK][NAME];
    /* an empty path starts where the value lives: a row kernel's row values live in outer x reduced */
    shape full = e->k->dom;
    for (int d = 0; e->k->kind == KK_ROW && x->row && d < e->k->red.rank; d++) full.d[full.rank++] = e->k->red.d[d];
    const shape *sp = path_space(e, x->path, &full);
    emit_path(e, x->path, idx, sp->rank, names);
    snprintf(expr, sizeof expr, "%s", names[x->axis]);
    break;
  }
  case KV_OP: {
    const kir_val *a0 = &e->k->val[x->arg[0]];
    if (x->op == OP_cast) {
      cast_expr(e->d, a0->dt, x->dt, argp[0], expr, sizeof expr);
      break;
    }
    /* comparisons and where read their operands' type, not their result's */
    portc_dtype opt = x->op == OP_where ? e->k->val[x->arg[1]].dt : op_get(x->op)->kind == K_COMPARE ? a0->dt : x->dt;
    const char *fmt = dialect_spelling(e->d, dtype_is_float(opt) ? DT_FLOAT_OP : DT_INT_OP, x->op);
    if (x->op == OP_div && dtype_is_float(opt) && e->d->div_by_row_invariant && e->k->kind == KK_ROW && x->row &&
        !e->k->val[x->arg[1]].row)
      fmt = e->d->div_by_row_invariant;
    if (x->op == OP_div && !dtype_is_float(opt) && e->d->checked_idiv && kernel_has_status(e->m, (int)(e->k - e->m->k)))
      fmt = e->d->checked_idiv;
    if (!fmt) fmt = "0 /* unsupported */";
    spell(fmt, argp, tmp, sizeof tmp - 32);
    if (x->dt == PORTC_I32) snprintf(expr, sizeof expr, "PC_I32(%.990s)", tmp);
    else if (x->dt == PORTC_BOOL) snprintf(expr, sizeof expr, "PC_BOOL(%.990s)", tmp);
    else snprintf(expr, sizeof expr, "%.1000s", tmp);
    break;
  }
  default: expr[0] = 0;
  }
  emit_const(e, emit_type(e, x->dt), var(v), expr);
  e->done[v] = e->scope;
  return var(v);
}

const char *emit_bind(emitter *e, int v, const char *expr) {
  emit_const(e, emit_type(e, e->k->val[v].dt), var(v), expr);
  e->done[v] = e->scope;
  return var(v);
}

const char *emit_buf(emitter *e, int buf) {
  static _Thread_local char names[8][16];
  static _Thread_local int k;
  char *s = names[k++ & 7];
  snprintf(s, 16, "b%d", buf >= 0 && buf < e->m->nbuf && e->slot ? e->slot[buf] : buf);
  return s;
}

void emit_load(emitter *e, int buf, const char *off, char *out, size_t len) {
  snprintf(out, len, dialect_spelling(e->d, DT_LOAD, e->m->buf[buf].dt), emit_buf(e, buf), off);
}

void emit_store(emitter *e, int buf, const char *off, const char *val) {
  char line[1200];
  snprintf(line, sizeof line, dialect_spelling(e->d, DT_STORE, e->m->buf[buf].dt), emit_buf(e, buf), off, val);
  emit_line(e, "%s", line);
}

void emit_unravel(emitter *e, const shape *s, int first, int last, const char *flat, const char *const *names) {
  const char *t = e->d->index_type;
  if (last <= first) return;
  if (last - first == 1) {
    emit_const(e, t, names[first], flat);
    return;
  }
  char rest[NAME], val[NAME + 40];
  snprintf(rest, sizeof rest, "r_%s", names[first]);
  emit_var(e, t, rest, flat);
  for (int d = last - 1; d >= first; d--) {
    char ext[32];
    emit_dim(e, s->d[d], ext, sizeof ext);
    if (d == first) {
      emit_const(e, t, names[d], rest);
      continue;
    }
    char div[NAME + 40];
    snprintf(val, sizeof val, "%s %% %s", rest, ext);
    snprintf(div, sizeof div, " %s /= %s;", rest, ext);
    declare(e, true, t, names[d], val, div);
  }
}

void emit_store_at(emitter *e, const kir_store *st, const shape *space, const char *const *idx) {
  char vname[16], off[128];
  snprintf(vname, sizeof vname, "%s", emit_value(e, st->val, idx));
  emit_offset(e, st->path, space, idx, off, sizeof off);
  emit_store(e, st->buf, off, vname);
}

void emit_stores_at(emitter *e, const shape *space, const char *const *idx) {
  for (int s = 0; s < e->k->nstore; s++) emit_store_at(e, &e->k->store[s], space, idx);
}

void emit_operand(emitter *e, int slot, const char *const *idx, char *out, size_t len) {
  const kir_kernel *k = e->k;
  char off[128];
  emit_offset(e, k->in_path[slot], &e->m->buf[k->in_buf[slot]].sh, idx, off, sizeof off);
  emit_load(e, k->in_buf[slot], off, out, len);
}

void row_mark_loop(const kir_kernel *k, int v, int loop, unsigned *used) {
  const kir_val *x = &k->val[v];
  if (!x->row || (used[v] & (1u << loop))) return;
  used[v] |= 1u << loop;
  for (int i = 0; i < 3 && x->kind == KV_OP; i++)
    if (x->arg[i] >= 0) row_mark_loop(k, x->arg[i], loop, used);
}

portc_dtype row_phase_type(const kir_module *m, const kir_kernel *k, int p) {
  portc_dtype t = m->g->nodes[k->node].dt;
  for (int i = 0; i < k->nval; i++)
    if (k->val[i].kind == KV_ACC && k->val[i].phase == p) t = k->val[i].dt;
  return t;
}

int64_t attr_or_one(const node *n, const char *name, int i) {
  const attr *a = attr_get(n, name);
  return a->set ? a->v[i] : 1;
}

const char *reduce_init(enum op op, portc_dtype t) {
  bool f = dtype_is_float(t);
  switch (op) {
  case OP_prod: return f ? "1.0f" : "INT64_C(1)";
  case OP_max: return f ? "(-INFINITY)" : "INT64_MIN";
  case OP_min: return f ? "INFINITY" : "INT64_MAX";
  default: return f ? "0.0f" : "INT64_C(0)";
  }
}

bool op_is_costly(enum op op) {
  switch (op) {
  case OP_exp: case OP_log: case OP_tanh: case OP_sigmoid: case OP_silu: case OP_gelu: case OP_gelu_tanh:
  case OP_erf: case OP_sin: case OP_cos: case OP_pow: return true;
  default: return false;
  }
}

char *emit_take(emitter *e, strbuf *b) {
  char *s = sb_take(b);
  if (!s) e->out.oom = true;
  return s;
}

char *emit_module(const dialect *d, const kir_module *m) {
  emitter e = {.d = d, .m = m, .scope = 1, .next_scope = 1};
  int *bufs = malloc(sizeof *bufs * (size_t)(m->nbuf + 1));
  if (!(e.slot = malloc(sizeof *e.slot * (size_t)(m->nbuf + 1))) || !bufs) {
    free(e.slot);
    free(bufs);
    err_set(PORTC_ERR_NOMEM, "emit: out of memory");
    return NULL;
  }
  /* a "//@" line: the targets that build each kernel alone leave it out of the kernels' sources */
  sb_printf(&e.out, "//@module generated by portc for graph %s: %d kernels, dialect %s\n", m->g->name, m->nk, d->name);
  sb_printf(&e.out, "%s\n", d->prelude);
  for (int i = 0; i < m->nk; i++) {
    e.k = &m->k[i];
    e.done = calloc((size_t)e.k->nval + 1, sizeof *e.done);
    if (!e.done) {
      free(e.out.s);
      free(e.slot);
      free(bufs);
      err_set(PORTC_ERR_NOMEM, "emit: out of memory");
      return NULL;
    }
    e.scope = e.next_scope = 1;
    e.depth = 0;
    e.tmp = 0;
    for (int b = 0; b < m->nbuf; b++) e.slot[b] = -1;
    int nb = kernel_buffers(m, i, bufs, m->nbuf);
    for (int j = 0; j < nb; j++) e.slot[bufs[j]] = j;
    d->kernel(&e, i);
    free(e.done);
    e.done = NULL;
  }
  e.k = NULL;
  free(e.slot);
  free(bufs);
  e.slot = NULL;
  d->module_end(&e);
  char *s = sb_take(&e.out);
  if (!s) err_set(PORTC_ERR_NOMEM, "emit: out of memory");
  return s;
}

char *emit_numbered(const char *src) {
  strbuf b = {0};
  int line = 1;
  for (const char *p = src; *p;) {
    const char *end = strchr(p, '\n');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    sb_printf(&b, "%5d  %.*s\n", line++, (int)n, p);
    p += n + (end != NULL);
  }
  return sb_take(&b);
}
