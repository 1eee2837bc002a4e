// What a diff concludes, decided in one place: the origin's verdict across ranks, the role
// notes, the setup checks, and which rank is explained under which tolerance.
#include "analysis/conclude.h"

#include <gtest/gtest.h>

#include <vector>

#include "analysis/conclude_test_runs.h"

namespace upguard {
namespace {

using testing::Change;
using testing::LoadConcludeRuns;
using testing::LoadedRuns;

TEST(ConcludeTest, TheOriginRankDecidesTheVerdictAndReceiversSaySo) {
  StatusOr<LoadedRuns> runs = LoadConcludeRuns("origin", Change::kBatchOnRank1);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();

  // The diff alone: rank 0, the lowest divergent rank, decides (a culprit at the all-reduce).
  StatusOr<DiffResult> diff = DiffRuns(runs->a, runs->b, DiffOptions{});
  ASSERT_TRUE(diff.ok()) << diff.status().ToString();
  EXPECT_EQ(diff->verdict, Verdict::kCulprit);

  StatusOr<Conclusion> conclusion = ConcludeDiff(runs->a, runs->b, ConcludeOptions{});
  ASSERT_TRUE(conclusion.ok()) << conclusion.status().ToString();
  const DiffResult& result = conclusion->result;
  ASSERT_TRUE(conclusion->order.has_value());
  ASSERT_TRUE(conclusion->order->first.has_value());
  EXPECT_EQ(*conclusion->order->first, 1);
  EXPECT_EQ(conclusion->order->origins, std::vector<int>{1});
  EXPECT_EQ(result.verdict, Verdict::kData);  // the origin's, after the setup checks
  ASSERT_EQ(result.ranks.size(), 3u);
  EXPECT_EQ(result.ranks[0].verdict, Verdict::kCulprit);
  EXPECT_EQ(result.ranks[1].verdict, Verdict::kData);
  EXPECT_EQ(result.ranks[2].verdict, Verdict::kCulprit);
  const std::string receiver =
      "this rank is a receiver: c10d::allreduce_ #0 in group 0 [0,1,2] delivered it a "
      "difference from rank 1 (see the order across ranks above)";
  EXPECT_EQ(result.ranks[0].notes, std::vector<std::string>{receiver});
  EXPECT_TRUE(result.ranks[1].notes.empty());
  EXPECT_EQ(result.ranks[2].notes, std::vector<std::string>{receiver});
  EXPECT_FALSE(conclusion->explained.has_value());  // no explainer
}

TEST(ConcludeTest, ACollectiveThatComputedDifferentlyIsNamedOnEveryMember) {
  StatusOr<LoadedRuns> runs = LoadConcludeRuns("collective", Change::kCollectiveSum);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  StatusOr<Conclusion> conclusion = ConcludeDiff(runs->a, runs->b, ConcludeOptions{});
  ASSERT_TRUE(conclusion.ok()) << conclusion.status().ToString();
  EXPECT_EQ(conclusion->result.verdict, Verdict::kCulprit);
  ASSERT_TRUE(conclusion->order.has_value());
  EXPECT_TRUE(conclusion->order->origins.empty());
  const std::vector<std::string> note = {
      "the collective below computed differently: every member fed it identical inputs (see "
      "the order across ranks above)"};
  for (const RankDiff& rank : conclusion->result.ranks) {
    EXPECT_EQ(rank.notes, note) << "rank " << rank.rank;
  }
}

TEST(ConcludeTest, ASetupDifferenceIsTheVerdictOfOneRank) {
  StatusOr<LoadedRuns> runs = LoadConcludeRuns("rng", Change::kRngState);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  StatusOr<Conclusion> conclusion = ConcludeDiff(runs->a, runs->b, ConcludeOptions{});
  ASSERT_TRUE(conclusion.ok()) << conclusion.status().ToString();
  EXPECT_FALSE(conclusion->order.has_value());  // one rank: no order across ranks
  EXPECT_EQ(conclusion->result.verdict, Verdict::kRng);
  ASSERT_EQ(conclusion->result.ranks.size(), 1u);
  EXPECT_EQ(conclusion->result.ranks[0].setup,
            "RNG state differs at step 0 (before op aten::bernoulli_, module drop, "
            "model.py:116)");
  EXPECT_TRUE(conclusion->result.ranks[0].notes.empty());
}

TEST(ConcludeTest, TheOriginIsExplainedUnderItsOpsTolerance) {
  StatusOr<LoadedRuns> runs = LoadConcludeRuns("explain", Change::kBatchOnRank1);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  std::vector<int> explained_ranks;
  ConcludeOptions options;
  options.explain = [&](const upguard::Run&, const upguard::Run&, const RankDiff& rank) {
    explained_ranks.push_back(rank.rank);
    ExplainedDivergence explained;
    explained.step_a = rank.numeric->a.step;
    explained.index_a = rank.numeric->a.index;
    return StatusOr<ExplainedDivergence>(explained);
  };
  StatusOr<TolerancePolicy> policy =
      ParseTolerancePolicy("op upguard::batch ulp:4\nop c10d::* ulp:8\n", "policy.txt");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  options.policy = *policy;
  StatusOr<Conclusion> conclusion = ConcludeDiff(runs->a, runs->b, options);
  ASSERT_TRUE(conclusion.ok()) << conclusion.status().ToString();
  EXPECT_EQ(explained_ranks, std::vector<int>{1});  // the origin, not rank 0
  ASSERT_TRUE(conclusion->explained.has_value());
  EXPECT_EQ(conclusion->explained->index_a, 0u);  // upguard::batch, rank 1's first op
  EXPECT_EQ(conclusion->explained->explanation.tolerance, "ulp:4");
  EXPECT_EQ(conclusion->result.tolerance,
            "default bitwise; op upguard::batch ulp:4; op c10d::* ulp:8");

  // An explainer's error is the conclusion's.
  options.explain = [](const upguard::Run&, const upguard::Run&,
                       const RankDiff&) -> StatusOr<ExplainedDivergence> {
    return FailedPrecondition("run A cannot be re-run here");
  };
  EXPECT_EQ(ConcludeDiff(runs->a, runs->b, options).status().message(),
            "run A cannot be re-run here");
}

TEST(ConcludeTest, NoNumericDivergenceNothingToExplain) {
  StatusOr<LoadedRuns> runs = LoadConcludeRuns("same", Change::kRngState);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  StatusOr<upguard::Run> a_again = LoadRun(runs->paths.a, LoadOptions{});
  ASSERT_TRUE(a_again.ok()) << a_again.status().ToString();
  ConcludeOptions options;
  bool called = false;
  options.explain = [&](const upguard::Run&, const upguard::Run&,
                        const RankDiff&) -> StatusOr<ExplainedDivergence> {
    called = true;
    return ExplainedDivergence{};
  };
  StatusOr<Conclusion> conclusion = ConcludeDiff(runs->a, *a_again, options);
  ASSERT_TRUE(conclusion.ok()) << conclusion.status().ToString();
  EXPECT_EQ(conclusion->result.verdict, Verdict::kIdentical);
  EXPECT_FALSE(called);
  EXPECT_FALSE(conclusion->explained.has_value());
}

}  // namespace
}  // namespace upguard
