/*
 * dialect.c: how the WebGPU target spells kernels: WGSL compute shaders, one entry point `main`
 * per kernel, buffers as storage bindings of group 0 (binding b is the kernel's buffer b, then
 * the status word where the kernel has one, then the symbol values S). It is a delta of the C base (codegen/base_dialect.c):
 * declarations as `let`, compute types f32 and i32, and the op spellings WGSL needs (no ?:, no
 * implicit conversions: comparisons give 0 or 1 through select). The prelude (prelude.h) says
 * how narrow elements and 64-bit integers are stored.
 *
 * Pointwise kernels (elementwise ops over views and casts) are a grid-stride loop of 1-D work
 * groups of WG_THREADS, a vec4<f32> per invocation where their f32 buffers lie as the output
 * does. Row kernels (reductions and what fuses with them: softmax, layer_norm) are the GPU
 * dialects' shared skeleton (gpu_row in codegen/gpu_kernels.c, through the gpu_spelling below): a
 * work group per row, the row kept in registers, f32 rows as vec4<f32>, each phase's share per
 * invocation then a tree in workgroup memory. Matmul (matmul.c), convolution and pooling
 * (window.c), concat and pad (layout.c) have their own files; the target (target.c) sends what
 * the dialect does not write (int64 indices: argmax, gather) to the fallback target.
 *
 * Each kernel's text starts with "//@kernel N": the runtime cuts the module there and puts the
 * prelude in front of each piece.
 */
#include <stdio.h>
#include <string.h>

#include "../codegen/emit.h"
#include "../codegen/gpu_kernels.h"
#include "../ir/dtype.h"
#include "prelude.h"
#include "wg.h"

/* A pointwise kernel whose schedule says vector 4 (wg_schedule: f32 buffers read and written as
 * they lie, the last dim a multiple of 4) moves a vec4<f32> per invocation and step through those
 * buffers, which it binds as arrays of vec4<f32>: every access of them is such a whole vector. */
static bool vec4_access(const kir_module *m, int i, int buf) {
  const kir_kernel *k = &m->k[i];
  if (k->kind != KK_POINTWISE || m->buf[buf].dt != PORTC_F32 || m->buf[buf].sh.rank != k->dom.rank) return false;
  bool used = false;
  for (int s = 0; s < k->nstore; s++)
    if (k->store[s].buf == buf) {
      if (!path_is_identity(k, k->store[s].path)) return false;
      used = true;
    }
  for (int v = 0; v < k->nval; v++)
    if (k->val[v].kind == KV_LOAD && k->val[v].buf == buf) {
      if (!path_is_identity(k, k->val[v].path)) return false;
      used = true;
    }
  return used;
}

/* A row kernel whose schedule says vector 4 (f32 rows of a multiple of 4 whose buffers it
 * reaches only through the shared row skeleton's vector accesses: gpu_row_vector_buffer) binds
 * those buffers as arrays of vec4<f32> too, and the skeleton moves 4 consecutive row elements per
 * access (the spellings vload and vstore below). */
static bool vec4_buffer(const kir_module *m, int i, int buf) {
  if (m->k[i].sched.vector != 4) return false;
  return m->k[i].kind == KK_ROW ? gpu_row_vector_buffer(m, i, 4, buf) == 1 : vec4_access(m, i, buf);
}

static bool row_vec4(const kir_module *m, int i) {
  int bufs[WG_MAX_BINDINGS];
  int nb = kernel_buffers(m, i, bufs, WG_MAX_BINDINGS);
  if (gpu_row_vector(m, i) != 4) return false;
  for (int b = 0; b < nb && b < WG_MAX_BINDINGS; b++)
    if (gpu_row_vector_buffer(m, i, 4, bufs[b]) < 0) return false;
  return true;
}

/* the schedule's vector width for kernel i of the WGSL dialect: 4 for a pointwise kernel that
 * stores one f32 buffer as it lies, its last dim a multiple of 4 (else 1), and for a row kernel
 * as vec4_buffer says (else 0) */
int wg_vector(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind == KK_ROW) return row_vec4(m, i) ? 4 : 0;
  return k->kind == KK_POINTWISE && k->nstore == 1 && gpu_pointwise_vector(m, i) == 4 && vec4_access(m, i, k->store[0].buf) ? 4 : 1;
}

