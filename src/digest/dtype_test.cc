#include "digest/dtype.h"

#include <gtest/gtest.h>

#include "upguard/tensor.h"

namespace upguard {
namespace {

TEST(DTypeTest, SizesMatchTheSpecTable) {
  // docs/formats/digest.md §2, indexed by DType code.
  constexpr size_t kSpecSizes[kMaxDType + 1] = {0, 4, 8, 2, 2, 1, 1, 2, 4, 8, 1, 8, 16};
  for (uint8_t code = 0; code <= kMaxDType; ++code) {
    EXPECT_EQ(DTypeSize(static_cast<DType>(code)), kSpecSizes[code]) << int{code};
  }
}

TEST(DTypeTest, NamesAreTorchNames) {
  EXPECT_EQ(DTypeName(DType::kFloat32), "float32");
  EXPECT_EQ(DTypeName(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(DTypeName(DType::kComplex128), "complex128");
  EXPECT_EQ(DTypeName(DType::kInvalid), "invalid");
}

TEST(DTypeTest, OnlyRealFloatsAreFloating) {
  for (uint8_t code = 0; code <= kMaxDType; ++code) {
    const auto dtype = static_cast<DType>(code);
    const bool expected = dtype == DType::kFloat32 || dtype == DType::kFloat64 ||
                          dtype == DType::kFloat16 || dtype == DType::kBFloat16;
    EXPECT_EQ(DTypeIsFloating(dtype), expected) << DTypeName(dtype);
  }
}

TEST(DTypeTest, OutOfRangeCodesAreInvalid) {
  const auto bogus = static_cast<DType>(200);
  EXPECT_EQ(DTypeSize(bogus), 0u);
  EXPECT_EQ(DTypeName(bogus), "invalid");
  EXPECT_FALSE(DTypeIsFloating(bogus));
}

TEST(DTypeTest, FromNameInvertsName) {
  for (uint8_t code = 1; code <= kMaxDType; ++code) {
    const auto dtype = static_cast<DType>(code);
    EXPECT_EQ(DTypeFromName(DTypeName(dtype)), dtype);
  }
  EXPECT_EQ(DTypeFromName("invalid"), DType::kInvalid);
  EXPECT_EQ(DTypeFromName("float"), DType::kInvalid);
  EXPECT_EQ(DTypeFromName(""), DType::kInvalid);
}

}  // namespace
}  // namespace upguard
