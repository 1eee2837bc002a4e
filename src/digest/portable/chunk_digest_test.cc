// The CUDA digest's building blocks, run on the host the way the kernel runs them (eight lanes
// per chunk, then the root over the header and the canonical leaves): they must give the CPU
// digest bit for bit, on the checked-in vectors and on chunks with every kind of value.
#include "digest/portable/chunk_digest.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "base/file.h"
#include "digest/digest_test_util.h"
#include "digest/digest_vectors.h"
#include "digest/root.h"
#include "digest/stats.h"

namespace upguard::portable {
namespace {

using upguard::testing::SameBits;
using upguard::testing::StatsBitEqual;
using upguard::testing::StatsText;

// The kernel's steps on the host: every chunk by eight lanes, the leaves after the header, the
// statistics (of `stats_version`) folded in chunk order.
TensorDigest PortableDigest(DType dtype, const std::vector<int64_t>& shape,
                            const std::vector<uint8_t>& bytes, int stats_version) {
  StatusOr<TensorLayout> layout =
      CheckShape("test", dtype, shape.data(), static_cast<int>(shape.size()));
  EXPECT_TRUE(layout.ok());
  const bool stats = DTypeIsFloating(dtype);
  std::vector<uint8_t> message(kMaxDigestHeaderBytes + 16 * layout->chunk_count);
  size_t length = WriteDigestHeader(dtype, shape.data(), static_cast<int>(shape.size()), *layout,
                                    message.data());
  ChunkSummary total;
  for (uint64_t chunk = 0; chunk < layout->chunk_count; ++chunk) {
    const uint8_t* data = bytes.data() + chunk * kDigestChunkBytes;
    const size_t size =
        std::min<uint64_t>(kDigestChunkBytes, bytes.size() - chunk * kDigestChunkBytes);
    uint64_t acc[8];
    LaneStats lanes[kStatsLanes];
    for (int lane = 7; lane >= 0; --lane) {  // any order: the lanes are independent
      ChunkLane(dtype, data, size, stats ? stats_version : 0, lane, &acc[lane], &lanes[lane]);
    }
    ChunkSummary summary;
    ChunkFinish(data, size, acc, lanes, stats, message.data() + length, &summary);
    length += 16;
    if (stats) FoldChunk(summary, &total);
  }
  TensorDigest out;
  uint64_t low, high;
  Xxh3_128(message.data(), length, &low, &high);
  out.digest = Digest128{high, low};
  out.has_stats = stats;
  if (stats) out.stats = FinishStats(total);
  return out;
}

// Every vector of the file of `stats_version`.
void ExpectVectorsHold(int stats_version) {
  const std::string path = std::string(UPGUARD_SOURCE_DIR) + "/" + DigestVectorsFile(stats_version);
  StatusOr<std::string> text = ReadFileToString(path);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  StatusOr<std::vector<DigestVector>> vectors = ParseDigestVectors(*text);
  ASSERT_TRUE(vectors.ok()) << path << ": " << vectors.status().ToString();
  int checked = 0;
  for (const DigestVector& want : *vectors) {
    const std::string where = path + ": " + FormatDigestVector(want);
    uint64_t numel = 1;
    for (int64_t size : want.shape) numel *= static_cast<uint64_t>(size);
    StatusOr<std::vector<uint8_t>> bytes = GeneratePattern(want.dtype, numel, want.pattern);
    ASSERT_TRUE(bytes.ok()) << where;
    const TensorDigest got = PortableDigest(want.dtype, want.shape, *bytes, stats_version);
    EXPECT_EQ(got.digest, want.expected.digest) << where;
    EXPECT_TRUE(StatsBitEqual(got.stats, want.expected.stats))
        << where << "\n got " << StatsText(got.stats);
    ++checked;
  }
  EXPECT_GT(checked, 80);
}

TEST(PortableDigestTest, CheckedInVectorsHold) { ExpectVectorsHold(1); }
TEST(PortableDigestTest, CheckedInV2VectorsHold) { ExpectVectorsHold(2); }

// Chunks full of zeros of both signs, subnormals, NaN, infinities and ordinary values, in
// every floating dtype and at lengths that end inside a lane round: the same statistics, every
// bit, as the CPU's kernels (stats.h), and the same leaf.
TEST(PortableDigestTest, ChunksOfEveryKindMatchTheCpuKernels) {
  std::mt19937_64 rng(3);
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    const size_t elem = DTypeSize(dtype);
    for (size_t count : {1, 7, 8, 9, 31, 33, 100, 1000, 65536 / 8 - 5, 65536 / 8}) {
      for (int kind = 0; kind < 4; ++kind) {  // random bits; ordinary; with zeros; with specials
        std::vector<uint8_t> bytes(count * elem);
        for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(rng());
        if (kind > 0) {
          for (size_t idx = 0; idx < count; ++idx) {  // exponent bits cleared of all-ones
            uint8_t* top = &bytes[idx * elem + elem - 1];
            *top &= 0x3f;
            if (kind == 2 && idx % 5 == 0) {
              std::fill(&bytes[idx * elem], &bytes[idx * elem] + elem, 0);
              if (idx % 10 == 0) *top = 0x80;  // -0.0
            }
            if (kind == 3 && idx % 7 == 0) *top |= 0x7f;  // many NaN and +-Inf patterns
          }
        }
        for (const int version : {1, 2}) {
          uint64_t acc[8];
          LaneStats lanes[kStatsLanes];
          for (int lane = 0; lane < 8; ++lane) {
            ChunkLane(dtype, bytes.data(), bytes.size(), version, lane, &acc[lane], &lanes[lane]);
          }
          uint8_t leaf[16];
          ChunkSummary got;
          ChunkFinish(bytes.data(), bytes.size(), acc, lanes, true, leaf, &got);
          const ChunkStats want = ComputeChunkStats(dtype, bytes.data(), bytes.size(), version);
          const std::string where = std::string(DTypeName(dtype)) + " x" + std::to_string(count) +
                                    " kind " + std::to_string(kind) + " v" +
                                    std::to_string(version);
          EXPECT_TRUE(SameBits(got.sum, want.sum)) << where;
          EXPECT_TRUE(SameBits(got.sumsq, want.sumsq)) << where;
          EXPECT_EQ(got.finite, want.finite_count) << where;
          EXPECT_EQ(got.nan, want.nan_count) << where;
          EXPECT_EQ(got.pos_inf, want.pos_inf_count) << where;
          EXPECT_EQ(got.neg_inf, want.neg_inf_count) << where;
          if (want.finite_count > 0) {
            EXPECT_TRUE(SameBits(got.min, want.min)) << where;
            EXPECT_TRUE(SameBits(got.max, want.max)) << where;
          }
          uint8_t want_leaf[16];
          HashChunk(bytes.data(), bytes.size()).ToCanonical(want_leaf);
          EXPECT_EQ(0, std::memcmp(leaf, want_leaf, 16)) << where;
        }
      }
    }
  }
}

// Shapes of zero, one and several chunks, the last one short: the whole tensor's digest.
TEST(PortableDigestTest, TensorsOfSeveralChunksMatchDigestTensor) {
  std::mt19937 rng(9);
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{0}, {3}, {60}, {128, 128}, {7, 50001}, {16384}}) {
    for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kInt64}) {
      uint64_t numel = 1;
      for (int64_t size : shape) numel *= static_cast<uint64_t>(size);
      std::vector<uint8_t> bytes(numel * DTypeSize(dtype));
      for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(rng() & 0x3f);  // finite values
      const std::vector<int64_t> strides = upguard::testing::ContiguousStrides(shape);
      TensorView view{dtype, shape.data(), strides.data(), static_cast<int>(shape.size()),
                      bytes.data()};
      for (const int version : {1, 2}) {
        DigestOptions options;
        options.stats_version = version;
        StatusOr<TensorDigest> want = DigestTensor(view, options);
        ASSERT_TRUE(want.ok());
        const TensorDigest got = PortableDigest(dtype, shape, bytes, version);
        const std::string what = std::string(DTypeName(dtype)) + " numel " + std::to_string(numel) +
                                 " v" + std::to_string(version);
        EXPECT_EQ(got.digest, want->digest) << what;
        EXPECT_TRUE(StatsBitEqual(got.stats, want->stats)) << what;
      }
    }
  }
}

}  // namespace
}  // namespace upguard::portable