/* every binding is referenced, so that the pipeline's own layout (layout "auto") has them all.
 * A buffer the kernel only reads is bound read-only (the driver may cache its loads), except the
 * temporaries: they are ranges of one buffer, and WebGPU refuses a buffer bound read-only and
 * writable in one dispatch. Narrow elements (f16, bf16, bool) lie in 32-bit words, atomic only
 * where the kernel writes them (neighbours share a word); bN_w(i) reads word i either way, so
 * that a plain load stays plain (an atomic one bypasses the caches on some devices). */
static void declare_buffers(emitter *e, int index, int *nbind) {
  int bufs[WG_MAX_BINDINGS];
  int nb = kernel_buffers(e->m, index, bufs, WG_MAX_BINDINGS);
  for (int i = 0; i < nb && i < WG_MAX_BINDINGS; i++) {
    const kir_buf *b = &e->m->buf[bufs[i]];
    bool writes = kernel_writes(&e->m->k[index], bufs[i]);
    bool narrow = b->dt == PORTC_F16 || b->dt == PORTC_BF16 || b->dt == PORTC_BOOL;
    const char *elem = narrow                 ? (writes ? "atomic<u32>" : "u32")
                       : b->dt == PORTC_F32   ? (vec4_buffer(e->m, index, bufs[i]) ? "vec4<f32>" : "f32")
                       : b->dt == PORTC_I64   ? "vec2<i32>"
                                              : "i32";
    emit_line(e, "@group(0) @binding(%d) var<storage, %s> b%d: array<%s>;", i, writes || b->role == BUF_TEMP ? "read_write" : "read", i, elem);
    if (narrow) emit_line(e, "fn b%d_w(i: i32) -> u32 { return %sb%d[i]%s; }", i, writes ? "atomicLoad(&" : "", i, writes ? ")" : "");
  }
  *nbind = nb;
  if (kernel_has_status(e->m, index)) {
    emit_line(e, "@group(0) @binding(%d) var<storage, read_write> pc_bad: atomic<u32>;", nb++);
    emit_line(e, "fn pc_idivc(x: i32, y: i32) -> i32 { if (y == 0) { atomicOr(&pc_bad, 2u); } return pc_idiv(x, y); } /* STATUS_DIV_ZERO */");
  }
  if (e->m->g->nsyms > 0) emit_line(e, "@group(0) @binding(%d) var<storage, read> S: array<i32>;", nb);
}

/* the entry point's head: every binding referenced, so that the pipeline's own layout has it */
static void entry_begin(emitter *e, int index, int nb) {
  emit_line(e, "@compute @workgroup_size(%d)", WG_THREADS);
  emit_line(e, "fn main(@builtin(global_invocation_id) pc_gid: vec3<u32>, @builtin(num_workgroups) pc_groups: vec3<u32>,");
  emit_line(e, "        @builtin(local_invocation_index) pc_lid: u32, @builtin(workgroup_id) pc_wid: vec3<u32>) {");
  e->indent++;
  emit_line(e, "pc_init();");
  emit_line(e, "pc_tid = pc_lid;");
  for (int i = 0; i < nb; i++) emit_line(e, "_ = &b%d;", i);
  if (kernel_has_status(e->m, index)) emit_line(e, "_ = &pc_bad;");
  if (e->m->g->nsyms > 0) emit_line(e, "_ = &S;");
}

/* four consecutive elements of the last dim per step: a vec4 load from each vec4 buffer, the
 * values computed lane by lane (written out four times), a vec4 store */
