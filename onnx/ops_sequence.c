/*
 * ops_sequence.c: ONNX sequences (SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceAt,
 * SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence). PyTorch's exporter writes
 * them for lists of tensors: torch.tensor_split with a list of indices (MViT's class token), list
 * appends in a loop. A portc graph has no sequence type, so a sequence lives only at import: a
 * list of the values it holds, each a tensor value of its own. Positions must be known at import;
 * what reads a sequence's elements reads those values.
 */
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

portc_node onnx_insert_axis(imp *c, portc_node x, int axis) {
  const node *n = &c->g->nodes[x];
  portc_dim dims[PORTC_MAX_RANK];
  int r = 0;
  for (int d = 0; d <= n->sh.rank; d++) {
    if (d == axis) dims[r++] = (portc_dim){1, NULL};
    if (d < n->sh.rank) dims[r++] = (portc_dim){n->sh.d[d].c, n->sh.d[d].sym >= 0 ? c->g->syms[n->sh.d[d].sym] : NULL};
  }
  return portc_reshape(c->g, x, r, dims);
}

portc_node onnx_concat_all(portc_graph *g, int n, portc_node *xs, int64_t axis) {
  while (n > 1) {
    int m = 0;
    for (int at = 0; at < n; at += ONNX_MAX_IO) {
      int k = n - at < ONNX_MAX_IO ? n - at : ONNX_MAX_IO;
      portc_node y = k == 1 ? xs[at] : portc_concat(g, k, xs + at, axis);
      if (y < 0) return y;
      xs[m++] = y;
    }
    n = m;
  }
  return xs[0];
}

portc_node onnx_stack(imp *c, const int *elems, int n, int64_t axis, bool new_axis) {
  portc_node *xs = malloc(sizeof *xs * (size_t)(n ? n : 1));
  if (!xs) return err_node(PORTC_ERR_NOMEM, "out of memory");
  portc_node y = PORTC_NONE;
  int rank = 0;
  for (int k = 0; k < n; k++) {
    if ((y = val_node(c, &c->v[elems[k]])) < 0) break;
    rank = c->g->nodes[y].sh.rank;
    int64_t a = axis < 0 ? axis + rank + new_axis : axis;
    if (a < 0 || a > rank - !new_axis) {
      y = -(portc_node)fail(c, PORTC_ERR_INVALID, "axis %lld is out of range for tensors of rank %d", (long long)axis, rank);
      break;
    }
    if (new_axis && (y = onnx_insert_axis(c, y, (int)a)) < 0) break;
    xs[k] = y;
  }
  if (y >= 0) {
    int64_t a = axis < 0 ? axis + rank + new_axis : axis;
    y = onnx_concat_all(c->g, n, xs, a);
  }
  free(xs);
  return y;
}

/* a known scalar position in [-n, n + extra - 1] (extra 1: one past the end, for inserting) */
static portc_status position(imp *c, int k, int n, int extra, int def, int *out) {
  oval *p = op_in(c, k);
  double x;
  if (!p) return *out = def, PORTC_OK;
  if (!known_scalar(p, &x) || !p->i) return fail(c, PORTC_ERR_INVALID, "position '%s' must be an integer known when the model is imported", p->name);
  int64_t i = (int64_t)x;
  if (i < -n || i >= n + extra) return fail(c, PORTC_ERR_INVALID, "position %lld is out of range for a sequence of %d", (long long)i, n);
  *out = (int)(i < 0 ? i + n : i);
  return PORTC_OK;
}

static portc_status need_seq(imp *c, int k) {
  oval *s = op_in(c, k);
  if (!s) return fail(c, PORTC_ERR_INVALID, "input %d (the sequence) is missing", k);
  return s->is_seq ? PORTC_OK : fail(c, PORTC_ERR_INVALID, "input %d ('%s') is a tensor; a sequence was expected", k, s->name);
}

static portc_status op_SequenceEmpty(imp *c) { return out_seq(c, 0, NULL, 0); }

static portc_status op_SequenceConstruct(imp *c) {
  int elems[ONNX_MAX_IO];
  for (int k = 0; k < c->nin; k++) {
    portc_status st = op_need(c, k);
    if (st) return st;
    if (c->in[k]->is_seq) return fail(c, PORTC_ERR_INVALID, "input %d ('%s') is a sequence; sequences hold tensors", k, c->in[k]->name);
    elems[k] = (int)(c->in[k] - c->v);
  }
  return out_seq(c, 0, elems, c->nin);
}

static portc_status op_SequenceInsert(imp *c) {
  portc_status st = need_seq(c, 0);
  if (!st) st = op_need(c, 1);
  if (st) return st;
  oval *s = c->in[0], *t = c->in[1];
  if (t->is_seq) return fail(c, PORTC_ERR_INVALID, "input 1 ('%s') is a sequence; sequences hold tensors", t->name);
  int at, n = s->nseq;
  if ((st = position(c, 2, n, 1, n, &at))) return st;
  int *e = malloc(sizeof(int) * (size_t)(n + 1));
  if (!e) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  memcpy(e, s->seq, sizeof(int) * (size_t)at);
  e[at] = (int)(t - c->v);
  memcpy(e + at + 1, s->seq + at, sizeof(int) * (size_t)(n - at));
  st = out_seq(c, 0, e, n + 1);
  free(e);
  return st;
}

static portc_status op_SequenceAt(imp *c) {
  portc_status st = need_seq(c, 0);
  if (st) return st;
  if (!op_in(c, 1)) return fail(c, PORTC_ERR_INVALID, "input 1 (the position) is missing");
  int at;
  if ((st = position(c, 1, c->in[0]->nseq, 0, 0, &at))) return st;
  return out_alias(c, 0, &c->v[c->in[0]->seq[at]]);
}

