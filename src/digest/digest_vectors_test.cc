// tests/data/digest_vectors.txt is what other implementations (the Python adapter, a CUDA
// kernel) check themselves against; this test keeps the C++ implementation honest against it.
#include "digest/digest_vectors.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "base/file.h"
#include "digest/digest_test_util.h"

namespace upguard {
namespace {

using testing::StatsBitEqual;
using testing::StatsText;

TEST(DigestVectorsTest, CheckedInVectorsStillHold) {
  const std::string path = std::string(UPGUARD_SOURCE_DIR) + "/tests/data/digest_vectors.txt";
  StatusOr<std::string> text = ReadFileToString(path);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  std::istringstream lines(*text);
  std::string line;
  int vector_count = 0;
  for (int line_no = 1; std::getline(lines, line); ++line_no) {
    if (line.empty() || line[0] == '#') continue;
    StatusOr<DigestVector> want = ParseDigestVector(line);
    ASSERT_TRUE(want.ok()) << path << ":" << line_no << ": " << want.status().ToString();
    StatusOr<DigestVector> got = MakeDigestVector(want->dtype, want->shape, want->pattern);
    ASSERT_TRUE(got.ok()) << path << ":" << line_no << ": " << got.status().ToString();
    EXPECT_EQ(got->expected.digest, want->expected.digest) << path << ":" << line_no;
    EXPECT_EQ(got->expected.has_stats, want->expected.has_stats) << path << ":" << line_no;
    EXPECT_TRUE(StatsBitEqual(got->expected.stats, want->expected.stats))
        << path << ":" << line_no << "\n got " << StatsText(got->expected.stats);
    EXPECT_EQ(FormatDigestVector(*got), line) << path << ":" << line_no;
    ++vector_count;
  }
  EXPECT_GT(vector_count, 80) << "the vector file looks truncated; regenerate it (digest.md §8)";
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
