/*
 * onnx_import.h: what the ONNX importer's files share. The importer reads a ModelProto with
 * protobuf-c (code generated at build time from the onnx.proto that libonnx-dev ships) and
 * builds a portc graph node by node.
 *
 * Each ONNX value becomes an `oval`: a graph node, or a value known at import. Known values are
 * initializers and constants (floating data, held as shared parameter data) and the integer
 * tensors of shape arithmetic (Shape, Gather on shapes, Concat of shapes feeding Reshape), whose
 * elements are constants or multiples of a symbol, so that a model exported with a dynamic batch
 * folds its shapes at import and still runs for any batch.
 */
#ifndef PORTC_ONNX_IMPORT_H
#define PORTC_ONNX_IMPORT_H

#include "graph.h"
#include "onnx.pb-c.h"

/* An element of a known integer tensor: c, or c times symbol sym; unknown when the import cannot
 * tell (a product of two symbols, say). */
typedef struct sval {
  int64_t c;
  int32_t sym;
  bool unknown;
} sval;

/* An integer tensor known as a function of its coordinates x, for index tensors whose size is known
 * only at run time (index_grid.c): element x is off[j] + sum over k of coef[j][k] * x[k], where
 * j = x[rank - 1] when comps > 0 (the last axis, of size comps, holds the components of index
 * tuples; coefficients then cover the other axes) and j = 0 otherwise. */
typedef struct igrid {
  int rank, comps;
  dim shape[PORTC_MAX_RANK];
  int64_t off[PORTC_MAX_RANK];
  int64_t coef[PORTC_MAX_RANK][PORTC_MAX_RANK];
} igrid;

typedef struct oval {
  const char *name;
  portc_node node; /* the value in the graph, or -1 when it is only known */
  bool known;      /* the value is known at import: f or i holds it */
  portc_dtype dt;  /* of the value; PORTC_F64 for a known double tensor */
  int rank;
  int64_t shape[PORTC_MAX_RANK]; /* of a known value */
  pdata *f;  /* known floating values */
  sval *i;   /* known integer or bool values, one per element */
  int uses;  /* how many node inputs and graph outputs read it */
  int producer; /* index of the node that makes it, -1 for inputs and initializers */
  /* a sequence (SequenceEmpty, SequenceInsert, a Loop's carried list): no node; seq holds the
   * indices in imp.v of its elements, each a value of its own */
  bool is_seq;
  int nseq;
  int *seq;
  igrid *grid; /* an index grid over run-time sizes: no node, not known element by element */
} oval;

#define ONNX_MAX_IO 64
#define ONNX_MAX_DEPTH 8 /* Loops within Loops */

/* A BatchNormalization folded into the Conv before it. On the Conv's entry: the replacement
 * weights and bias, and the name of the BatchNormalization's bias (for the folded bias's name);
 * on the BatchNormalization's entry: identity, it passes the Conv's result on. */
typedef struct bn_fold {
  pdata *w, *b;
  const char *bias_name;
  bool identity;
} bn_fold;

typedef struct imp {
  portc_graph *g;
  const char *source;  /* the file name, for messages */
  const char *basedir; /* for external data; NULL: external data is refused */
  Onnx__ModelProto *model;
  int opset;
  oval *v;
  int nv, cap;
  int *hash; /* open addressing over v by name */
  int hcap;
  /* the node being translated */
  const Onnx__NodeProto *np;
  oval *in[ONNX_MAX_IO];
  int nin;
  bn_fold *fold; /* per node */
  /* the Loop bodies being unrolled, innermost last: a body's names are prefixed per iteration
   * (scope[k]), so that every iteration defines values of its own */
  const char *scope[ONNX_MAX_DEPTH];
  int depth;
  int loops;     /* Loops and Ifs taken so far, for names of those without outputs */
  char **owned;  /* names made at import (prefixed, elements of sequences), freed with the importer */
  int nowned, capowned;
} imp;