static portc_status op_SequenceErase(imp *c) {
  portc_status st = need_seq(c, 0);
  if (st) return st;
  oval *s = c->in[0];
  int at, n = s->nseq;
  if (!n) return fail(c, PORTC_ERR_INVALID, "the sequence '%s' is empty", s->name);
  if ((st = position(c, 1, n, 0, n - 1, &at))) return st;
  int *e = malloc(sizeof(int) * (size_t)n);
  if (!e) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  memcpy(e, s->seq, sizeof(int) * (size_t)at);
  memcpy(e + at, s->seq + at + 1, sizeof(int) * (size_t)(n - at - 1));
  st = out_seq(c, 0, e, n - 1);
  free(e);
  return st;
}

static portc_status op_SequenceLength(imp *c) {
  portc_status st = need_seq(c, 0);
  if (st) return st;
  sval *r = malloc(sizeof *r);
  if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  *r = (sval){c->in[0]->nseq, -1, false};
  return out_ints(c, 0, PORTC_I64, 0, NULL, r);
}

static portc_status op_ConcatFromSequence(imp *c) {
  portc_status st = need_seq(c, 0);
  if (st) return st;
  const Onnx__AttributeProto *a = attr_find(c, "axis");
  if (!a || !a->has_i) return fail(c, PORTC_ERR_INVALID, "has no axis attribute");
  oval *s = c->in[0];
  if (!s->nseq) return fail(c, PORTC_ERR_INVALID, "the sequence '%s' is empty: its concatenation has no shape", s->name);
  return out_node(c, 0, onnx_stack(c, s->seq, s->nseq, a->i, attr_int(c, "new_axis", 0) != 0));
}

/* SplitToSequence: the pieces become values named OUTPUT[k] */
static portc_status op_SplitToSequence(imp *c) {
  portc_status st = op_need(c, 0);
  if (st) return st;
  portc_node x = val_node(c, c->in[0]);
  if (x < 0) return out_node(c, 0, x);
  dim d[PORTC_MAX_RANK];
  int rank = val_shape(c, c->in[0], d);
  int64_t axis = attr_int(c, "axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return fail(c, PORTC_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)attr_int(c, "axis", 0), rank);
  if (d[axis].sym >= 0) return fail(c, PORTC_ERR_SHAPE, "splits dimension %lld, whose size is known only at run time", (long long)axis);
  int64_t len = d[axis].c, sizes[ONNX_MAX_IO];
  int n = 0;
  bool squeeze = false;
  oval *sp = op_in(c, 1);
  if (!sp) { /* pieces of 1, squeezed unless keepdims */
    if (len > ONNX_MAX_IO) return fail(c, PORTC_ERR_INVALID, "splits %lld pieces; portc takes at most %d", (long long)len, ONNX_MAX_IO);
    for (n = 0; n < len; n++) sizes[n] = 1;
    squeeze = attr_int(c, "keepdims", 1) == 0;
  } else if (sp->rank == 0) { /* pieces of this size, the last one shorter */
    int64_t each[1];
    int one;
    if ((st = known_ints(c, 1, "split", each, 1, &one))) return st;
    if (each[0] <= 0) return fail(c, PORTC_ERR_INVALID, "split size %lld", (long long)each[0]);
    if ((len + each[0] - 1) / each[0] > ONNX_MAX_IO) return fail(c, PORTC_ERR_INVALID, "splits more than %d pieces", ONNX_MAX_IO);
    for (int64_t at = 0; at < len; at += each[0]) sizes[n++] = len - at < each[0] ? len - at : each[0];
  } else if ((st = known_ints(c, 1, "split", sizes, ONNX_MAX_IO, &n))) return st;
  int64_t total = 0;
  for (int k = 0; k < n; k++) total += sizes[k];
  if (total != len) return fail(c, PORTC_ERR_INVALID, "split sizes add up to %lld; the axis has %lld", (long long)total, (long long)len);
  int elems[ONNX_MAX_IO];
  int64_t at = 0;
  for (int k = 0; k < n; k++) {
    portc_node y = portc_slice(c->g, x, axis, at, at + sizes[k], 1);
    at += sizes[k];
    if (y >= 0 && squeeze) {
      portc_dim dims[PORTC_MAX_RANK];
      int r = 0;
      for (int q = 0; q < rank; q++)
        if (q != axis) dims[r++] = (portc_dim){d[q].c, d[q].sym >= 0 ? c->g->syms[d[q].sym] : NULL};
      y = portc_reshape(c->g, y, r, dims);
    }
    if (y < 0) return out_node(c, 0, y);
    char suffix[24];
    snprintf(suffix, sizeof suffix, "[%d]", k);
    const char *name = imp_name(c, c->np->output[0], suffix);
    oval *v = name ? val_new(c, name) : NULL;
    if (!v) return name ? PORTC_ERR_PARSE : fail(c, PORTC_ERR_NOMEM, "out of memory");
    v->node = y;
    elems[k] = (int)(v - c->v);
  }
  return out_seq(c, 0, elems, n);
}

const onnx_op onnx_ops_sequence[] = {
    {"SequenceEmpty", op_SequenceEmpty},       {"SequenceConstruct", op_SequenceConstruct}, {"SequenceInsert", op_SequenceInsert},
    {"SequenceAt", op_SequenceAt},             {"SequenceErase", op_SequenceErase},         {"SequenceLength", op_SequenceLength},
    {"ConcatFromSequence", op_ConcatFromSequence}, {"SplitToSequence", op_SplitToSequence}, {NULL, NULL}};
