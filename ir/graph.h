/*
 * graph.h: the in-memory tensor graph shared by the builder, the text format, the verifier, the
 * hash and the reference evaluator.
 *
 * A graph is a flat array of nodes in topological order: a node's inputs always come earlier, so
 * a walk from 0 to n-1 is a valid evaluation order and cycles cannot be expressed. A dimension is
 * a constant or a symbol of the graph's symbol table; attributes follow the schema that ops.def
 * declares for each op.
 */
#ifndef PORTC_IR_GRAPH_H
#define PORTC_IR_GRAPH_H

#include <stdarg.h>

#include <stdio.h>

#include "portc/portc.h"

enum op {
#define OP(id, mi, ma, kind, attrs) OP_##id,
#include "ops.def"
  OP_COUNT
};

enum op_kind {
  K_SOURCE, K_UNARY, K_BINARY, K_COMPARE, K_WHERE, K_CAST, K_REDUCE, K_ARGMAX,
  K_MATMUL, K_CONV, K_POOL, K_VIEW, K_COMPOSITE, K_MASK,
};

enum attr_kind { A_INT, A_INTS, A_FLOAT, A_BOOL, A_DTYPE, A_DIMS };
#define MAX_ATTRS 6
#define MAX_LIST 16 /* longest list attribute: pads of a rank-8 tensor */

/* A dimension: sym < 0 is the constant c; otherwise the graph's symbol number sym. */
typedef struct dim {
  int64_t c;
  int32_t sym;
} dim;

typedef struct shape {
  int rank;
  dim d[PORTC_MAX_RANK];
} shape;

/* One attribute value. INT, BOOL and DTYPE live in v[0]; FLOAT in f; INTS and DIMS in v[0..n)
 * with sym[i] >= 0 marking a symbol in a DIMS list. */
typedef struct attr {
  bool set;
  int n;
  int64_t v[MAX_LIST];
  int32_t sym[MAX_LIST];
  double f;
} attr;

typedef struct attr_spec {
  const char *name;
  enum attr_kind kind;
  bool required;
  attr def; /* def.set: there is a default */
} attr_spec;

typedef struct op_info {
  const char *name;
  int min_in, max_in;
  enum op_kind kind;
  int accepts; /* elementwise ops: ACC_* */
  int nattrs;
  attr_spec attrs[MAX_ATTRS];
} op_info;

enum { ACC_FLT = 1, ACC_INT = 2, ACC_BOOL = 4, ACC_NUM = ACC_FLT | ACC_INT, ACC_ANY = 7 };

/* Host data of a constant: doubles for floating dtypes, int64 for integers and bool. */
typedef struct cdata {
  int64_t n;
  double *f;
  int64_t *i;
} cdata;

/* The values of a parameter that carries them (an imported model's weights): shared by the copies
 * of a graph that compilation makes, freed with the last one; counted with pdata_retain and
 * pdata_release only, which are atomic. */
typedef struct pdata {
  int refs;
  portc_tensor *t;
} pdata;

typedef struct node {
  enum op op;
  portc_dtype dt;
  shape sh;
  char *name;
  int nin;
  int32_t *in;
  attr a[MAX_ATTRS];
  /* sources */
  cdata value;       /* const */
  portc_init init;   /* param with has_init */
  bool has_init;
  uint64_t seed;
  double p0, p1;
  char *file;        /* param loaded from .npy, or from member file_key of an .npz */
  char *file_key;
  pdata *data;       /* param whose values the graph holds */
  int line;          /* where it was parsed from (0: built through the API) */
  /* lowering (lower/remat.c): fusion keeps the value in memory; the value is a clone computed again
   * for late readers, which joins no row kernel (one that runs early, with the rows it reads);
   * (lower/matmul_rows.c) a view fusion copies into memory of its own: a weight matmul's rows that
   * would not lie as a matrix */
  bool stored, recomputed, copied;
  /* a widening to f32 that autocast made: the cast back of a matmul, conv2d or attention computed
   * in f16/bf16, or (lower/cast_sink.c) the widening of an op over such values; an addition of
   * two of one dtype adds in that dtype, as under torch.autocast */
  bool autocast_widening;
} node;

