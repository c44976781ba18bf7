/*
 * dtype.h: element types, and rounding a float64 to each of them exactly as the hardware would
 * (round to nearest even, subnormals, overflow to infinity). The reference evaluator rounds
 * inputs, constants and casts with these, so it sees the values a target sees.
 */
#ifndef PORTC_IR_DTYPE_H
#define PORTC_IR_DTYPE_H

#include <stdbool.h>
#include <stdint.h>

#include "portc/portc.h"

bool dtype_is_float(portc_dtype t); /* f32 f16 bf16 f64 */
bool dtype_is_int(portc_dtype t);   /* i32 i64 */
bool dtype_valid_in_graph(portc_dtype t);

double round_to_dtype(double x, portc_dtype t);  /* floating dtypes: nearest representable */
int64_t wrap_int(int64_t x, portc_dtype t);      /* i32: two's complement wrap; bool: != 0 */
int64_t float_to_int(double x, portc_dtype t);   /* truncates; NaN -> 0; saturates */

uint16_t f16_bits(double x);  /* x rounded to f16 */
double f16_value(uint16_t h);
uint16_t bf16_bits(double x); /* x rounded to bf16 */
double bf16_value(uint16_t h);

#endif
