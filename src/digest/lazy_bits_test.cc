#include "digest/lazy_bits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <vector>

namespace upguard {
namespace {

template <class T>
std::vector<T> Resolved(const std::vector<T>& values, DType dtype, bool conj, bool neg,
                        std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  const TensorView view{dtype, sizes.data(), strides.data(), static_cast<int>(sizes.size()),
                        values.data()};
  std::string out;
  EXPECT_TRUE(ResolveLazyBits(view, conj, neg, &out));
  std::vector<T> result(out.size() / sizeof(T));
  std::memcpy(result.data(), out.data(), out.size());
  return result;
}

TEST(LazyBits, NegationOfFloatsFlipsTheSignAndFollowsTheStrides) {
  const std::vector<float> values = {1.5f, -2.0f, 0.0f, 3.0f};
  // The transpose of a 2x2: row-major order reads 1.5, 0.0, -2.0, 3.0.
  EXPECT_EQ(Resolved(values, DType::kFloat32, false, true, {2, 2}, {1, 2}),
            (std::vector<float>{-1.5f, -0.0f, 2.0f, -3.0f}));
  const std::vector<float> zero = {0.0f};
  EXPECT_TRUE(std::signbit(Resolved(zero, DType::kFloat32, false, true, {1}, {1})[0]));
}

TEST(LazyBits, ConjugationFlipsTheImaginaryPartAndNegationBoth) {
  const std::vector<std::complex<double>> values = {{1.0, 2.0}, {-3.0, -4.0}};
  EXPECT_EQ(Resolved(values, DType::kComplex128, true, false, {2}, {1}),
            (std::vector<std::complex<double>>{{1.0, -2.0}, {-3.0, 4.0}}));
  EXPECT_EQ(Resolved(values, DType::kComplex128, true, true, {2}, {1}),
            (std::vector<std::complex<double>>{{-1.0, 2.0}, {3.0, -4.0}}));
}

TEST(LazyBits, IntegersNegateInTwosComplementAndTheRestIsRefused) {
  const std::vector<int64_t> ints = {5, std::numeric_limits<int64_t>::min()};
  EXPECT_EQ(Resolved(ints, DType::kInt64, false, true, {2}, {1}),
            (std::vector<int64_t>{-5, std::numeric_limits<int64_t>::min()}));
  const std::vector<float> floats = {1.0f};
  const int64_t size = 1, stride = 1;
  std::string out;
  EXPECT_FALSE(ResolveLazyBits({DType::kFloat32, &size, &stride, 1, floats.data()}, true, false,
                               &out));  // torch conjugates complex tensors only
}

}  // namespace
}  // namespace upguard
