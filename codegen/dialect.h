/*
 * dialect.h: how one target spells the kernel IR. The shared C-like emitter (emit.c) writes the
 * values, index arithmetic and loop bodies; a dialect supplies the spellings that differ between
 * C, CUDA C, HIP C++ and GLSL: types, loads and stores of each dtype, op spellings, the kernel
 * frame, and the loop skeletons and templates (matmul, conv, opaque ops) of its execution model.
 */
#ifndef PORTC_CODEGEN_DIALECT_H
#define PORTC_CODEGEN_DIALECT_H

#include "../lower/kir.h"

typedef struct emitter emitter;

/* GPU dialects: how thread and group indices, the work-group barrier and an unroll hint are
 * spelled (targets/gpu_kernels.c writes its kernels with these); every index is an int */
typedef struct gpu_spelling {
  const char *global_id, *global_threads; /* flat thread index, and threads in the whole grid (x) */
  const char *local[3], *group[3], *ngroups[3];
  const char *barrier; /* a statement */
  const char *unroll;  /* written before a for loop */
  /* optional vector accesses of PC_VEC elements as floats: vload(buffer, offset, array, index)
   * fills array[index...], vstore(buffer, offset, array) writes array[0...]; NULL: none */
  const char *vload, *vstore;
  /* optional: a statement that reads 4 floats at a 16-byte aligned shared-memory lvalue (first %s)
   * into a float array from an lvalue (second %s), as one vector load; the SIMT matmul then gives
   * each thread runs of 4 rows and columns (gpu_kernels.c); NULL: one float at a time */
  const char *panel_ld4;
  /* optional: an expression, the float (first %s) of the lane whose index in the subgroup is this
   * lane's xor a constant (second %s, below 8), all lanes taking part; the attention kernel then
   * reduces a row over its eight neighbouring holders without shared memory; NULL: none */
  const char *shfl_xor;
  /* a buffer's element can wait in a register of its storage type (`b[i]`, as loaded) and be
   * converted to float later through the dialect's load spelling: the attention kernel's next keys
   * and values then stay in flight while it computes, where converting them at once would wait on
   * each load (CUDA, HIP); false: registers of floats, converted as loaded */
  bool raw_registers;
  /* For a dialect whose statements are not C's (WGSL), in the row kernels: a private float
   * array (1: its name, 2: its length; NULL: "float %1$s[%2$s];"); braces around the body of
   * every if; and nan_minmax: max and min reductions take each element through the prelude's
   * pc_maxf/pc_minf, which keep a NaN (else a compare and a flag, with a second work-group
   * reduction of the flag where the result is infinite: WGSL's uniformity rules refuse that
   * reduction's barriers under such a condition). */
  const char *float_array;
  bool braces, nan_minmax;
} gpu_spelling;

/* the thread and group indices, barrier and unroll hint of CUDA C, which HIP C++ spells alike:
 * the start of a gpu_spelling's initializer */
#define GPU_SPELLING_CUDA_STYLE                                                         \
  .global_id = "int(blockIdx.x * blockDim.x + threadIdx.x)",                            \
  .global_threads = "int(gridDim.x * blockDim.x)",                                      \
  .local = {"int(threadIdx.x)", "int(threadIdx.y)", "int(threadIdx.z)"},                \
  .group = {"int(blockIdx.x)", "int(blockIdx.y)", "int(blockIdx.z)"},                   \
  .ngroups = {"int(gridDim.x)", "int(gridDim.y)", "int(gridDim.z)"},                    \
  .barrier = "__syncthreads();", .unroll = "_Pragma(\"unroll\") "

typedef struct dialect dialect;

/* the tables a dialect spells from, for dialect_spelling */
typedef enum { DT_STORAGE, DT_LOAD, DT_STORE, DT_FLOAT_OP, DT_INT_OP } dialect_table;

struct dialect {
  const char *name;
  /* the dialect this one is a delta of (c_dialect, base_dialect.c): every table entry left NULL
   * here is the base's. Read the tables through dialect_spelling. */
  const dialect *base;
  const char *prelude;                     /* helpers at the top of every source file */
  /* Index arithmetic: the type of index temporaries and the printf format of an index literal.
   * Integer values (always 64-bit) have their own literal format; floats are written in hex
   * unless decimal_floats (GLSL has no hex floats; 9 significant digits round-trip a float).
   * Every prelude defines PC_I32(x) (wrap an int64 to int32), PC_BOOL(x) (0 or 1 as int64),
   * PC_FLOAT(x) (an integer as float), PC_I64(x) and PC_IDX(x) (converts to int64 and to the
   * index type), pc_round_f16/bf16, pc_f2i32/64, INFINITY, NAN,
   * INT64_MIN and INT64_MAX. */
  const char *index_type, *index_lit, *int_lit;
  bool decimal_floats;
  /* Declarations, as printf formats with positional arguments (1: the type, 2: the name, 3: the
   * value): a constant and a variable; NULL: C's "const %1$s %2$s = %3$s;" and "%1$s %2$s = %3$s;"
   * (WGSL: "let %2$s: %1$s = %3$s;"). The compute types of floats and integers: NULL: C's
   * "float" and "int64_t". */
  const char *decl_const, *decl_var;
  const char *float_type, *int_type;
  /* optional: a float's conversion to bool (0 or 1 in the integer compute type), where the
   * prelude's PC_BOOL takes integers only (NULL: "PC_BOOL(%s)") */
  const char *float_to_bool;
  /* The tables of spellings: a NULL entry is the base dialect's. */
  const char *storage[PORTC_BOOL + 1];     /* element type of a buffer of each dtype */
  const char *load[PORTC_BOOL + 1];        /* printf format: buffer, offset -> a compute value */
  const char *store[PORTC_BOOL + 1];       /* printf format: buffer, offset, value -> a statement */
  /* Op spellings, a mini-language: %0 %1 %2 are the operands, already in compute type.
   * float_ops apply to floating values (computed in f32), int_ops to integers (int64). */
  const char *float_ops[OP_COUNT];
  const char *int_ops[OP_COUNT];
  /* optional: a float division, in a row kernel, of a row value by a value that is the same for
   * the whole row (softmax's sum), where a multiply by the hoisted reciprocal is cheaper */
  const char *div_by_row_invariant;
  const gpu_spelling *gpu; /* NULL on the CPU */
  /* opaque templates (opaque.c): the head of a loop of `t` over [0, %s) spread over the CPU's
   * threads (GPU dialects leave it NULL: theirs is a grid-stride loop), and the statement that
   * records an index out of range before the element is skipped */
  const char *parallel_for;
  const char *bad_index;
  /* integer division that also sets STATUS_DIV_ZERO in the status word (%0, %1), for kernels
   * with one (kernel_has_status) */
  const char *checked_idiv;
  /* one kernel of the module: the whole function, using the emitter's helpers */
  void (*kernel)(emitter *e, int index);
  /* after all kernels: the module's entry points */
  void (*module_end)(emitter *e);
};

/* the base spellings (base_dialect.c) */
extern const dialect c_dialect;
/* entry i (a dtype or an op) of table t: d's own, else its base's; NULL when neither has one */
const char *dialect_spelling(const dialect *d, dialect_table t, int i);

#endif
