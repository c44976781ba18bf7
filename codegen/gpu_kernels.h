/*
 * gpu_kernels.h: kernel skeletons shared by the GPU dialects (gpu_kernels.c). A dialect declares
 * the kernel's buffers and shared memory, then calls the skeleton of the kernel's kind inside
 * its function body. Row kernels need PC_WG (threads per work group) and, when
 * gpu_row_regs_length() is not 0, PC_RV (row elements per thread) as constants, and the
 * prelude's pc_wg_{sum,max,min,prod} (and ..i for int64) work-group reductions.
 */
#ifndef PORTC_CODEGEN_GPU_KERNELS_H
#define PORTC_CODEGEN_GPU_KERNELS_H

#include "emit.h"

/* SIMT matmul: square tiles of a multiple of 16 (the schedule's tile_m), 16x16 threads, each with
 * (tile / 16)^2 outputs, panels of GPU_MM_BK */
enum { GPU_MM_BK = 16 };

/* the row length of a row kernel when it is a constant, else -1 */
int64_t gpu_row_length(const kir_kernel *k);
/* row length kept in registers: the constant row length up to this, else 0 */
enum { GPU_ROW_REGS_MAX_L = 16384 };
int64_t gpu_row_regs_length(const kir_kernel *k);
/* elements per vector access that row kernel i allows (0: none; see gpu_kernels.c), for the
 * schedule hooks of dialects with vector accesses; where the schedule's vector is not 0 the
 * dialect defines PC_VEC to it, and PC_RV as a multiple of it */
int gpu_row_vector(const kir_module *m, int i);
/* how row kernel i, with vec elements per vector access, reaches buffer buf: 1 only through
 * vector accesses, -1 through those and others, 0 through no vector access (a dialect that
 * declares a vector-accessed buffer as an array of vectors, WGSL, vectorizes a kernel only where
 * no buffer is -1) */
int gpu_row_vector_buffer(const kir_module *m, int i, int vec, int buf);
/* the same for pointwise kernel i: 8 where it moves 16-bit data, else 4, when its last dim is a
 * constant multiple of that and its store writes its buffer as it lies; the kernel then takes
 * PC_VEC consecutive elements per invocation */
int gpu_pointwise_vector(const kir_module *m, int i);

/* The attention kernel (attention.c): a work group per tile_m query rows of a batch, 2 tile_m
 * invocations (gpu_attention_groups, over the grid's x; the kernel loops when the target caps it),
 * the shared memory gpu_declare_attention declares (kir_attention_shared counts it).
 * gpu_attention_schedule picks the largest tiles within a target's shared memory;
 * gpu_attention_fits refuses others. A target's own attention kernel sets its own tile_m. */
void gpu_attention_schedule(const kir_module *m, int i, size_t shared_max, kir_schedule *s);
bool gpu_is_attention(const kir_module *m, int i);
int64_t gpu_attention_groups(const kir_module *m, int i, const int64_t *S);
bool gpu_attention_fits(const kir_module *m, int i, size_t shared_max, char *why, size_t len);
void gpu_declare_attention(emitter *e, const char *qualifier);
/* the batch indices of an attention kernel's output (ab0, ab1, ...: emit_unravel's names), and the
 * offset of the current batch's matrix in buffer b, whose batch dims broadcast to the output's
 * first `orank` dims */
extern const char *const gpu_attention_batchnames[8];
void gpu_attention_batch_offset(emitter *e, int b, int orank, char *out, size_t len);
/* the current batch's indices (from `bt`, the batch's index) and the offsets of its matrices in
 * q, k, v and the mask (qo, ko, vo, mo), declared of type `type`; *mrow and *mcol: whether the
 * mask varies along the queries and along the keys (both false without a mask) */
void gpu_attention_offsets(emitter *e, const char *type, bool *mrow, bool *mcol);
/* JE, of type `type`: the end of the keys that query tile q0 (bq queries) reads; with a causal
 * mask none past the tile's last query, else SK */
