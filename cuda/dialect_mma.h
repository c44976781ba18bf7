/*
 * dialect_mma.h: the CUDA dialect's tensor-core matmul (dialect_mma.c).
 */
#ifndef PORTC_CUDA_DIALECT_MMA_H
#define PORTC_CUDA_DIALECT_MMA_H

#include "../codegen/emit.h"

/* the body of a matmul kernel that cu_matmul_variant() gives CU_MM_MMA */
void cu_emit_mma(emitter *e);

#endif
