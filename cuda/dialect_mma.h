/*
 * dialect_mma.h: the CUDA dialect's tensor-core matmul (dialect_mma.c).
 */
#ifndef PORTC_CUDA_DIALECT_MMA_H
#define PORTC_CUDA_DIALECT_MMA_H

#include "../codegen/emit.h"

/* GEMM kernels (cu_gemm_view): "const int M = ...;" (rows: the output's leading dims folded),
 * and the output's index names, the leading ones unravelled from the row index "m" */
void cu_emit_gemm_rows(emitter *e);
void cu_gemm_indices(emitter *e, const char **oidx);
/* the body of a matmul kernel that cu_matmul_variant() gives CU_MM_MMA */
void cu_emit_mma(emitter *e);

#endif
