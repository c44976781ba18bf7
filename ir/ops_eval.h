/*
 * ops_eval.h: what the scalar formulas in ops.def need, for the files that evaluate them (the
 * reference evaluator and constant folding): wrapping integer arithmetic, markers for ops with
 * no integer or no float form, and integer division that reports division by zero.
 */
#ifndef PORTC_IR_OPS_EVAL_H
#define PORTC_IR_OPS_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#define WRAP(e) ((int64_t)(e))
#define NOINT 0
#define NOFLT 0

/* x / y truncating toward zero; INT64_MIN / -1 wraps; y == 0 sets *fault */
static inline int64_t int_div(int64_t x, int64_t y, bool *fault) {
  if (y == 0) {
    *fault = true;
    return 0;
  }
  return y == -1 ? WRAP(0 - (uint64_t)x) : x / y;
}

#endif
