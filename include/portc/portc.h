/*
 * portc.h: the whole public C API of libportc.
 *
 * An application builds a tensor graph through these calls, or loads one (.ptg text or ONNX),
 * checks it, compiles it for a target (cpu, vulkan, cuda, hip, hip-on-cuda) and runs it. The
 * float64 reference evaluator runs any graph too: it is the ground truth that every target is
 * checked against (portc_verify).
 *
 * Conventions
 *  - Calls that build a node return a portc_node: >= 0 is the new node; < 0 is a failure whose
 *    status is portc_node_status(n). portc_last_error() then names the node and the problem.
 *    A failed node passed to a later call makes that call fail too, so a chain of calls can be
 *    checked once at the end.
 *  - Calls that can fail otherwise return a portc_status and set portc_last_error().
 *  - Nothing aborts on bad input; the graph stays usable after a failed call.
 *  - Strings returned by the library are owned by it unless the comment says "free with free()".
 *
 * Threads
 *  - Every call may be made from any thread. Process-wide state (devices and their drivers, the
 *    kernel cache, logging) is shared safely, and portc_last_error() is per thread.
 *  - A module (portc_module) and a bindings object (portc_bindings) may be shared between
 *    threads: calls on one of them run one after the other (each holds the object's lock), so
 *    two threads running one module take turns. For runs in parallel, compile one module per
 *    thread (the kernel cache makes the second compile cheap) and give each its own bindings.
 *    A pointer from portc_bindings_get stays valid until the next run with those bindings.
 *  - A graph may be read by many threads at once (compiling, printing, hashing, verifying,
 *    running it); a call that changes it (adding nodes, setting names and outputs) must not
 *    overlap any other call on the same graph.
 *  - Freeing an object must not overlap any other call on it.
 *
 * Processes
 *  - A process forked after it ran CPU kernels runs them on one thread (OpenMP's threads stay in
 *    the parent). One forked after it started a GPU driver (compiled or listed devices for a
 *    GPU target) cannot use the GPU: its GPU compiles and runs return PORTC_ERR_DEVICE and say
 *    why, and portc_target_available says no, with the same reason; start such workers with
 *    spawn, or fork before touching the GPU.
 */
#ifndef PORTC_PORTC_H
#define PORTC_PORTC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every function of the API is exported; nothing else of the library is.
 *
 * Option and info structs start with `size`: set it to sizeof the struct (the PORTC_*_INIT
 * macros do), or leave it 0, which means the struct as it first had a size field. The library
 * reads and writes only the fields that size covers, so a program built against an older header
 * keeps working when fields are added at the end. */
#if defined(__GNUC__) || defined(__clang__)
#define PORTC_API __attribute__((visibility("default")))
#else
#define PORTC_API
#endif

/* The version this header belongs to; portc_version() gives the library's (they match when the
 * program runs with the library it was built against). The SONAME changes with the major one. */
#define PORTC_VERSION_MAJOR 0
#define PORTC_VERSION_MINOR 2
#define PORTC_VERSION_PATCH 0
PORTC_API const char *portc_version(void); /* "0.2.0" */

typedef enum portc_status {
  PORTC_OK = 0,
  PORTC_ERR_INVALID = 1, /* bad argument: unknown node or name, wrong input count, bad attribute */
  PORTC_ERR_DTYPE = 2,   /* an op does not accept these element types */
  PORTC_ERR_SHAPE = 3,   /* shapes do not fit the op, or a symbol value contradicts a shape */
  PORTC_ERR_PARSE = 4,   /* malformed .ptg or .npy text */
  PORTC_ERR_IO = 5,      /* a file could not be read or written */
  PORTC_ERR_NOMEM = 6,   /* out of memory */
  PORTC_ERR_RUNTIME = 7, /* a value problem while running: index out of range, integer division by zero */
  PORTC_ERR_DEVICE = 8,  /* the device or its driver failed, or lacks a feature the graph needs */
  PORTC_ERR_INTERNAL = 9, /* a bug in portc: generated code that does not compile or validate */
} portc_status;

typedef enum portc_dtype {
  PORTC_F32 = 0,
  PORTC_F16 = 1,
  PORTC_BF16 = 2,
  PORTC_I32 = 3,
  PORTC_I64 = 4,
  PORTC_BOOL = 5,
  PORTC_F64 = 6, /* host tensors only: the reference evaluator's results. Not a graph dtype. */
} portc_dtype;

#define PORTC_MAX_RANK 8

/* A node of a graph, or a failure (< 0). PORTC_NONE marks an optional input left out. */
typedef int32_t portc_node;
#define PORTC_NONE ((portc_node)INT32_MIN)

typedef struct portc_graph portc_graph;

/* One dimension of a shape: a constant size, or a named symbol bound at run time. */
typedef struct portc_dim {
  int64_t size;       /* used when symbol is NULL */
  const char *symbol; /* e.g. "N"; NULL for a constant */
} portc_dim;

/* ---- errors ---------------------------------------------------------------------------------- */

