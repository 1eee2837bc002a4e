#include "digest/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "digest/digest_test_util.h"

namespace upguard {
namespace {

using testing::SameBits;
using testing::StatsBitEqual;
using testing::StatsText;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// Statistics of one tensor through the chunk API, chunk by chunk.
TensorStats StatsOf(DType dtype, const std::vector<uint8_t>& bytes,
                    int stats_version = kStatsVersionV1) {
  StatsAccumulator total;
  for (size_t begin = 0; begin < bytes.size(); begin += kDigestChunkBytes) {
    const size_t size = std::min(kDigestChunkBytes, bytes.size() - begin);
    total.Add(ComputeChunkStats(dtype, bytes.data() + begin, size, stats_version));
  }
  return total.Finish();
}

TEST(DigestStatsTest, SimpleValues) {
  const TensorStats stats = StatsOf(DType::kFloat64, Bytes<double>({3, -4, 0.5, 1}));
  EXPECT_EQ(stats.finite_count, 4u);
  EXPECT_EQ(stats.min, -4);
  EXPECT_EQ(stats.max, 3);
  EXPECT_EQ(stats.mean, 0.125);
  EXPECT_EQ(stats.l2, std::sqrt(9 + 16 + 0.25 + 1));
  EXPECT_EQ(stats.nan_count + stats.pos_inf_count + stats.neg_inf_count, 0u);
}

TEST(DigestStatsTest, NonFiniteValuesAreCountedNotSummed) {
  const TensorStats stats = StatsOf(
      DType::kFloat32, Bytes<float>({1.0f, NAN, INFINITY, -INFINITY, -NAN, 2.0f, INFINITY}));
  EXPECT_EQ(stats.finite_count, 2u);
  EXPECT_EQ(stats.nan_count, 2u);
  EXPECT_EQ(stats.pos_inf_count, 2u);
  EXPECT_EQ(stats.neg_inf_count, 1u);
  EXPECT_EQ(stats.min, 1.0);
  EXPECT_EQ(stats.max, 2.0);
  EXPECT_EQ(stats.mean, 1.5);
  EXPECT_EQ(stats.l2, std::sqrt(5.0));
}

TEST(DigestStatsTest, NoFiniteValuesGivesZeros) {
  const TensorStats stats = StatsOf(DType::kFloat64, Bytes<double>({kNan, kInf, -kInf}));
  EXPECT_EQ(stats.finite_count, 0u);
  EXPECT_TRUE(SameBits(stats.min, 0.0) && SameBits(stats.max, 0.0)) << StatsText(stats);
  EXPECT_TRUE(SameBits(stats.mean, 0.0) && SameBits(stats.l2, 0.0)) << StatsText(stats);
  EXPECT_TRUE(StatsBitEqual(StatsOf(DType::kFloat32, {}), TensorStats()));
}

// -0.0 orders below +0.0 whatever the element order, and counts as finite.
TEST(DigestStatsTest, SignedZeroMinMaxIsOrderIndependent) {
  for (const std::vector<double>& values :
       {std::vector<double>{0.0, -0.0}, std::vector<double>{-0.0, 0.0}}) {
    const TensorStats stats = StatsOf(DType::kFloat64, Bytes(values));
    EXPECT_EQ(stats.finite_count, 2u);
    EXPECT_TRUE(SameBits(stats.min, -0.0)) << StatsText(stats);
    EXPECT_TRUE(SameBits(stats.max, 0.0)) << StatsText(stats);
    EXPECT_TRUE(SameBits(stats.mean, 0.0)) << StatsText(stats);
  }
  const TensorStats negative = StatsOf(DType::kFloat64, Bytes<double>({-0.0, -0.0}));
  EXPECT_TRUE(SameBits(negative.min, -0.0) && SameBits(negative.max, -0.0));
}

// The same across chunks: the zero of the other sign sits in a later chunk.
TEST(DigestStatsTest, SignedZeroAcrossChunks) {
  std::vector<float> values(kDigestChunkBytes / 4 * 2 + 3, 0.0f);
  values.back() = -0.0f;
  const TensorStats stats = StatsOf(DType::kFloat32, Bytes(values));
  EXPECT_TRUE(SameBits(stats.min, -0.0) && SameBits(stats.max, 0.0)) << StatsText(stats);
}

// ReLU-like data: zero is the minimum, in the vectorized part of a chunk, not only the tail.
TEST(DigestStatsTest, ZeroMinimumGetsTheRightSign) {
  std::vector<float> values(1000);
  for (size_t elem_idx = 0; elem_idx < values.size(); ++elem_idx) {
    values[elem_idx] = elem_idx % 3 == 0 ? 0.0f : static_cast<float>(elem_idx);
  }
  EXPECT_TRUE(SameBits(StatsOf(DType::kFloat32, Bytes(values)).min, 0.0));
  values[500] = -0.0f;
  EXPECT_TRUE(SameBits(StatsOf(DType::kFloat32, Bytes(values)).min, -0.0));
  // All non-positive: the maximum is a zero.
  for (float& v : values) v = -v;
  values[0] = -0.0f;
  const TensorStats stats = StatsOf(DType::kFloat32, Bytes(values));
  EXPECT_TRUE(SameBits(stats.max, 0.0)) << StatsText(stats);  // values[500] became +0.0
}

// One NaN anywhere sends a chunk down the exact path; the result must not change otherwise.
TEST(DigestStatsTest, NonFiniteAnywhereInAChunk) {
  std::vector<double> values(1003);
  for (size_t elem_idx = 0; elem_idx < values.size(); ++elem_idx) {
    values[elem_idx] = 0.1 * static_cast<double>(elem_idx) - 30;
  }
  for (const size_t position : {size_t{0}, size_t{7}, size_t{500}, size_t{1000}, size_t{1002}}) {
    std::vector<double> with_nan = values;
    with_nan[position] = kNan;
    const std::vector<uint8_t> bytes = Bytes(with_nan);
    const TensorStats stats = StatsOf(DType::kFloat64, bytes);
    EXPECT_EQ(stats.nan_count, 1u);
    EXPECT_EQ(stats.finite_count, 1002u);
    EXPECT_TRUE(StatsBitEqual(stats, testing::ReferenceStats(DType::kFloat64, bytes, 1)))
        << "NaN at " << position << ": " << StatsText(stats);
    const TensorStats v2 = StatsOf(DType::kFloat64, bytes, kStatsVersionV2);
    EXPECT_TRUE(StatsBitEqual(v2, testing::ReferenceStats(DType::kFloat64, bytes, 2)))
        << "v2, NaN at " << position << ": " << StatsText(v2);
  }
}

TEST(DigestStatsTest, Float16AndBFloat16) {
  // float16: 1.0, +inf, least subnormal, -0.0, NaN
  const TensorStats half =
      StatsOf(DType::kFloat16, Bytes<uint16_t>({0x3C00, 0x7C00, 0x0001, 0x8000, 0x7E00}));
  EXPECT_EQ(half.finite_count, 3u);
  EXPECT_EQ(half.pos_inf_count, 1u);
  EXPECT_EQ(half.nan_count, 1u);
  EXPECT_TRUE(SameBits(half.min, -0.0));
  EXPECT_EQ(half.max, 1.0);
  // bfloat16: 1.0, -1.5, -inf
  const TensorStats brain = StatsOf(DType::kBFloat16, Bytes<uint16_t>({0x3F80, 0xBFC0, 0xFF80}));
  EXPECT_EQ(brain.finite_count, 2u);
  EXPECT_EQ(brain.neg_inf_count, 1u);
  EXPECT_EQ(brain.min, -1.5);
  EXPECT_EQ(brain.mean, -0.25);
}

// Values whose float64 sum depends on the order of additions: the result must be exactly the
// one the spec's lanes and tree produce (the reference), not a plain left-to-right sum.
TEST(DigestStatsTest, SummationOrderIsTheSpecs) {
  // Left to right, every 1.0 is absorbed by 1e16 (its ulp is 2) and the sum ends at 0; the
  // lanes that do not hold 1e16 keep their ones.
  std::vector<double> values(20000, 1.0);
  values.front() = 1e16;
  values.back() = -1e16;
  const std::vector<uint8_t> bytes = Bytes(values);
  const TensorStats stats = StatsOf(DType::kFloat64, bytes);
  const TensorStats reference = testing::ReferenceStats(DType::kFloat64, bytes, 1);
  EXPECT_TRUE(StatsBitEqual(stats, reference)) << StatsText(stats) << "\nvs\n"
                                               << StatsText(reference);
  const TensorStats v2 = StatsOf(DType::kFloat64, bytes, kStatsVersionV2);
  const TensorStats v2_reference = testing::ReferenceStats(DType::kFloat64, bytes, 2);
  EXPECT_TRUE(StatsBitEqual(v2, v2_reference)) << StatsText(v2) << "\nvs\n"
                                               << StatsText(v2_reference);
  // The versions' lanes and trees give different roundings here: the test sees the lane count.
  EXPECT_NE(stats.mean, v2.mean) << "pick values for which the lane count matters";

  double naive = 0;
  for (const double v : values) naive += v;
  EXPECT_NE(naive / static_cast<double>(values.size()), stats.mean)
      << "pick values for which the order matters";
}

TEST(DigestStatsTest, OverflowingSquaresGiveInfiniteL2) {
  const TensorStats stats = StatsOf(DType::kFloat64, Bytes<double>({1e200, -1e200}));
  EXPECT_EQ(stats.l2, kInf);
  EXPECT_EQ(stats.mean, 0.0);
  EXPECT_EQ(stats.finite_count, 2u);
}

}  // namespace
}  // namespace upguard