struct portc_graph {
  char *name;
  char *basedir; /* folder of the .ptg file, for relative parameter files */
  node *nodes;
  int n, cap;
  char **syms;
  int nsyms;
  /* A symbol named "K*S" is derived: its value is K times symbol S's (sym_base[i] = S, sym_scale[i]
   * = K). Reshapes that merge a symbolic dimension with a constant one make them. Others: -1, 1. */
  int32_t *sym_base;
  int64_t *sym_scale;
  int32_t *outputs;
  int nout;
  /* training state (portc_update): after a run, parameter upd_param[k] takes the value of node
   * upd_value[k], which is also an output */
  int32_t *upd_param, *upd_value;
  int nupd;
  /* portc_graph_autocast: matmul, conv2d and attention of f32 operands added from now on compute
   * in this dtype (F32: off); in_autocast while graph_add builds one so */
  portc_dtype autocast;
  bool in_autocast;
  int next_auto; /* for t0, t1, ... */
  /* node names to indices (graph_find): open addressing over name_cap slots (a power of two, -1
   * empty, name_used taken), an entry added as a node is added or renamed, checked against the
   * node's name on lookup; rebuilt when half full and where nodes move (graph_names_rebuild).
   * NULL: not kept (out of memory), lookups scan. Read-only for lookups: threads may share it. */
  int32_t *name_slot;
  int name_cap, name_used;
};

/* ---- op table ---- */
const op_info *op_get(enum op op);
bool op_lookup(const char *name, enum op *out);
int attr_index(enum op op, const char *name); /* -1 when the op has no such attribute */
const char *op_kind_name(enum op_kind k);

/* attribute access by name on a node whose op declares it */
int64_t attr_i(const node *n, const char *name);
double attr_f(const node *n, const char *name);
const attr *attr_get(const node *n, const char *name);
/* where a conv2d node's dimensions lie, by its layout (channels_last): in the input (and the
 * result) the channels, rows and columns; in the weights the output and input channels and the
 * window's rows and columns. NCHW / OIHW: 1, 2, 3 and 0, 1, 2, 3; NHWC / HWIO: 3, 1, 2 and 3, 2, 0, 1 */
typedef struct conv_axes {
  int c, h, w;
  int wo, wc, wh, ww;
} conv_axes;
conv_axes conv_axes_of(const node *n);

