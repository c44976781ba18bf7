/*
 * dtype.c: dtype names and sizes, and exact rounding of float64 values to f32, f16 and bf16.
 *
 * Rounding is done directly from float64 with one rounding step (never through f32 first, which
 * would round twice and can be off by one unit for f16 and bf16).
 */
#include "dtype.h"

#include <math.h>
#include <string.h>

static const char *const names[] = {"f32", "f16", "bf16", "i32", "i64", "bool", "f64"};
static const size_t sizes[] = {4, 2, 2, 4, 8, 1, 8};

const char *portc_dtype_name(portc_dtype t) {
  return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}

bool portc_dtype_parse(const char *name, portc_dtype *out) {
  for (unsigned i = 0; name && out && i < sizeof names / sizeof *names; i++)
    if (strcmp(name, names[i]) == 0) {
      *out = (portc_dtype)i;
      return true;
    }
  return false;
}

size_t portc_dtype_size(portc_dtype t) {
  return (unsigned)t < sizeof sizes / sizeof *sizes ? sizes[t] : 0;
}

bool dtype_is_float(portc_dtype t) {
  return t == PORTC_F32 || t == PORTC_F16 || t == PORTC_BF16 || t == PORTC_F64;
}
bool dtype_is_int(portc_dtype t) { return t == PORTC_I32 || t == PORTC_I64; }
bool dtype_valid_in_graph(portc_dtype t) { return (unsigned)t <= PORTC_BOOL; }

/* Rounds x to a binary format with p significant bits, normal exponents down to emin and up to
 * emax, and gradual underflow. x/q is exact because q is a power of two well inside float64. */
static double round_prec(double x, int p, int emin, int emax) {
  if (!isfinite(x) || x == 0) return x;
  int e;
  frexp(x, &e);
  int lead = e - 1 < emin ? emin : e - 1;
  double q = ldexp(1.0, lead - (p - 1));
  double r = nearbyint(x / q) * q;
  double maxfin = ldexp(2.0 - ldexp(1.0, 1 - p), emax);
  if (fabs(r) > maxfin) return copysign(INFINITY, x);
  return r;
}

double round_to_dtype(double x, portc_dtype t) {
  switch (t) {
  case PORTC_F32: return round_prec(x, 24, -126, 127);
  case PORTC_F16: return round_prec(x, 11, -14, 15);
  case PORTC_BF16: return round_prec(x, 8, -126, 127);
  default: return x;
  }
}

int64_t wrap_int(int64_t x, portc_dtype t) {
  if (t == PORTC_I32) return (int64_t)(int32_t)(uint32_t)(uint64_t)x;
  if (t == PORTC_BOOL) return x != 0;
  return x;
}

int64_t float_to_int(double x, portc_dtype t) {
  if (t == PORTC_BOOL) return x != 0; /* NaN is true, as in C */
  if (isnan(x)) return 0;
  double lo = t == PORTC_I32 ? -2147483648.0 : -9223372036854775808.0;
  double hi = t == PORTC_I32 ? 2147483647.0 : 9223372036854775807.0;
  x = trunc(x);
  if (x <= lo) return t == PORTC_I32 ? INT32_MIN : INT64_MIN;
  if (x >= hi) return t == PORTC_I32 ? INT32_MAX : INT64_MAX;
  return (int64_t)x;
}

uint16_t f16_bits(double x) {
  x = round_to_dtype(x, PORTC_F16);
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  double a = fabs(x);
  if (isnan(x)) return sign | 0x7e00;
  if (isinf(x)) return sign | 0x7c00;
  if (a < ldexp(1.0, -14)) return sign | (uint16_t)(a * ldexp(1.0, 24)); /* subnormal or zero */
  int e = ilogb(a);
  uint16_t mant = (uint16_t)((ldexp(a, -e) - 1.0) * 1024.0);
  return sign | (uint16_t)((e + 15) << 10) | mant;
}

double f16_value(uint16_t h) {
  double sign = h & 0x8000 ? -1.0 : 1.0;
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0x1f) return m ? NAN : sign * INFINITY;
  if (e == 0) return sign * ldexp(m, -24);
  return sign * ldexp(1024 + m, e - 25);
}

uint16_t bf16_bits(double x) {
  float f = (float)round_to_dtype(x, PORTC_BF16); /* exact in f32 */
  uint32_t u;
  memcpy(&u, &f, 4);
  if (isnan(x)) return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)(u >> 16);
}

double bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
