/*
 * dialect.c: how the Vulkan target spells kernels: GLSL 4.50 compute shaders, one per kernel,
 * buffers as std430 storage buffers (binding b is buffer b), symbol values as push constants.
 * The kernel skeletons are the GPU dialects' shared ones (targets/gpu_kernels.c), written with
 * GLSL's spellings below; the work-group size of 1-D kernels is the specialization constant PC_WG,
 * and the prelude's pc_wg_* reductions use subgroup operations and shared memory. What is
 * Vulkan's own: buffer declarations (narrow elements read through 32-bit words, row kernels'
 * vector accesses through a second declaration in 16-byte words), its own matmuls
 * (matmul.c), and split-K kernels as one shader of two phases (vk_split_phases).
 *
 * Each kernel's text starts with "//@kernel N needs LIST": the runtime cuts the module there,
 * puts the prelude in front of each piece, and checks LIST against the device's features.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/dtype.h"
#include "../codegen/emit.h"
#include "../codegen/gpu_kernels.h"
#include "../codegen/grid.h"
#include "../targets/gpu_queue.h"
#include "prelude.h"
#include "vk.h"


/* what the kernel needs beyond core Vulkan 1.1 ("coopmat": cooperative matrices), and how it is
 * built ("row": a row kernel; "exp16": every float it reads or writes is stored in 16 bits, so
 * exp takes the device's exp2, whose error is far below a 16-bit rounding: pc_exp16) */
static void needs(emitter *e, int index, char *out, size_t len) {
  const kir_kernel *k = e->k;
  bool i64 = false, s16 = false, s8 = false, f32 = false, f16 = false;
  int bufs[GPU_MAX_ARGS];
  int nb = kernel_buffers(e->m, index, bufs, GPU_MAX_ARGS); /* the shared queue refuses more */
  for (int i = 0; i < nb && i < GPU_MAX_ARGS; i++) {
    portc_dtype t = e->m->buf[bufs[i]].dt;
    bool written = kernel_writes(k, bufs[i]); /* narrow elements are read through 32-bit words, written as they are */
    bool narrow = t == PORTC_F16 || t == PORTC_BF16;
    s16 = s16 || (written && narrow);
    s8 = s8 || (written && t == PORTC_BOOL);
    i64 = i64 || !dtype_is_float(t);
    f16 = f16 || narrow, f32 = f32 || (dtype_is_float(t) && !narrow);
  }
  for (int v = 0; v < k->nval; v++) i64 = i64 || !dtype_is_float(k->val[v].dt);
  snprintf(out, len, "%s%s%s%s%s%s", i64 ? " int64" : "", s16 ? " storage16" : "", s8 ? " storage8" : "", k->kind == KK_ROW ? " row" : "",
           k->sched.variant != KS_MMA ? "" : k->sched.wg_matrices == 2 ? " coopmat coopwg coopwgtensor" : k->sched.wg_matrices ? " coopmat coopwg" : " coopmat",
           f16 && !f32 ? " exp16" : "");
}

/* Vector accesses (row kernels whose schedule has a vector width, PC_VEC): each float buffer is
 * declared a second time at its binding as 16-byte words, and PC_LDV_bI / PC_STV_bI move PC_VEC
 * consecutive elements between the buffer and a float array through them. 16-bit elements come
 * 8 to a word, so a thread's load no longer reads a 32-bit word per element that its neighbour
 * reads again (NVIDIA's driver ran f16 row kernels at a tenth of copy bandwidth that way). The
 * macros are straight-line code with constant offsets into the array: written as loops over the
 * word's components, a driver that leaves those loops rolled indexes the row's register array
 * dynamically and moves it to memory. */