void gpu_attention_key_end(emitter *e, const char *type, int bq, bool causal);
/* q0, an int: the first query of work item `tile` (of tiles, QT a batch), bq queries a tile; with a
 * causal mask the longest tiles first (a tile's work grows with its queries), so that the short
 * ones fill the last wave */
void gpu_attention_first_query(emitter *e, const char *tile, int bq, bool causal);

/* the vector width of concat kernel i (4 f32 elements, 8 of 16 bits) where every input's slab of
 * the output is a run of whole vectors (its extent along the axis times the extents after it)
 * and every buffer has the output's float dtype; 0: element by element */
int gpu_concat_vector(const kir_module *m, int i);
void gpu_pointwise(emitter *e);
void gpu_row(emitter *e);
/* float operands: needs the shared panels pc_As and pc_Bs that gpu_declare_tiles declares */
void gpu_matmul_float(emitter *e, int tile);
void gpu_matmul_int(emitter *e, int tile);
void gpu_conv(emitter *e);
/* whether k is a direct convolution (KS_PLAIN) of a known output width, the kernel that takes
 * runs; and its outputs of one row per invocation (gpu_conv): the schedule's run there, else 1 */
bool gpu_conv_takes_runs(const kir_kernel *k);
int gpu_conv_run(const kir_kernel *k);
/* the rule for the direct convolution i's runs: 4 outputs, 2 at a stride of 2 or more (what the
 * tuner chose for MobileNetV2's depthwise convolutions on the H200, on cuda and vulkan alike:
 * 83 -> 50 us, 94 -> 57, 78 -> 65 on cuda), where its output width is known; 0 for the rest */
int gpu_conv_run_rule(const kir_module *m, int i);
/* conv2d as an implicit GEMM in tiles of the SIMT matmul (same shared memory, 16x16 threads),
 * for float convolutions without groups: gpu_conv_tiled() says which may, and the schedule's
 * variant KS_TILED which do. Work groups (16x16
 * threads): x over the tiles of output pixels, y over those of output channels, as
 * gpu_conv_groups() counts them (the kernel loops when the target caps the grid) */
bool gpu_conv_tiled(const kir_module *m, int i);
/* Split-K's rule, for a target that knows its device's multiprocessors (compute units): a
 * convolution whose tiles give fewer than two work groups a unit splits its reduction in the
 * fewest slices (a power of two, up to max_split) that give four, where each keeps 16 panels; 1
 * where it does not split (units 0: unknown, or a symbolic extent). gpu_conv_split_useful: a
 * slice count worth timing (a slice keeps 16 panels, and half as many slices would not already
 * give every unit four work groups). */
int gpu_conv_split_rule(const kir_module *m, int i, int tile, int units, int max_split);
bool gpu_conv_split_useful(const kir_module *m, int i, int tile, int split, int units);
/* the knobs only some kernels take: a library algorithm (library_algo) where the kernel may run on
 * the vendor library, split-K up to max_split slices on a tiled convolution (1: the target has
 * no split-K), and runs of up to GPU_MAX_RUN outputs on the direct convolution; false with why */
enum { GPU_MAX_RUN = 8 };
bool gpu_knobs_fit(const kir_kernel *k, int max_split, char *why, size_t len);
/* what the SIMT matmul and convolution skeletons can run: 16x16 threads, a square tile of 16
 * to 128 (a multiple of 16), and gpu_knobs_fit; false with why */
bool gpu_tiles_fit(const kir_kernel *k, int max_split, char *why, size_t len);
/* the tuner's cost model for a square SIMT tile of kernel i (a matmul or convolution): false
 * for a tile over 32 when a tile of half its size would already cover the output */
bool gpu_tile_useful(const kir_module *m, int i, int tile);
/* a 1-D work group of kernel k the skeletons can run: whole units (warps, wavefronts or
 * subgroups) up to max threads, a power of two where pow2 or for row kernels (their reductions
 * halve it), and no split-K; false with why */