static void pointwise_vec4(emitter *e, int index) {
  const kir_kernel *k = e->k;
  static const char *const gnames[] = {"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"};
  static const char *const idx[] = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"};
  int r = k->dom.rank;
  shape gs = k->dom;
  gs.d[r - 1].c /= 4;
  char count[512], off[256];
  emit_count(e, &gs, 0, r, count, sizeof count);
  emit_line(e, "let pc_count: i32 = %s;", count);
  emit_line(e, "for (var t: i32 = i32(pc_gid.x); t < pc_count; t += i32(pc_groups.x) * %d) {", WG_THREADS);
  e->indent++;
  emit_unravel(e, &gs, 0, r, "t", gnames);
  emit_line(e, "let gv: i32 = %s * 4;", gnames[r - 1]);
  const char *first[PORTC_MAX_RANK];
  for (int d = 0; d < r; d++) first[d] = d == r - 1 ? "gv" : gnames[d];
  emit_scope_push(e);
  for (int v = 0; v < k->nval; v++) {
    const kir_val *x = &k->val[v];
    if (x->kind != KV_LOAD || !vec4_buffer(e->m, index, x->buf)) continue;
    emit_offset(e, x->path, &k->dom, first, off, sizeof off);
    emit_line(e, "let lv%d: vec4<f32> = %s[(%s) / 4];", v, emit_buf(e, x->buf), off);
  }
  emit_line(e, "var sv: vec4<f32>;");
  for (int c = 0; c < 4; c++) {
    emit_line(e, "{");
    e->indent++;
    emit_scope_push(e);
    for (int d = 0; d < r; d++) emit_line(e, "let %s: i32 = %s + %d;", idx[d], first[d], d == r - 1 ? c : 0);
    for (int v = 0; v < k->nval; v++)
      if (k->val[v].kind == KV_LOAD && vec4_buffer(e->m, index, k->val[v].buf)) emit_line(e, "let v%d: f32 = lv%d[%d];", v, v, c), e->done[v] = e->scope;
    emit_line(e, "sv[%d] = %s;", c, emit_value(e, k->store[0].val, idx));
    emit_scope_pop(e);
    e->indent--;
    emit_line(e, "}");
  }
  emit_offset(e, k->store[0].path, &k->dom, first, off, sizeof off);
  emit_line(e, "%s[(%s) / 4] = sv;", emit_buf(e, k->store[0].buf), off);
  emit_scope_pop(e);
  e->indent--;
  emit_line(e, "}");
}

static void pointwise(emitter *e, int index) {
  const kir_kernel *k = e->k;
  if (k->sched.vector == 4) {
    pointwise_vec4(e, index);
    return;
  }
  char count[512];
  emit_count(e, &k->dom, 0, k->dom.rank, count, sizeof count);
  emit_line(e, "let pc_count: i32 = %s;", count);
  emit_line(e, "for (var t: i32 = i32(pc_gid.x); t < pc_count; t += i32(pc_groups.x) * %d) {", WG_THREADS);
  e->indent++;
  static const char *const idx[] = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"};
  emit_unravel(e, &k->dom, 0, k->dom.rank, "t", idx);
  emit_scope_push(e);
  for (int s = 0; s < k->nstore; s++) emit_store_at(e, &k->store[s], &k->dom, idx);
  emit_scope_pop(e);
  e->indent--;
  emit_line(e, "}");
}

/* the work-group reductions of row kernels: a tree in workgroup memory (every invocation gets
 * the result; the barriers are in the row loop's uniform control flow) */
static void declare_row_reductions(emitter *e) {
  emit_line(e, "var<workgroup> pc_redf: array<f32, %d>;", WG_THREADS);
  emit_line(e, "var<workgroup> pc_redi: array<i32, %d>;", WG_THREADS);
  static const char *const ops[][3] = {
      {"sum", "a + b", "a + b"}, {"prod", "a * b", "a * b"}, {"max", "pc_maxf(a, b)", "max(a, b)"}, {"min", "pc_minf(a, b)", "min(a, b)"}};
  for (int i = 0; i < 4; i++)
    for (int f = 1; f >= 0; f--) {
      const char *T = f ? "f32" : "i32", *arr = f ? "pc_redf" : "pc_redi";
      emit_line(e, "fn pc_wg_%s%s(v: %s) -> %s {", ops[i][0], f ? "" : "i", T, T);
      emit_line(e, "  %s[pc_tid] = v;", arr);
      emit_line(e, "  workgroupBarrier();");
      emit_line(e, "  for (var s = %du; s > 0u; s >>= 1u) {", WG_THREADS / 2);
      emit_line(e, "    if (pc_tid < s) { let a = %s[pc_tid]; let b = %s[pc_tid + s]; %s[pc_tid] = %s; }", arr, arr, arr, ops[i][f ? 1 : 2]);
      emit_line(e, "    workgroupBarrier();");
      emit_line(e, "  }");
      emit_line(e, "  let r = %s[0];", arr);
      emit_line(e, "  workgroupBarrier();");
      emit_line(e, "  return r;");
      emit_line(e, "}");
    }
}

/* what the shared row skeleton (gpu_row) reads besides the prelude's PC_WG: the vector width, the
 * row elements per invocation; and the work-group reductions */
