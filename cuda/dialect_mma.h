/*
 * dialect_mma.h: the CUDA dialect's tensor-core kernels (dialect_mma.c, dialect_wgmma.c,
 * dialect_pingpong.c, dialect_flash.c).
 */
#ifndef PORTC_CUDA_DIALECT_MMA_H
#define PORTC_CUDA_DIALECT_MMA_H

#include "../codegen/emit.h"

/* the body of a matmul kernel whose schedule is KS_MMA (mma.sync, sm_80 and newer) */
void cu_emit_mma(emitter *e);
/* convolution kernel i on that kernel copies its input panels as they lie (a 1x1 convolution of
 * stride 1 and no padding over images of whole 16-byte runs of pixels) instead of gathering them */
bool cu_conv_direct(const kir_module *m, int i);
/* the epilogue's loop over a tile's `rows` rows, rows_a_pass of them a pass, from the sums in
 * shared memory Cs (rows bn + 8 floats apart): the thread at j (which the kernel defines, with
 * n = n0 + j % bn) takes column j % bn of row j / bn of each pass, and makes the kernel's stores
 * (a convolution's, `conv`, through its epilogue), checking the matrix's edges where `edge` */
void cu_epilogue_rows(emitter *e, int rows, int rows_a_pass, int bn, bool conv, bool edge);
/* the body of one whose schedule is KS_WGMMA (dialect_wgmma.c: TMA and wgmma, sm_90a) */
void cu_emit_wgmma(emitter *e);
/* the start both forms of Hopper's matmul share: M, N and K, the sm_90a guard, `base` (the dynamic
 * shared memory aligned to the swizzle's 1024 bytes) and the operands' type T; and the guard's end */
void cu_wgmma_begin(emitter *e);
void cu_wgmma_end(emitter *e);
/* its ping-pong form's body (dialect_pingpong.c), where cu_wgmma_pingpong */
void cu_emit_wgmma_pingpong(emitter *e);
/* the consumers' wgmma of Hopper's matmul as the lambda mma(a, b), bn columns (f32: TF32 A
 * fragments in registers); with sums_arg its sums are its first argument, mma(d, a, b) */
void cu_wgmma_lambda(emitter *e, int bn, bool f32, bool sums_arg);
/* one k-step of a consumer of Hopper's matmul at ring position `pos` (an expression of the loop's
 * kt; stage pos % stages, round pos / stages): the wait for its stage, the MMAs `mmas` emits, and
 * the previous position's stage given back once its MMAs are done (from the second k-step), by
 * the function `release` of its "empty" barrier */
void cu_wgmma_kstep(emitter *e, const char *pos, int stages, const char *release, void (*mmas)(emitter *e));
/* that function's name for a block in a cluster of cl blocks (1: alone), whose consumers give a
 * stage back to every block of the cluster */
void cu_wgmma_release(int cl, char *out, size_t len);
/* the f32 form's second function, kN_split(b, out, K, N): B's two TF32 parts, transposed */
void cu_emit_tf32_split(emitter *e, int index);
/* the body of an attention kernel whose schedule is KS_MMA (dialect_flash.c: mma.sync, sm_80) */
void cu_emit_flash(emitter *e);

#endif
