/*
 * dialect_mma.h: the CUDA dialect's tensor-core kernels (dialect_mma.c, dialect_wgmma.c,
 * dialect_flash.c).
 */
#ifndef PORTC_CUDA_DIALECT_MMA_H
#define PORTC_CUDA_DIALECT_MMA_H

#include "../codegen/emit.h"

/* the body of a matmul kernel whose schedule is KS_MMA (mma.sync, sm_80 and newer) */
void cu_emit_mma(emitter *e);
/* the body of one whose schedule is KS_WGMMA (dialect_wgmma.c: TMA and wgmma, sm_90a) */
void cu_emit_wgmma(emitter *e);
/* the body of an attention kernel whose schedule is KS_MMA (dialect_flash.c: mma.sync, sm_80) */
void cu_emit_flash(emitter *e);

#endif
