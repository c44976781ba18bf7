/*
 * kir.h: the kernel IR, the target-independent form every target renders.
 *
 * A module is a list of kernels over buffers. A kernel has a kind, an iteration domain with
 * symbolic extents, a body of typed scalar SSA values, stores, and schedule knobs:
 *
 *   POINTWISE  domain = the stored value's shape; one store.
 *   ROW        domain = outer (kept) dims x reduced dims. Reductions run as phases, one after the
 *              other over the same row; a phase may use the results of earlier ones (softmax:
 *              max, then sum of exp(x - max), then the store). Stores are row-level (one value
 *              per element of the row) or outer-level (one per row).
 *   MATMUL     domain = the output shape; operands A and B are read through paths from
 *              (batch..., m, k) and (batch..., k, n); the epilogue is a value DAG on the
 *              accumulator (KV_ACC 0) and loads at the output index.
 *   CONV       like MATMUL for conv2d: operands x, w, optional bias, epilogue on the sum.
 *   OPAQUE     one op the body cannot express (gather, concat, pad, argmax, pooling, attention)
 *              over materialized inputs; each target has a template for it.
 *
 * Loads never copy views: a path is a list of index maps from the kernel's index space to the
 * loaded buffer's (broadcast, permute, slice, reshape), so transposes, broadcasts and slices are
 * index arithmetic.
 */
#ifndef PORTC_LOWER_KIR_H
#define PORTC_LOWER_KIR_H

#include "../ir/graph.h"

typedef enum { KK_POINTWISE, KK_ROW, KK_MATMUL, KK_CONV, KK_OPAQUE } kir_kind;

/* One index map, from the consumer's index space `from` to the producer's `to`:
 *   BCAST    numpy broadcasting: to's dims align right; size-1 dims read index 0
 *   PERMUTE  to[a[j]] = from[j]
 *   SLICE    to[a[0]] = a[1] + from[a[0]] * a[2]; other dims pass through
 *   RESHAPE  same flat index, unravelled over `to`
 *   OUTER    from is a row kernel's outer index; to has a[d] = 1 where d was reduced
 *            (index 0 when kept as size 1, absent when dropped) */
typedef enum { ST_BCAST, ST_PERMUTE, ST_SLICE, ST_RESHAPE, ST_OUTER } step_kind;

typedef struct kir_step {
  step_kind kind;
  shape from, to;
  int64_t a[PORTC_MAX_RANK];
} kir_step;

#define KIR_MAX_STEPS 12
typedef struct kir_path {
  int n;
  kir_step s[KIR_MAX_STEPS];
} kir_path;

typedef enum { KV_LOAD, KV_CONST, KV_OP, KV_ACC, KV_INDEX } kv_kind;

typedef struct kir_val {
  kv_kind kind;
  portc_dtype dt; /* the value's dtype; floating values are computed in f32 */
  enum op op;     /* KV_OP: an elementwise op of ops.def (unary, binary, compare, where, cast, causal_mask) */
  int arg[3];
  int buf, path;  /* KV_LOAD: buffer and path; KV_INDEX: path */
  int axis;       /* KV_INDEX: which index of the path's target space */
  double f;       /* KV_CONST, floating */
  int64_t i;      /* KV_CONST, integer */
  int phase;      /* KV_ACC: the reduction phase (ROW), or 0: the accumulator (MATMUL, CONV) */
  bool row;       /* ROW kernels: depends on the position in the row */
} kir_val;

typedef struct kir_phase {
  enum op op; /* sum, mean, max, min, prod */
  int val;    /* the row-level value reduced */
} kir_phase;

typedef struct kir_store {
  int buf, val, path; /* path from the domain to the buffer's index */
  bool row;           /* ROW kernels: one value per row element (else one per row) */
} kir_store;

typedef enum { BUF_INPUT, BUF_PARAM, BUF_CONST, BUF_OUTPUT, BUF_TEMP } buf_role;

typedef struct kir_buf {
  int node; /* the lowered graph's node it holds */
  buf_role role;
  portc_dtype dt;
  shape sh;
  bool kept; /* a temp computed from parameters and constants alone: a GPU module keeps it on the
              * device between runs, apart from the arena (driver/derived.c) */
} kir_buf;

