// Tolerances: the text forms, the per-element rule, the per-comparison decision (which must
// agree with the per-element rule on every element), and policy files.
#include "capture/tolerance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace upguard {
namespace {

template <typename T>
StoredTensor Stored(DType dtype, const std::vector<T>& values) {
  return {
      "t",
      dtype,
      {static_cast<int64_t>(values.size())},
      std::string_view(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T))};
}

template <typename T>
ElementComparison Compare(DType dtype, const std::vector<T>& a, const std::vector<T>& b) {
  StatusOr<ElementComparison> c = CompareElements(Stored(dtype, a), Stored(dtype, b));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : ElementComparison{};
}

Tolerance Parse(std::string_view text) {
  StatusOr<Tolerance> t = ParseTolerance(text);
  EXPECT_TRUE(t.ok()) << text << ": " << t.status().ToString();
  return t.ok() ? *t : Tolerance{};
}

float FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

float Step(float value, int steps) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return FromBits(bits + steps);
}

TEST(ToleranceTest, ParsesTheThreeFormsAndPrintsThemBack) {
  EXPECT_EQ(Parse("bitwise").kind, Tolerance::Kind::kBitwise);
  const Tolerance ulp = Parse("ulp:4");
  EXPECT_EQ(ulp.kind, Tolerance::Kind::kUlp);
  EXPECT_EQ(ulp.ulp, 4u);
  const Tolerance rel = Parse("rel:1e-6");
  EXPECT_EQ(rel.kind, Tolerance::Kind::kRel);
  EXPECT_EQ(rel.rel, 1e-6);
  EXPECT_EQ(rel.abs, 0.0);
  const Tolerance both = Parse("rel:1e-5,abs:1e-7");
  EXPECT_EQ(both.rel, 1e-5);
  EXPECT_EQ(both.abs, 1e-7);

  EXPECT_EQ(Parse("bitwise").ToString(), "bitwise");
  EXPECT_EQ(Parse("ulp:0").ToString(), "ulp:0");
  EXPECT_EQ(Parse("ulp:18446744073709551615").ToString(), "ulp:18446744073709551615");
  EXPECT_EQ(Parse("rel:1e-6").ToString(), "rel:1e-06");
  EXPECT_EQ(Parse("rel:0.001,abs:0").ToString(), "rel:0.001");
  EXPECT_EQ(Parse("rel:1e-5,abs:1e-7").ToString(), "rel:1e-05,abs:1e-07");
  Tolerance odd;
  odd.kind = Tolerance::Kind::kRel;
  odd.rel = 0.1 + 0.2;
  EXPECT_EQ(odd.ToString(), "rel:0.30000000000000004");
  EXPECT_EQ(Parse(odd.ToString()).rel, odd.rel);
}

TEST(ToleranceTest, BadTextIsQuotedWithTheForms) {
  const StatusOr<Tolerance> t = ParseTolerance("ulp:-1");
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(),
            "invalid tolerance \"ulp:-1\"; use bitwise, ulp:N, rel:X or rel:X,abs:Y (e.g. ulp:4, "
            "rel:1e-6,abs:1e-7)");
  for (const char* text : {"",
                           "Bitwise",
                           "bitwise ",
                           "ulp",
                           "ulp:",
                           "ulp:1.5",
                           "ulp:4 ",
                           "ulp:18446744073709551616",
                           "rel:",
                           "rel:-1e-6",
                           "rel: 1e-6",
                           "rel:abc",
                           "rel:inf",
                           "rel:nan",
                           "rel:1e400",
                           "rel:1e-6,",
                           "rel:1e-6,abs:",
                           "rel:1e-6,ab:1",
                           "rel:1e-6,abs:1e-7,x",
                           "abs:1e-7",
                           "rel:1e-6;abs:1e-7"}) {
    const StatusOr<Tolerance> bad = ParseTolerance(text);
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(bad.status().message().rfind("invalid tolerance \"" + std::string(text) + "\"; ", 0),
              0u)
        << text;
  }
}

