// Every route to a digest gives the same answer (STYLE.md habit 4): the chunked, streaming
// implementation equals the one-shot reference of the spec; any thread count equals one thread;
// any strided view equals its contiguous copy. Digests and statistics are compared bitwise.
#include <gtest/gtest.h>

#include <vector>

#include "digest/digest.h"
#include "digest/digest_test_util.h"
#include "digest/digest_vectors.h"

namespace upguard {
namespace {

using testing::ContiguousStrides;
using testing::LogicalBytes;
using testing::OwnedView;
using testing::StatsBitEqual;
using testing::StatsText;

std::vector<uint8_t> Pattern(DType dtype, uint64_t numel, const char* pattern) {
  StatusOr<std::vector<uint8_t>> bytes = GeneratePattern(dtype, numel, pattern);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>();
}

TensorDigest Digest(const OwnedView& tensor, int threads = 1,
                    int stats_version = kStatsVersionLatest) {
  DigestOptions options;
  options.threads = threads;
  options.stats_version = stats_version;
  StatusOr<TensorDigest> digest = DigestTensor(tensor.view(), options);
  EXPECT_TRUE(digest.ok()) << digest.status().ToString();
  return digest.ok() ? *digest : TensorDigest();
}

void ExpectSame(const TensorDigest& got, const TensorDigest& want, const std::string& what) {
  EXPECT_EQ(got.digest, want.digest) << what;
  EXPECT_EQ(got.has_stats, want.has_stats) << what;
  EXPECT_TRUE(StatsBitEqual(got.stats, want.stats))
      << what << "\n got " << StatsText(got.stats) << "\nwant " << StatsText(want.stats);
}

// The digest of the contiguous copy of `tensor`'s logical bytes.
TensorDigest DigestOfCopy(const OwnedView& tensor, int stats_version = kStatsVersionLatest) {
  const std::vector<uint8_t> bytes = LogicalBytes(tensor);
  return Digest({tensor.dtype, tensor.sizes, ContiguousStrides(tensor.sizes), bytes.data()}, 1,
                stats_version);
}

// Chunked + streamed (DigestTensor) == whole string + one-shot (reference), for every dtype and
// element counts on both sides of chunk boundaries, with either statistics version (whose
// digests are equal).
TEST(DigestRoutesTest, MatchesOneShotReferenceAroundChunkBoundaries) {
  for (uint8_t code = 1; code <= kMaxDType; ++code) {
    const auto dtype = static_cast<DType>(code);
    const uint64_t per_chunk = kDigestChunkBytes / DTypeSize(dtype);
    for (const uint64_t numel : {uint64_t{0}, uint64_t{1}, uint64_t{7}, per_chunk - 1, per_chunk,
                                 per_chunk + 1, 3 * per_chunk + 5}) {
      const char* pattern = DTypeIsFloating(dtype) && numel % 2 ? "special" : "lcg:11";
      const std::vector<uint8_t> bytes = Pattern(dtype, numel, pattern);
      const std::vector<int64_t> shape = {static_cast<int64_t>(numel)};
      for (const int version : {kStatsVersionV1, kStatsVersionV2}) {
        const TensorDigest got = Digest({dtype, shape, {1}, bytes.data()}, 1, version);
        const std::string what = std::string(DTypeName(dtype)) + " numel " + std::to_string(numel) +
                                 " v" + std::to_string(version);
        EXPECT_EQ(got.digest, testing::ReferenceDigest(dtype, shape, bytes)) << what;
        if (DTypeIsFloating(dtype)) {
          const TensorStats want = testing::ReferenceStats(dtype, bytes, version);
          EXPECT_TRUE(StatsBitEqual(got.stats, want))
              << what << "\n got " << StatsText(got.stats) << "\nwant " << StatsText(want);
        }
      }
    }
  }
}

// The versions differ only in the statistics: the same digest, and a version other than 1 or 2
// is refused.
TEST(DigestRoutesTest, StatsVersionsShareTheDigest) {
  const std::vector<uint8_t> bytes = Pattern(DType::kFloat32, 100000, "lcg:13");
  const OwnedView tensor{DType::kFloat32, {100000}, {1}, bytes.data()};
  const TensorDigest v1 = Digest(tensor, 1, kStatsVersionV1);
  const TensorDigest v2 = Digest(tensor, 1, kStatsVersionV2);
  EXPECT_EQ(v1.digest, v2.digest);
  EXPECT_EQ(v1.stats.finite_count, v2.stats.finite_count);
  EXPECT_TRUE(testing::SameBits(v1.stats.min, v2.stats.min));
  EXPECT_TRUE(testing::SameBits(v1.stats.max, v2.stats.max));
  EXPECT_TRUE(StatsBitEqual(Digest(tensor).stats, v2.stats)) << "the default is v2";
  for (const int bad : {0, 3, -1}) {
    DigestOptions options;
    options.stats_version = bad;
    StatusOr<TensorDigest> refused = DigestTensor(tensor.view(), options);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("stats_version"), std::string::npos);
  }
}

TEST(DigestRoutesTest, ScalarMatchesReference) {
  const double value = 2.5;
  const TensorDigest got = Digest({DType::kFloat64, {}, {}, &value});
  const std::vector<uint8_t> bytes(reinterpret_cast<const uint8_t*>(&value),
                                   reinterpret_cast<const uint8_t*>(&value) + 8);
  EXPECT_EQ(got.digest, testing::ReferenceDigest(DType::kFloat64, {}, bytes));
  EXPECT_EQ(got.stats.finite_count, 1u);
  EXPECT_EQ(got.stats.mean, 2.5);
}

// 1, 2, 3, 4 and 8 threads: the same digest and bitwise the same statistics, contiguous and
// strided, with a chunk count that does not divide evenly among the workers.
TEST(DigestRoutesTest, ThreadCountDoesNotMatter) {
  struct Case {
    DType dtype;
    const char* pattern;
  };
  for (const Case& c : {Case{DType::kFloat32, "lcg:3"}, Case{DType::kFloat16, "special"},
                        Case{DType::kBFloat16, "lcg:4"}, Case{DType::kInt64, "lcg:5"}}) {
    const uint64_t per_chunk = kDigestChunkBytes / DTypeSize(c.dtype);
    const int64_t rows = 257;
    // 165 chunks: DigestTensor gives each worker at least 32 (digest.cc), so 2 to 5 workers
    // with uneven shares.
    const int64_t cols = static_cast<int64_t>((165 * per_chunk - 123) / rows);
    const std::vector<uint8_t> bytes = Pattern(c.dtype, rows * cols, c.pattern);
    const OwnedView contiguous{c.dtype, {rows, cols}, {cols, 1}, bytes.data()};
    const OwnedView transposed{c.dtype, {cols, rows}, {1, cols}, bytes.data()};
    for (const int version : {kStatsVersionV1, kStatsVersionV2}) {
      for (const OwnedView* tensor : {&contiguous, &transposed}) {
        const std::string what = std::string(DTypeName(c.dtype)) +
                                 (tensor == &contiguous ? " contiguous" : " transposed") + " v" +
                                 std::to_string(version);
        const TensorDigest one = Digest(*tensor, 1, version);
        if (tensor == &contiguous) {
          EXPECT_EQ(one.digest, testing::ReferenceDigest(c.dtype, tensor->sizes, bytes));
          if (DTypeIsFloating(c.dtype)) {
            EXPECT_TRUE(StatsBitEqual(one.stats, testing::ReferenceStats(c.dtype, bytes, version)))
                << what;
          }
        } else {
          ExpectSame(one, DigestOfCopy(*tensor, version), what + " vs copy");
        }
        for (const int threads : {2, 3, 4, 8}) {
          ExpectSame(Digest(*tensor, threads, version), one,
                     what + " threads " + std::to_string(threads));
        }
      }
    }
  }
}

// Views torch produces: each digests like its contiguous copy.
TEST(DigestRoutesTest, StridedViewsMatchContiguousCopy) {
  const std::vector<uint8_t> storage = Pattern(DType::kFloat32, 300000, "lcg:9");
  const float* base = reinterpret_cast<const float*>(storage.data());
  const std::vector<OwnedView> views = {
      {DType::kFloat32, {300, 400}, {1, 300}, base},              // .t() of a [400, 300]
      {DType::kFloat32, {299, 399}, {400, 1}, base + 401},        // [1:, 1:] of a [300, 400]
      {DType::kFloat32, {300, 200}, {400, 2}, base + 1},          // [:, 1::2]
      {DType::kFloat32, {50, 60, 70}, {1, 50, 3000}, base},       // permute(2, 1, 0)
      {DType::kFloat32, {4, 70000}, {0, 1}, base + 3},            // expand(4, -1), multi-chunk
      {DType::kFloat32, {70000, 4}, {1, 0}, base},                // inner broadcast
      {DType::kFloat32, {5, 1, 33000}, {33001, 12345, 1}, base},  // rows straddle chunks
      {DType::kFloat32, {3, 3}, {0, 0}, base + 17},               // one value everywhere
  };
  for (size_t view_idx = 0; view_idx < views.size(); ++view_idx) {
    for (const int version : {kStatsVersionV1, kStatsVersionV2}) {
      for (const int threads : {1, 4}) {
        ExpectSame(Digest(views[view_idx], threads, version),
                   DigestOfCopy(views[view_idx], version),
                   "view " + std::to_string(view_idx) + " threads " + std::to_string(threads) +
                       " v" + std::to_string(version));
      }
    }
  }
}

// The same for every element size, including the 16-byte complex128.
TEST(DigestRoutesTest, StridedEveryDtypeMatchesContiguousCopy) {
  for (uint8_t code = 1; code <= kMaxDType; ++code) {
    const auto dtype = static_cast<DType>(code);
    const std::vector<uint8_t> storage = Pattern(dtype, 20000, "lcg:2");
    const OwnedView transposed{dtype, {100, 150}, {1, 100}, storage.data()};
    const OwnedView stepped{dtype, {40, 30}, {300, 3}, storage.data()};
    ExpectSame(Digest(transposed), DigestOfCopy(transposed), std::string(DTypeName(dtype)));
    ExpectSame(Digest(stepped), DigestOfCopy(stepped), std::string(DTypeName(dtype)));
  }
}

}  // namespace
}  // namespace upguard