/* The message of the last failed call on this thread ("" when none). */
PORTC_API const char *portc_last_error(void);
PORTC_API const char *portc_status_name(portc_status s);
static inline portc_status portc_node_status(portc_node n) {
  return n >= 0 ? PORTC_OK : n == PORTC_NONE ? PORTC_ERR_INVALID : (portc_status)(-n);
}

/* ---- dtypes ---------------------------------------------------------------------------------- */

PORTC_API const char *portc_dtype_name(portc_dtype t);              /* "f32", "bf16", ... */
PORTC_API bool portc_dtype_parse(const char *name, portc_dtype *out); /* the inverse */
PORTC_API size_t portc_dtype_size(portc_dtype t);                    /* bytes per element in a portc_tensor */

/* ---- host tensors ---------------------------------------------------------------------------- */

/* Row-major data; f16 and bf16 are stored as their uint16_t bits, bool as uint8_t 0/1. */
typedef struct portc_tensor {
  portc_dtype dtype;
  int rank;
  int64_t shape[PORTC_MAX_RANK];
  void *data;
} portc_tensor;

/* ---- graphs ---------------------------------------------------------------------------------- */

PORTC_API portc_graph *portc_graph_new(const char *name); /* NULL when out of memory */
PORTC_API void portc_graph_free(portc_graph *g);

/* Parse .ptg text. source_name is used in messages ("model.ptg:3:7: ..."). On failure *out is
 * NULL and portc_last_error() lists every problem found, one per line. */
PORTC_API portc_status portc_graph_parse(const char *text, const char *source_name, portc_graph **out);
/* A .ptg file, or an ONNX model when the name ends in ".onnx" (portc_graph_from_onnx). */
PORTC_API portc_status portc_graph_load(const char *path, portc_graph **out);
/* Imports an ONNX model (opsets 13 to 18). Initializers become parameters holding their values
 * (external data files are read from the model's folder); dim_param dimensions become symbols,
 * so a model exported with a dynamic batch runs for any batch; shape arithmetic is folded.
 * An unsupported model fails with a message that lists every unsupported operator. */
PORTC_API portc_status portc_graph_from_onnx(const char *path, portc_graph **out);
/* The same from bytes in memory; external data is refused (there is no folder to read it from). */
PORTC_API portc_status portc_graph_from_onnx_memory(const void *data, size_t size, const char *source_name, portc_graph **out);
/* The normalized text of a graph; parsing it gives back an equal graph. Free with free(). */
PORTC_API char *portc_graph_print(const portc_graph *g);

/* Writes g as .ptg text. Parameters holding their values (portc_param_data, ONNX initializers)
 * are written to the .npz archive weights_path (numpy.savez's format: numpy.load reads it), which
 * must sit in the same folder, and are declared file("NAME.npz", key="param") from then on. */
PORTC_API portc_status portc_graph_save(portc_graph *g, const char *ptg_path, const char *weights_path);

/* Checks every invariant and reports every problem, not only the first. On failure, when report
 * is not NULL, *report is the list of problems followed by the graph annotated with them (free
 * with free()). */
PORTC_API portc_status portc_graph_verify(const portc_graph *g, char **report);

/* Structural hash: graphs that compute the same thing with the same input, parameter and output
 * names hash equal, whatever their intermediate values are called. */
PORTC_API uint64_t portc_graph_hash(const portc_graph *g);

PORTC_API const char *portc_graph_name(const portc_graph *g);
PORTC_API int portc_graph_node_count(const portc_graph *g);
PORTC_API int portc_graph_output_count(const portc_graph *g);
PORTC_API portc_node portc_graph_output(const portc_graph *g, int i);
PORTC_API int portc_graph_input_count(const portc_graph *g); /* inputs only, not params */
PORTC_API portc_node portc_graph_input(const portc_graph *g, int i);
PORTC_API portc_node portc_graph_find(const portc_graph *g, const char *name); /* failure when absent */

PORTC_API const char *portc_node_name(const portc_graph *g, portc_node n);
PORTC_API const char *portc_node_op(const portc_graph *g, portc_node n);
PORTC_API portc_dtype portc_node_dtype(const portc_graph *g, portc_node n);
PORTC_API int portc_node_rank(const portc_graph *g, portc_node n);
/* dims[i].symbol points into the graph and lives as long as it. */
PORTC_API void portc_node_shape(const portc_graph *g, portc_node n, portc_dim dims[PORTC_MAX_RANK]);

/* Names a node (names are unique; the builder names unnamed nodes t0, t1, ...). */
PORTC_API portc_status portc_set_name(portc_graph *g, portc_node n, const char *name);
/* Marks a node as a graph output. */
PORTC_API portc_status portc_output(portc_graph *g, portc_node n);

/* ---- sources --------------------------------------------------------------------------------- */

PORTC_API portc_node portc_input(portc_graph *g, const char *name, portc_dtype t, int rank, const portc_dim *dims);
/* A parameter given at run time (portc_bindings_set). */
PORTC_API portc_node portc_param(portc_graph *g, const char *name, portc_dtype t, int rank, const portc_dim *dims);
/* A parameter loaded from a .npy file when the graph runs. A relative path is taken from the
 * folder of the .ptg file the graph was loaded from, else from the working directory. */
