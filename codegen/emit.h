/*
 * emit.h: the shared C-like emitter. It renders values, index arithmetic and symbolic extents of
 * the kernel IR for any dialect; dialects call these helpers from their kernel skeletons.
 */
#ifndef PORTC_CODEGEN_EMIT_H
#define PORTC_CODEGEN_EMIT_H

#include "../ir/graph.h"
#include "dialect.h"

struct emitter {
  const dialect *d;
  const kir_module *m;
  const kir_kernel *k; /* the kernel being written */
  strbuf out;
  int indent;
  /* values already written in the current scope (per value: the scope id, 0 = none) */
  int *done;
  int scope, next_scope;
  int stack[16], depth; /* enclosing scopes, whose values are visible */
  int tmp;             /* counter for index temporaries */
  /* per buffer of the module: its place among the kernel's own buffers (kernel_buffers order),
   * or -1. Kernels name buffers b<place>, so that identical kernels anywhere in a graph are the
   * same text and compile once (regional compilation) */
  int *slot;
};

/* Renders the module's kernels into one source file (free with free()). */
char *emit_module(const dialect *d, const kir_module *m);
/* a floating constant as the dialect spells it, infinities and NaN included */
void emit_float(const dialect *d, double f, char *buf, size_t len);

void emit_line(emitter *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* a side buffer's text (free with free()); NULL when memory ran out, which also fails the
 * module (emit_module returns NULL), so no source is ever built with a piece missing */
char *emit_take(emitter *e, strbuf *b);
/* a dimension's extent as an expression: a literal, or S[k] for symbol k */
const char *emit_dim(emitter *e, dim d, char *buf, size_t len);
/* product of dims as an expression */
void emit_count(emitter *e, const shape *s, int from, int to, char *buf, size_t len);
/* the flat offset into path p's target (or, for an empty path, into `space` itself) from the
 * index names of its source: writes temporaries and puts the variable's name in out */
void emit_offset(emitter *e, int path, const shape *space, const char *const *idx, char *out, size_t len);
/* writes value v and everything it needs that is not yet written in the scope, in the index space
 * named by idx; returns the variable name */
const char *emit_value(emitter *e, int v, const char *const *idx);
/* writes value v as expr, a value the kernel already holds (a matrix's element, say), so that the
 * values written after it in the scope read it; returns the variable name */
const char *emit_bind(emitter *e, int v, const char *expr);
void emit_scope_push(emitter *e);
void emit_scope_pop(emitter *e);
/* writes, in the current scope, the values behind v that do not depend on the row position
 * (ROW kernels hoist them out of their loops) */
void emit_hoisted(emitter *e, int v, const char *const *idx);
/* the compute type of a dtype: "float" or "int64_t" */
const char *compute_type(portc_dtype t);
/* ... as the current dialect spells it */
const char *emit_type(const emitter *e, portc_dtype t);
/* "const T name = value;" and "T name = value;" as the dialect declares them */
void emit_const(emitter *e, const char *type, const char *name, const char *value);
void emit_var(emitter *e, const char *type, const char *name, const char *value);
/* float op `op` of operands a (and b) as the dialect spells it */
void emit_float_op(emitter *e, enum op op, const char *a, const char *b, char *out, size_t len);
/* the body of an OPAQUE kernel: its op's template (opaque.c); attention's is attention.c's */
void emit_opaque(emitter *e);
void emit_attention(emitter *e);
/* for (t over [0, count)) spread over the device (an OpenMP loop on the CPU, a grid-stride loop
 * on GPUs); closed by gpu_loop_end */
void emit_parallel_loop(emitter *e, const char *count);
/* the name of buffer b in the current kernel ("b2": its place among the kernel's buffers) */
const char *emit_buf(emitter *e, int buf);
/* the compute-type value of buffer b at offset expression `off` */
void emit_load(emitter *e, int buf, const char *off, char *out, size_t len);
/* a store statement of value expression `val` to buffer b at offset `off` */
void emit_store(emitter *e, int buf, const char *off, const char *val);
/* names[first..last) from the flat index expression `flat` over dims [first, last) of s */
void emit_unravel(emitter *e, const shape *s, int first, int last, const char *flat, const char *const *names);
/* the value of store st at index idx (in index space `space`), stored */
void emit_store_at(emitter *e, const kir_store *st, const shape *space, const char *const *idx);
/* every store of a matmul or convolution at one output element: its epilogue's value, then what
 * the fusion stores beside it (fuse.c: a convolution's result narrowed for the next one) */
void emit_stores_at(emitter *e, const shape *space, const char *const *idx);
/* operand `slot` of a matmul at index idx, as a compute-type expression */
void emit_operand(emitter *e, int slot, const char *const *idx, char *out, size_t len);
/* ROW kernels: marks bit `loop` of used[] for v and the row values it needs */
void row_mark_loop(const kir_kernel *k, int v, int loop, unsigned *used);
/* ROW kernels: the dtype of phase p's accumulator */
portc_dtype row_phase_type(const kir_module *m, const kir_kernel *k, int p);
/* attribute `name`'s element i, or 1 when unset (conv2d's stride and dilation) */
int64_t attr_or_one(const node *n, const char *name, int i);
/* the buffers kernel i reads or writes, in the kernel's own order: operands, loads, stores (fills max at most, returns them all);
 * whether it writes buf; whether it reports faults through a status word: bit STATUS_BAD_INDEX
 * (a gather index out of range), bit STATUS_DIV_ZERO (an integer division by zero) */
enum { STATUS_BAD_INDEX = 1, STATUS_DIV_ZERO = 2 };
/* what a status word's bits mean, for the error a run returns */
const char *status_message(unsigned word);
int kernel_buffers(const kir_module *m, int i, int *bufs, int max);
/* whether some kernel of m reads and writes more than max buffers */
bool kernels_wider_than(const kir_module *m, int max);
bool kernel_writes(const kir_kernel *k, int buf);
bool kernel_has_status(const kir_module *m, int i);
/* every step of the path (-1: none) maps an index to itself */
bool path_is_identity(const kir_kernel *k, int path);
/* matmul operand `slot` is a 2-D buffer read as it lies (row-major, no view in between) */
bool matmul_plain_operand(const kir_module *m, const kir_kernel *k, int slot);
/* ... or a 2-D buffer read transposed (its one view a swap of the two dimensions): a vendor
 * library reads it so as it lies */
bool matmul_transposed_operand(const kir_module *m, const kir_kernel *k, int slot);
/* matmul kernel i is one 2-D GEMM: A is read as it lies with the output's rank (its leading dims
 * fold into M rows), B is a matrix read as it lies (broadcast to every batch where batched) */
bool matmul_gemm_view(const kir_module *m, int i);
/* whether operand `slot` of kernel k reads dim d of its index space in aligned runs of `run`
 * consecutive elements: the `run` elements from an index whose dim d is a multiple of run lie
 * next to each other in the buffer, the first at a flat offset that is a multiple of run; and the
 * rank of the operand's index space */
bool operand_runs_along(const kir_module *m, const kir_kernel *k, int slot, int d, int run);
int operand_rank(const kir_module *m, const kir_kernel *k, int slot);
/* B's path (-1: none) reads one matrix for every batch: identity steps, or a broadcast that
 * drops the leading (batch) dims and keeps the last two as they are */
bool matmul_same_matrix_per_batch(const kir_kernel *k, int path);
/* the source with line numbers, for the messages of compilers that reject it (free with free()) */
char *emit_numbered(const char *src);
/* a transcendental function: worth keeping a computed value rather than computing it again */
bool op_is_costly(enum op op);
/* a literal of the reduction identity of op for dtype t */
const char *reduce_init(enum op op, portc_dtype t);

#endif
