/*
 * spirv_coop.c: the cooperative-matrix matmul in SPIR-V for VK_KHR_cooperative_matrix, the
 * cross-vendor extension (AMD, Intel and others offer only it), rewritten from the
 * VK_NV_cooperative_matrix module that Debian 12's glslang compiles (its glslang 12 and
 * SPIRV-Tools 2023.1 do not know the KHR extension). The two are one-to-one but for three
 * things: a KHR matrix type names its use (A, B or accumulator), a load or store takes a layout
 * constant instead of a column-major flag (and before the stride), and the names and numbers of
 * the capability, the extension and the opcodes. A and B fragments of 16x16 f16 would be one NV
 * type; the dialect declares them with distinct extents (B's rows are the specialization
 * constant with SpecId 1, PC_CM_K, default 16), so each NV type maps to one KHR use:
 * f32: accumulator; f16 whose rows are PC_CM_K: B; other f16: A. The work group's matrices
 * (matmul_wg.c) name theirs likewise: B's rows are SpecId 4 (PC_WG_K), and f16 sums, converted
 * from the f32 ones to be stored, have the rows SpecId 5 (PC_WG_M): accumulator. A module with a
 * matrix of the work group's scope also declares SPV_NV_cooperative_matrix2, which allows it.
 */
#include <stdlib.h>
#include <string.h>

#include "../ir/graph.h"
#include "vk.h"

enum {
  OP_EXTENSION = 10, OP_CAPABILITY = 17, OP_TYPE_INT = 21, OP_TYPE_FLOAT = 22, OP_CONSTANT_TRUE = 41, OP_CONSTANT_FALSE = 42,
  OP_CONSTANT = 43, OP_DECORATE = 71, DECORATION_SPEC_ID = 1,
  NV_CAPABILITY = 5357, NV_TYPE = 5358, NV_LOAD = 5359, NV_STORE = 5360, NV_MULADD = 5361, NV_LENGTH = 5362,
  KHR_CAPABILITY = 6022, KHR_TYPE = 4456, KHR_LOAD = 4457, KHR_STORE = 4458, KHR_MULADD = 4459, KHR_LENGTH = 4460,
};

static const char nv_ext[] = "SPV_NV_cooperative_matrix", khr_ext[] = "SPV_KHR_cooperative_matrix", wg_ext[] = "SPV_NV_cooperative_matrix2";
enum { SCOPE_WORKGROUP = 2 };

uint32_t vk_spirv_extension(uint32_t s[12], const char *name, size_t size) {
  memset(s, 0, 12 * sizeof *s);
  memcpy(s + 1, name, size);
  uint32_t len = 1 + (uint32_t)(size + 3) / 4;
  s[0] = len << 16 | OP_EXTENSION;
  return len;
}

static portc_status bad(const char *what) { return err_set(PORTC_ERR_INTERNAL, "vulkan: the cooperative-matrix rewrite to KHR: %s", what); }

void vk_spirv_put(uint32_t *out, size_t *at, const uint32_t *w, size_t n) {
  memcpy(out + *at, w, n * 4);
  *at += n;
}

