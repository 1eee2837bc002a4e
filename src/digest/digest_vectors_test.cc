// tests/data/digest_vectors.txt is what other implementations (the Python adapter, a CUDA
// kernel) check themselves against; this test keeps the C++ implementation honest against it.
#include "digest/digest_vectors.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "base/file.h"
#include "digest/digest_test_util.h"

namespace upguard {
namespace {

using testing::StatsBitEqual;
using testing::StatsText;

// Every vector of the file of `stats_version`: regenerated, digested with that version, and
// written back to the same line.
void ExpectVectorsHold(int stats_version, int min_count) {
  const std::string path = std::string(UPGUARD_SOURCE_DIR) + "/" + DigestVectorsFile(stats_version);
  StatusOr<std::string> text = ReadFileToString(path);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  std::istringstream lines(*text);
  std::string line;
  int vector_count = 0;
  for (int line_no = 1; std::getline(lines, line); ++line_no) {
    if (line.empty() || line[0] == '#') continue;
    StatusOr<DigestVector> want = ParseDigestVector(line);
    ASSERT_TRUE(want.ok()) << path << ":" << line_no << ": " << want.status().ToString();
    StatusOr<DigestVector> got =
        MakeDigestVector(want->dtype, want->shape, want->pattern, stats_version);
    ASSERT_TRUE(got.ok()) << path << ":" << line_no << ": " << got.status().ToString();
    EXPECT_EQ(got->expected.digest, want->expected.digest) << path << ":" << line_no;
    EXPECT_EQ(got->expected.has_stats, want->expected.has_stats) << path << ":" << line_no;
    EXPECT_TRUE(StatsBitEqual(got->expected.stats, want->expected.stats))
        << path << ":" << line_no << "\n got " << StatsText(got->expected.stats);
    EXPECT_EQ(FormatDigestVector(*got), line) << path << ":" << line_no;
    ++vector_count;
  }
  EXPECT_GT(vector_count, min_count)
      << "the vector file looks truncated; regenerate it (digest.md §8)";
}

TEST(DigestVectorsTest, CheckedInVectorsStillHold) { ExpectVectorsHold(kStatsVersionV1, 80); }

TEST(DigestVectorsTest, CheckedInV2VectorsHold) { ExpectVectorsHold(kStatsVersionV2, 85); }

// The digests of v1's file and v2's are the same line by line (v2 changed statistics only); the
// statistics of some differ, or the v2 file would not test v2's lanes.
TEST(DigestVectorsTest, V1AndV2FilesShareTheirDigests) {
  std::vector<DigestVector> files[2];
  for (const int version : {kStatsVersionV1, kStatsVersionV2}) {
    StatusOr<std::string> text =
        ReadFileToString(std::string(UPGUARD_SOURCE_DIR) + "/" + DigestVectorsFile(version));
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    StatusOr<std::vector<DigestVector>> vectors = ParseDigestVectors(*text);
    ASSERT_TRUE(vectors.ok()) << DigestVectorsFile(version) << ": " << vectors.status().ToString();
    files[version - 1] = *std::move(vectors);
  }
  ASSERT_GE(files[1].size(), files[0].size());
  int stats_differ = 0;
  for (size_t idx = 0; idx < files[0].size(); ++idx) {
    EXPECT_EQ(files[0][idx].pattern, files[1][idx].pattern) << idx;
    EXPECT_EQ(files[0][idx].expected.digest, files[1][idx].expected.digest) << idx;
    stats_differ += !StatsBitEqual(files[0][idx].expected.stats, files[1][idx].expected.stats);
  }
  EXPECT_GT(stats_differ, 0);
}

TEST(DigestVectorsTest, ParseRejectsBadLines) {
  EXPECT_FALSE(ParseDigestVector("dtype=float32 shape=2").ok());
  EXPECT_FALSE(ParseDigestVector("dtype=float33 shape=2 pattern=iota digest=" +
                                 std::string(32, '0') + " stats=none")
                   .ok());
  EXPECT_FALSE(ParseDigestVector("dtype=int8 shape=2,x pattern=iota digest=" +
                                 std::string(32, '0') + " stats=none")
                   .ok());
  EXPECT_FALSE(ParseDigestVector("dtype=float32 shape=2 pattern=iota digest=" +
                                 std::string(32, '0') + " finite=1")
                   .ok());
}

TEST(DigestVectorsTest, PatternsAreExact) {
  // lcg values lie on a grid that every floating dtype holds exactly, so stats are exact too.
  StatusOr<std::vector<uint8_t>> special = GeneratePattern(DType::kBFloat16, 10, "special");
  ASSERT_TRUE(special.ok());
  const uint8_t expected_tail[2] = {0x00, 0xBE};  // -0.125 as bfloat16 0xBE00, little-endian
  EXPECT_EQ(std::memcmp(special->data() + 18, expected_tail, 2), 0);
  EXPECT_FALSE(GeneratePattern(DType::kInt32, 3, "special").ok());
  EXPECT_FALSE(GeneratePattern(DType::kInt32, 3, "lcg:").ok());
  EXPECT_FALSE(GeneratePattern(DType::kInt32, 3, "lcg:x1").ok());
}

}  // namespace
}  // namespace upguard
