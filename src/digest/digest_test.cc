// DigestTensor's contract: what it binds (order, shape, dtype), its small API, and its errors.
// Equivalence of routes (strided, threaded, chunked) is in digest_routes_test.cc.
#include "digest/digest.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <numeric>
#include <vector>

#include "digest/digest_test_util.h"
#include "digest/root.h"

namespace upguard {
namespace {

using testing::ContiguousStrides;
using testing::OwnedView;

Digest128 DigestOf(const OwnedView& tensor, DigestOptions options = {}) {
  StatusOr<TensorDigest> digest = DigestTensor(tensor.view(), options);
  EXPECT_TRUE(digest.ok()) << digest.status().ToString();
  return digest.ok() ? digest->digest : Digest128{};
}

OwnedView Contiguous(DType dtype, std::vector<int64_t> shape, const void* data) {
  std::vector<int64_t> strides = ContiguousStrides(shape);
  return {dtype, std::move(shape), std::move(strides), data};
}

TEST(DigestTest, HexIsCanonicalOrder) {
  const Digest128 digest{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  EXPECT_EQ(digest.Hex(), "0123456789abcdeffedcba9876543210");
  EXPECT_EQ(digest.Short(), "01234567");
  uint8_t canonical[16];
  digest.ToCanonical(canonical);
  XXH128_canonical_t expected;
  XXH128_canonicalFromHash(&expected, XXH128_hash_t{digest.low, digest.high});
  EXPECT_EQ(std::memcmp(canonical, expected.digest, 16), 0);
  EXPECT_EQ(Digest128::FromCanonical(canonical), digest);
}

TEST(DigestTest, ParseHexRoundTripsAndRejectsJunk) {
  const Digest128 digest{0xdeadbeef00000001ULL, 0x8000000000000000ULL};
  StatusOr<Digest128> parsed = ParseDigestHex(digest.Hex());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, digest);
  EXPECT_EQ(*ParseDigestHex("DEADBEEF000000018000000000000000"), digest);
  EXPECT_FALSE(ParseDigestHex("deadbeef").ok());
  EXPECT_FALSE(ParseDigestHex("deadbeef00000001800000000000000g").ok());
}

TEST(DigestTest, DigestBytesIsPlainXxh3) {
  const char text[] = "upguard";
  const XXH128_hash_t expected = XXH3_128bits(text, 7);
  EXPECT_EQ(DigestBytes(text, 7), (Digest128{expected.high64, expected.low64}));
  const XXH128_hash_t empty = XXH3_128bits(nullptr, 0);
  EXPECT_EQ(DigestBytes(nullptr, 0), (Digest128{empty.high64, empty.low64}));
}

// Leaves go through xxHash's run-time dispatch (SSE2, AVX2 or AVX-512 on this CPU): the same
// hash as the generic XXH3_128bits at every length class XXH3 distinguishes.
TEST(DigestTest, DispatchedLeafHashIsPlainXxh3) {
  std::vector<uint8_t> bytes(kDigestChunkBytes + 7);
  uint64_t state = 1;
  for (uint8_t& byte : bytes) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    byte = static_cast<uint8_t>(state >> 56);
  }
  std::vector<size_t> sizes = {1000, 1024, 4095, 4096, 65535, 65536};
  for (size_t size = 0; size <= 300; ++size) sizes.push_back(size);
  for (const size_t size : sizes) {
    for (const size_t misalign : {size_t{0}, size_t{3}}) {
      const XXH128_hash_t expected = XXH3_128bits(bytes.data() + misalign, size);
      EXPECT_EQ(HashChunk(bytes.data() + misalign, size),
                (Digest128{expected.high64, expected.low64}))
          << "size " << size << " misalign " << misalign;
    }
  }
}

TEST(DigestTest, OrderAware) {
  std::vector<int32_t> values(1000);
  std::iota(values.begin(), values.end(), 0);
  const Digest128 before = DigestOf(Contiguous(DType::kInt32, {1000}, values.data()));
  std::swap(values[10], values[500]);
  EXPECT_NE(DigestOf(Contiguous(DType::kInt32, {1000}, values.data())), before);
}

// Swapping two whole chunks keeps the multiset of leaves: a XOR or sum of leaves would not
// notice, the ordered root must.
TEST(DigestTest, ChunkOrderAware) {
  std::vector<uint8_t> bytes(2 * kDigestChunkBytes);
  for (size_t byte_idx = 0; byte_idx < bytes.size(); ++byte_idx) {
    bytes[byte_idx] = static_cast<uint8_t>(byte_idx < kDigestChunkBytes ? 1 : 2);
  }
  const int64_t numel = static_cast<int64_t>(bytes.size());
  const Digest128 before = DigestOf(Contiguous(DType::kUInt8, {numel}, bytes.data()));
  std::rotate(bytes.begin(), bytes.begin() + kDigestChunkBytes, bytes.end());
  EXPECT_NE(DigestOf(Contiguous(DType::kUInt8, {numel}, bytes.data())), before);
}

TEST(DigestTest, BindsShapeAndDtype) {
  const int32_t values[6] = {1, 2, 3, 4, 5, 6};
  const Digest128 flat = DigestOf(Contiguous(DType::kInt32, {6}, values));
  EXPECT_NE(DigestOf(Contiguous(DType::kInt32, {2, 3}, values)), flat);
  EXPECT_NE(DigestOf(Contiguous(DType::kInt32, {3, 2}, values)), flat);
  EXPECT_NE(DigestOf(Contiguous(DType::kInt32, {1, 6}, values)), flat);
  EXPECT_NE(DigestOf(Contiguous(DType::kFloat32, {6}, values)), flat);
  EXPECT_NE(DigestOf(Contiguous(DType::kUInt8, {24}, values)),
            DigestOf(Contiguous(DType::kInt8, {24}, values)));
}

TEST(DigestTest, EmptyTensorsDigestTheirHeader) {
  const Digest128 empty1 = DigestOf(Contiguous(DType::kFloat32, {0}, nullptr));
  const Digest128 empty2 = DigestOf(Contiguous(DType::kFloat32, {2, 0, 3}, nullptr));
  EXPECT_NE(empty1, empty2);
  EXPECT_EQ(empty1, testing::ReferenceDigest(DType::kFloat32, {0}, {}));
  EXPECT_EQ(empty2, testing::ReferenceDigest(DType::kFloat32, {2, 0, 3}, {}));
}

TEST(DigestTest, StatsOnlyForFloatingDtypesWhenAsked) {
  const float values[2] = {1.0f, 2.0f};
  StatusOr<TensorDigest> floating =
      DigestTensor(Contiguous(DType::kFloat32, {2}, values).view(), DigestOptions());
  ASSERT_TRUE(floating.ok());
  EXPECT_TRUE(floating->has_stats);
  EXPECT_EQ(floating->stats.mean, 1.5);

  DigestOptions no_stats;
  no_stats.stats = false;
  StatusOr<TensorDigest> off =
      DigestTensor(Contiguous(DType::kFloat32, {2}, values).view(), no_stats);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->has_stats);
  EXPECT_EQ(off->digest, floating->digest);