PORTC_API portc_node portc_param_file(portc_graph *g, const char *name, portc_dtype t, int rank,
                            const portc_dim *dims, const char *npy_path);
/* The same from member KEY of an .npz archive (numpy.savez: stored, not compressed). */
PORTC_API portc_node portc_param_npz(portc_graph *g, const char *name, portc_dtype t, int rank, const portc_dim *dims,
                           const char *npz_path, const char *key);
/* A parameter holding a copy of t's values (its shape and dtype are t's). */
PORTC_API portc_node portc_param_data(portc_graph *g, const char *name, const portc_tensor *t);
typedef enum portc_init { PORTC_INIT_ZEROS, PORTC_INIT_ONES, PORTC_INIT_NORMAL, PORTC_INIT_UNIFORM } portc_init;
/* A parameter filled from a seeded generator: NORMAL(mean=a, std=b), UNIFORM(low=a, high=b). */
PORTC_API portc_node portc_param_init(portc_graph *g, const char *name, portc_dtype t, int rank,
                            const portc_dim *dims, portc_init init, uint64_t seed, double a, double b);
/* A constant; values are row-major, rounded to t. numel values, or one value that fills it all. */
PORTC_API portc_node portc_const(portc_graph *g, portc_dtype t, int rank, const int64_t *shape,
                       const double *values, int64_t nvalues);
PORTC_API portc_node portc_scalar(portc_graph *g, portc_dtype t, double value);

/* ---- ops ------------------------------------------------------------------------------------- */
/* Elementwise ops take operands of one dtype (insert a cast to mix) and broadcast like numpy. */

PORTC_API portc_node portc_neg(portc_graph *g, portc_node x);
PORTC_API portc_node portc_abs(portc_graph *g, portc_node x);
PORTC_API portc_node portc_exp(portc_graph *g, portc_node x);
PORTC_API portc_node portc_log(portc_graph *g, portc_node x);
PORTC_API portc_node portc_sqrt(portc_graph *g, portc_node x);
PORTC_API portc_node portc_rsqrt(portc_graph *g, portc_node x);
PORTC_API portc_node portc_reciprocal(portc_graph *g, portc_node x);
PORTC_API portc_node portc_tanh(portc_graph *g, portc_node x);
PORTC_API portc_node portc_sigmoid(portc_graph *g, portc_node x);
PORTC_API portc_node portc_relu(portc_graph *g, portc_node x);
PORTC_API portc_node portc_gelu(portc_graph *g, portc_node x); /* erf form */
PORTC_API portc_node portc_gelu_tanh(portc_graph *g, portc_node x);
PORTC_API portc_node portc_silu(portc_graph *g, portc_node x);
PORTC_API portc_node portc_erf(portc_graph *g, portc_node x);
PORTC_API portc_node portc_sin(portc_graph *g, portc_node x);
PORTC_API portc_node portc_cos(portc_graph *g, portc_node x);
PORTC_API portc_node portc_floor(portc_graph *g, portc_node x);
PORTC_API portc_node portc_ceil(portc_graph *g, portc_node x);
PORTC_API portc_node portc_sign(portc_graph *g, portc_node x);
PORTC_API portc_node portc_not(portc_graph *g, portc_node x);

PORTC_API portc_node portc_add(portc_graph *g, portc_node a, portc_node b);
PORTC_API portc_node portc_sub(portc_graph *g, portc_node a, portc_node b);
PORTC_API portc_node portc_mul(portc_graph *g, portc_node a, portc_node b);
PORTC_API portc_node portc_div(portc_graph *g, portc_node a, portc_node b); /* integers: truncates */
PORTC_API portc_node portc_pow(portc_graph *g, portc_node a, portc_node b);
PORTC_API portc_node portc_maximum(portc_graph *g, portc_node a, portc_node b); /* NaN propagates */
PORTC_API portc_node portc_minimum(portc_graph *g, portc_node a, portc_node b);
PORTC_API portc_node portc_eq(portc_graph *g, portc_node a, portc_node b);
PORTC_API portc_node portc_ne(portc_graph *g, portc_node a, portc_node b);
PORTC_API portc_node portc_lt(portc_graph *g, portc_node a, portc_node b);
PORTC_API portc_node portc_le(portc_graph *g, portc_node a, portc_node b);
PORTC_API portc_node portc_gt(portc_graph *g, portc_node a, portc_node b);
PORTC_API portc_node portc_ge(portc_graph *g, portc_node a, portc_node b);
PORTC_API portc_node portc_and(portc_graph *g, portc_node a, portc_node b);
PORTC_API portc_node portc_or(portc_graph *g, portc_node a, portc_node b);
PORTC_API portc_node portc_where(portc_graph *g, portc_node cond, portc_node a, portc_node b);
PORTC_API portc_node portc_cast(portc_graph *g, portc_node x, portc_dtype to);