TEST(ToleranceTest, ElementPairs) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const double max = std::numeric_limits<float>::max();
  const Tolerance bitwise = Parse("bitwise"), ulp2 = Parse("ulp:2"), rel = Parse("rel:1e-6"),
                  rel_abs = Parse("rel:1e-6,abs:1e-7");
  const DType f32 = DType::kFloat32;
  EXPECT_TRUE(WithinTolerance(bitwise, f32, 1.0, 1.0, 0));
  EXPECT_TRUE(WithinTolerance(bitwise, f32, nan, nan, 0));
  EXPECT_FALSE(WithinTolerance(bitwise, f32, 0.0, -0.0, 0));
  EXPECT_FALSE(WithinTolerance(bitwise, f32, 1.0, Step(1.0f, 1), 1));

  EXPECT_TRUE(WithinTolerance(ulp2, f32, 1.0, Step(1.0f, 2), 2));
  EXPECT_FALSE(WithinTolerance(ulp2, f32, 1.0, Step(1.0f, 3), 3));
  EXPECT_TRUE(WithinTolerance(ulp2, f32, 0.0, -0.0, 0));
  EXPECT_TRUE(WithinTolerance(ulp2, f32, inf, max, 1));
  EXPECT_TRUE(WithinTolerance(ulp2, f32, nan, -nan, 0));
  EXPECT_FALSE(WithinTolerance(ulp2, f32, nan, 1.0, 0));
  EXPECT_TRUE(WithinTolerance(ulp2, DType::kInt32, 7, 9, 2));

  EXPECT_TRUE(WithinTolerance(rel, f32, 1.0, 1.0 + 1e-6, 8));
  EXPECT_FALSE(WithinTolerance(rel, f32, 1.0, 1.0 + 2e-6, 17));
  EXPECT_TRUE(WithinTolerance(rel, f32, 0.0, -0.0, 0));
  EXPECT_TRUE(WithinTolerance(rel, f32, nan, nan, 0));
  EXPECT_FALSE(WithinTolerance(rel, f32, inf, max, 1));
  EXPECT_FALSE(WithinTolerance(rel, f32, inf, -inf, 0));
  EXPECT_FALSE(WithinTolerance(rel, f32, 0.0, 1e-30, 1000));
  EXPECT_TRUE(WithinTolerance(rel_abs, f32, 0.0, 1e-30, 1000));
  EXPECT_FALSE(WithinTolerance(rel_abs, f32, 0.0, 2e-7, 1000));
}

// ComparisonWithin(t, compare(a, b)) == every element pair within t, for pairs of every kind
// and a grid of tolerances.
TEST(ToleranceTest, ComparisonWithinAgreesWithEveryElement) {
  const float inf = std::numeric_limits<float>::infinity();
  const float max = std::numeric_limits<float>::max();
  const float nan = FromBits(0x7FC00000), other_nan = FromBits(0x7FC00001);
  const std::vector<std::vector<std::pair<float, float>>> tensors = {
      {{1, 1}, {2, 2}},
      {{1, Step(1, 1)}, {1000, Step(1000, 3)}, {0, -0.0f}},
      {{1e-30f, 2e-30f}, {1, Step(1, 1)}},
      {{1e-3f, Step(1e-3f, 20)}, {1, Step(1, 2)}},
      {{inf, max}, {3, 3}},
      {{inf, -inf}},
      {{nan, other_nan}, {5, Step(5, 1)}},
      {{nan, 1}, {1, 1}},
      {{0, FromBits(1)}, {-0.0f, FromBits(0x80000002)}},
  };
  std::vector<Tolerance> tolerances = {Parse("bitwise"), Parse("ulp:0"), Parse("ulp:1"),
                                       Parse("ulp:2"),   Parse("ulp:3"), Parse("ulp:40")};
  for (const char* rel : {"1e-7", "1e-6", "1e-5", "0.5"}) {
    for (const char* abs : {"0", "1e-31", "1e-9", "1e-7", "1e-3"}) {
      tolerances.push_back(Parse(std::string("rel:") + rel + ",abs:" + abs));
    }
  }
  int within_count = 0, outside_count = 0;
  for (const auto& pairs : tensors) {
    std::vector<float> a, b;
    for (const auto& [x, y] : pairs) {
      a.push_back(x);
      b.push_back(y);
    }
    const ElementComparison whole = Compare(DType::kFloat32, a, b);
    for (const Tolerance& t : tolerances) {
      bool every = true;
      for (const auto& [x, y] : pairs) {
        const uint64_t ulp =
            Compare(DType::kFloat32, std::vector<float>{x}, std::vector<float>{y}).max_ulp;
        every &= WithinTolerance(t, DType::kFloat32, x, y, ulp);
      }
      EXPECT_EQ(ComparisonWithin(t, whole), every)
          << t.ToString() << " on " << SummarizeComparison(whole);
      (every ? within_count : outside_count)++;
    }
  }
  // Both answers occur often enough for the agreement to mean something.
  EXPECT_GT(within_count, 50);
  EXPECT_GT(outside_count, 50);
}