/* ---- errors: thread-local last error (error.c) ---- */
portc_status err_set(portc_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
portc_status err_setv(portc_status s, const char *fmt, va_list ap);
portc_node err_node(portc_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* growable message buffer used by the verifier, the printer and the parser */
typedef struct strbuf {
  char *s;
  size_t len, cap;
  bool oom;
} strbuf;
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(strbuf *b, const char *fmt, va_list ap);
char *sb_take(strbuf *b); /* the string (never NULL unless out of memory); resets b */
/* opens a regular file for reading (file.c); NULL with the reason in why and errno set (a FIFO,
 * a device or a folder is refused, not waited on: EINVAL, EISDIR) */
FILE *file_open_read(const char *path, char *why, size_t len);
/* snprintf into a fixed buffer, for text that may be cut short where it does not fit */
void str_cut(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- graph and symbols (graph.c) ---- */
/* Interns a symbol; "K*S" (K >= 2, S a name) makes a derived one. -1 when out of memory or malformed. */
int graph_symbol(portc_graph *g, const char *name);
int graph_symbol_scaled(portc_graph *g, int base, int64_t scale); /* scale 1: base itself */
int graph_find_symbol(const portc_graph *g, const char *name);
/* a node before index `before` with this name, or -1 */
int graph_find_before(const portc_graph *g, const char *name, int before);
/* after nodes moved: the name index again */
void graph_names_rebuild(portc_graph *g);
bool dim_eq(dim a, dim b);
bool shape_eq(const shape *a, const shape *b);
bool valid_ident(const char *s);
bool is_reserved(const char *s); /* the .ptg statement words */
void shape_str(const portc_graph *g, const shape *s, char *buf, size_t len); /* "[N, 4]" */
int64_t shape_numel_const(const shape *s); /* -1 when a dimension is symbolic */
/* the shape as the public API's dimensions (symbols by name), for building through it */
void shape_dims(const portc_graph *g, const shape *s, portc_dim *out);
portc_node graph_find(const portc_graph *g, const char *name);

/* A node under construction: op, inputs and attributes, before shape inference. */
typedef struct node_spec {
  enum op op;
  int nin;
  const int32_t *in;
  attr a[MAX_ATTRS];
  const char *name; /* NULL: automatic */
} node_spec;
void spec_init(node_spec *s, enum op op, int nin, const int32_t *in);
/* Fills defaults, checks inputs and attributes, infers dtype and shape, appends. */
portc_node graph_add(portc_graph *g, node_spec *s);
/* Appends a source node whose type is given. */
portc_node graph_add_source(portc_graph *g, enum op op, const char *name, portc_dtype t, const shape *sh);
/* Appends a constant; v holds numel values or one that fills (doubles or int64 by dtype). */
portc_node graph_add_const(portc_graph *g, const char *name, portc_dtype t, const shape *sh, const cdata *v);
bool node_name_taken(const portc_graph *g, const char *name);
/* node i is one of g's outputs */
bool graph_is_output(const portc_graph *g, int i);
void node_free_data(node *n);
/* Appends a parameter holding the values of t (shared: counted, not copied). */
portc_node graph_add_param_data(portc_graph *g, const char *name, pdata *data);
pdata *pdata_new(portc_tensor *t); /* takes t; NULL when out of memory (t is then freed) */
void pdata_retain(pdata *d);  /* one more holder (thread-safe) */
void pdata_release(pdata *d); /* one holder less: the last frees it (thread-safe) */

/* ---- shape inference (shape.c) ---- */
/* Infers dt and sh of node n (whose op, inputs and attributes are set) from its inputs. On failure
 * sets the last error (prefixed with the node) and returns its status. */
portc_status infer(const portc_graph *g, const node *n, portc_dtype *dt, shape *sh);
int64_t norm_axis(int64_t axis, int rank); /* -1 when out of range */
int64_t clamp_index(int64_t i, int64_t n);  /* python slice bound: negative from the end, clamped to [0, n] */
/* no dimension is negative and the element count (a symbol counted by its coefficient) is at
 * most 2^48, so index arithmetic cannot overflow (shape.c checks every node's result) */
bool shape_fits(const portc_graph *g, const shape *sh);
/* fills out with numpy broadcasting of a and b; false when they do not broadcast */
bool broadcast(const shape *a, const shape *b, shape *out);

/* a build of many builder calls (the gradients, the optimizer steps): the first failure kept with
 * its message, since later calls on failed nodes fail too and would only repeat it (error.c) */
typedef struct build_ctx {
  portc_graph *g;
  portc_status st;
  char why[512];
} build_ctx;
/* n, recorded when it is the first failure */
portc_node build_ok(build_ctx *c, portc_node n);

/* removes the nodes from n0 on and the outputs and updates past nout0 and nupd0: a build that
 * failed halfway leaves the graph as it was (train.c) */
void graph_truncate(portc_graph *g, int n0, int nout0, int nupd0);

/* ---- other graph services ---- */
void graph_print_node(const portc_graph *g, const node *n, strbuf *b); /* one .ptg line, no \n */
portc_status graph_parse_attrs(portc_graph *g, enum op op, const char *text, attr *out);
/* a .ptg file read and parsed (text_parse.c); files it names resolve against its folder.
 * portc_graph_load (driver/load.c) calls it for every file that is not ONNX */
portc_status graph_load_text(const char *path, portc_graph **out);

#endif