/* Reductions over a set of axes (naxes 0: all axes); negative axes count from the end. */
PORTC_API portc_node portc_sum(portc_graph *g, portc_node x, int naxes, const int64_t *axes, bool keepdim);
PORTC_API portc_node portc_mean(portc_graph *g, portc_node x, int naxes, const int64_t *axes, bool keepdim);
PORTC_API portc_node portc_max(portc_graph *g, portc_node x, int naxes, const int64_t *axes, bool keepdim);
PORTC_API portc_node portc_min(portc_graph *g, portc_node x, int naxes, const int64_t *axes, bool keepdim);
PORTC_API portc_node portc_prod(portc_graph *g, portc_node x, int naxes, const int64_t *axes, bool keepdim);
PORTC_API portc_node portc_argmax(portc_graph *g, portc_node x, int64_t axis, bool keepdim); /* i64 result */

/* numpy matmul: batch dimensions broadcast; a 1-D operand is a row (a) or a column (b). */
PORTC_API portc_node portc_matmul(portc_graph *g, portc_node a, portc_node b);

typedef struct portc_conv2d_opts {
  size_t size; /* sizeof(portc_conv2d_opts), or 0 */
  int64_t stride[2], padding[2], dilation[2], groups; /* zeros mean 1, 0, 1, 1 */
  bool channels_last; /* x [N,H,W,C], w [kh,kw,C/groups,O] and the result [N,OH,OW,O] */
} portc_conv2d_opts;
/* x [N,C,H,W], w [O,C/groups,kh,kw], bias [O] or PORTC_NONE (channels_last: see above); opts may
 * be NULL. */
PORTC_API portc_node portc_conv2d(portc_graph *g, portc_node x, portc_node w, portc_node bias,
                        const portc_conv2d_opts *opts);
typedef struct portc_pool2d_opts {
  size_t size; /* sizeof(portc_pool2d_opts), or 0 */
  int64_t kernel[2], stride[2], padding[2]; /* stride 0: the kernel size */
  bool channels_last; /* x [N,H,W,C] and the result [N,OH,OW,C] */
} portc_pool2d_opts;
PORTC_API portc_node portc_max_pool2d(portc_graph *g, portc_node x, const portc_pool2d_opts *opts);
PORTC_API portc_node portc_avg_pool2d(portc_graph *g, portc_node x, const portc_pool2d_opts *opts); /* padding counts */
/* x [N,C,H,W] and the result [N,C,OH,OW] (channels_last: see above); a pooling's padding reads as
 * nothing (max: skipped; avg: adds 0, divided by the whole window) */

/* Views. dims may hold one -1 (reshape: inferred; expand: kept) and symbols. */
PORTC_API portc_node portc_reshape(portc_graph *g, portc_node x, int rank, const portc_dim *dims);
PORTC_API portc_node portc_permute(portc_graph *g, portc_node x, int rank, const int64_t *perm);
PORTC_API portc_node portc_expand(portc_graph *g, portc_node x, int rank, const portc_dim *dims);
#define PORTC_END INT64_MAX /* slice stop: to the end */
PORTC_API portc_node portc_slice(portc_graph *g, portc_node x, int64_t axis, int64_t start, int64_t stop, int64_t step);
PORTC_API portc_node portc_concat(portc_graph *g, int n, const portc_node *xs, int64_t axis);
/* pads: (before, after) for each dimension in order, 2*rank values; constant value. */
PORTC_API portc_node portc_pad(portc_graph *g, portc_node x, int npads, const int64_t *pads, double value);
/* x[..., idx, ...] along axis, like numpy.take; idx is i32 or i64, negative counts from the end. */
PORTC_API portc_node portc_gather(portc_graph *g, portc_node x, portc_node idx, int64_t axis);

/* Composites. Later passes decompose them and fuse them back into one kernel each. */
PORTC_API portc_node portc_softmax(portc_graph *g, portc_node x, int64_t axis);
PORTC_API portc_node portc_log_softmax(portc_graph *g, portc_node x, int64_t axis);
/* Over the last dimension; weight and bias [D] or PORTC_NONE. */
PORTC_API portc_node portc_layer_norm(portc_graph *g, portc_node x, portc_node weight, portc_node bias, double eps);
PORTC_API portc_node portc_rms_norm(portc_graph *g, portc_node x, portc_node weight, double eps);
/* q [..., Lq, D], k [..., Lk, D], v [..., Lk, Dv]; causal masks key j > query i; scale 0 means
 * 1/sqrt(D). */
PORTC_API portc_node portc_attention(portc_graph *g, portc_node q, portc_node k, portc_node v, bool causal, double scale);
/* The same with an additive mask (PORTC_NONE: none) broadcast to the scores [..., Lq, Lk]: rank 2
 * or more, q's dtype, -inf where a key is hidden (a padding mask [B, 1, 1, Lk], a bias [Lq, Lk]). */
PORTC_API portc_node portc_attention_masked(portc_graph *g, portc_node q, portc_node k, portc_node v, portc_node mask, bool causal,
                                            double scale);
/* y[..., i, j] = j > i ? -inf : x[..., i, j] over the last two dimensions. */
PORTC_API portc_node portc_causal_mask(portc_graph *g, portc_node x);

/* ---- training -------------------------------------------------------------------------------- */