static void declare_row_constants(emitter *e) {
  const kir_kernel *k = e->k;
  int vec = k->sched.vector, per = vec ? vec : 1;
  int64_t L = gpu_row_regs_length(k);
  if (vec) emit_line(e, "const PC_VEC: i32 = %d; /* consecutive elements per vector access */", vec);
  if (L) emit_line(e, "const PC_RV: i32 = %lld; /* row elements per invocation */", (long long)((L + WG_THREADS * per - 1) / (WG_THREADS * per) * per));
  declare_row_reductions(e);
}

static void kernel(emitter *e, int index) {
  const kir_kernel *k = e->k;
  emit_line(e, "//@kernel %d", index);
  emit_line(e, "// %s", k->why);
  if (!wg_writes(e->m, index)) { /* the target's supports hook keeps these away */
    emit_line(e, "// not written: the dialect has no %s kernels", e->m->g->nodes[k->node].op == OP_attention ? "attention" : "such");
    return;
  }
  int nb = 0;
  declare_buffers(e, index, &nb);
  if (k->kind == KK_ROW) declare_row_constants(e);
  wg_declare_matmul(e);
  entry_begin(e, index, nb);
  switch (k->kind) {
  case KK_ROW: gpu_row(e); break;
  case KK_MATMUL: wg_matmul(e); break;
  case KK_CONV: wg_conv(e); break;
  case KK_OPAQUE:
    if (e->m->g->nodes[k->node].op == OP_concat || e->m->g->nodes[k->node].op == OP_pad) wg_layout(e);
    else wg_pool(e);
    break;
  default: pointwise(e, index); break;
  }
  e->indent--;
  emit_line(e, "}");
  sb_printf(&e->out, "\n");
}

static void module_end(emitter *e) { (void)e; }

/* a 16-bit element o of a buffer of 32-bit words, written atomically (neighbours share a word) */
#define ST16(conv)                                                                                    \
  "{ let o_ = %2$s; let s_ = u32(o_ & 1) * 16u; atomicAnd(&%1$s[o_ >> 1u], ~(0xffffu << s_)); "       \
  "atomicOr(&%1$s[o_ >> 1u], " conv "(%3$s) << s_); }"

