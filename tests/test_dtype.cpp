// test_dtype.cpp: rounding to f32, f16 and bf16 must match IEEE round-to-nearest-even exactly,
// including subnormals, overflow and ties; integer wrapping and float-to-int conversion.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

extern "C" {
#include "ir/dtype.h"
}

TEST(Dtype, NamesRoundTrip) {
  for (int t = PORTC_F32; t <= PORTC_F64; t++) {
    portc_dtype back;
    ASSERT_TRUE(portc_dtype_parse(portc_dtype_name((portc_dtype)t), &back));
    EXPECT_EQ(back, t);
  }
  portc_dtype x;
  EXPECT_FALSE(portc_dtype_parse("f8", &x));
  EXPECT_EQ(portc_dtype_size(PORTC_BF16), 2u);
  EXPECT_EQ(portc_dtype_size(PORTC_BOOL), 1u);
}

TEST(Dtype, F32RoundingMatchesHardwareCast) {
  const double xs[] = {0.1, 1.0 / 3, 1e-40, -1e-45, 3.4028235677973366e38, 3.5e38, 1 + 0x1p-24, 1 + 0x1p-23 + 0x1p-24};
  for (double x : xs) {
    double r = round_to_dtype(x, PORTC_F32);
    EXPECT_EQ(r, (double)(float)x) << x;
  }
}

TEST(Dtype, F16KnownValues) {
  EXPECT_EQ(round_to_dtype(65504.0, PORTC_F16), 65504.0);    // largest finite
  EXPECT_EQ(round_to_dtype(65519.0, PORTC_F16), 65504.0);    // below the halfway point
  EXPECT_TRUE(std::isinf(round_to_dtype(65520.0, PORTC_F16))); // halfway rounds to even: inf
  EXPECT_EQ(round_to_dtype(1 + 0x1p-11, PORTC_F16), 1.0);      // tie to even (down)
  EXPECT_EQ(round_to_dtype(1 + 3 * 0x1p-11, PORTC_F16), 1 + 0x1p-9); // tie to even (up)
  EXPECT_EQ(round_to_dtype(0x1p-24, PORTC_F16), 0x1p-24);      // smallest subnormal
  EXPECT_EQ(round_to_dtype(0x1p-26, PORTC_F16), 0.0);          // rounds to zero
  EXPECT_EQ(round_to_dtype(0.1, PORTC_F16), 0.0999755859375);
  EXPECT_EQ(f16_bits(1.0), 0x3c00);
  EXPECT_EQ(f16_bits(-2.0), 0xc000);
  EXPECT_EQ(f16_bits(65504.0), 0x7bff);
  EXPECT_EQ(f16_bits(0x1p-24), 0x0001);
  EXPECT_EQ(f16_bits(INFINITY), 0x7c00);
  EXPECT_EQ(f16_value(0x3555), 0.333251953125);
  EXPECT_TRUE(std::isnan(f16_value(f16_bits(NAN))));
}

TEST(Dtype, F16AllBitPatternsRoundTrip) {
  for (unsigned h = 0; h < 0x10000; h++) {
    double v = f16_value((uint16_t)h);
    if (std::isnan(v)) continue;
    EXPECT_EQ(f16_bits(v), h) << std::hex << h;
  }
}

TEST(Dtype, Bf16RoundsOnceFromDouble) {
  // 1 + 2^-8 + 2^-30 is just above the bf16 tie: it must round up. Going through f32 first
  // would drop the 2^-30 and round the tie down to 1.
  EXPECT_EQ(round_to_dtype(1 + 0x1p-8 + 0x1p-30, PORTC_BF16), 1 + 0x1p-7);
  EXPECT_EQ(round_to_dtype(1 + 0x1p-8, PORTC_BF16), 1.0);
  EXPECT_EQ(bf16_bits(1.0), 0x3f80);
  EXPECT_EQ(bf16_value(0x4049), 3.140625);
  for (unsigned h = 0; h < 0x10000; h += 7) {
    double v = bf16_value((uint16_t)h);
    if (!std::isnan(v)) {
      EXPECT_EQ(bf16_bits(v), h);
    }
  }
}

TEST(Dtype, IntegerWrapAndConversion) {
  EXPECT_EQ(wrap_int(2147483648LL, PORTC_I32), -2147483648LL);
  EXPECT_EQ(wrap_int(-1, PORTC_I64), -1);
  EXPECT_EQ(wrap_int(5, PORTC_BOOL), 1);
  EXPECT_EQ(float_to_int(-2.7, PORTC_I32), -2);
  EXPECT_EQ(float_to_int(NAN, PORTC_I64), 0);
  EXPECT_EQ(float_to_int(1e20, PORTC_I32), INT32_MAX);
  EXPECT_EQ(float_to_int(-1e20, PORTC_I64), INT64_MIN);
  EXPECT_EQ(float_to_int(NAN, PORTC_BOOL), 1);
}