/* Reverse-mode differentiation (what AOTAutograd does for torch.compile): appends to g the nodes
 * that compute d loss / d wrt[i] for i < n, each of wrt[i]'s dtype and shape, into grads[i] (named
 * WRT.grad where that name is free). loss holds one element of a floating dtype. Forward and
 * backward are then one graph: they fuse, share memory plans and run on every target alike. On
 * failure g is as it was, and the message names what stops the gradient: a node on the way with
 * no derivative (argmax, a comparison, a cast to an integer), or a wrt the loss does not use. */
PORTC_API portc_status portc_graph_grad(portc_graph *g, portc_node loss, int n, const portc_node *wrt, portc_node *grads);

/* Mixed precision, as torch.autocast: from this call on, matmul, conv2d and attention nodes added
 * to g with f32 operands compute in t (f16 or bf16; PORTC_F32 turns it off): their operands are
 * cast to t, their sums stay f32 on every target, their result is cast back to f32; a compiled
 * graph adds two such results in t (a residual stream, as torch.autocast adds). Parameters
 * stay f32 (the master weights); the gradients flow back through the casts, so the backward
 * pass's matmuls run in t too. Call it before building the forward pass. */
PORTC_API portc_status portc_graph_autocast(portc_graph *g, portc_dtype t);
/* Mixed precision for a graph built without it (an imported ONNX model, say): *out is a copy of g
 * whose matmul, conv2d and attention nodes of f32 operands compute in t (f16 or bf16) as above,
 * each result cast back to f32 under the node's own name, so inputs, outputs and parameters keep
 * their names, dtypes and values. *converted (may be NULL) counts the nodes so changed. A graph
 * that trains (portc_update) is refused: build it under portc_graph_autocast instead. */
PORTC_API portc_status portc_graph_autocast_copy(const portc_graph *g, portc_dtype t, portc_graph **out, int *converted);

/* Losses, as the mean over the batch. Cross-entropy of logits [N, C] against class indices [N]
 * (i32 or i64), label smoothing in [0, 1) as torch.nn.CrossEntropyLoss's; mean squared error of
 * two values of one shape. */
PORTC_API portc_node portc_cross_entropy(portc_graph *g, portc_node logits, portc_node labels, double label_smoothing);
PORTC_API portc_node portc_mse_loss(portc_graph *g, portc_node pred, portc_node target);

/* After each portc_module_run (and portc_reference_run) with bindings b, parameter param of g
 * takes the value value computed in that run: b then holds it, for the next run and for
 * portc_bindings_get. value (same dtype and shape) becomes an output of g. A parameter has at most
 * one update. */
PORTC_API portc_status portc_update(portc_graph *g, portc_node param, portc_node value);

typedef enum portc_optimizer_kind { PORTC_OPT_SGD = 0, PORTC_OPT_ADAM = 1, PORTC_OPT_ADAMW = 2 } portc_optimizer_kind;
typedef struct portc_optimizer {
  size_t size; /* sizeof(portc_optimizer), or 0 */
  portc_optimizer_kind kind;
  double lr;
  double momentum;     /* SGD; 0: none */
  double weight_decay; /* SGD and Adam: added to the gradient; AdamW: decoupled */
  double beta1, beta2, eps; /* Adam and AdamW; all 0: 0.9, 0.999, 1e-8 */
} portc_optimizer;
/* Appends one optimizer step for params (parameters of g) given their gradients, as updates: the
 * parameters' new values, and the optimizer's state, which are parameters too, zero at first:
 * PARAM.momentum (SGD with momentum), PARAM.exp_avg and PARAM.exp_avg_sq and one step count
 * optimizer.step (Adam, AdamW). The formulas are torch.optim.SGD's, Adam's and AdamW's. */
PORTC_API portc_status portc_optimizer_step(portc_graph *g, const portc_optimizer *o, int n, const portc_node *params, const portc_node *grads);

/* Any op by its .ptg name, attributes in .ptg syntax: portc_op(g, "sum", 1, &x, "axes=[1], keepdim=true"). */
PORTC_API portc_node portc_op(portc_graph *g, const char *op, int ninputs, const portc_node *inputs, const char *attrs);

/* The op table, one line per op: "name(inputs) kind attr:kind=default ...". Free with free(). */
PORTC_API char *portc_ops_describe(void);

PORTC_API portc_tensor *portc_tensor_new(portc_dtype t, int rank, const int64_t *shape); /* zeroed; NULL on failure */
PORTC_API void portc_tensor_free(portc_tensor *t);
PORTC_API int64_t portc_tensor_numel(const portc_tensor *t);
PORTC_API double portc_tensor_get(const portc_tensor *t, int64_t i); /* element i as a double */
PORTC_API void portc_tensor_set(portc_tensor *t, int64_t i, double v); /* rounded to the tensor's dtype */
PORTC_API portc_status portc_tensor_load_npy(const char *path, portc_tensor **out);
PORTC_API portc_status portc_tensor_save_npy(const portc_tensor *t, const char *path); /* bf16 is saved as f32 */

/* ---- running on the reference evaluator ------------------------------------------------------ */

