/*
 * dialect.c: how the HIP target spells kernels: HIP C++, one `extern "C" __global__` function
 * per kernel in one source file, compiled at once by hiprtc for the device's gfx architecture
 * with PC_WAVE set to its wavefront size. A kernel takes the buffers it uses (kernel_buffers()
 * order), then the status word where it checks indices, then the symbol values
 * by value. The skeletons are the GPU dialects' shared ones (targets/gpu_kernels.c) with HIP's
 * spellings; reductions are the prelude's, written for wavefronts of 32 or 64. f16 is __half,
 * bf16 an unsigned short converted in software.
 *
 * Each kernel's text starts with "//@kernel N".
 */
#include <stdio.h>
#include <stdlib.h>

#include "../ir/dtype.h"
#include "../codegen/gpu_kernels.h"
#include "../targets/gpu_queue.h"
#include "../codegen/grid.h"
#include "hip.h"
#include "prelude.h"

static void kernel(emitter *e, int index) {
  const kir_kernel *k = e->k;
  emit_line(e, "//@kernel %d", index);
  emit_line(e, "// %s", k->why);
  int bufs[GPU_MAX_ARGS];
  int nb = kernel_buffers(e->m, index, bufs, GPU_MAX_ARGS); /* the shared queue refuses more */
  strbuf p = {0};
  for (int i = 0; i < nb && i < GPU_MAX_ARGS; i++)
    sb_printf(&p, "%s%s *__restrict__ %s, ", kernel_writes(k, bufs[i]) ? "" : "const ", dialect_spelling(e->d, DT_STORAGE, e->m->buf[bufs[i]].dt), emit_buf(e, bufs[i]));
  if (kernel_has_status(e->m, index)) sb_printf(&p, "unsigned *pc_bad, ");
  sb_printf(&p, "const pc_syms S");
  char *ps = emit_take(e, &p);
  int threads = gpu_group_threads(k);
  emit_line(e, "PC_KERNEL void __launch_bounds__(%d) k%d(%s) {", threads, index, ps ? ps : "");
  free(ps);
  e->indent++;
  emit_line(e, "constexpr int PC_WG = %d;", threads);
  if (k->kind == KK_ROW && gpu_row_regs_length(k))
    emit_line(e, "constexpr int PC_RV = (%lld + PC_WG - 1) / PC_WG; /* row elements per thread */", (long long)gpu_row_regs_length(k));
  gpu_declare_tiles(e, "__shared__");
  gpu_body(e);
  gpu_loop_end(e);
  sb_printf(&e->out, "\n");
}

static void module_end(emitter *e) { (void)e; }

/* %0 %1 %2: operands in compute type (float for f32/f16/bf16, int64_t otherwise) */
const dialect hip_dialect = {
    .name = "hip",
    .base = &c_dialect,
    .prelude = hip_prelude,
    .index_type = "int",
    .index_lit = "%lld",
    .int_lit = "%lldLL",
    .storage = {
        [PORTC_F16] = "__half", [PORTC_BF16] = "unsigned short", [PORTC_I32] = "int", [PORTC_BOOL] = "unsigned char",
    },
    .load = {
        [PORTC_F16] = "__half2float(%s[%s])",
    },
    .store = {
        [PORTC_F16] = "%s[%s] = __float2half(%s);", [PORTC_I32] = "%s[%s] = (int)(%s);",
        [PORTC_BOOL] = "%s[%s] = (unsigned char)((%s) != 0);",
    },
    .int_ops = {
        [OP_neg] = "(int64_t)(0 - (pc_u64)%0)", [OP_abs] = "(%0 < 0 ? (int64_t)(0 - (pc_u64)%0) : %0)",
        [OP_relu] = "(%0 > 0 ? %0 : (int64_t)0)", [OP_add] = "(int64_t)((pc_u64)%0 + (pc_u64)%1)",
        [OP_sub] = "(int64_t)((pc_u64)%0 - (pc_u64)%1)", [OP_mul] = "(int64_t)((pc_u64)%0 * (pc_u64)%1)",
    },
    .bad_index = "atomicOr(pc_bad, 1u);",
    .checked_idiv = "pc_idivc(%0, %1, pc_bad)",
    .gpu = &(const gpu_spelling){GPU_SPELLING_CUDA_STYLE, .panel_ld4 = "pc_ld4(&%s, &%s);", .shfl_xor = "__shfl_xor(%s, %s, PC_WAVE)",
                                 .raw_registers = true},
    .kernel = kernel,
    .module_end = module_end,
};
