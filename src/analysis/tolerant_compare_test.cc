// The diff's tolerance on statistics: ULP distances per dtype, the bounds on min, max, mean and
// L2, the judge's answers per slot, and the policy the command-line options make.
#include "analysis/tolerant_compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

namespace upguard {
namespace {

Tolerance Parse(std::string_view text) {
  StatusOr<Tolerance> t = ParseTolerance(text);
  EXPECT_TRUE(t.ok()) << text;
  return t.ok() ? *t : Tolerance{};
}

TensorStats Stats(double min, double max, double mean, double l2, uint64_t finite) {
  TensorStats s;
  s.min = min;
  s.max = max;
  s.mean = mean;
  s.l2 = l2;
  s.finite_count = finite;
  return s;
}

TEST(TolerantCompareTest, UlpDistanceCountsValuesOfTheDtype) {
  EXPECT_EQ(UlpDistanceIn(DType::kFloat32, 1.0, std::nextafter(1.0f, 2.0f)), 1u);
  EXPECT_EQ(UlpDistanceIn(DType::kFloat32, 1.0, 1.0 + 3 * 0x1p-23), 3u);
  EXPECT_EQ(UlpDistanceIn(DType::kFloat32, 1.0, std::nextafter(1.0f, 0.0f)), 1u);  // binade edge
  EXPECT_EQ(UlpDistanceIn(DType::kFloat32, 0x1p-126, 0x1p-126 - 0x1p-149), 1u);    // to subnormal
  EXPECT_EQ(UlpDistanceIn(DType::kFloat32, -0x1p-149, 0x1p-149), 2u);              // across zero
  EXPECT_EQ(UlpDistanceIn(DType::kFloat32, 0.0, -0.0), 0u);
  EXPECT_EQ(UlpDistanceIn(DType::kFloat16, 1.0, 1.0 + 0x1p-10), 1u);
  EXPECT_EQ(UlpDistanceIn(DType::kFloat16, 0x1p-14, 0x1p-24), 1023u);  // least normal, subnormal
  EXPECT_EQ(UlpDistanceIn(DType::kBFloat16, 1.0, 1.0078125), 1u);
  EXPECT_EQ(UlpDistanceIn(DType::kFloat64, 1.0, std::nextafter(1.0, 2.0)), 1u);
  EXPECT_EQ(UlpDistanceIn(DType::kFloat64, -1e308, 1e308), 18429743317745373504u);
}

TEST(TolerantCompareTest, MinAndMaxAreElementsMeanAndL2GetTheImpliedBound) {
  const TensorStats a = Stats(-1.0, 2.0, 0.25, 10.0, 100);
  TensorStats b = a;
  b.max = 2.0 + 2 * 0x1p-22;  // 2 ULP above 2 in float32
  EXPECT_TRUE(StatsWithin(Parse("ulp:2"), DType::kFloat32, a, b));
  EXPECT_FALSE(StatsWithin(Parse("ulp:1"), DType::kFloat32, a, b));
  EXPECT_TRUE(StatsWithin(Parse("ulp:1"), DType::kFloat64, a, a));
  EXPECT_FALSE(StatsWithin(Parse("bitwise"), DType::kFloat32, a, a));  // digests differ

  b = a;
  b.mean = 0.25 + 4e-7;  // scale 2: ulp(2) = 2^-22 = 2.4e-7 per ULP of tolerance
  EXPECT_TRUE(StatsWithin(Parse("ulp:2"), DType::kFloat32, a, b));
  EXPECT_FALSE(StatsWithin(Parse("ulp:1"), DType::kFloat32, a, b));
  EXPECT_TRUE(StatsWithin(Parse("rel:2.1e-7"), DType::kFloat32, a, b));  // 2.1e-7 * 2 >= 4e-7
  EXPECT_FALSE(StatsWithin(Parse("rel:1.9e-7"), DType::kFloat32, a, b));

  b = a;
  b.l2 = 10.0 + 2.5e-6;  // ulp:N allows N * 2^-23 * 10 = N * 1.19e-6
  EXPECT_TRUE(StatsWithin(Parse("ulp:3"), DType::kFloat32, a, b));
  EXPECT_FALSE(StatsWithin(Parse("ulp:2"), DType::kFloat32, a, b));
  EXPECT_FALSE(StatsWithin(Parse("rel:2e-7"), DType::kFloat32, a, b));          // 2.0e-6
  EXPECT_TRUE(StatsWithin(Parse("rel:2e-7,abs:1e-7"), DType::kFloat32, a, b));  // + 1e-7 * 10
}

TEST(TolerantCompareTest, CountsMustBeEqualAndNothingFinitePasses) {
  TensorStats a = Stats(-1.0, 2.0, 0.25, 10.0, 100);
  TensorStats b = a;
  b.nan_count = 1;
  EXPECT_FALSE(StatsWithin(Parse("rel:1"), DType::kFloat32, a, b));
  b = a;
  b.finite_count = 99;
  b.pos_inf_count = 1;
  EXPECT_FALSE(StatsWithin(Parse("rel:1"), DType::kFloat32, a, b));
  a = TensorStats{};
  a.nan_count = 4;  // NaNs with other payloads: the digests differ, nothing else can
  EXPECT_TRUE(StatsWithin(Parse("ulp:0"), DType::kFloat16, a, a));
}

TEST(TolerantCompareTest, JudgeNeedsStatisticsAndTheSameDtypeAndShape) {
  StatusOr<TolerancePolicy> policy = PolicyFromOptions("rel:1e-6", "", "");
  ASSERT_TRUE(policy.ok());
  const PolicyJudge judge(*policy);
  ArgRecord a;
  a.kind = ArgKind::kTensor;
  a.dtype = DType::kFloat32;
  a.shape = {4};
  a.has_stats = true;
  a.stats = Stats(-1.0, 2.0, 0.25, 10.0, 4);
  ArgRecord b = a;
  b.stats.l2 = 10.000001;
  EXPECT_EQ(judge.Judge(a, b, "aten::mm", "", "forward"), Tolerated::kWithin);
  b.stats.l2 = 10.0001;
  EXPECT_EQ(judge.Judge(a, b, "aten::mm", "", "forward"), Tolerated::kBeyond);
  b = a;
  b.shape = {2, 2};
  EXPECT_EQ(judge.Judge(a, b, "aten::mm", "", "forward"), Tolerated::kBeyond);
  b = a;
  b.has_stats = false;  // recorded with --no-stats
  EXPECT_EQ(judge.Judge(a, b, "aten::mm", "", "forward"), Tolerated::kNoStats);
  EXPECT_EQ(judge.Describe("aten::mm", "fc", "forward"), "rel:1e-06");
}

TEST(TolerantCompareTest, OptionsMakeOnePolicyInOrder) {
  const std::string path = ::testing::TempDir() + "tolerant_compare_policy.txt";
  std::FILE* file = std::fopen(path.c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fputs("# mine\nop aten::mm ulp:4\nmodule blocks.* rel:1e-5\n", file);
  std::fclose(file);
  StatusOr<TolerancePolicy> policy =
      PolicyFromOptions("rel:1e-6", path, "aten::index_add_*,aten::scatter_add_");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  const PolicyJudge judge(*policy);
  EXPECT_EQ(judge.Summary(),
            "default rel:1e-06; op aten::mm ulp:4; module blocks.* rel:1e-05; nondeterministic "
            "aten::index_add_*; nondeterministic aten::scatter_add_");
  EXPECT_EQ(judge.Describe("aten::mm", "head", "forward"), "ulp:4");
  EXPECT_EQ(judge.Describe("aten::mm", "blocks.0", "forward"), "rel:1e-05");  // the last match wins
  EXPECT_EQ(judge.Describe("aten::add", "head", "forward"), "rel:1e-06");
  EXPECT_TRUE(judge.Nondeterministic("aten::index_add_"));
  EXPECT_FALSE(judge.Nondeterministic("aten::index_select"));

  StatusOr<TolerancePolicy> only_allowed = PolicyFromOptions("", "", "aten::index_add_");
  ASSERT_TRUE(only_allowed.ok());
  EXPECT_EQ(PolicyJudge(*only_allowed).Summary(),
            "default bitwise; nondeterministic aten::index_add_");
}

TEST(TolerantCompareTest, BadOptionsNameTheOption) {
  EXPECT_EQ(PolicyFromOptions("rel:x", "", "").status().message(),
            "--tolerance: invalid tolerance \"rel:x\"; use bitwise, ulp:N, rel:X or rel:X,abs:Y "
            "(e.g. ulp:4, rel:1e-6,abs:1e-7)");
  EXPECT_EQ(PolicyFromOptions("", "", "aten::a,,aten::b").status().message(),
            "--allow-nondeterministic: bad glob \"\" in \"aten::a,,aten::b\"; give "
            "comma-separated op-name globs without spaces, e.g. "
            "'aten::index_add_*,aten::scatter_add_'");
  const Status missing = PolicyFromOptions("", "/nonexistent/tol.txt", "").status();
  EXPECT_EQ(missing.message().rfind("--tolerance-policy: ", 0), 0u) << missing.message();
  const std::string path = ::testing::TempDir() + "tolerant_compare_bad.txt";
  std::FILE* file = std::fopen(path.c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fputs("default rel:1e-6\nops aten::mm ulp:4\n", file);
  std::fclose(file);
  EXPECT_EQ(PolicyFromOptions("", path, "").status().message(),
            path +
                ":2: unknown rule \"ops\"; a rule is `default TOLERANCE`, `op GLOB TOLERANCE`, "
                "`module GLOB TOLERANCE`, `at PHASE MODULE OP TOLERANCE` or "
                "`nondeterministic GLOB`");
}

}  // namespace
}  // namespace upguard
