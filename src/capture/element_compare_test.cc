// Element comparisons of tensors whose differences are built exactly (neighbouring values,
// bit patterns), with the exact counts, histogram, errors and summary sentence.
#include "capture/element_compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "digest/digest_test_util.h"

namespace upguard {
namespace {

using testing::OwnedView;

template <typename T>
StoredTensor Stored(DType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  return {
      "t", dtype, std::move(shape),
      std::string_view(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T))};
}

template <typename T>
ElementComparison Compare(DType dtype, std::vector<int64_t> shape, const std::vector<T>& a,
                          const std::vector<T>& b) {
  StatusOr<ElementComparison> c = CompareElements(Stored(dtype, shape, a), Stored(dtype, shape, b));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : ElementComparison{};
}

// The float `steps` representable values above `value` (below, for negative steps).
float Step(float value, int64_t steps) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits = static_cast<uint32_t>(bits + steps);
  std::memcpy(&value, &bits, 4);
  return value;
}

float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

std::vector<std::pair<uint64_t, int64_t>> Histogram(const ElementComparison& c) {
  std::vector<std::pair<uint64_t, int64_t>> out;
  for (const UlpBucket& bucket : c.ulp_histogram) out.emplace_back(bucket.max_ulp, bucket.count);
  return out;
}

std::vector<float> Ramp(size_t numel) {
  std::vector<float> values(numel);
  for (size_t elem_idx = 0; elem_idx < numel; ++elem_idx) {
    values[elem_idx] = 0.25f + static_cast<float>(elem_idx % 1000) * 0.003f;
  }
  return values;
}

TEST(ElementCompareTest, IdenticalTensorsAreSummarizedAsBitwiseEqual) {
  const std::vector<float> a = Ramp(3 * 256 * 256);
  const ElementComparison c = Compare(DType::kFloat32, {3, 256, 256}, a, a);
  EXPECT_TRUE(c.comparable);
  EXPECT_EQ(c.numel, 196608);
  EXPECT_EQ(c.differing, 0);
  EXPECT_TRUE(c.first_index.empty());
  EXPECT_EQ(SummarizeComparison(c), "identical: all 196,608 elements bitwise equal");
}

TEST(ElementCompareTest, OneUlpDifferencesInFloat32) {
  const std::vector<int64_t> shape = {3, 256, 256};
  std::vector<float> a = Ramp(196608);
  a[785] = 0.51234567f;  // [0, 3, 17]
  std::vector<float> b = a;
  b[785] = Step(a[785], 1);
  // Five pairs at 3.0 (1 ULP = 2^-22, the largest abs error) and six at 1.0 (the largest rel
  // error, 2^-23 / (1 + 2^-23)).
  for (size_t elem_idx : {1000u, 2000u, 3000u, 4000u, 196607u}) {
    a[elem_idx] = 3.0f;
    b[elem_idx] = Step(3.0f, 1);
  }
  for (size_t elem_idx : {5000u, 6000u, 7000u, 8000u, 9000u, 10000u}) {
    a[elem_idx] = Step(1.0f, 1);
    b[elem_idx] = 1.0f;
  }
  const ElementComparison c = Compare(DType::kFloat32, shape, a, b);
  EXPECT_EQ(c.differing, 12);
  EXPECT_EQ(c.max_ulp, 1u);
  EXPECT_EQ(Histogram(c), (std::vector<std::pair<uint64_t, int64_t>>{{1, 12}}));
  EXPECT_EQ(c.first_index, (std::vector<int64_t>{0, 3, 17}));
  EXPECT_EQ(c.first_a, static_cast<double>(0.51234567f));
  EXPECT_EQ(c.first_b, static_cast<double>(Step(0.51234567f, 1)));
  EXPECT_EQ(c.max_abs_error, std::ldexp(1.0, -22));
  EXPECT_EQ(c.max_rel_error, std::ldexp(1.0, -23) / (1 + std::ldexp(1.0, -23)));
  EXPECT_EQ(c.nan_mismatch + c.signed_zero + c.inf_mismatch, 0);
  EXPECT_EQ(SummarizeComparison(c),
            "12 of 196,608 elements differ (0.0061%), all by 1 ULP; max abs error 2.4e-07, max "
            "rel error 1.2e-07; first at [0, 3, 17]: 0.512345672 vs 0.512345731");
}