/* How a kernel runs: filled once per kernel by its target's schedule hook (targets/target.h),
 * where the tune tables override it (driver/tune.c), and read by the target's dialect and runtime, which
 * never decide it again. Fields a target does not use stay 0. */
/* KS_WGMMA: Hopper's warpgroup matrix instructions, operands brought by its tensor memory
 * accelerator (the CUDA target on sm_90a) */
typedef enum { KS_PLAIN, KS_TILED, KS_MMA, KS_WGMMA } kir_variant;

typedef struct kir_schedule {
  /* GPU targets */
  int threads[3];        /* threads per work group */
  kir_variant variant;   /* MATMUL, CONV: grid-stride loop, shared-memory tiles, or matrix instructions */
  int tile_m, tile_n;    /* TILED, MMA: output tile per work group */
  int tile_k, stages;    /* MMA: the k-step and the pipeline stages */
  bool fold_batch;       /* MATMUL: the leading dims fold into rows of one 2-D GEMM */
  int split_k;           /* CONV (TILED): the reduction in this many slices, a work group each,
                          * whose partial sums an epilogue kernel adds (0 or 1: one slice) */
  int shared_bytes;      /* dynamic shared memory per work group */
  int min_groups;        /* work groups per multiprocessor the kernel is compiled for (0: no bound) */
  int cluster;           /* MATMUL (WGMMA): work groups per cluster, which share their operands'
                          * loads (0 or 1: none) */
  int wg_matrices;       /* MATMUL (MMA, Vulkan): 1 on cooperative matrices of the whole work group,
                          * staged by the driver (VK_NV_cooperative_matrix2); 0 the subgroup's */
  int unroll;            /* MATMUL (MMA, Vulkan's work-group matrices): k-steps one pass of the
                          * k-loop issues, unrolled (0 or 1: one) */
  int wg_elements;       /* MATMUL (MMA, Vulkan's work-group matrices): 1 finishes an elementwise
                          * epilogue (after at most a bias, which the sums start from) on the
                          * matrices' elements; 0 in a second dispatch */
  /* MATMUL: the vendor library may compute it instead: 0 no, 1 writing the output itself (with
   * the bias buffer library_bias, or -1), 2 into a scratch product that an epilogue kernel reads,
   * 3 writing the product into the output (of the operands' dtype, as the output lies), which an
   * epilogue kernel then finishes in place */
  int library, library_bias;
  int library_algo;      /* which of the library's algorithms for the shape: 0 its heuristic's first choice */
  int run;               /* CONV (PLAIN): consecutive outputs of a row per invocation (0 or 1: one) */
  /* every target */
  int vector;            /* elements per vector access */
  /* the CPU */
  int64_t chunk;          /* POINTWISE: elements of the last dimension per work item */
  int mr, nr, mc, nc, kc; /* MATMUL: micro-tile and cache blocks */
  char source[192];       /* where the numbers come from: "rules" (the target's heuristics), or the
                           * tune-table entry: "measured, tune.txt:12 (device=... median_us=...)" */
} kir_schedule;

#define KIR_MAX_PHASES 8
#define KIR_MAX_IN 64 /* the most inputs an op takes (concat's, ir/ops.def) */
#define KIR_MAX_STORES 8

typedef struct kir_kernel {
  kir_kind kind;
  shape dom;          /* POINTWISE, MATMUL, CONV, OPAQUE: the output index space; ROW: the outer dims */
  shape red;          /* ROW: the reduced dims */
  kir_val *val;
  int nval, capval;
  kir_path *path;
  int npath, cappath;
  kir_phase phase[KIR_MAX_PHASES];
  int nphase;
  kir_store store[KIR_MAX_STORES];
  int nstore;
  /* MATMUL and CONV operands; OPAQUE inputs */
  int in_buf[KIR_MAX_IN], in_path[KIR_MAX_IN], nin;
  dim mnk[3];         /* MATMUL: M, N and K */
  int node;           /* the anchor node in the lowered graph (MATMUL, CONV, OPAQUE) */
  int32_t *nodes;     /* every graph node this kernel computes */
  int nnodes;
  char why[160];      /* why the kernel ends where it does */
  kir_schedule sched;
  bool derived;       /* reads only parameters, constants and kept buffers, and stores only kept
                       * ones: a GPU module runs it again only when those change (driver/derived.c) */
} kir_kernel;