static void declare_vectors(emitter *e, int slot, portc_dtype t, bool written, int vec) {
  emit_line(e, "layout(std430, binding = %d) %sbuffer B%dV { %s b%dv[]; };", slot, written ? "" : "readonly ", slot, t == PORTC_F32 ? "vec4" : "uvec4",
            slot);
  const int per = t == PORTC_F32 ? 4 : 8, shift = t == PORTC_F32 ? 2 : 3; /* elements per word */
  const char *xyzw = "xyzw";
  strbuf ld = {0}, st = {0};
  for (int q = 0; q < vec / per; q++) {
    sb_printf(&ld, " { const %s w_ = b%dv[((o) >> %d) + %d];", t == PORTC_F32 ? "vec4" : "uvec4", slot, shift, q);
    sb_printf(&st, " b%dv[((o) >> %d) + %d] = %s(", slot, shift, q, t == PORTC_F32 ? "vec4" : "uvec4");
    for (int h = 0; h < 4; h++) {
      int at = per * q + (per / 4) * h;
      if (t == PORTC_F32) sb_printf(&ld, " a[(i) + %d] = w_.%c;", at, xyzw[h]);
      else if (t == PORTC_F16) sb_printf(&ld, " a[(i) + %d] = unpackHalf2x16(w_.%c).x; a[(i) + %d] = unpackHalf2x16(w_.%c).y;", at, xyzw[h], at + 1, xyzw[h]);
      else sb_printf(&ld, " a[(i) + %d] = uintBitsToFloat(w_.%c << 16); a[(i) + %d] = uintBitsToFloat(w_.%c & 0xffff0000u);", at, xyzw[h], at + 1, xyzw[h]);
      if (t == PORTC_F32) sb_printf(&st, "%sa[%d]", h ? ", " : "", at);
      else sb_printf(&st, "%s%s(a[%d], a[%d])", h ? ", " : "", t == PORTC_F16 ? "pc_st2_f16" : "pc_st2_bf16", at, at + 1);
    }
    sb_printf(&ld, " }");
    sb_printf(&st, ");");
  }
  char *l = emit_take(e, &ld), *w = emit_take(e, &st); /* NULL: the emitter has failed already */
  emit_line(e, "#define PC_LDV_b%d(o, a, i)%s", slot, l ? l : "");
  emit_line(e, "#define PC_STV_b%d(o, a)%s", slot, w ? w : "");
  free(l);
  free(w);
}

/* the kernels whose schedule's vector width is that of their buffers' vector accesses: row,
 * pointwise and concat kernels (the matmuls' is their own) */
bool vk_vector_kernel(const kir_kernel *k) {
  return k->sched.vector && (k->kind == KK_ROW || k->kind == KK_POINTWISE || k->kind == KK_OPAQUE);
}

/* whether the row kernel's float buffers can all be moved in 16-byte words (f64 cannot) */
bool vk_vector_dtypes(const kir_module *m, int index) {
  int bufs[GPU_MAX_ARGS];
  int nb = kernel_buffers(m, index, bufs, GPU_MAX_ARGS);
  for (int i = 0; i < nb && i < GPU_MAX_ARGS; i++)
    if (dtype_is_float(m->buf[bufs[i]].dt) && m->buf[bufs[i]].dt != PORTC_F32 && m->buf[bufs[i]].dt != PORTC_F16 && m->buf[bufs[i]].dt != PORTC_BF16)
      return false;
  return true;
}

void vk_declare_buffers(emitter *e, int index, bool words) {
  int bufs[GPU_MAX_ARGS];
  int nb = kernel_buffers(e->m, index, bufs, GPU_MAX_ARGS);
  const int start_from = words ? vk_coop_wg_row_vector(e->m, e->k) : -1; /* the work group's sums start from it */
  for (int i = 0; i < nb && i < GPU_MAX_ARGS; i++) {
    int b = bufs[i];
    bool written = kernel_writes(e->k, b);
    portc_dtype t = e->m->buf[b].dt;
    bool narrow = t == PORTC_F16 || t == PORTC_BF16 || t == PORTC_BOOL;
    bool operand = words && (b == e->k->in_buf[0] || b == e->k->in_buf[1] || (e->k->kind == KK_OPAQUE && b == e->k->in_buf[2])); /* attention's v too */
    bool start = b == start_from;
    bool sums = words && b == e->k->store[0].buf && vk_words_store_words(e->m, e->k); /* stored in 16-byte words */
    bool tiles = words && b == e->k->store[0].buf && vk_coop_wg_stores_matrices(e->m, e->k); /* stored as matrices, in 16-byte words */
    /* a buffer with a vector alias is not restrict: the two declarations name the same memory */
    bool vec = vk_vector_kernel(e->k) && dtype_is_float(t);
    emit_line(e, "layout(std430, binding = %d) %s%sbuffer B%d { %s b%d[]; };", i, vec || operand || start || sums || tiles ? "" : "restrict ",
              written ? "" : "readonly ", i, narrow && !written ? "uint" : dialect_spelling(e->d, DT_STORAGE, t), i);
    if (vec) declare_vectors(e, i, t, written, e->k->sched.vector);
    if (sums) emit_line(e, "layout(std430, binding = %d) buffer B%dW { vec4 b%dw[]; };", i, i, i);
    if (operand || start) emit_line(e, "layout(std430, binding = %d) readonly buffer B%dV { uvec4 b%dv[]; };", i, i, i); /* in 16-byte words */
    if (operand && e->k->sched.variant == KS_MMA && e->k->sched.wg_matrices == 2) /* in f16 elements, loaded through tensor layouts */
      emit_line(e, "layout(std430, binding = %d) readonly buffer B%dH { float16_t b%dh[]; };", i, i, i);
    if (tiles) emit_line(e, "layout(std430, binding = %d) buffer B%dV { uvec4 b%dv[]; };", i, i, i);
  }
  bool status = kernel_has_status(e->m, index);
  if (status) {
    emit_line(e, "layout(std430, binding = %d) restrict buffer Status { uint pc_bad; };", nb);
    emit_line(e, "int64_t pc_idivc(int64_t x, int64_t y) { if (y == 0l) atomicOr(pc_bad, 2u); return pc_idiv(x, y); } /* STATUS_DIV_ZERO */");
  }
  if (vk_split(e->k) > 1) {
    emit_line(e, "layout(std430, binding = %d) restrict buffer Acc { float pc_acc[]; }; /* the slices' partial sums */", nb + status);
    /* id 3: 1 and 2 are the cooperative-matrix fragments' (prelude.h) */
    emit_line(e, "layout(constant_id = 3) const int PC_PHASE = 0; /* 0: each slice's partial sums; 1: their sum, and the epilogue */");
  }
  int nsym = e->m->g->nsyms;
  emit_line(e, "layout(push_constant) uniform Symbols { int S[%d]; };", nsym > 0 ? nsym : 1);
}