// More than five buckets: the sentence shows five runs of adjacent buckets; the brief form
// (headlines) stops before the histogram.
TEST(ElementCompareTest, ALongHistogramIsShownAsFiveRuns) {
  std::vector<float> a(16, 1.5f), b = a;
  for (int elem_idx = 0; elem_idx < 11; ++elem_idx) b[elem_idx] = Step(1.5f, 1 << elem_idx);
  const ElementComparison c = Compare(DType::kFloat32, {16}, a, b);
  ASSERT_EQ(c.ulp_histogram.size(), 11u);  // 1, 2, 4, ..., 1024 ULP
  const std::string summary = SummarizeComparison(c);
  EXPECT_EQ(summary.substr(0, summary.find(';')),
            "11 of 16 elements differ (69%), by up to 1,024 ULP (<=2 ULP: 2, <=8 ULP: 2, "
            "<=32 ULP: 2, <=128 ULP: 2, <=1,024 ULP: 3)");
  EXPECT_EQ(SummarizeComparisonBrief(c), "11 of 16 elements differ (69%), by up to 1,024 ULP");
  EXPECT_EQ(SummarizeComparisonBrief(Compare(DType::kFloat32, {16}, a, a)),
            "identical: all 16 elements bitwise equal");
}

TEST(ElementCompareTest, UlpHistogramBucketsArePowersOfTwo) {
  std::vector<float> a(16, 1.5f), b = a;
  for (int elem_idx = 0; elem_idx < 10; ++elem_idx) b[elem_idx] = Step(1.5f, 1);
  b[10] = Step(1.5f, -2);
  b[11] = Step(1.5f, 37);
  const ElementComparison c = Compare(DType::kFloat32, {16}, a, b);
  EXPECT_EQ(c.max_ulp, 37u);
  EXPECT_EQ(Histogram(c), (std::vector<std::pair<uint64_t, int64_t>>{{1, 10}, {2, 1}, {64, 1}}));
  EXPECT_EQ(c.first_index, std::vector<int64_t>{0});
  EXPECT_EQ(SummarizeComparison(c),
            "12 of 16 elements differ (75%), by up to 37 ULP (1 ULP: 10, 2 ULP: 1, <=64 ULP: 1); "
            "max abs error 4.4e-06, max rel error 2.9e-06; first at [0]: 1.5 vs 1.50000012");
}

TEST(ElementCompareTest, ZerosInfinitiesAndNaNs) {
  const float inf = std::numeric_limits<float>::infinity();
  const float max = std::numeric_limits<float>::max();
  const std::vector<float> a = {
      0.0f, -0.0f, FromBits(1), 0.0f, inf, inf, 1.0f, FromBits(0x7FC00000), FromBits(0x7FC00000),
      2.0f};
  const std::vector<float> b = {-0.0f,
                                0.0f,
                                FromBits(0x80000001),
                                FromBits(1),
                                max,
                                -inf,
                                FromBits(0x7FC00000),
                                1.0f,
                                FromBits(0x7FC00001),
                                2.0f};
  const ElementComparison c = Compare(DType::kFloat32, {2, 5}, a, b);
  EXPECT_EQ(c.differing, 9);
  EXPECT_EQ(c.signed_zero, 2);
  EXPECT_EQ(c.nan_mismatch, 3);
  EXPECT_EQ(c.nan_payload, 1);
  EXPECT_EQ(c.inf_mismatch, 2);
  // Across zero: 1 + 1 steps; from +0: 1; inf to max finite: 1; +inf to -inf: 2 * 0x7F800000.
  EXPECT_EQ(c.max_ulp, 2u * 0x7F800000u);
  EXPECT_EQ(Histogram(c),
            (std::vector<std::pair<uint64_t, int64_t>>{{1, 2}, {2, 1}, {uint64_t{1} << 32, 1}}));
  // Only the two subnormal pairs are finite and non-zero.
  EXPECT_EQ(c.max_abs_error, 2 * static_cast<double>(FromBits(1)));
  EXPECT_EQ(c.max_rel_error, 2.0);
  EXPECT_EQ(c.first_index, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(SummarizeComparison(c),
            "9 of 10 elements differ (90%), 4 by up to 4,278,190,080 ULP (1 ULP: 2, 2 ULP: 1, "
            "<=4,294,967,296 ULP: 1), 3 NaN mismatches (1 only in the payload), 2 signed zeros "
            "(+0 vs -0), 2 infinity mismatches; max abs error 2.8e-45, max rel error 2; first at "
            "[0, 0]: 0 vs -0");
}

TEST(ElementCompareTest, OnlySignedZerosDiffer) {
  const ElementComparison c =
      Compare(DType::kFloat32, {3}, std::vector<float>{0, 1, 2}, std::vector<float>{-0.0f, 1, 2});
  EXPECT_EQ(c.max_ulp, 0u);
  EXPECT_TRUE(c.ulp_histogram.empty());
  EXPECT_EQ(SummarizeComparison(c),
            "1 of 3 elements differ (33%), 1 signed zero (+0 vs -0); first at [0]: 0 vs -0");
}

TEST(ElementCompareTest, Float64UsesSeventeenDigitsAndItsOwnUlp) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> a = {1.0, 1.0, inf};
  const std::vector<double> b = {std::nextafter(1.0, 2.0), 2.0, -inf};
  const ElementComparison c = Compare(DType::kFloat64, {3}, a, b);
  EXPECT_EQ(c.differing, 3);
  EXPECT_EQ(c.max_ulp, 2 * uint64_t{0x7FF0000000000000});
  // 1.0 to 2.0 is 2^52 steps; +inf to -inf lands in the last bucket.
  EXPECT_EQ(Histogram(c), (std::vector<std::pair<uint64_t, int64_t>>{
                              {1, 1}, {uint64_t{1} << 52, 1}, {UINT64_MAX, 1}}));
  EXPECT_EQ(c.max_abs_error, 1.0);
  EXPECT_EQ(c.max_rel_error, 0.5);
  EXPECT_EQ(SummarizeComparison(c),
            "3 of 3 elements differ (100%), by up to 18,437,736,874,454,810,624 ULP (1 ULP: 1, "
            "<=4,503,599,627,370,496 ULP: 1, <=18,446,744,073,709,551,615 ULP: 1), 1 infinity "
            "mismatch; max abs error 1, max rel error 0.5; first at [0]: 1 vs 1.0000000000000002");
}