const dialect wgsl_dialect = {
    .name = "wgsl",
    .base = &c_dialect,
    .prelude = wgsl_prelude,
    .index_type = "i32",
    .index_lit = "%lld",
    .int_lit = "%lld",
    .decl_const = "let %2$s: %1$s = %3$s;",
    .decl_var = "var %2$s: %1$s = %3$s;",
    .float_type = "f32",
    .int_type = "i32",
    .float_to_bool = "pc_boolf(%s)",
    .checked_idiv = "pc_idivc(%0, %1)",
    .gpu = &(const gpu_spelling){
        .global_id = "i32(pc_gid.x)",
        .global_threads = "(i32(pc_groups.x) * PC_WG)",
        .local = {"i32(pc_lid)"},
        .group = {"i32(pc_wid.x)", "i32(pc_wid.y)", "i32(pc_wid.z)"},
        .ngroups = {"i32(pc_groups.x)", "i32(pc_groups.y)", "i32(pc_groups.z)"},
        .barrier = "workgroupBarrier();",
        .unroll = "",
        .vload = "{ let w_ = %1$s[(%2$s) / 4]; %3$s[%4$s] = w_.x; %3$s[%4$s + 1] = w_.y; %3$s[%4$s + 2] = w_.z; %3$s[%4$s + 3] = w_.w; }",
        .vstore = "%1$s[(%2$s) / 4] = vec4<f32>(%3$s[0], %3$s[1], %3$s[2], %3$s[3]);",
        .float_array = "var %1$s: array<f32, %2$s>;",
        .braces = true,
        .nan_minmax = true,
    },
    .load = {
        [PORTC_F32] = "%1$s[%2$s]", [PORTC_F16] = "pc_ld_f16(pc_half(%1$s_w((%2$s) >> 1u), %2$s))",
        [PORTC_BF16] = "pc_ld_bf16(pc_half(%1$s_w((%2$s) >> 1u), %2$s))", [PORTC_I32] = "%1$s[%2$s]",
        [PORTC_I64] = "%1$s[%2$s].x", [PORTC_BOOL] = "pc_byte(%1$s_w((%2$s) >> 2u), %2$s)",
    },
    .store = {
        [PORTC_F32] = "%1$s[%2$s] = %3$s;", [PORTC_F16] = ST16("pc_soft_f16"), [PORTC_BF16] = ST16("pc_st_bf16"),
        [PORTC_I32] = "%1$s[%2$s] = %3$s;", [PORTC_I64] = "%1$s[%2$s] = vec2<i32>(%3$s, (%3$s) >> 31u);",
        [PORTC_BOOL] = "{ let o_ = %2$s; let s_ = u32(o_ & 3) * 8u; atomicAnd(&%1$s[o_ >> 2u], ~(0xffu << s_)); "
                       "atomicOr(&%1$s[o_ >> 2u], u32(select(0, 1, (%3$s) != 0)) << s_); }",
    },
    .float_ops = {
        [OP_abs] = "abs(%0)", [OP_exp] = "pc_expf(%0)", [OP_log] = "pc_logf(%0)", [OP_sqrt] = "sqrt(%0)",
        [OP_rsqrt] = "(1.0f / sqrt(%0))", [OP_tanh] = "pc_tanhf(%0)", [OP_sigmoid] = "(1.0f / (1.0f + pc_expf(-%0)))",
        [OP_silu] = "(%0 / (1.0f + pc_expf(-%0)))", [OP_erf] = "pc_erff(%0)", [OP_sin] = "pc_sinf(%0)", [OP_cos] = "pc_cosf(%0)",
        [OP_floor] = "floor(%0)", [OP_ceil] = "ceil(%0)", [OP_pow] = "pc_powf(%0, %1)",
        [OP_eq] = "select(0, 1, %0 == %1)", [OP_ne] = "select(0, 1, %0 != %1 || pc_isnan(%0) || pc_isnan(%1))",
        [OP_lt] = "select(0, 1, %0 < %1)", [OP_le] = "select(0, 1, %0 <= %1)", [OP_gt] = "select(0, 1, %0 > %1)",
        [OP_ge] = "select(0, 1, %0 >= %1)", [OP_where] = "select(%2, %1, %0 != 0)", [OP_causal_mask] = "select(%0, -INFINITY, %2 > %1)",
    },
    .int_ops = {
        [OP_neg] = "(-%0)", [OP_abs] = "abs(%0)", [OP_relu] = "max(%0, 0)", [OP_sign] = "(select(0, 1, %0 > 0) - select(0, 1, %0 < 0))",
        [OP_not] = "select(0, 1, %0 == 0)", [OP_add] = "(%0 + %1)", [OP_sub] = "(%0 - %1)", [OP_mul] = "(%0 * %1)",
        [OP_div] = "pc_idiv(%0, %1)", [OP_maximum] = "max(%0, %1)", [OP_minimum] = "min(%0, %1)",
        [OP_and] = "select(0, 1, %0 != 0 && %1 != 0)", [OP_or] = "select(0, 1, %0 != 0 || %1 != 0)",
        [OP_eq] = "select(0, 1, %0 == %1)", [OP_ne] = "select(0, 1, %0 != %1)", [OP_lt] = "select(0, 1, %0 < %1)",
        [OP_le] = "select(0, 1, %0 <= %1)", [OP_gt] = "select(0, 1, %0 > %1)", [OP_ge] = "select(0, 1, %0 >= %1)",
        [OP_where] = "select(%2, %1, %0 != 0)",
    },
    .kernel = kernel,
    .module_end = module_end,
};

bool wg_writes(const kir_module *m, int i) {
  const kir_kernel *k = &m->k[i];
  if (k->kind != KK_OPAQUE) return true;
  enum op op = m->g->nodes[k->node].op;
  return op == OP_max_pool2d || op == OP_avg_pool2d || op == OP_concat || op == OP_pad;
}

char *wg_kernel_source(const char *module, int i) {
  char mark[32];
  snprintf(mark, sizeof mark, "//@kernel %d\n", i);
  const char *at = strstr(module, mark);
  if (!at) return NULL;
  const char *end = strstr(at + strlen(mark), "//@kernel ");
  size_t n = end ? (size_t)(end - at) : strlen(at);
  strbuf b = {0};
  sb_printf(&b, "%s\n%.*s", wgsl_prelude, (int)n, at);
  return sb_take(&b);
}