/* ---- values.c ---- */
oval *val_find(imp *c, const char *name);
oval *val_new(imp *c, const char *name); /* NULL when out of memory or the name is defined twice (error set) */
portc_status fail(imp *c, portc_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int64_t val_numel(const oval *v);
/* the value as a graph node: known values become constants or parameters holding their data */
portc_node val_node(imp *c, oval *v);
/* the shape of a value (node or known) as dims */
int val_shape(imp *c, const oval *v, dim *d);
/* outputs of the current node */
portc_status out_node(imp *c, int k, portc_node n);
portc_status out_ints(imp *c, int k, portc_dtype dt, int rank, const int64_t *shape, sval *vals); /* takes vals */
portc_status out_floats(imp *c, int k, pdata *d);                                                   /* takes d */
portc_status out_alias(imp *c, int k, const oval *v);
portc_status out_seq(imp *c, int k, const int *elems, int n); /* a sequence of the values imp.v[elems[i]] */
/* dst takes src's value (graph node, known data or sequence); dst keeps its name and uses */
portc_status val_copy(imp *c, oval *dst, const oval *src);
/* a copy of s (or of prefix then s) that lives as long as the importer; NULL when out of memory */
const char *imp_name(imp *c, const char *prefix, const char *s);
/* the value a name means where the node being translated stands: the innermost Loop body's own
 * value of that name, else an enclosing body's, else the graph's; NULL when nothing defines it */
oval *val_resolve(imp *c, const char *name);
/* a known input as integers: each element must be a constant (what it is for names it) */
portc_status known_ints(imp *c, int k, const char *what, int64_t *out, int max, int *n);
bool known_scalar(const oval *v, double *out);
/* a graph dimension as shape arithmetic sees it: a constant, or c times a base symbol */
sval dim_sval(const portc_graph *g, dim d);
void sanitize(const char *in, char *out, size_t len); /* an ONNX name as a portc identifier */
portc_status unique_name(imp *c, const char *onnx_name, char *out, size_t len);

/* inputs of the current node: input k, or NULL where the node leaves it out; op_need() is the
 * error that names a required one left out; int_known(): a known integer value (shape arithmetic) */
static inline oval *op_in(const imp *c, int k) { return k < c->nin ? c->in[k] : NULL; }
portc_status op_need(imp *c, int k);
static inline bool int_known(const oval *v) { return v && v->known && v->i; }

/* attributes of the current node */
const Onnx__AttributeProto *attr_find(imp *c, const char *name);
int64_t attr_int(imp *c, const char *name, int64_t def);
double attr_float(imp *c, const char *name, double def);
const char *attr_string(imp *c, const char *name, const char *def, char *buf, size_t len);
int attr_ints(imp *c, const char *name, int64_t *out, int max); /* -1: absent; -2: too many */

/* ---- index_grid.c ---- */
/* whether the current node (an op_type of op) makes or carries an index grid, and its translation */
bool onnx_grid_takes(const imp *c, const char *op);
portc_status onnx_grid_op(imp *c, const char *op);
/* a grid as a graph node: a constant expanded along the run-time axes, where the values do not vary
 * along those; an error naming it otherwise */
portc_node onnx_grid_node(imp *c, oval *v);

/* ---- ops_shape.c ---- */
/* a size as a portc dimension: a constant or a (derived) symbol; false when it is neither */
bool sval_dim(imp *c, sval s, portc_dim *out);

/* ---- model.c ---- */
/* an ONNX element type as portc's; false for types portc has no graph form of */
bool onnx_dtype(int32_t t, portc_dtype *out);
const char *onnx_dtype_name(int32_t t);
/* a TensorProto (initializer, Constant) as a known value of v */
portc_status tensor_value(imp *c, const Onnx__TensorProto *t, oval *v);

/* ---- import.c: one node, called for the graph's nodes and for the nodes of unrolled Loop
 * bodies (index: the node's place in the graph, for folded BatchNormalizations; -1 in a body) ---- */
portc_status onnx_translate_node(imp *c, const Onnx__NodeProto *np, int index);

/* ---- ops_control.c ---- */
/* the names a node's subgraphs (a Loop's body) read from outside them, *names malloc'd; -1: out
 * of memory */
int onnx_subgraph_reads(const Onnx__NodeProto *np, const char ***names);
bool onnx_takes_sequences(const char *op_type);

/* ---- ops_sequence.c ---- */
/* x with a new axis of size 1 at axis */
portc_node onnx_insert_axis(imp *c, portc_node x, int axis);
/* concat of any number of tensors, in groups of ONNX_MAX_IO (what portc's concat takes); xs is
 * overwritten */
portc_node onnx_concat_all(portc_graph *g, int n, portc_node *xs, int64_t axis);
/* the values imp.v[elems[k]] concatenated along axis, or stacked along a new axis there */
portc_node onnx_stack(imp *c, const int *elems, int n, int64_t axis, bool new_axis);

/* ---- ops_nn3d.c: Conv and pooling over [N, C, D, H, W], called by ops_nn.c's ---- */
portc_status onnx_conv3d(imp *c, portc_node x, portc_node w, portc_node bias);
portc_status onnx_pool3d(imp *c, portc_node x, bool is_max);

/* ---- the op translators: ops_*.c, one table each, ended by a NULL name ---- */
typedef portc_status (*op_fn)(imp *c);
typedef struct onnx_op {
  const char *name;
  op_fn fn;
} onnx_op;
extern const onnx_op onnx_ops_elementwise[], onnx_ops_nn[], onnx_ops_shape[], onnx_ops_resize[], onnx_ops_recurrent[],
    onnx_ops_index[], onnx_ops_einsum[], onnx_ops_control[], onnx_ops_sequence[];
op_fn onnx_op_lookup(const char *op_type);

#endif
