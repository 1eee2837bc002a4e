// `upguard diff --json` prints what the library concludes and adds nothing: ConcludeDiff
// rendered by ConclusionToJson is, byte for byte, what the command prints.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/conclude.h"
#include "analysis/conclude_test_runs.h"
#include "cli/command.h"
#include "report/conclusion_report.h"

namespace upguard {
namespace {

using testing::Change;
using testing::LoadConcludeRuns;
using testing::LoadedRuns;

struct Printed {
  int exit_code = -1;
  nlohmann::json json;
};

// Runs `upguard diff A B --json [extra]` in this process on the runs of `change` and expects
// it to print exactly what the library concludes under `options`, rendered by
// ConclusionToJson. Returns what the command printed, parsed.
Printed ExpectCliPrintsTheLibrarysJson(const std::string& name, Change change,
                                       std::vector<std::string> extra,
                                       const ConcludeOptions& options) {
  StatusOr<LoadedRuns> runs = LoadConcludeRuns(name, change);
  EXPECT_TRUE(runs.ok()) << runs.status().ToString();
  if (!runs.ok()) return {};
  StatusOr<Conclusion> conclusion = ConcludeDiff(runs->a, runs->b, options);
  EXPECT_TRUE(conclusion.ok()) << conclusion.status().ToString();
  if (!conclusion.ok()) return {};
  const std::string library = ConclusionToJson(*conclusion, runs->a, runs->b).dump(2) + "\n";

  std::vector<std::string> args = {"upguard", "diff", runs->paths.a, runs->paths.b, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  ::testing::internal::CaptureStdout();
  StatusOr<int> exit_code = RunDiffCommand(static_cast<int>(argv.size()), argv.data());
  const std::string printed = ::testing::internal::GetCapturedStdout();
  EXPECT_TRUE(exit_code.ok()) << exit_code.status().ToString();
  if (!exit_code.ok()) return {};
  EXPECT_EQ(printed, library);
  return Printed{*exit_code, nlohmann::json::parse(printed, nullptr, false)};
}

TEST(DiffCommandTest, JsonIsTheLibrarysConclusionAcrossRanks) {
  const Printed printed =
      ExpectCliPrintsTheLibrarysJson("cli_origin", Change::kBatchOnRank1, {}, ConcludeOptions{});
  EXPECT_EQ(printed.exit_code, kExitDiverged);
  const nlohmann::json& json = printed.json;
  EXPECT_EQ(json["verdict"], "data");  // rank 1's, the origin's; rank 0 is a receiver
  EXPECT_EQ(json["across_ranks"]["first_rank"], 1);
  EXPECT_EQ(json["across_ranks"]["origins"], nlohmann::json::array({1}));
  EXPECT_EQ(json["ranks"][0]["verdict"], "culprit");
  EXPECT_EQ(json["ranks"][0]["notes"],
            nlohmann::json::array({"this rank is a receiver: c10d::allreduce_ #0 in group 0 "
                                   "[0,1,2] delivered it a difference from rank 1 (see the "
                                   "order across ranks above)"}));
  EXPECT_EQ(json["ranks"][1]["notes"], nlohmann::json::array());
  EXPECT_FALSE(json.contains("explain"));
}

TEST(DiffCommandTest, JsonIsTheLibrarysConclusionUnderAPolicy) {
  ConcludeOptions options;
  options.diff.jobs = 1;
  StatusOr<TolerancePolicy> policy = ParseTolerancePolicy("default ulp:2\n", "--tolerance");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  options.policy = *policy;
  const nlohmann::json json =
      ExpectCliPrintsTheLibrarysJson("cli_collective", Change::kCollectiveSum,
                                     {"--tolerance", "ulp:2", "--jobs", "1"}, options)
          .json;
  EXPECT_EQ(json["tolerance"], "default ulp:2");
  // The all-reduce differs within ulp:2 on both ranks; the add_ it feeds has no statistics.
  EXPECT_EQ(json["verdict"], "propagated");
}

TEST(DiffCommandTest, JsonIsTheLibrarysConclusionForASetupDifference) {
  const Printed printed =
      ExpectCliPrintsTheLibrarysJson("cli_rng", Change::kRngState, {}, ConcludeOptions{});
  EXPECT_EQ(printed.exit_code, kExitDiverged);
  const nlohmann::json& json = printed.json;
  EXPECT_EQ(json["verdict"], "rng");
  EXPECT_EQ(json["ranks"][0]["setup"],
            "RNG state differs at step 0 (before op aten::bernoulli_, module drop, "
            "model.py:116)");
  EXPECT_FALSE(json.contains("across_ranks"));
}

}  // namespace
}  // namespace upguard
