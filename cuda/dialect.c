/*
 * dialect.c: how the CUDA target spells kernels: CUDA C, one `extern "C" __global__` function
 * per kernel in one source file, compiled at once by NVRTC. A kernel takes the buffers it uses
 * (in kernel_buffers() order), then the status word where it checks indices, then
 * the symbol values by value. The skeletons are the GPU dialects' shared ones
 * (codegen/gpu_kernels.c) with CUDA's spellings; block sizes, variants and tiles are the
 * kernel's schedule (schedule.c), which the runtime reads too. Tensor-core matmuls (f16/bf16
 * operands as they lie) are dialect_mma.c's, and on Hopper dialect_wgmma.c's, whose kernels also
 * take the tensor maps of their operands (pc_ta, pc_tb; the f32 form pc_tc too) after the symbols, the
 * f32 form also `kN_split`, which writes B's two parts for it. A matmul that cuBLASLt
 * can compute also gets `kN_epi`, which applies the epilogue to cuBLASLt's f32 result, unless
 * cuBLASLt can do it all (a store, or a bias added). A split-K convolution writes partial sums to the scratch buffer
 * (its first parameter, pc_acc), and its `kN_epi` adds them and applies the epilogue.
 *
 * Each kernel's text starts with "//@kernel N".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"
#include "../codegen/gpu_kernels.h"
#include "../targets/gpu_queue.h"
#include "../codegen/grid.h"
#include "cu.h"
#include "dialect_mma.h"
#include "prelude.h"

static void signature(emitter *e, int index, const char *suffix, const char *first) {
  int bufs[GPU_MAX_ARGS];
  int nb = kernel_buffers(e->m, index, bufs, GPU_MAX_ARGS); /* the shared queue refuses more */
  strbuf p = {0};
  if (first) sb_printf(&p, "%s, ", first);
  for (int i = 0; i < nb && i < GPU_MAX_ARGS; i++) {
    int b = bufs[i];
    sb_printf(&p, "%s%s *__restrict__ %s, ", kernel_writes(e->k, b) ? "" : "const ", dialect_spelling(e->d, DT_STORAGE, e->m->buf[b].dt), emit_buf(e, b));
  }
  if (kernel_has_status(e->m, index)) sb_printf(&p, "unsigned *pc_bad, ");
  sb_printf(&p, "const pc_syms S");
  if (!suffix[0] && e->k->sched.variant == KS_WGMMA) sb_printf(&p, ", const __grid_constant__ pc_tmap pc_ta, const __grid_constant__ pc_tmap pc_tb");
  if (!suffix[0] && cu_wgmma_tf32(e->m, e->k)) sb_printf(&p, ", const __grid_constant__ pc_tmap pc_tc");
  char *ps = emit_take(e, &p);
  int threads = suffix[0] ? CU_PW_THREADS : gpu_group_threads(e->k);
  int min_blocks = suffix[0] ? 0 : e->k->sched.min_groups;
  char bounds[32] = "";
  if (min_blocks) snprintf(bounds, sizeof bounds, ", %d", min_blocks);
  char cluster[48] = ""; /* launched in clusters of that many blocks along x */
  if (!suffix[0] && e->k->sched.cluster > 1) snprintf(cluster, sizeof cluster, " __cluster_dims__(%d, 1, 1)", e->k->sched.cluster);
  emit_line(e, "PC_KERNEL void __launch_bounds__(%d%s)%s k%d%s(%s) {", threads, bounds, cluster, index, suffix, ps ? ps : "");
  free(ps);
}

/* `kN_epi(pc_acc, the kernel's buffers...)`, a second function: its values are written again */
static void epilogue_begin(emitter *e, int index) {
  for (int v = 0; v < e->k->nval; v++) e->done[v] = 0;
  e->scope = e->next_scope = 1;
  signature(e, index, "_epi", "const float *__restrict__ pc_acc");
  e->indent++;
}

/* the epilogue of a matmul whose product cuBLASLt wrote to pc_acc (f32, M x N, row-major), or
 * (library 3) into the output itself, whose elements it finishes in place */