/* What one run needs: symbol values, input and parameter tensors, and a seed for the rest. */
typedef struct portc_bindings portc_bindings;
PORTC_API portc_bindings *portc_bindings_new(const portc_graph *g);
PORTC_API void portc_bindings_free(portc_bindings *b);
PORTC_API portc_status portc_bindings_set_symbol(portc_bindings *b, const char *symbol, int64_t value);
/* An input or a run-time parameter; the tensor is copied. Symbols in its shape are bound. */
PORTC_API portc_status portc_bindings_set(portc_bindings *b, const char *name, const portc_tensor *t);
/* Inputs and run-time parameters left unbound are filled from this seed: floats uniform in
 * [-1, 1), integers in [0, 8), bools 0/1. Without a seed they are an error. */
PORTC_API void portc_bindings_set_seed(portc_bindings *b, uint64_t seed);

/* Evaluates the graph in float64 (integers exactly). outputs[i] receives a new tensor for graph
 * output i: F64 for floating outputs, the output's own dtype otherwise. Free each one. */
PORTC_API portc_status portc_reference_run(const portc_graph *g, portc_bindings *b, portc_tensor **outputs);
/* The tensor an input or parameter had in the last run (after seeding and rounding), or NULL;
 * for a parameter the graph updates (portc_update), the value the next run starts from. */
PORTC_API const portc_tensor *portc_bindings_get(const portc_bindings *b, const char *name);

/* One training step: the gradients of loss for params (portc_graph_grad) and o's step of them
 * (portc_optimizer_step), with dynamic loss scaling when loss_scale > 0 (for f16 autocast, as
 * torch.amp.GradScaler): the loss is multiplied by a scale before differentiating and the
 * gradients divided by it in f32; a step whose gradients hold an inf or NaN changes no parameter
 * or optimizer state and halves the scale, and 2000 good steps in a row double it. The scale and
 * that count are parameters too: amp.scale (loss_scale at first) and amp.growth. */
PORTC_API portc_status portc_train_step(portc_graph *g, portc_node loss, int n, const portc_node *params, const portc_optimizer *o, double loss_scale);

/* The parameters of g as b holds them (the values bound, updated, or initialized by the last run),
 * to and from an .npz file: a checkpoint of a training run, optimizer state included. Loading binds
 * every parameter of g the file holds and leaves the others as they are; a file that holds none
 * is an error. */
PORTC_API portc_status portc_bindings_save_npz(portc_bindings *b, const char *path);
PORTC_API portc_status portc_bindings_load_npz(portc_bindings *b, const char *path);


/* ---- compiling for a target ----------------------------------------------------------------- */

typedef enum portc_mode {
  PORTC_MODE_DEFAULT = 0,         /* heuristics and the shipped schedule */
  PORTC_MODE_REDUCE_OVERHEAD = 1, /* record the launch sequence once and replay it (vulkan); else an error */
  PORTC_MODE_MAX_AUTOTUNE = 2,    /* first portc_tune (missing_only) for what the tables lack, then as default */
} portc_mode;

typedef struct portc_compile_options {
  size_t size;            /* sizeof(portc_compile_options), or 0 */
  const char *target;     /* "cpu" (the default when NULL), "vulkan", or "vulkan:N" for device N */
  portc_mode mode;
  bool dynamic;           /* keep symbols symbolic: one module runs for any value (else specialize) */
  bool fullgraph;         /* an op the target cannot run is an error naming the node */
  bool eager;             /* one kernel per op, no fusion: the A/B baseline */
  const char *dump_dir;   /* write the generated source here (NULL: do not) */
  const char *dump_after; /* print the graph after this pass to stderr: specialize decompose fold cse dce fuse */
  bool rules_only;        /* the targets' own rules alone: no tune table is read (the untuned baseline) */
} portc_compile_options;
#define PORTC_COMPILE_OPTIONS_INIT {.size = sizeof(portc_compile_options)}

typedef struct portc_module portc_module;

/* Compiles g for a target. Without `dynamic`, symbols take their values from b (set with
 * portc_bindings_set_symbol or bound through input tensors); b may be NULL when g has none. The
 * graph must outlive the module. A module so specialized, run with other values, compiles again
 * for them and keeps that variant; when a symbol shows a third value, or after
 * $PORTC_RECOMPILE_LIMIT recompiles (8 by default; 0: at once), it compiles once with every
 * symbol dynamic and runs every later value with that. PORTC_LOG=recompiles logs each, with the
 * guard that failed. */
PORTC_API portc_status portc_compile(const portc_graph *g, const portc_compile_options *o, portc_bindings *b, portc_module **out);
PORTC_API void portc_module_free(portc_module *m);
/* Runs the module; outputs[i] receives a new tensor of graph output i, in its own dtype. */
PORTC_API portc_status portc_module_run(portc_module *m, portc_bindings *b, portc_tensor **outputs);
/* A training step: portc_module_run, except that the parameters the graph updates (portc_update)
 * and their optimizer state stay where the step computed them: on a GPU, the module's device
 * memory, where the next step reads them without an upload. The outputs that are an update's
 * value receive NULL; b holds those values, and portc_bindings_get, portc_bindings_save_npz,
 * portc_reference_run or a run of another module read them back when they ask (one copy each).
 * Freeing the module first hands them back to b. portc_module_run keeps the parameters on the
 * device too, and skips their upload while b's values are unchanged, but reads every output. */
