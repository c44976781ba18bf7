/*
 * base_dialect.c: the base spellings every dialect is a delta of (tinygrad's CStyleLanguage is
 * the model): C's types, loads and stores of each dtype, and the op spellings of C, CUDA C and
 * HIP C++ where they agree. A dialect sets `base = &c_dialect` and lists only what it spells
 * differently; the emitter asks dialect_spelling, which falls back to the base. The base is a
 * dialect of its own only as a table: it has no kernel hook and is never a target's.
 *
 * The mini-language of the op spellings: %0 %1 %2 are the operands, already in compute type
 * (float for f32/f16/bf16, int64 otherwise); loads take (buffer, offset) and stores (buffer,
 * offset, value) as printf arguments.
 */
#include "dialect.h"

const dialect c_dialect = {
    .name = "c-base",
    .storage = {
        [PORTC_F32] = "float", [PORTC_F16] = "uint16_t", [PORTC_BF16] = "uint16_t", [PORTC_I32] = "int32_t",
        [PORTC_I64] = "int64_t", [PORTC_BOOL] = "uint8_t",
    },
    .load = {
        [PORTC_F32] = "%s[%s]", [PORTC_F16] = "pc_ld_f16(%s[%s])", [PORTC_BF16] = "pc_ld_bf16(%s[%s])",
        [PORTC_I32] = "(int64_t)%s[%s]", [PORTC_I64] = "%s[%s]", [PORTC_BOOL] = "(int64_t)%s[%s]",
    },
    .store = {
        [PORTC_F32] = "%s[%s] = %s;", [PORTC_F16] = "%s[%s] = pc_st_f16(%s);", [PORTC_BF16] = "%s[%s] = pc_st_bf16(%s);",
        [PORTC_I32] = "%s[%s] = (int32_t)(%s);", [PORTC_I64] = "%s[%s] = %s;", [PORTC_BOOL] = "%s[%s] = (uint8_t)((%s) != 0);",
    },
    .float_ops = {
        [OP_neg] = "(-%0)", [OP_abs] = "fabsf(%0)", [OP_exp] = "expf(%0)", [OP_log] = "logf(%0)", [OP_sqrt] = "sqrtf(%0)",
        [OP_rsqrt] = "(1.0f / sqrtf(%0))", [OP_reciprocal] = "(1.0f / %0)", [OP_tanh] = "tanhf(%0)",
        [OP_sigmoid] = "(1.0f / (1.0f + expf(-%0)))", [OP_relu] = "pc_relu(%0)", [OP_gelu] = "pc_gelu(%0)",
        [OP_gelu_tanh] = "pc_gelu_tanh(%0)", [OP_silu] = "(%0 / (1.0f + expf(-%0)))", [OP_erf] = "erff(%0)",
        [OP_sin] = "sinf(%0)", [OP_cos] = "cosf(%0)", [OP_floor] = "floorf(%0)", [OP_ceil] = "ceilf(%0)",
        [OP_sign] = "pc_signf(%0)", [OP_add] = "(%0 + %1)", [OP_sub] = "(%0 - %1)", [OP_mul] = "(%0 * %1)",
        [OP_div] = "(%0 / %1)", [OP_pow] = "powf(%0, %1)", [OP_maximum] = "pc_maxf(%0, %1)", [OP_minimum] = "pc_minf(%0, %1)",
        [OP_eq] = "(%0 == %1)", [OP_ne] = "(%0 != %1)", [OP_lt] = "(%0 < %1)", [OP_le] = "(%0 <= %1)", [OP_gt] = "(%0 > %1)",
        [OP_ge] = "(%0 >= %1)", [OP_where] = "(%0 ? %1 : %2)", [OP_causal_mask] = "(%2 > %1 ? (-INFINITY) : %0)",
    },
    .int_ops = {
        [OP_neg] = "(int64_t)(0 - (uint64_t)%0)", [OP_abs] = "(%0 < 0 ? (int64_t)(0 - (uint64_t)%0) : %0)",
        [OP_relu] = "(%0 > 0 ? %0 : 0)", [OP_sign] = "(int64_t)((%0 > 0) - (%0 < 0))", [OP_not] = "(int64_t)(!%0)",
        [OP_add] = "(int64_t)((uint64_t)%0 + (uint64_t)%1)", [OP_sub] = "(int64_t)((uint64_t)%0 - (uint64_t)%1)",
        [OP_mul] = "(int64_t)((uint64_t)%0 * (uint64_t)%1)", [OP_div] = "pc_idiv(%0, %1)", [OP_maximum] = "(%0 > %1 ? %0 : %1)",
        [OP_minimum] = "(%0 < %1 ? %0 : %1)", [OP_and] = "(int64_t)(%0 && %1)", [OP_or] = "(int64_t)(%0 || %1)",
        [OP_eq] = "(int64_t)(%0 == %1)", [OP_ne] = "(int64_t)(%0 != %1)", [OP_lt] = "(int64_t)(%0 < %1)",
        [OP_le] = "(int64_t)(%0 <= %1)", [OP_gt] = "(int64_t)(%0 > %1)", [OP_ge] = "(int64_t)(%0 >= %1)",
        [OP_where] = "(%0 ? %1 : %2)",
    },
};

const char *dialect_spelling(const dialect *d, dialect_table t, int i) {
  for (; d; d = d->base) {
    const char *s = t == DT_STORAGE ? d->storage[i] : t == DT_LOAD ? d->load[i] : t == DT_STORE ? d->store[i]
                    : t == DT_FLOAT_OP ? d->float_ops[i] : d->int_ops[i];
    if (s) return s;
  }
  return NULL;
}
