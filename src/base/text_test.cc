#include "base/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

namespace upguard {
namespace {

std::string Printf17(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

double FromBits(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

TEST(ExactDoubleTest, SameTextAsPrintfForSpecialValues) {
  const double values[] = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           0.1,
                           0.5,
                           1e-7,
                           1e-5,
                           1e-4,
                           123456789012345678.0,
                           1e16,
                           1e17,
                           1e300,
                           std::numeric_limits<double>::min(),
                           std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(),
                           -std::numeric_limits<double>::quiet_NaN()};
  for (double value : values) EXPECT_EQ(ExactDouble(value), Printf17(value)) << Printf17(value);
  EXPECT_EQ(ExactDouble(0.1), "0.10000000000000001");
  EXPECT_EQ(ExactDouble(1e-7), "9.9999999999999995e-08");
  EXPECT_EQ(ExactDouble(2.0), "2");
}

// Recorded scalar texts must not change between versions: a reference recorded with printf
// is compared with a candidate recorded with to_chars.
TEST(ExactDoubleTest, SameTextAsPrintfForRandomBitPatternsAndShortDecimals) {
  std::mt19937_64 rng(20261205);
  for (int idx = 0; idx < 200000; ++idx) {
    const double value = FromBits(rng());
    ASSERT_EQ(ExactDouble(value), Printf17(value)) << idx;
  }
  for (int idx = -100000; idx <= 100000; ++idx) {
    const double value = idx / 1000.0;  // learning rates, momenta, epsilons as typed
    ASSERT_EQ(ExactDouble(value), Printf17(value)) << idx;
    ASSERT_EQ(ExactDouble(value * 1e-6), Printf17(value * 1e-6)) << idx;
  }
}

}  // namespace
}  // namespace upguard