// Neither max_abs_error <= abs nor max_rel_error <= rel, yet every element passes: only the
// error frontier decides this.
TEST(ToleranceTest, RelAndAbsTogetherAreDecidedExactly) {
  const ElementComparison c = Compare(DType::kFloat64, std::vector<double>{1.0, 1e-3},
                                      std::vector<double>{1.0 + 2.4e-7, 1e-3 + 1e-9});
  EXPECT_GT(c.max_abs_error, 1e-7);
  EXPECT_GT(c.max_rel_error, 5e-7);
  EXPECT_TRUE(ComparisonWithin(Parse("rel:5e-7,abs:1e-7"), c));
  EXPECT_FALSE(ComparisonWithin(Parse("rel:1e-7,abs:1e-7"), c));
  EXPECT_FALSE(ComparisonWithin(Parse("rel:5e-7,abs:1e-10"), c));
}

TEST(ToleranceTest, IdenticalPassesEverythingAndIncomparablePassesNothing) {
  const std::vector<float> a = {1, 2};
  const ElementComparison same = Compare(DType::kFloat32, a, a);
  EXPECT_TRUE(ComparisonWithin(Parse("bitwise"), same));
  ElementComparison incomparable;
  incomparable.comparable = false;
  EXPECT_FALSE(ComparisonWithin(Parse("rel:0.5"), incomparable));
}

TEST(TolerancePolicyTest, LastMatchingRuleWins) {
  const std::string text =
      "# tolerances for the GPT run\n"
      "\n"
      "default rel:1e-6\n"
      "op aten::softmax* ulp:4   # fused kernels\n"
      "module blocks.*.attn rel:1e-5,abs:1e-7\n"
      "  op aten::_softmax bitwise\r\n"
      "nondeterministic aten::index_add_*\n";
  StatusOr<TolerancePolicy> policy = ParseTolerancePolicy(text, "tol.txt");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  ASSERT_EQ(policy->rules.size(), 5u);
  EXPECT_EQ(policy->rules[1].kind, TolerancePolicy::Rule::Kind::kOp);
  EXPECT_EQ(policy->rules[1].pattern, "aten::softmax*");
  EXPECT_EQ(policy->rules[1].line, 4);
  EXPECT_EQ(policy->rules[4].kind, TolerancePolicy::Rule::Kind::kNondeterministic);

  EXPECT_EQ(policy->For("aten::mm", "blocks.0.mlp", "forward").ToString(), "rel:1e-06");
  EXPECT_EQ(policy->For("aten::softmax", "blocks.0.mlp", "forward").ToString(), "ulp:4");
  EXPECT_EQ(policy->For("aten::softmax", "blocks.1.attn", "forward").ToString(),
            "rel:1e-05,abs:1e-07");
  EXPECT_EQ(policy->For("aten::_softmax", "blocks.1.attn", "forward").ToString(), "bitwise");
  EXPECT_EQ(policy->For("aten::mm", "blocks.1.attn.proj", "forward").ToString(), "rel:1e-06");
  EXPECT_TRUE(policy->Nondeterministic("aten::index_add_"));
  EXPECT_FALSE(policy->Nondeterministic("aten::index_add"));
  EXPECT_FALSE(policy->Nondeterministic("aten::softmax"));

  StatusOr<TolerancePolicy> empty = ParseTolerancePolicy("# nothing\n\n", "empty.txt");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->For("aten::mm", "", "forward").kind, Tolerance::Kind::kBitwise);
}