portc_status vk_spirv_coop_khr(uint32_t **code, size_t *words) {
  const uint32_t *w = *code;
  const size_t n = *words;
  if (n < 5 || w[0] != 0x07230203u) return bad("not a SPIR-V module");
  uint32_t bound = w[3], uint_t = 0, spec_k = 0, spec_wk = 0, spec_wm = 0;
  bool workgroup = false;
  uint32_t *width = calloc(bound, sizeof *width); /* OpTypeFloat widths; 1 + value of bool constants; 1 + value of int constants */
  if (!width) return err_set(PORTC_ERR_NOMEM, "vulkan: out of memory");
  for (size_t i = 5; i < n;) {
    uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;
    if (!wc || i + wc > n) {
      free(width);
      return bad("an instruction runs past the module's end");
    }
    if (op == OP_TYPE_INT && wc == 4 && w[i + 2] == 32 && w[i + 3] == 0) uint_t = w[i + 1];
    if (op == OP_TYPE_FLOAT && wc >= 3 && w[i + 1] < bound) width[w[i + 1]] = w[i + 2];
    if ((op == OP_CONSTANT_TRUE || op == OP_CONSTANT_FALSE) && wc == 3 && w[i + 2] < bound) width[w[i + 2]] = op == OP_CONSTANT_TRUE ? 2 : 1;
    if (op == OP_CONSTANT && wc == 4 && w[i + 2] < bound && !width[w[i + 2]]) width[w[i + 2]] = w[i + 3] + 1;
    if (op == OP_DECORATE && wc == 4 && w[i + 2] == DECORATION_SPEC_ID && w[i + 3] == 1) spec_k = w[i + 1];
    if (op == OP_DECORATE && wc == 4 && w[i + 2] == DECORATION_SPEC_ID && w[i + 3] == 4) spec_wk = w[i + 1];
    if (op == OP_DECORATE && wc == 4 && w[i + 2] == DECORATION_SPEC_ID && w[i + 3] == 5) spec_wm = w[i + 1];
    workgroup = workgroup || (op == NV_TYPE && wc == 6 && w[i + 3] < bound && width[w[i + 3]] == SCOPE_WORKGROUP + 1);
    i += wc;
  }
  if (!uint_t || !(spec_k || spec_wk)) {
    free(width);
    return bad(!uint_t ? "the module declares no 32-bit unsigned integer type" : "no specialization constant with SpecId 1 or 4 (B's rows)");
  }
  /* three new constants of the uint type: 0 (use A, row-major), 1 (use B, column-major), 2 (accumulator) */
  const uint32_t c0 = bound, c1 = bound + 1, c2 = bound + 2;
  uint32_t *out = malloc((2 * n + 24) * 4); /* 12 words of constants and 12 of an extension, one more per type */
  if (!out) {
    free(width);
    return err_set(PORTC_ERR_NOMEM, "vulkan: out of memory");
  }
  size_t at = 0;
  bool constants = false;
  portc_status st = PORTC_OK;
  vk_spirv_put(out, &at, w, 5);
  out[3] = bound + 3;
  for (size_t i = 5; i < n && !st;) {
    const uint32_t *x = w + i, wc = x[0] >> 16, op = x[0] & 0xffff;
    i += wc;
    if (op == OP_CAPABILITY && wc == 2 && x[1] == NV_CAPABILITY) {
      vk_spirv_put(out, &at, (uint32_t[]){x[0], KHR_CAPABILITY}, 2);
    } else if (op == OP_EXTENSION && (wc - 1) * 4 >= sizeof nv_ext && memcmp(x + 1, nv_ext, sizeof nv_ext) == 0) {
      uint32_t s[12];
      vk_spirv_put(out, &at, s, vk_spirv_extension(s, khr_ext, sizeof khr_ext));
      if (workgroup) vk_spirv_put(out, &at, s, vk_spirv_extension(s, wg_ext, sizeof wg_ext));
    } else if (op == NV_TYPE && wc == 6) {
      if (!constants) {
        for (uint32_t v = 0; v < 3; v++) vk_spirv_put(out, &at, (uint32_t[]){4u << 16 | OP_CONSTANT, uint_t, c0 + v, v}, 4);
        constants = true;
      }
      uint32_t comp = x[2] < bound ? width[x[2]] : 0;
      if (comp != 16 && comp != 32) st = bad("a matrix of other than f16 or f32 elements");
      uint32_t use = comp == 32 || (spec_wm && x[4] == spec_wm) ? c2 : (spec_k && x[4] == spec_k) || (spec_wk && x[4] == spec_wk) ? c1 : c0;
      vk_spirv_put(out, &at, (uint32_t[]){7u << 16 | KHR_TYPE, x[1], x[2], x[3], x[4], x[5], use}, 7);
    } else if ((op == NV_LOAD && wc >= 6) || (op == NV_STORE && wc >= 5)) {
      /* load: type, result, pointer, stride, column-major; store: pointer, object, stride, column-major */
      uint32_t first = op == NV_LOAD ? 3 : 2, flag = x[first + 2];
      if (flag >= bound || !width[flag]) {
        st = bad("a load or store whose column-major flag is not a constant");
        break;
      }
      uint32_t y[16];
      if (wc > 16) {
        st = bad("a load or store with more operands than expected");
        break;
      }
      memcpy(y, x, wc * 4);
      y[0] = wc << 16 | (op == NV_LOAD ? KHR_LOAD : KHR_STORE);
      y[first + 1] = width[flag] == 2 ? c1 : c0; /* the layout, then the stride */
      y[first + 2] = x[first + 1];
      vk_spirv_put(out, &at, y, wc);
    } else if (op == NV_MULADD || op == NV_LENGTH) {
      vk_spirv_put(out, &at, x, wc);
      out[at - wc] = wc << 16 | (op == NV_MULADD ? KHR_MULADD : KHR_LENGTH);
    } else {
      vk_spirv_put(out, &at, x, wc);
    }
  }
  free(width);
  if (!st && !constants) st = bad("the module has no cooperative-matrix type");
  if (st) {
    free(out);
    return st;
  }
  free(*code);
  *code = out;
  *words = at;
  return PORTC_OK;
}