PORTC_API portc_status portc_module_step(portc_module *m, portc_bindings *b, portc_tensor **outputs);
/* Binds once, then times `iters` back-to-back executions of the kernels: seconds[i] each, from
 * the device's own timer on targets with one (GPUs), else from the host clock. */
PORTC_API portc_status portc_module_time(portc_module *m, portc_bindings *b, int iters, double *seconds);

/* ---- module files (.portc): compiled once, run where no compiler is ---------------------------- */

/* Compiles g as portc_compile does, for one target or several ("cpu,vulkan"), and writes one file
 * holding, for each, the compiled kernels, their schedules, the device they were built for and
 * the symbol values the module is specialized to (its guards), with the graph and the values of
 * its parameters (what b binds, or what the graph holds, reads or generates). Parameters left to
 * be given at run time stay so. The file is written whole or not at all. */
PORTC_API portc_status portc_compile_file(const portc_graph *g, const portc_compile_options *o, portc_bindings *b, const char *path);
/* Loads a module file for `target` (NULL: the first target in the file whose device is this
 * machine's) and makes its module, building nothing: no C compiler, shaderc or NVRTC is needed.
 * A file of another format version, a damaged or truncated one, and one built for another device
 * are errors that say so. The module holds its graph (portc_module_graph) and parameters: bind
 * the inputs with portc_bindings_new(portc_module_graph(m)). Run with other symbol values than
 * its guards, a specialized module compiles again, which needs the target's compiler. */
PORTC_API portc_status portc_module_load(const char *path, const char *target, portc_module **out);
/* The graph a module runs: the one it was compiled from, or for a loaded module its own (it lives
 * as long as the module). */
PORTC_API const portc_graph *portc_module_graph(const portc_module *m);

/* ---- web bundles: a model a browser runs through WebGPU ---------------------------------------- */

/* Compiles g for the WebGPU target (o->target "webgpu", the default here being an error: name it)
 * as a whole (a browser has no CPU to fall back on: an op the target cannot run is an error that
 * names it), specialized to the symbol values b gives, and writes a web bundle into folder dir
 * (made when missing): index.html, runner.js (the runner over navigator.gpu, an ES module),
 * manifest.json (the device buffers, the kernels and the dispatches of one run, and the limits
 * the device must grant), kernels/kN.wgsl, weights.bin (parameters and constants), and a sample:
 * inputs.bin (the inputs b binds, or its seed makes) with expected.bin (the float64 reference's
 * outputs for them), which the page checks the browser's results against. Serve the folder over
 * HTTP and open index.html in a browser with WebGPU. */
PORTC_API portc_status portc_export_web(const portc_graph *g, const portc_compile_options *o, portc_bindings *b, const char *dir);

/* ---- tuning: measured schedules for the device, kept in the user's tune table ---------------- */

typedef struct portc_tune_options {
  size_t size;             /* sizeof(portc_tune_options), or 0 */
  const char *target;      /* as in portc_compile_options */
  bool dynamic, eager;     /* the kernels are those of a compile with these options */
  double budget_seconds;   /* for the whole search (0: 600); kernels past it keep what they have */
  const char *table_path;  /* where the measured entries go (NULL: tune.txt in the kernel cache folder) */
  const char *export_path; /* also write them to this file (NULL: do not) */
  bool missing_only;       /* skip kernels that already have a measured entry (what max-autotune does) */
  bool progress;           /* a line per step on stderr: kernel, best so far, time left */
  int reps;                /* timings per candidate (0: 10); each kernel alone, after a warm-up */
  uint64_t seed;           /* the inputs' seed where b has none set (0: 1) */
} portc_tune_options;
#define PORTC_TUNE_OPTIONS_INIT {.size = sizeof(portc_tune_options)}

/* Times candidate schedules for every kernel of g on the target's device with seeded random
 * inputs, keeps for each kernel key the fastest candidate whose outputs match the default
 * schedule's (within a relative 1e-3 for f32, 2e-2 for 16-bit floats, exactly for integers),
 * never one slower than the default, and stores one measured entry per key (targets/tune.h).
 * report (may be NULL) gets a table of kernel, default time, best time and what won; free(). */
PORTC_API portc_status portc_tune(const portc_graph *g, const portc_tune_options *o, portc_bindings *b, char **report);

/* Lints tune tables: the file at path, or (NULL) every table a compile reads (the user's measured
 * table, those in $PORTC_TUNE_PATH, the shipped ones), printing each with its entry counts and
 * every line that is not a valid entry to out (a FILE *; NULL: stdout). Returns the number of
 * problems. */
PORTC_API int portc_tune_check(const char *path, void *out);
/* The kernel cache: its folder (created if missing), how many compiled entries it holds and their
 * bytes. portc_cache_clear removes every entry (the measured tune table, tune.txt, stays);
 * *removed gets how many. $PORTC_CACHE_MAX (bytes, or with K, M or G; 2G by default; unlimited
 * for none) bounds the folder: the least recently used entries are evicted as new ones are
 * stored. */
