/*
 * spirv_tensor.c: the work group's f16 matmul (matmul_wg.c, wg_matrices=2) loads its operands'
 * panels through tensor layouts (SPV_NV_tensor_addressing with VK_NV_cooperative_matrix2), the
 * loads llama.cpp's coopmat2 matmul uses: the driver is told the panel's rows and columns instead
 * of a pointer and a stride, and may stage them its own way. Debian 12's glslang cannot write
 * them, so the shader is written with plain loads from an f16 view of the buffer and rewritten
 * here, after spirv_coop.c has made the module KHR's. Each load of a matrix of the work group's
 * scope (use A or B, row-major) whose pointer is an access chain of f16 elements into a buffer's
 * array, with a constant stride,
 *     %r = OpCooperativeMatrixLoadKHR %T (OpAccessChain %var %member %off) RowMajor %stride [memory operands]
 * becomes
 *     %base = the same chain with its last index 0
 *     %row, %col = the operands of %off where it is spelled OpIAdd (OpIMul %row %stride) %col (as
 *                  matmul_wg.c writes it, its columns masked to multiples of 8, so the driver
 *                  knows each row starts on a 16-byte word), else
 *                  OpUDiv %uint %off %stride and OpUMod %uint %off %stride
 *     %s = OpTensorLayoutSliceNV %L (%row, T's rows, %col, T's columns)
 *     %r = OpCooperativeMatrixLoadTensorNV %T %base (OpUndef %T) %s None None
 * where %L, the layout of the buffer's whole rows by the stride, is made once per buffer and stride
 * at the function's entry, before any loop (as llama.cpp's kernel makes its layouts):
 *     %rows = OpUDiv %uint (OpArrayLength %var member) %stride
 *     %L = OpTensorLayoutSetDimensionNV (OpCreateTensorLayoutNV) %rows %stride
 * The layout is two-dimensional without clamping: the kernel's loads lie inside the matrices.
 * The module, validated before the rewrite, is not validated after it:
 * SPIRV-Tools 2023.1 does not know these instructions. (SPIRV-Tools 2025.1 accepts modules so
 * rewritten: bench/gpu/NOTES.md.) On the H100 and the H200 (driver 580) the outputs were the same
 * bits as the plain loads', in 2.4-2.5x the time, whether each load made its layout or the
 * function's entry made them once, with the rows and columns divided out of the offset. With them
 * read from the offset's row * stride + column (the column masked to its multiple), the H100 ran
 * matmul_8192_f16 in 3.46 ms against 3.35 for plain loads unrolled 4, and the f16 MLP in 0.558
 * against 0.555: no faster, so still opt-in.
 */
#include <stdlib.h>
#include <string.h>

#include "../ir/graph.h"
#include "vk.h"

enum {
  OP_LINE = 8, OP_EXTENSION = 10, OP_CAPABILITY = 17, OP_TYPE_INT = 21, OP_TYPE_FLOAT = 22, OP_TYPE_POINTER = 32, OP_CONSTANT = 43,
  OP_FUNCTION = 54, OP_FUNCTION_PARAMETER = 55, OP_VARIABLE = 59, OP_ACCESS_CHAIN = 65, OP_IN_BOUNDS_ACCESS_CHAIN = 66, OP_ARRAY_LENGTH = 68, OP_UNDEF = 1,
  OP_IADD = 128, OP_IMUL = 132, OP_UDIV = 134, OP_UMOD = 137, OP_LABEL = 248, OP_NO_LINE = 317,
  KHR_TYPE = 4456, KHR_LOAD = 4457,
  TENSOR_LOAD = 5367, TYPE_TENSOR_LAYOUT = 5370, CREATE_TENSOR_LAYOUT = 5372, TENSOR_LAYOUT_SET_DIMENSION = 5373, TENSOR_LAYOUT_SLICE = 5375,
  CAP_COOP_TENSOR_ADDRESSING = 5433, CAP_TENSOR_ADDRESSING = 5439,
  SCOPE_WORKGROUP = 2, USE_ACCUMULATOR = 2, LAYOUT_ROW_MAJOR = 0,
  WORDS_PER_LAYOUT = 5 + 5 + 3 + 6,     /* length, div, create, dimension */
  WORDS_PER_LOAD = 6 + 5 + 5 + 8 + 3 + 8, /* chain, div, mod, slice, undef, load */
};