/* A split-K kernel is one shader run twice (the runtime makes a pipeline of each phase): phase 0
 * as the grid of tiles and slices, writing partial sums; phase 1 as a grid-stride loop over the
 * outputs, in the kernel's own work groups, flattened, adding the slices and applying the epilogue */
void vk_split_phases(emitter *e, void (*phase0)(emitter *e), void (*phase1)(emitter *e)) {
  emit_line(e, "if (PC_PHASE == 0) {");
  e->indent++;
  phase0(e);
  e->indent--;
  emit_line(e, "} else {");
  e->indent++;
  const dialect *d = e->d;
  gpu_spelling flat = *d->gpu;
  char id[80], threads[64]; /* the work group's invocations: the word kernels' 16x16, the cooperative-matrix kernel's subgroups */
  snprintf(id, sizeof id, "int(gl_WorkGroupID.x * %du + gl_LocalInvocationIndex)", gpu_group_threads(e->k));
  snprintf(threads, sizeof threads, "int(gl_NumWorkGroups.x * %du)", gpu_group_threads(e->k));
  flat.global_id = id, flat.global_threads = threads;
  dialect flattened = *d;
  flattened.gpu = &flat;
  e->d = &flattened;
  phase1(e);
  e->d = d;
  e->indent--;
  emit_line(e, "}");
}

static void kernel(emitter *e, int index) {
  const kir_kernel *k = e->k;
  char need[128];
  needs(e, index, need, sizeof need);
  emit_line(e, "//@kernel %d needs%s", index, need);
  emit_line(e, "// %s", k->why);
  bool mm = k->kind == KK_MATMUL;
  if (vk_matmul_own(k)) { /* the target's own matmuls and convolutions (matmul.c) */
    vk_matmul(e, index);
    sb_printf(&e->out, "\n");
    return;
  }
  if (gpu_is_attention(e->m, index) && k->sched.variant == KS_MMA) { /* attention on cooperative matrices (attention.c) */
    vk_attention_coop(e, index);
    sb_printf(&e->out, "\n");
    return;
  }
  bool conv = k->kind == KK_CONV && k->sched.variant == KS_TILED;
  if (mm || conv) emit_line(e, "layout(local_size_x = 16, local_size_y = 16) in;");
  else emit_line(e, "layout(local_size_x_id = 0) in;");
  vk_declare_buffers(e, index, false);
  int vec = vk_vector_kernel(k) ? k->sched.vector : 0;
  if (vec) emit_line(e, "const int PC_VEC = %d; /* consecutive elements per vector access */", vec);
  if (k->kind == KK_ROW && gpu_row_regs_length(k))
    emit_line(e, "const uint PC_RV = (%lldu + PC_WG * %du - 1u) / (PC_WG * %du) * %du; /* row elements per invocation */",
              (long long)gpu_row_regs_length(k), vec ? vec : 1, vec ? vec : 1, vec ? vec : 1);
  gpu_declare_tiles(e, "shared");
  emit_line(e, "void main() {");
  e->indent++;
  if (conv && gpu_conv_split(k) > 1) vk_split_phases(e, gpu_body, gpu_conv_split_sum);
  else gpu_body(e);
  e->indent--;
  emit_line(e, "}");
  sb_printf(&e->out, "\n");
}