bool gpu_group_fits(const kir_kernel *k, int unit, int max, bool pow2, char *why, size_t len);
void gpu_conv_groups(const kir_module *m, int i, const int64_t *S, int tile_m, int tile_n, int64_t groups[2]);
/* split-K for a convolution kernel of few large tiles (tensor cores): where its tiles fill fewer
 * than `slots` (the work groups the device runs at once), as many slices as fill them once, each
 * at least `min_k` of the reduction, at most max_split; 1 where that is fewer than 2 */
int gpu_conv_split_fill(const kir_module *m, int i, int tile, int slots, int64_t min_k, int max_split);
/* the static sizes of convolution i's implicit GEMM (false where a dimension is symbolic) */
bool gpu_conv_static_mnk(const kir_module *m, int i, int64_t *M, int64_t *N, int64_t *K);
/* the output channels (M) and pixels (N) of convolution i's implicit GEMM; channels last, the
 * pixels (M) and the output channels (N) */
void gpu_conv_mn(const kir_module *m, int i, const int64_t *S, int64_t mn[2]);
/* convolution k is channels-last: x [N, H, W, C], w [KH, KW, C, O], out [N, OH, OW, O], its implicit
 * GEMM [pixels x KH*KW*C] x [KH*KW*C x O], which only a dialect's tensor-core kernel emits */
bool gpu_conv_last(const kir_module *m, const kir_kernel *k);
void gpu_conv_gemm(emitter *e, int tile);
/* pieces for a dialect's own implicit-GEMM convolution: the sizes ("const int C, H, W, KH, KW, OH,
 * OW; M (output channels), N (output pixels), K = C * KH * KW"), the work group's range of the
 * reduction [KB, KE) (with split-K, its slice in whole panels of `panel`), and the element (m, n)
 * of the output from its sum: bias and epilogue, or with split-K the slice's partial sum */
void gpu_conv_gemm_sizes(emitter *e);
void gpu_conv_k_range(emitter *e, int panel);
void gpu_conv_element(emitter *e, const char *sum);
/* Split-K (schedule.split_k > 1, where a target allows it): work group z of the grid's third
 * dimension computes slice z of the reduction, whole panels of it, and writes its partial sums
 * to pc_acc[z][M][N] (f32; a dialect passes pc_acc first, a target's scratch buffer), without
 * the epilogue; a second kernel, the body gpu_conv_split_sum emits (a grid-stride loop over
 * M x N), adds the slices and applies the epilogue. gpu_conv_split: the slices (1: none). */
int gpu_conv_split(const kir_kernel *k);
void gpu_conv_split_sum(emitter *e);

/* The body of kernel e->k from the skeletons above, by its kind and schedule (a dialect renders a
 * matrix-instruction matmul itself instead), and the shared memory of the SIMT tiles it needs,
 * declared with qualifier ("__shared__" inside a CUDA or HIP function, "shared" at the top level
 * of a GLSL shader); a row kernel still needs the constants above. */
void gpu_declare_tiles(emitter *e, const char *qualifier);
void gpu_body(emitter *e);

/* pieces for a dialect's own matmul variants: the loops over batches and bands of `tile` rows
 * (fills the index names of A, B and the output), and the closing brace of a loop */
void gpu_matmul_begin(emitter *e, int tile, const char **aidx, const char **bidx, const char **oidx);
void gpu_loop_end(emitter *e);

/* GEMM kernels (matmul_gemm_view): "const int M = ...;" (rows: the output's leading dims
 * folded), and the output's index names, the leading ones unravelled from the row index "m" */
void gpu_emit_gemm_rows(emitter *e);
void gpu_gemm_indices(emitter *e, const char **oidx);
/* the epilogue of a matmul's output element (m, n), whose sum is acc0, and its store */
void gpu_gemm_store(emitter *e);
/* a GEMM's epilogue from f32 sums in pc_acc[slices][M][N] (a vendor library's product, or a
 * split-K kernel's partial sums, added), or with slices 0 from the product a vendor library wrote
 * into the output itself: a grid-stride loop over the M x N outputs */
void gpu_gemm_sum(emitter *e, int slices);

#endif
