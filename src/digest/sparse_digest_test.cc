#include "digest/sparse_digest.h"

#include <gtest/gtest.h>

#include <vector>

namespace upguard {
namespace {

// A 3x4 float32 COO tensor with nnz entries at (0, 1) and (2, 3).
struct Coo {
  std::vector<int64_t> indices = {0, 2, 1, 3};  // [2, nnz]
  std::vector<float> values = {1.5f, -2.0f};
  int64_t index_sizes[2] = {2, 2};
  int64_t index_strides[2] = {2, 1};
  int64_t value_sizes[1] = {2};
  int64_t value_strides[1] = {1};
  int64_t dense[2] = {3, 4};

  StatusOr<TensorDigest> Digest(SparseLayout layout = SparseLayout::kCoo) const {
    const TensorView parts[] = {{DType::kInt64, index_sizes, index_strides, 2, indices.data()},
                                {DType::kFloat32, value_sizes, value_strides, 1, values.data()}};
    return DigestSparse(layout, DType::kFloat32, dense, 2, parts, 2, DigestOptions{});
  }
};

TEST(SparseDigest, EqualPartsGiveEqualDigestsAndTheValuesStatistics) {
  Coo a, b;
  ASSERT_TRUE(a.Digest().ok());
  EXPECT_EQ(a.Digest()->digest, b.Digest()->digest);
  ASSERT_TRUE(a.Digest()->has_stats);
  EXPECT_EQ(a.Digest()->stats.min, -2.0);
  EXPECT_EQ(a.Digest()->stats.max, 1.5);
  EXPECT_EQ(a.Digest()->stats.finite_count, 2u);  // the stored values, not the 12 dense ones
}

TEST(SparseDigest, EachPartAndTheDenseShapeChangeTheDigest) {
  const Coo base;
  Coo value = base;
  value.values[1] = -2.5f;
  Coo index = base;
  index.indices[3] = 2;
  Coo shape = base;
  shape.dense[1] = 5;
  EXPECT_NE(base.Digest()->digest, value.Digest()->digest);
  EXPECT_NE(base.Digest()->digest, index.Digest()->digest);
  EXPECT_NE(base.Digest()->digest, shape.Digest()->digest);
}

TEST(SparseDigest, DiffersFromTheDenseDigestAndRefusesAWrongPartCount) {
  const Coo coo;
  std::vector<float> dense(12, 0.0f);
  dense[1] = 1.5f;
  dense[11] = -2.0f;
  const int64_t strides[2] = {4, 1};
  const TensorView view{DType::kFloat32, coo.dense, strides, 2, dense.data()};
  EXPECT_NE(coo.Digest()->digest, DigestTensor(view, DigestOptions{})->digest);
  EXPECT_FALSE(coo.Digest(SparseLayout::kCsr).ok());  // CSR has three parts
}

}  // namespace
}  // namespace upguard