static void module_end(emitter *e) { (void)e; }

/* %0 %1 %2: operands in compute type (float for f32/f16/bf16, int64_t otherwise) */
const dialect vulkan_dialect = {
    .name = "glsl450",
    .base = &c_dialect,
    .prelude = glsl_prelude,
    .index_type = "int",
    .index_lit = "%lld",
    .int_lit = "%lldl",
    .decimal_floats = true,
    .storage = {
        [PORTC_I32] = "int",
    },
    .load = {
        [PORTC_F16] = "pc_ld_f16(PC_LD16(%s, %s))", [PORTC_BF16] = "pc_ld_bf16(PC_LD16(%s, %s))",
        [PORTC_I32] = "PC_I32(int64_t(%s[%s]))", [PORTC_BOOL] = "int64_t(PC_LD8(%s, %s))",
    },
    .store = {
        [PORTC_F16] = "%s[%s] = uint16_t(pc_st_f16(%s));", [PORTC_BF16] = "%s[%s] = uint16_t(pc_st_bf16(%s));",
        [PORTC_I32] = "%s[%s] = int(%s);", [PORTC_BOOL] = "%s[%s] = uint8_t((%s) != 0l ? 1u : 0u);",
    },
    .float_ops = {
        [OP_abs] = "abs(%0)", [OP_exp] = "PC_EXP(%0)", [OP_log] = "pc_logf(%0)", [OP_sqrt] = "sqrt(%0)",
        [OP_rsqrt] = "inversesqrt(%0)", [OP_reciprocal] = "(1.0 / %0)", [OP_tanh] = "pc_tanhf(%0)",
        [OP_sigmoid] = "(1.0 / (1.0 + PC_EXP(-%0)))", [OP_silu] = "(%0 / (1.0 + PC_EXP(-%0)))", [OP_erf] = "pc_erff(%0)",
        [OP_sin] = "pc_sinf(%0)", [OP_cos] = "pc_cosf(%0)", [OP_floor] = "floor(%0)", [OP_ceil] = "ceil(%0)",
        [OP_pow] = "pc_powf(%0, %1)", [OP_where] = "(%0 != 0l ? %1 : %2)",
    },
    .int_ops = {
        [OP_neg] = "(-%0)", [OP_abs] = "abs(%0)", [OP_relu] = "(%0 > 0l ? %0 : 0l)",
        [OP_sign] = "((%0 > 0l ? 1l : 0l) - (%0 < 0l ? 1l : 0l))", [OP_not] = "(%0 == 0l)", [OP_add] = "(%0 + %1)",
        [OP_sub] = "(%0 - %1)", [OP_mul] = "(%0 * %1)", [OP_maximum] = "max(%0, %1)", [OP_minimum] = "min(%0, %1)",
        [OP_and] = "(%0 != 0l && %1 != 0l)", [OP_or] = "(%0 != 0l || %1 != 0l)", [OP_eq] = "(%0 == %1)", [OP_ne] = "(%0 != %1)",
        [OP_lt] = "(%0 < %1)", [OP_le] = "(%0 <= %1)", [OP_gt] = "(%0 > %1)", [OP_ge] = "(%0 >= %1)",
        [OP_where] = "(%0 != 0l ? %1 : %2)",
    },
    .div_by_row_invariant = "(%0 * (1.0 / %1))", /* one reciprocal per row: the compiler hoists it */
    .bad_index = "atomicOr(pc_bad, 1u);",
    .checked_idiv = "pc_idivc(%0, %1)",
    .gpu = &(const gpu_spelling){
        .global_id = "int(gl_GlobalInvocationID.x)",
        .global_threads = "int(gl_NumWorkGroups.x * PC_WG)",
        .local = {"int(gl_LocalInvocationID.x)", "int(gl_LocalInvocationID.y)", "int(gl_LocalInvocationID.z)"},
        .group = {"int(gl_WorkGroupID.x)", "int(gl_WorkGroupID.y)", "int(gl_WorkGroupID.z)"},
        .ngroups = {"int(gl_NumWorkGroups.x)", "int(gl_NumWorkGroups.y)", "int(gl_NumWorkGroups.z)"},
        .barrier = "barrier();",
        .unroll = "[[unroll]] ",
        .vload = "PC_LDV_%s(%s, %s, %s);",
        .vstore = "PC_STV_%s(%s, %s);",
    },
    .kernel = kernel,
    .module_end = module_end,
};
