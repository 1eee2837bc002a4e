// What the order across ranks says first: the origin rank and where its divergence is.
#include "report/global_report.h"

#include <gtest/gtest.h>

#include <string>

#include "analysis/conclude.h"
#include "analysis/conclude_test_runs.h"

namespace upguard {
namespace {

using testing::Change;
using testing::LoadConcludeRuns;
using testing::LoadedRuns;

// A structural origin is named where the op streams part (A's op -> B's op), not at the op its
// difference reached first (the backward's mul, propagated from relu).
TEST(GlobalReportTest, AStructuralOriginIsNamedWhereTheOpsDiffer) {
  StatusOr<LoadedRuns> runs = LoadConcludeRuns("structural_origin", Change::kOpOnRank1);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  StatusOr<Conclusion> conclusion = ConcludeDiff(runs->a, runs->b, ConcludeOptions{});
  ASSERT_TRUE(conclusion.ok()) << conclusion.status().ToString();
  ASSERT_TRUE(conclusion->order.has_value());
  ASSERT_EQ(conclusion->result.ranks.size(), 2u);
  ASSERT_EQ(conclusion->result.ranks[1].verdict, Verdict::kStructural);
  ASSERT_TRUE(conclusion->result.ranks[1].numeric.has_value());
  EXPECT_EQ(runs->a.ranks[1].Str(conclusion->result.ranks[1].numeric->a.op->op), "aten::mul");

  const std::string text =
      RenderGlobalOrderText(*conclusion->order, conclusion->result, runs->a, runs->b);
  const std::string where =
      "structural at step 0 #1, forward, aten::gelu -> aten::relu (blocks.1.mlp.act, gpt.py:83)";
  EXPECT_NE(text.find("  ORIGIN  rank 1: " + where + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    rank 1  origin     " + where + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    rank 0  receiver   via c10d::allreduce_ #0"), std::string::npos) << text;

  const nlohmann::json json =
      GlobalOrderToJson(*conclusion->order, conclusion->result, runs->a, runs->b);
  const nlohmann::json& first = json["ranks"][1]["first"];
  EXPECT_EQ(first["op"], "aten::gelu");
  EXPECT_EQ(first["op_b"], "aten::relu");
  EXPECT_EQ(first["index"], 1);
  EXPECT_EQ(first["module"], "blocks.1.mlp.act");
  EXPECT_FALSE(json["ranks"][0]["first"].contains("op_b"));
}

}  // namespace
}  // namespace upguard