  StatusOr<TensorDigest> integer =
      DigestTensor(Contiguous(DType::kInt32, {2}, values).view(), DigestOptions());
  ASSERT_TRUE(integer.ok());
  EXPECT_FALSE(integer->has_stats);
}

void ExpectInvalid(const TensorView& view, const std::string& fragment,
                   DigestOptions options = {}) {
  StatusOr<TensorDigest> digest = DigestTensor(view, options);
  ASSERT_FALSE(digest.ok()) << "expected an error mentioning '" << fragment << "'";
  EXPECT_EQ(digest.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(digest.status().message().find(fragment), std::string::npos)
      << digest.status().message();
}

TEST(DigestTest, RejectsBadViews) {
  const float values[6] = {};
  const int64_t sizes[2] = {2, 3};
  const int64_t strides[2] = {3, 1};
  ExpectInvalid({DType::kInvalid, sizes, strides, 2, values}, "not a valid DType");
  ExpectInvalid({static_cast<DType>(99), sizes, strides, 2, values}, "dtype code 99");
  const int64_t negative_stride[2] = {3, -1};
  ExpectInvalid({DType::kFloat32, sizes, negative_stride, 2, values}, "stride of dim 1 is -1");
  ExpectInvalid({DType::kFloat32, sizes, strides, 2, nullptr}, "data is null");
  const int64_t negative_size[2] = {2, -3};
  ExpectInvalid({DType::kFloat32, negative_size, strides, 2, values}, "size of dim 1 is -3");
  ExpectInvalid({DType::kFloat32, sizes, strides, 65, values}, "ndim 65");
  ExpectInvalid({DType::kFloat32, sizes, strides, -1, values}, "ndim -1");
  ExpectInvalid({DType::kFloat32, nullptr, strides, 2, values}, "sizes is null");
  ExpectInvalid({DType::kFloat32, sizes, nullptr, 2, values}, "strides is null");
  const int64_t huge[2] = {int64_t{1} << 40, int64_t{1} << 40};
  ExpectInvalid({DType::kFloat32, huge, strides, 2, values}, "overflows");
  const int64_t wild_stride[2] = {int64_t{1} << 62, 1};
  ExpectInvalid({DType::kFloat32, sizes, wild_stride, 2, values}, "2^63 bytes");
  DigestOptions zero_threads;
  zero_threads.threads = 0;
  ExpectInvalid({DType::kFloat32, sizes, strides, 2, values}, "threads", zero_threads);
}

TEST(DigestTest, EmptyTensorMayHaveNullData) {
  const int64_t sizes[2] = {4, 0};
  const int64_t strides[2] = {0, 1};
  EXPECT_TRUE(DigestTensor({DType::kFloat32, sizes, strides, 2, nullptr}, {}).ok());
  // A zero size wins over sizes whose product would overflow.
  const int64_t huge_but_empty[3] = {int64_t{1} << 62, 0, int64_t{1} << 62};
  const int64_t zero_strides[3] = {0, 0, 0};
  EXPECT_TRUE(DigestTensor({DType::kFloat32, huge_but_empty, zero_strides, 3, nullptr}, {}).ok());
}

TEST(DigestTest, FromLeavesMatchesAndChecksTheCount) {
  std::vector<uint8_t> bytes(3 * kDigestChunkBytes + 5, 7);
  const std::vector<int64_t> shape = {static_cast<int64_t>(bytes.size())};
  std::vector<Digest128> leaves;
  for (size_t begin = 0; begin < bytes.size(); begin += kDigestChunkBytes) {
    leaves.push_back(DigestBytes(&bytes[begin], std::min(kDigestChunkBytes, bytes.size() - begin)));
  }
  StatusOr<Digest128> root =
      DigestFromLeaves(DType::kUInt8, shape.data(), 1, leaves.data(), leaves.size());
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(*root, DigestOf(Contiguous(DType::kUInt8, shape, bytes.data())));
  StatusOr<Digest128> short_list =
      DigestFromLeaves(DType::kUInt8, shape.data(), 1, leaves.data(), leaves.size() - 1);
  ASSERT_FALSE(short_list.ok());
  EXPECT_NE(short_list.status().message().find("make 4 chunks"), std::string::npos)
      << short_list.status().message();
}

}  // namespace
}  // namespace upguard