typedef struct kir_module {
  portc_graph *g; /* the lowered graph the kernels refer to */
  kir_kernel *k;
  int nk;
  kir_buf *buf;
  int nbuf;
  int *node_buf; /* per node of g: its buffer or -1 */
  int *out_buf;  /* per graph output: its buffer */
  bool eager;
  int remat_values;           /* values computed again where the backward reads them (remat.c) */
  int64_t remat_arena_before; /* the arena they saved, before it (bytes) */
} kir_module;

/* An attention node the attention kernel (codegen/attention.c) computes whole: head sizes known,
 * and the shared memory of its smallest tiles (KIR_ATTENTION_MIN_BQ query rows, KIR_ATTENTION_MIN_BK
 * keys a step) within KIR_ATTENTION_MAX_SHARED bytes (what lavapipe and most Vulkan devices give a
 * work group; head sizes up to 104). kir_attention_shared: the bytes of bq query rows and bk keys
 * (the queries, the keys and the values padded, the scores, the rows' partial maxima). */
#define KIR_ATTENTION_MAX_SHARED 32768
enum { KIR_ATTENTION_MIN_BQ = 32, KIR_ATTENTION_MIN_BK = 16 };
int64_t kir_attention_shared(int64_t D, int64_t Dv, int bq, int bk);
/* the kernel's row pitches in floats: of q and k (an odd count of 4-float words), of v (whole
 * 32-column runs), of the scores P */
void kir_attention_pitches(int64_t D, int64_t Dv, int bk, int64_t *dp, int64_t *dvp, int64_t *pp);
bool kir_attention_fits(const portc_graph *g, int i);
/* A conv2d node (either layout) a channels-last tensor-core kernel computes: groups 1, f16 or
 * bf16, input and output channels multiples of 8 (16-byte runs; an NCHW node's input channels
 * are padded to one by channels_last.c), windows up to 11x11, an image's elements within 32-bit
 * offsets (channels_last.c, and the targets' schedules, which must agree) */
bool kir_channels_last_fits(const portc_graph *g, int i);

void kir_module_free(kir_module *m);
int kir_add_val(kir_kernel *k, kir_val v);   /* -1 when out of memory */
int kir_add_path(kir_kernel *k, const kir_path *p);
bool path_push(kir_path *p, kir_step s);     /* false when the path is full */
/* what kernel input i reads, for i below nval + nin: value i's buffer when it is a load (else -1),
 * then operand i - nval's buffer */
int kir_read_buf(const kir_kernel *k, int i);

/* fusion and kernel building (fuse.c, kir_build.c) */
portc_status fuse(portc_graph *g, bool eager, int max_loads, kir_module **out);
/* rematerialization (remat.c): *m replaced by a module that recomputes values its plan would
 * hold across the arena's peak, while that makes the arena smaller (constant sizes only) */
bool remat(kir_module **m, int max_loads); /* whether it replaced *m; max_loads: fuse's */

/* concrete numbers for a launch: dims under symbol values (sym may be NULL when none) */
int64_t dim_value(dim d, const int64_t *sym);
int64_t shape_count(const shape *s, const int64_t *sym);
/* bytes read and written, and floating-point operations, of one kernel */
void kir_cost(const kir_module *m, const kir_kernel *k, const int64_t *sym, int64_t *bytes, int64_t *flops);

/* memory plan (plan_memory.c): temps share one arena by liveness */
typedef struct mem_plan {
  int64_t arena_bytes; /* planned peak */
  int64_t naive_bytes; /* the sum of all temps */
  int64_t kept_bytes;  /* the kept temps, which are not in the arena */
} mem_plan;
/* offsets (per buffer, may be NULL) receives each temp's byte offset in the arena (kept temps
 * have none) */
portc_status plan_memory(const kir_module *m, const int64_t *sym, mem_plan *plan, int64_t *offsets);

#endif