TEST(ElementCompareTest, HalfTypesUseTheirOwnWidth) {
  // float16: 1.0 is 0x3C00, its neighbour 1 + 2^-10; 0x7C00 is +inf, 0x7BFF the largest finite.
  const ElementComparison f16 =
      Compare(DType::kFloat16, {3}, std::vector<uint16_t>{0x3C00, 0x7C00, 0x8001},
              std::vector<uint16_t>{0x3C01, 0x7BFF, 0x0001});
  EXPECT_EQ(Histogram(f16), (std::vector<std::pair<uint64_t, int64_t>>{{1, 2}, {2, 1}}));
  EXPECT_EQ(f16.inf_mismatch, 1);
  EXPECT_EQ(f16.max_abs_error, std::ldexp(1.0, -10));
  EXPECT_EQ(SummarizeComparison(f16),
            "3 of 3 elements differ (100%), by up to 2 ULP (1 ULP: 2, 2 ULP: 1), 1 infinity "
            "mismatch; max abs error 0.00098, max rel error 2; first at [0]: 1 vs 1.001");
  // bfloat16: 1.0 is 0x3F80, its neighbour 1 + 2^-7; 0x7FC0 is a NaN.
  const ElementComparison bf16 =
      Compare(DType::kBFloat16, {2}, std::vector<uint16_t>{0x3F80, 0x7FC0},
              std::vector<uint16_t>{0x3F81, 0x7FC0});
  EXPECT_EQ(bf16.differing, 1);
  EXPECT_EQ(bf16.max_rel_error, std::ldexp(1.0, -7) / (1 + std::ldexp(1.0, -7)));
  EXPECT_EQ(SummarizeComparison(bf16),
            "1 of 2 elements differ (50%), all by 1 ULP; max abs error 0.0078, max rel error "
            "0.0078; first at [0]: 1 vs 1.0078");
}