static const char ext[] = "SPV_NV_tensor_addressing";

static portc_status bad(const char *what) { return err_set(PORTC_ERR_INTERNAL, "vulkan: the tensor-addressing rewrite: %s", what); }

/* what the rewrite needs to know of each id: its defining instruction's offset; a 32-bit
 * constant's value (+1, 0 where not one) */
typedef struct {
  size_t def;
  uint32_t value;
} id_info;

/* whether the load at x (an OpCooperativeMatrixLoadKHR) is one the rewrite takes: a row-major
 * load of A or B of the work group's scope through an access chain to f16 elements of a
 * buffer's array (the variable, a constant member, the element) */
static bool takes(const uint32_t *w, const id_info *id, uint32_t bound, uint32_t half_t, const uint32_t *x) {
  const uint32_t wc = x[0] >> 16;
  if (wc < 6 || x[1] >= bound || x[3] >= bound || x[4] >= bound) return false;
  const uint32_t *t = w + id[x[1]].def, *p = w + id[x[3]].def;
  if (!id[x[1]].def || (t[0] & 0xffff) != KHR_TYPE || (t[0] >> 16) != 7) return false;
  const bool workgroup = t[3] < bound && id[t[3]].value == SCOPE_WORKGROUP + 1, ab = t[6] < bound && id[t[6]].value && id[t[6]].value != USE_ACCUMULATOR + 1;
  if (!workgroup || !ab || t[2] != half_t || id[x[4]].value != LAYOUT_ROW_MAJOR + 1) return false;
  if (!id[x[3]].def || ((p[0] & 0xffff) != OP_ACCESS_CHAIN && (p[0] & 0xffff) != OP_IN_BOUNDS_ACCESS_CHAIN) || (p[0] >> 16) != 6 ||
      p[4] >= bound || !id[p[4]].value)
    return false;
  const uint32_t *ptr_t = p[1] < bound && id[p[1]].def ? w + id[p[1]].def : NULL; /* OpTypePointer: storage class, pointee */
  return ptr_t && (ptr_t[0] & 0xffff) == OP_TYPE_POINTER && ptr_t[3] == half_t;
}

/* whether ids a and b are one value: the same id, or constants of one value */
static bool same_value(const id_info *id, uint32_t a, uint32_t b) { return a == b || (id[a].value && id[a].value == id[b].value); }

/* the row and the column of offset off where it is spelled OpIAdd (OpIMul row stride) col, in
 * either order of either instruction's operands */
static bool split_offset(const uint32_t *w, const id_info *id, uint32_t bound, uint32_t off, uint32_t stride, uint32_t *row, uint32_t *col) {
  const uint32_t *add = off < bound && id[off].def ? w + id[off].def : NULL;
  if (!add || add[0] != (5u << 16 | OP_IADD)) return false;
  for (int side = 0; side < 2; side++) {
    const uint32_t product = add[3 + side], other = add[4 - side];
    const uint32_t *mul = product < bound && id[product].def ? w + id[product].def : NULL;
    if (!mul || mul[0] != (5u << 16 | OP_IMUL) || mul[3] >= bound || mul[4] >= bound) continue;
    for (int f = 0; f < 2; f++)
      if (same_value(id, mul[4 - f], stride)) return *row = mul[3 + f], *col = other, true;
  }
  return false;
}

/* a layout made at the entry of function fn (its place among the module's functions) for the
 * loads from member of buffer var by stride; id is its OpTensorLayoutSetDimensionNV's result */
typedef struct {
  uint32_t fn, var, member, stride, id;
} entry_layout;

static entry_layout *layout_of(entry_layout *l, uint32_t *nl, uint32_t fn, const uint32_t *chain, uint32_t stride) {
  for (uint32_t i = 0; i < *nl; i++)
    if (l[i].fn == fn && l[i].var == chain[3] && l[i].member == chain[4] && l[i].stride == stride) return &l[i];
  l[*nl] = (entry_layout){fn, chain[3], chain[4], stride, 0};
  return &l[(*nl)++];
}