static void blaslt_epilogue(emitter *e, int index) {
  epilogue_begin(e, index);
  gpu_gemm_sum(e, e->k->sched.library == 3 ? 0 : 1);
  gpu_loop_end(e);
}

/* the second kernel of a split-K convolution: adds the slices' partial sums, then the epilogue */
static void split_epilogue(emitter *e, int index) {
  epilogue_begin(e, index);
  gpu_conv_split_sum(e);
  gpu_loop_end(e);
}

static void kernel(emitter *e, int index) {
  const kir_kernel *k = e->k;
  bool split = gpu_conv_split(k) > 1;
  emit_line(e, "//@kernel %d", index);
  emit_line(e, "// %s", k->why);
  signature(e, index, "", split ? "float *__restrict__ pc_acc" : NULL);
  e->indent++;
  emit_line(e, "constexpr int PC_WG = %d;", gpu_group_threads(k));
  int vec = k->kind == KK_ROW ? k->sched.vector : 0;
  if (vec) emit_line(e, "constexpr int PC_VEC = %d; /* consecutive row elements per vector access */", vec);
  if (k->kind == KK_ROW && gpu_row_regs_length(k))
    emit_line(e, "constexpr int PC_RV = (%lld + PC_WG * %d - 1) / (PC_WG * %d) * %d; /* row elements per thread */",
              (long long)gpu_row_regs_length(k), vec ? vec : 1, vec ? vec : 1, vec ? vec : 1);
  if ((k->kind == KK_MATMUL || k->kind == KK_CONV) && k->sched.variant == KS_MMA) {
    cu_emit_mma(e);
  } else if (k->kind == KK_MATMUL && k->sched.variant == KS_WGMMA) {
    cu_emit_wgmma(e);
  } else if (gpu_is_attention(e->m, index) && k->sched.variant == KS_MMA) {
    cu_emit_flash(e);
  } else {
    gpu_declare_tiles(e, "__shared__");
    gpu_body(e);
  }
  gpu_loop_end(e);
  if (k->sched.library >= 2) blaslt_epilogue(e, index);
  if (cu_wgmma_tf32(e->m, k)) cu_emit_tf32_split(e, index);
  if (split) split_epilogue(e, index);
  sb_printf(&e->out, "\n");
}

static void module_end(emitter *e) { (void)e; }

/* %0 %1 %2: operands in compute type (float for f32/f16/bf16, int64_t otherwise). CUDA's math
 * functions with the default flags (IEEE division and square root, denormals kept). */
const dialect cuda_dialect = {
    .name = "cuda",
    .base = &c_dialect,
    .prelude = cuda_prelude,
    .index_type = "int",
    .index_lit = "%lld",
    .int_lit = "%lldLL",
    .storage = {
        [PORTC_F16] = "__half", [PORTC_BF16] = "__nv_bfloat16",
    },
    .load = {
        [PORTC_F16] = "__half2float(%s[%s])", [PORTC_BF16] = "__bfloat162float(%s[%s])",
    },
    .store = {
        [PORTC_F16] = "%s[%s] = __float2half_rn(%s);", [PORTC_BF16] = "%s[%s] = __float2bfloat16_rn(%s);",
    },
    .float_ops = {
        [OP_rsqrt] = "rsqrtf(%0)",
    },
    .div_by_row_invariant = "(%0 * __frcp_rn(%1))", /* the compiler computes the reciprocal once per row */
    .bad_index = "atomicOr(pc_bad, 1u);",
    .checked_idiv = "pc_idivc(%0, %1, pc_bad)",
    .gpu = &(const gpu_spelling){
        GPU_SPELLING_CUDA_STYLE,
        .vload = "pc_ldv<PC_VEC>(%s + %s, &%s[%s]);",
        .vstore = "pc_stv<PC_VEC>(%s + %s, %s);",
        .panel_ld4 = "pc_ldv<4>(&%s, &%s);",
        .shfl_xor = "__shfl_xor_sync(0xffffffffu, %s, %s)",
        .raw_registers = true,
    },
    .kernel = kernel,
    .module_end = module_end,
};
