#include "optim/narrow_float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace upguard::optim {
namespace {

bool IsNan16(uint16_t half) { return (half & 0x7C00) == 0x7C00 && (half & 0x3FF) != 0; }

TEST(NarrowFloat, EveryFloat16RoundTrips) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const uint16_t half = uint16_t(bits);
    const float wide = Float16ToFloat(half);
    if (IsNan16(half)) {
      EXPECT_TRUE(std::isnan(wide));
      EXPECT_TRUE(IsNan16(FloatToFloat16(wide)));
      continue;
    }
    ASSERT_EQ(FloatToFloat16(wide), half) << std::hex << bits;
  }
  EXPECT_EQ(Float16ToFloat(0x3C00), 1.0f);
  EXPECT_EQ(Float16ToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(Float16ToFloat(0x7BFF), 65504.0f);
}

TEST(NarrowFloat, Float16MidpointsRoundToEven) {
  // Between two neighbours (positive, finite), the midpoint goes to the even one and a hair
  // above it to the upper one; the midpoint is exact in float32 (11 bits of 24).
  for (uint16_t half = 0; half < 0x7BFF; ++half) {
    const float low = Float16ToFloat(half), high = Float16ToFloat(uint16_t(half + 1));
    const float mid = low + (high - low) / 2;
    const uint16_t even = (half & 1) == 0 ? half : uint16_t(half + 1);
    ASSERT_EQ(FloatToFloat16(mid), even) << std::hex << half;
    ASSERT_EQ(FloatToFloat16(std::nextafter(mid, high)), uint16_t(half + 1)) << std::hex << half;
    ASSERT_EQ(FloatToFloat16(std::nextafter(mid, low)), half) << std::hex << half;
    ASSERT_EQ(FloatToFloat16(-mid), uint16_t(even | 0x8000)) << std::hex << half;
  }
  EXPECT_EQ(FloatToFloat16(65519.99f), 0x7BFF);
  EXPECT_EQ(FloatToFloat16(65520.0f), 0x7C00);  // the midpoint to the next binade: infinity
  EXPECT_EQ(FloatToFloat16(-1e10f), 0xFC00);
  EXPECT_EQ(FloatToFloat16(0x1p-26f), 0x0000);  // below half the least subnormal
}

TEST(NarrowFloat, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBFloat16(BitsFloat(0x3F808000)), 0x3F80);  // tie: to even (down)
  EXPECT_EQ(FloatToBFloat16(BitsFloat(0x3F818000)), 0x3F82);  // tie: to even (up)
  EXPECT_EQ(FloatToBFloat16(BitsFloat(0x3F808001)), 0x3F81);
  EXPECT_EQ(BFloat16ToFloat(0xC000), -2.0f);
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(std::nanf("")))));
  EXPECT_EQ(FloatToBFloat16(BitsFloat(0x7F7FFFFF)), 0x7F80);  // past the largest: infinity
}

TEST(NarrowFloat, StochasticBFloat16IsUnbiased) {
  // A quarter of an ulp (2^-7) above 1: rounded to nearest it is 1; rounded stochastically
  // over every noise value it averages back to itself.
  const float value = 1.0f + 0x1p-9f;
  double sum = 0;
  int up = 0;
  for (uint32_t noise = 0; noise <= 0xFFFF; ++noise) {
    const uint16_t rounded = FloatToBFloat16Stochastic(value, uint16_t(noise));
    ASSERT_TRUE(rounded == 0x3F80 || rounded == 0x3F81);
    up += rounded == 0x3F81;
    sum += BFloat16ToFloat(rounded);
  }
  EXPECT_EQ(up, 0x10000 / 4);  // every noise value once: exactly the fraction
  EXPECT_DOUBLE_EQ(sum / 65536.0, double(value));
  EXPECT_EQ(FloatToBFloat16(value), 0x3F80);
  EXPECT_EQ(FloatToBFloat16Stochastic(2.0f, 0xFFFF), 0x4000);  // exact values never move
}

}  // namespace
}  // namespace upguard::optim