/* the layouts of function fn, written where its entry block's variables end */
static void put_layouts(uint32_t *out, size_t *at, const entry_layout *l, uint32_t nl, uint32_t fn, const id_info *id, uint32_t uint_t,
                        uint32_t layout_t, uint32_t *next) {
  for (uint32_t i = 0; i < nl; i++) {
    if (l[i].fn != fn) continue;
    const uint32_t length = (*next)++, rows = (*next)++, made = (*next)++;
    vk_spirv_put(out, at, (uint32_t[]){5u << 16 | OP_ARRAY_LENGTH, uint_t, length, l[i].var, id[l[i].member].value - 1}, 5);
    vk_spirv_put(out, at, (uint32_t[]){5u << 16 | OP_UDIV, uint_t, rows, length, l[i].stride}, 5);
    vk_spirv_put(out, at, (uint32_t[]){3u << 16 | CREATE_TENSOR_LAYOUT, layout_t, made}, 3);
    vk_spirv_put(out, at, (uint32_t[]){6u << 16 | TENSOR_LAYOUT_SET_DIMENSION, layout_t, l[i].id, made, rows, l[i].stride}, 6);
  }
}

portc_status vk_spirv_tensor_loads(uint32_t **code, size_t *words) {
  const uint32_t *w = *code;
  const size_t n = *words;
  if (n < 5 || w[0] != 0x07230203u) return bad("not a SPIR-V module");
  const uint32_t bound = w[3];
  id_info *id = calloc(bound, sizeof *id);
  if (!id) return err_set(PORTC_ERR_NOMEM, "vulkan: out of memory");
  uint32_t uint_t = 0, half_t = 0, coop_loads = 0, loads = 0; /* every cooperative-matrix load; those rewritten */
  size_t last_cap = 0, last_ext = 0, first_fn = 0;
  for (size_t i = 5; i < n;) {
    const uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;
    if (!wc || i + wc > n) {
      free(id);
      return bad("an instruction runs past the module's end");
    }
    if (op == OP_CAPABILITY) last_cap = i + wc;
    if (op == OP_EXTENSION) last_ext = i + wc;
    if (op == OP_FUNCTION && !first_fn) first_fn = i;
    if (op == OP_TYPE_INT && wc == 4 && w[i + 2] == 32 && w[i + 3] == 0) uint_t = w[i + 1];
    if (op == OP_TYPE_FLOAT && wc == 3 && w[i + 2] == 16) half_t = w[i + 1];
    if ((op == OP_TYPE_POINTER || op == KHR_TYPE) && wc >= 2 && w[i + 1] < bound) id[w[i + 1]].def = i;
    if ((op == OP_ACCESS_CHAIN || op == OP_IN_BOUNDS_ACCESS_CHAIN || op == OP_IADD || op == OP_IMUL) && wc >= 4 && w[i + 2] < bound) id[w[i + 2]].def = i;
    if (op == OP_CONSTANT && wc == 4 && w[i + 2] < bound) id[w[i + 2]].value = w[i + 3] + 1;
    coop_loads += op == KHR_LOAD;
    i += wc;
  }
  if (!uint_t || !half_t || !last_cap || !first_fn) {
    free(id);
    return bad(!uint_t ? "the module declares no 32-bit unsigned integer type"
               : !half_t ? "the module declares no f16 type"
                        : "the module has no capability or no function");
  }
  /* the layouts: one per function, buffer and stride, the loads' strides constants (so defined
   * before every function); at most one a load */
  entry_layout *layouts = calloc(coop_loads + 1, sizeof *layouts);
  uint32_t *out = malloc((n + 64 + (size_t)coop_loads * (WORDS_PER_LAYOUT + WORDS_PER_LOAD)) * 4);
  if (!layouts || !out) {
    free(layouts), free(out), free(id);
    return err_set(PORTC_ERR_NOMEM, "vulkan: out of memory");
  }
  /* new ids: constants 0 and 2, the layout type, each layout's result; then 3 more a layout (at its
   * function's entry) and 3 a load (5 where its offset is divided into row and column) */
  uint32_t next = bound, nl = 0, fn = 0;
  const uint32_t c0 = next++, c2 = next++, layout_t = next++;
  const char *refused = NULL;
  for (size_t i = 5; i < n && !refused; i += w[i] >> 16) {
    fn += (w[i] & 0xffff) == OP_FUNCTION;
    if ((w[i] & 0xffff) != KHR_LOAD || !takes(w, id, bound, half_t, w + i)) continue;
    loads++;
    if (w[i] >> 16 > 7) refused = "a load with memory operands beyond their mask"; /* an alignment: the kernel writes none */
    else if (w[i + 5] >= bound || !id[w[i + 5]].value) refused = "a load whose stride is not a constant";
    else {
      entry_layout *l = layout_of(layouts, &nl, fn, w + id[w[i + 3]].def, w[i + 5]);
      if (!l->id) l->id = next++;
    }
  }
  if (refused || !loads) {
    free(layouts), free(out), free(id);
    return bad(refused ? refused : "no row-major load of the work group's matrices through a chain of f16 elements");
  }
  size_t at = 0;
  bool entry = false; /* in a function before its first block's first instruction past its variables */
  fn = 0;
  vk_spirv_put(out, &at, w, 5);
  for (size_t i = 5; i < n;) {
    const uint32_t *x = w + i, wc = x[0] >> 16, op = x[0] & 0xffff;
    if (i == first_fn) {
      vk_spirv_put(out, &at, (uint32_t[]){4u << 16 | OP_CONSTANT, uint_t, c0, 0}, 4);
      vk_spirv_put(out, &at, (uint32_t[]){4u << 16 | OP_CONSTANT, uint_t, c2, 2}, 4);
      vk_spirv_put(out, &at, (uint32_t[]){4u << 16 | TYPE_TENSOR_LAYOUT, layout_t, c2, c0}, 4); /* 2-D, clamp mode undefined */
    }
    if (op == OP_FUNCTION) fn++;
    if (entry && op != OP_FUNCTION_PARAMETER && op != OP_LABEL && op != OP_VARIABLE && op != OP_LINE && op != OP_NO_LINE) {
      put_layouts(out, &at, layouts, nl, fn, id, uint_t, layout_t, &next);
      entry = false;
    }
    if (op == OP_FUNCTION) entry = true;
    if (op == KHR_LOAD && takes(w, id, bound, half_t, x)) {
      const uint32_t *t = w + id[x[1]].def, *p = w + id[x[3]].def;
      const uint32_t base = next++, slice = next++, obj = next++;
      const uint32_t off = p[5], stride = x[5], layout = layout_of(layouts, &nl, fn, p, stride)->id;
      uint32_t row, col;
      vk_spirv_put(out, &at, (uint32_t[]){p[0], p[1], base, p[3], p[4], c0}, 6);
      if (!split_offset(w, id, bound, off, stride, &row, &col)) {
        row = next++, col = next++;
        vk_spirv_put(out, &at, (uint32_t[]){5u << 16 | OP_UDIV, uint_t, row, off, stride}, 5);
        vk_spirv_put(out, &at, (uint32_t[]){5u << 16 | OP_UMOD, uint_t, col, off, stride}, 5);
      }
      vk_spirv_put(out, &at, (uint32_t[]){8u << 16 | TENSOR_LAYOUT_SLICE, layout_t, slice, layout, row, t[4], col, t[5]}, 8);
      vk_spirv_put(out, &at, (uint32_t[]){3u << 16 | OP_UNDEF, x[1], obj}, 3);
      /* the load's memory operands (a mask), else None; tensor addressing operands None */
      vk_spirv_put(out, &at, (uint32_t[]){8u << 16 | TENSOR_LOAD, x[1], x[2], base, obj, slice, wc > 6 ? x[6] : 0, 0}, 8);
    } else {
      vk_spirv_put(out, &at, x, wc);
    }
    if (i + wc == last_cap) {
      vk_spirv_put(out, &at, (uint32_t[]){2u << 16 | OP_CAPABILITY, CAP_TENSOR_ADDRESSING}, 2);
      vk_spirv_put(out, &at, (uint32_t[]){2u << 16 | OP_CAPABILITY, CAP_COOP_TENSOR_ADDRESSING}, 2);
    }
    if (i + wc == (last_ext ? last_ext : last_cap)) {
      uint32_t s[12];
      vk_spirv_put(out, &at, s, vk_spirv_extension(s, ext, sizeof ext));
    }
    i += wc;
  }
  free(layouts), free(id);
  out[3] = next;
  free(*code);
  *code = out;
  *words = at;
  return PORTC_OK;
}