TEST(ElementCompareTest, IntegersUseTheirDifference) {
  const ElementComparison i32 = Compare(DType::kInt32, {2, 2}, std::vector<int32_t>{5, 7, 9, -3},
                                        std::vector<int32_t>{5, 8, 9, 2});
  EXPECT_EQ(i32.differing, 2);
  EXPECT_EQ(i32.max_ulp, 5u);
  EXPECT_EQ(Histogram(i32), (std::vector<std::pair<uint64_t, int64_t>>{{1, 1}, {8, 1}}));
  EXPECT_EQ(i32.first_index, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(SummarizeComparison(i32),
            "2 of 4 elements differ (50%), by up to 5 (1: 1, <=8: 1); max abs error 5, max rel "
            "error 1.7; first at [0, 1]: 7 vs 8");

  const ElementComparison i64 =
      Compare(DType::kInt64, {1}, std::vector<int64_t>{INT64_MIN}, std::vector<int64_t>{INT64_MAX});
  EXPECT_EQ(i64.max_ulp, UINT64_MAX);
  const ElementComparison u8 =
      Compare(DType::kUInt8, {2}, std::vector<uint8_t>{0, 200}, std::vector<uint8_t>{255, 200});
  EXPECT_EQ(u8.max_ulp, 255u);
  const ElementComparison flags =
      Compare(DType::kBool, {3}, std::vector<uint8_t>{1, 0, 1}, std::vector<uint8_t>{1, 1, 0});
  EXPECT_EQ(SummarizeComparison(flags),
            "2 of 3 elements differ (67%), all by 1; max abs error 1, max rel error 1; first at "
            "[1]: 0 vs 1");
}

TEST(ElementCompareTest, ComplexIsComparedAsItsComponents) {
  const std::vector<float> a = {1, 2, 3, 4}, b = {1, 2, 3, Step(4, 3)};
  const ElementComparison c = Compare(DType::kComplex64, {2}, a, b);
  EXPECT_EQ(c.dtype, DType::kFloat32);
  EXPECT_EQ(c.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(c.numel, 4);
  EXPECT_EQ(c.first_index, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(c.max_ulp, 3u);
}

TEST(ElementCompareTest, ThePercentageKeepsTwoDigitsWithoutAnExponent) {
  std::vector<float> a(3'000'000, 1.0f), b = a;
  b[2'999'999] = Step(1.0f, 1);
  EXPECT_EQ(SummarizeComparison(Compare(DType::kFloat32, {3'000'000}, a, b)).substr(0, 47),
            "1 of 3,000,000 elements differ (<0.0001%), all ");
  std::vector<int32_t> x(1000, 0), y(1000, 1);
  y[0] = 0;
  EXPECT_EQ(SummarizeComparison(Compare(DType::kInt32, {1000}, x, y)).substr(0, 35),
            "999 of 1,000 elements differ (99%),");
  y.resize(1);
  x.resize(1);
  y[0] = 1;
  EXPECT_EQ(SummarizeComparison(Compare(DType::kInt32, {1}, x, y)).substr(0, 33),
            "1 of 1 element differ (100%), all");
}

TEST(ElementCompareTest, DifferentDTypesOrShapesAreNotComparable) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};
  const std::vector<uint16_t> halves(6, 0x3C00);
  StatusOr<ElementComparison> dtype =
      CompareElements(Stored(DType::kFloat32, {6}, a), Stored(DType::kBFloat16, {6}, halves));
  ASSERT_TRUE(dtype.ok());
  EXPECT_FALSE(dtype->comparable);
  EXPECT_EQ(SummarizeComparison(*dtype), "not comparable: dtype float32 vs bfloat16");
  StatusOr<ElementComparison> shape =
      CompareElements(Stored(DType::kFloat32, {2, 3}, a), Stored(DType::kFloat32, {3, 2}, a));
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(SummarizeComparison(*shape), "not comparable: shape [2, 3] vs [3, 2]");
}

TEST(ElementCompareTest, BytesThatDoNotMatchTheShapeAreAnError) {
  const std::vector<float> a = {1, 2, 3};
  StatusOr<ElementComparison> c =
      CompareElements(Stored(DType::kFloat32, {4}, a), Stored(DType::kFloat32, {4}, a));
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            "CompareElements: tensor \"t\" has 12 bytes; its dtype and shape need 16");
}

// The frontier keeps exactly the pairs no other pair dominates.
TEST(ElementCompareTest, ErrorFrontierKeepsTheUndominatedPairs) {
  // (magnitude, abs error): (1, 0.5) dominates (2, 0.25) and (4, 0.5); (8, 1) stands.
  const std::vector<double> a = {4.0, 1.0, 2.0, 8.0, 0.5};
  const std::vector<double> b = {3.5, 0.5, 1.75, 7.0, 0.5};
  const ElementComparison c = Compare(DType::kFloat64, {5}, a, b);
  ASSERT_EQ(c.error_frontier.size(), 2u);
  EXPECT_EQ(c.error_frontier[0].magnitude, 1.0);
  EXPECT_EQ(c.error_frontier[0].abs_error, 0.5);
  EXPECT_EQ(c.error_frontier[1].magnitude, 8.0);
  EXPECT_EQ(c.error_frontier[1].abs_error, 1.0);
}

