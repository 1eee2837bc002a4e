#include "digest/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace upguard {
namespace {

TEST(DigestHalfTest, Float16KnownValues) {
  EXPECT_EQ(Float16ToDouble(0x3C00), 1.0);
  EXPECT_EQ(Float16ToDouble(0xBE00), -1.5);
  EXPECT_EQ(Float16ToDouble(0x7BFF), 65504.0);                // greatest finite
  EXPECT_EQ(Float16ToDouble(0x0400), std::ldexp(1, -14));     // least normal
  EXPECT_EQ(Float16ToDouble(0x0001), std::ldexp(1, -24));     // least subnormal
  EXPECT_EQ(Float16ToDouble(0x03FF), std::ldexp(1023, -24));  // greatest subnormal
  EXPECT_EQ(Float16ToDouble(0x7C00), INFINITY);
  EXPECT_EQ(Float16ToDouble(0xFC00), -INFINITY);
  EXPECT_TRUE(std::isnan(Float16ToDouble(0x7E00)));
  EXPECT_TRUE(std::isnan(Float16ToDouble(0x7C01)));  // signalling payload is still NaN
  EXPECT_EQ(Float16ToDouble(0x0000), 0.0);
  EXPECT_FALSE(std::signbit(Float16ToDouble(0x0000)));
  EXPECT_TRUE(std::signbit(Float16ToDouble(0x8000)));
  EXPECT_EQ(Float16ToDouble(0x8001), -std::ldexp(1, -24));
}

TEST(DigestHalfTest, BFloat16KnownValues) {
  EXPECT_EQ(BFloat16ToDouble(0x3F80), 1.0);
  EXPECT_EQ(BFloat16ToDouble(0xBFC0), -1.5);
  EXPECT_EQ(BFloat16ToDouble(0x7F80), INFINITY);
  EXPECT_EQ(BFloat16ToDouble(0xFF80), -INFINITY);
  EXPECT_TRUE(std::isnan(BFloat16ToDouble(0x7FC0)));
  EXPECT_EQ(BFloat16ToDouble(0x0001), std::ldexp(1, -133));   // least subnormal
  EXPECT_EQ(BFloat16ToDouble(0x7F7F), std::ldexp(255, 120));  // greatest finite
  EXPECT_TRUE(std::signbit(BFloat16ToDouble(0x8000)));
}

// Every float16 against the textbook formula (-1)^s * 2^(e-15) * (1 + f/1024).
TEST(DigestHalfTest, Float16ExhaustiveMatchesFormula) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const int sign = (bits >> 15) ? -1 : 1;
    const int exponent = (bits >> 10) & 0x1F;
    const int fraction = bits & 0x3FF;
    const double got = Float16ToDouble(static_cast<uint16_t>(bits));
    if (exponent == 0x1F) {
      if (fraction == 0) {
        EXPECT_EQ(got, sign * INFINITY) << bits;
      } else {
        EXPECT_TRUE(std::isnan(got)) << bits;
      }
      continue;
    }
    const double expected = exponent == 0 ? sign * std::ldexp(fraction, -24)
                                          : sign * std::ldexp(1024 + fraction, exponent - 25);
    ASSERT_EQ(got, expected) << bits;
    ASSERT_EQ(std::signbit(got), sign < 0) << bits;
  }
}

// Every bfloat16 against widening the equivalent float32.
TEST(DigestHalfTest, BFloat16ExhaustiveMatchesFloat32) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const uint32_t wide = bits << 16;
    float expected;
    std::memcpy(&expected, &wide, 4);
    const double got = BFloat16ToDouble(static_cast<uint16_t>(bits));
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(got)) << bits;
    } else {
      ASSERT_EQ(got, static_cast<double>(expected)) << bits;
      ASSERT_EQ(std::signbit(got), std::signbit(expected)) << bits;
    }
  }
}

}  // namespace
}  // namespace upguard