// `at PHASE MODULE OP TOLERANCE` (what upguard calibrate writes): one op identity; "-" is the
// empty module of an op outside every module.
TEST(TolerancePolicyTest, AtRulesMatchPhaseModuleAndOp) {
  StatusOr<TolerancePolicy> policy = ParseTolerancePolicy(
      "default bitwise\n"
      "at forward blocks.0.mlp aten::index_add_ ulp:16\n"
      "at backward blocks.* aten::mm rel:1e-6\n"
      "at other - upguard::state rel:1e-5\n",
      "cal.txt");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  ASSERT_EQ(policy->rules.size(), 4u);
  EXPECT_EQ(policy->rules[3].module, "");
  EXPECT_EQ(policy->For("aten::index_add_", "blocks.0.mlp", "forward").ToString(), "ulp:16");
  EXPECT_EQ(policy->For("aten::index_add_", "blocks.0.mlp", "backward").ToString(), "bitwise");
  EXPECT_EQ(policy->For("aten::index_add_", "blocks.1.mlp", "forward").ToString(), "bitwise");
  EXPECT_EQ(policy->For("aten::mm", "blocks.1.attn", "backward").ToString(), "rel:1e-06");
  EXPECT_EQ(policy->For("aten::mm", "blocks.1.attn", "forward").ToString(), "bitwise");
  EXPECT_EQ(policy->For("upguard::state", "", "other").ToString(), "rel:1e-05");
  EXPECT_EQ(policy->For("upguard::state", "head", "other").ToString(), "bitwise");
  StatusOr<TolerancePolicy> short_rule = ParseTolerancePolicy("at forward aten::mm ulp:4\n", "p");
  ASSERT_FALSE(short_rule.ok());
  EXPECT_NE(short_rule.status().message().find(
                "p:1: \"at\" takes a phase, a module, an op and a tolerance, got 3 words"),
            std::string::npos)
      << short_rule.status().message();
}

TEST(TolerancePolicyTest, ErrorsNameTheFileAndLine) {
  const std::string forms =
      "a rule is `default TOLERANCE`, `op GLOB TOLERANCE`, `module GLOB TOLERANCE`, "
      "`at PHASE MODULE OP TOLERANCE` or "
      "`nondeterministic GLOB`";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"default rel:1e-6\nops aten::mm ulp:1\n", "tol.txt:2: unknown rule \"ops\"; " + forms},
      {"op aten::mm\n", "tol.txt:1: \"op\" takes a glob and a tolerance, got 1 words; " + forms},
      {"\n\ndefault\n", "tol.txt:3: \"default\" takes a tolerance, got 0 words; " + forms},
      {"nondeterministic a b\n",
       "tol.txt:1: \"nondeterministic\" takes a glob, got 2 words; " + forms},
      {"module blocks.* rel:1e-6,abs\n",
       "tol.txt:1: invalid tolerance \"rel:1e-6,abs\"; use bitwise, ulp:N, rel:X or rel:X,abs:Y "
       "(e.g. ulp:4, rel:1e-6,abs:1e-7)"},
  };
  for (const auto& [text, message] : cases) {
    StatusOr<TolerancePolicy> policy = ParseTolerancePolicy(text, "tol.txt");
    EXPECT_EQ(policy.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(policy.status().message(), message);
  }
}

}  // namespace
}  // namespace upguard