PORTC_API portc_status portc_cache_info(char *dir, size_t len, int64_t *entries, int64_t *bytes);
PORTC_API portc_status portc_cache_clear(int64_t *removed);
/* $PORTC_LOG: comma-separated topics whose decisions go to stderr, each line "[portc TOPIC] ...":
 * cache, fusion, graph_breaks, kernels, memory, recompiles, tune, or all. PORTC_ERR_INVALID, naming the first
 * unknown topic and listing the known ones, when it holds another word (the library then also
 * says so once on stderr, at its first log check, and logs the topics it knows). */
PORTC_API portc_status portc_log_check(void);

/* The tune key of a target's device ("api=cuda vendor=nvidia ... model=\"...\""), for reports;
 * target as in portc_compile_options (NULL: "cpu"). Empty when the target is unknown. */
PORTC_API void portc_target_key(const char *target, char *out, size_t len);
/* For `portc devices`: target i's tune key, and how many entries of each table match its device. */
PORTC_API void portc_target_tune_describe(int i, void *out);

typedef struct portc_module_info {
  size_t size; /* set by the caller: sizeof(portc_module_info), or 0 */
  const char *target, *device;
  int kernels;
  double compile_seconds; /* lowering, code generation and the compiler (or the cache lookup) */
  bool cache_hit;
  int64_t bytes, flops;       /* moved and computed by one run, from the kernel IR (needs symbol values) */
  int64_t arena_bytes;        /* planned peak of intermediates */
  int64_t intermediate_bytes; /* the sum of all intermediates, unplanned */
  int64_t io_bytes;           /* inputs, parameters, constants and outputs */
  const char *timer;          /* what portc_module_time measures with: "device timestamps" or "host clock" */
  bool flushes_denormals;     /* the device may read and write f32 denormals as zeros (Vulkan allows it) */
  int tuned_kernels;          /* kernels whose schedule is a tune-table entry (measured, site or shipped) */
  /* the last run's copies between host and device (targets with their own memory): inputs, the
   * parameters the device did not hold yet and poisoned outputs up; outputs down */
  int64_t uploaded_bytes, downloaded_bytes;
  /* kernels that compute from parameters and constants alone (under autocast, the weights'
   * casts): a GPU module keeps their results on the device (kept_bytes, not in the arena) and
   * runs them again only when a parameter is set anew; bytes and flops leave them out. How many
   * kernels the last run launched. */
  int derived_kernels;
  int64_t kept_bytes;
  int last_run_kernels;
} portc_module_info;
#define PORTC_MODULE_INFO_INIT {.size = sizeof(portc_module_info)}
/* Numbers of the module; the byte and FLOP counts use the symbol values in b when given. */
PORTC_API portc_status portc_module_info_get(const portc_module *m, portc_bindings *b, portc_module_info *info);
/* The fusion groups: for each kernel its kind, the nodes it computes, inputs and outputs, bytes
 * and FLOPs, and why it ends where it does. Free with free(). */
PORTC_API char *portc_module_explain(const portc_module *m, portc_bindings *b);
/* Times each kernel alone (after one whole run that gives every kernel its inputs): seconds[i]
 * the median of `reps` timings of kernel i, bytes[i] and flops[i] what it moves and computes;
 * each array holds portc_module_info's `kernels` entries (bytes and flops may be NULL). */
PORTC_API portc_status portc_module_profile(portc_module *m, portc_bindings *b, int reps, double *seconds, int64_t *bytes, int64_t *flops);

/* ---- the conformance suite -------------------------------------------------------------------- */

typedef struct portc_verify_options {
  size_t size;              /* sizeof(portc_verify_options), or 0 */
  const char *targets;      /* comma-separated; NULL: every available target */
  const char *filter;       /* POSIX extended regex over case names; NULL: all */
  const char *json, *junit; /* write every result there as JSON / JUnit XML (NULL: do not) */
  uint64_t seed;
  bool seed_given;          /* replay with `seed`; else a fresh seed, printed */
  bool no_eager;            /* do not also check eager mode */
  bool quiet;               /* only the summary and the failures */
  const char *examples_dir; /* where the example models are (NULL: "examples") */
  const char *const *models; /* verify these models (.ptg or .onnx) instead of the suite */
  int nmodels;
  const char *const *sets;  /* "SYM=N" values for the models' symbols (else 2) */
  int nsets;
  portc_dtype autocast;     /* F16 or BF16: verify the models' autocast copies (portc_graph_autocast_copy); F32: as written */
} portc_verify_options;

/* Runs every conformance case on the selected targets against the float64 reference and prints
 * a table, every failure with its seed, and a last line "N passed, N failed, N skipped" to out
 * (a FILE *; NULL: stdout). Returns the number of failures, or -1 on a usage problem (named by
 * portc_last_error()). */
PORTC_API int portc_verify(const portc_verify_options *o, void *out);

/* Targets compiled into this build, and whether each can run here (why not, when not). */
PORTC_API int portc_target_count(void);
PORTC_API const char *portc_target_name(int i);
PORTC_API bool portc_target_available(int i, char *why, size_t len);
PORTC_API const char *portc_target_device(int i);
/* more about target i's devices, one per line (name, vendor, driver, memory, limits), for
 * `portc devices`; nothing for targets that have no more to say */
PORTC_API void portc_target_describe(int i, void *file);

#ifdef __cplusplus
}
#endif
#endif