// A strided view compared through the TensorView overload gives what the row-major bytes give.
TEST(ElementCompareTest, ViewsAndStoredBytesGiveTheSameComparison) {
  const int64_t rows = 300, cols = 200;  // > 64 KiB: several gathered chunks
  std::vector<float> storage_a = Ramp(rows * cols), storage_b = storage_a;
  for (int64_t elem_idx = 7; elem_idx < rows * cols; elem_idx += 97) {
    storage_b[elem_idx] = Step(storage_a[elem_idx], elem_idx % 5 + 1);
  }
  OwnedView a{DType::kFloat32, {cols, rows}, {1, cols}, storage_a.data()};  // transposed
  OwnedView b{DType::kFloat32, {cols, rows}, {1, cols}, storage_b.data()};
  StatusOr<ElementComparison> from_views = CompareElements(a.view(), b.view());
  ASSERT_TRUE(from_views.ok()) << from_views.status().ToString();
  const std::vector<uint8_t> a_bytes = testing::LogicalBytes(a), b_bytes = testing::LogicalBytes(b);
  StoredTensor a_stored{"a",
                        DType::kFloat32,
                        {cols, rows},
                        {reinterpret_cast<const char*>(a_bytes.data()), a_bytes.size()}};
  StoredTensor b_stored{"b",
                        DType::kFloat32,
                        {cols, rows},
                        {reinterpret_cast<const char*>(b_bytes.data()), b_bytes.size()}};
  StatusOr<ElementComparison> from_bytes = CompareElements(a_stored, b_stored);
  ASSERT_TRUE(from_bytes.ok());
  EXPECT_EQ(from_views->differing, (rows * cols - 7 + 96) / 97);
  EXPECT_EQ(from_views->differing, from_bytes->differing);
  EXPECT_EQ(from_views->first_index, from_bytes->first_index);
  EXPECT_EQ(Histogram(*from_views), Histogram(*from_bytes));
  EXPECT_EQ(from_views->max_abs_error, from_bytes->max_abs_error);
  EXPECT_EQ(SummarizeComparison(*from_views), SummarizeComparison(*from_bytes));
  // The first differing element in the view's row-major order: [i, j] is storage i + j * cols.
  std::vector<int64_t> first;
  for (int64_t i = 0; i < cols && first.empty(); ++i) {
    for (int64_t j = 0; j < rows && first.empty(); ++j) {
      if ((i + j * cols) % 97 == 7) first = {i, j};
    }
  }
  EXPECT_EQ(from_views->first_index, first);
  EXPECT_EQ(first, (std::vector<int64_t>{0, 82}));

  OwnedView negative{DType::kFloat32, {2}, {-1}, storage_a.data() + 4};
  EXPECT_EQ(CompareElements(negative.view(), b.view()).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace upguard

namespace upguard {
namespace {

// A 100 x 200 float32 tensor differing in its top-left 10 x 10 corner and at its last element:
// the map puts them in the grid's cells over those places (48 x 96 cells over 100 x 200).
TEST(ElementCompareTest, DiffMapPlacesTheDifferences) {
  std::vector<float> a(100 * 200, 1.0f), b = a;
  for (int row = 0; row < 10; ++row) {
    for (int col = 0; col < 10; ++col) b[size_t(row * 200 + col)] = 2.0f;
  }
  b.back() = 3.0f;
  const ElementComparison c = Compare(DType::kFloat32, {100, 200}, a, b);
  const ElementComparison::DiffMap& map = c.diff_map;
  ASSERT_EQ(map.counts.size(), size_t(48 * 96));
  EXPECT_EQ((map.rows * 1000 + map.cols), 100 * 1000 + 200);
  // Element (r, c) lies in cell (r * 48 / 100, c * 96 / 200): the corner in cells 0..4 x 0..4.
  int64_t corner = 0;
  for (int64_t gr = 0; gr < 48; ++gr) {
    for (int64_t gc = 0; gc < 96; ++gc) {
      const int64_t count = map.counts[size_t(gr * 96 + gc)];
      if (gr <= 4 && gc <= 4) {
        corner += count;
      } else if (!(gr == 47 && gc == 95)) {
        EXPECT_EQ(count, 0) << gr << "," << gc;
      }
    }
  }
  EXPECT_EQ(corner, 100);
  EXPECT_EQ(map.counts.back(), 1);  // the last element, alone in the last cell
  EXPECT_TRUE(
      Compare(DType::kFloat32, {6}, std::vector<float>(6, 1.0f), std::vector<float>(6, 2.0f))
          .diff_map.counts.empty());  // 1-D: no map
}

}  // namespace
}  // namespace upguard
