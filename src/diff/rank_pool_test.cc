// The pool gives the answer of a loop over the ranks in order: every rank once, the lowest
// failing rank's error; and a multi-rank diff gives the same report, or the same error, on one
// thread or several.
#include "diff/rank_pool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <vector>

#include "diff/diff.h"
#include "report/diff_report.h"
#include "tools/synthetic_trace.h"
#include "trace/text_format.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;
using synthetic::Plant;
using synthetic::SyntheticOptions;

TEST(RankPoolTest, ThreadsAreBoundedByJobsAndRanks) {
  EXPECT_EQ(RankThreads(4, 64), 4u);
  EXPECT_EQ(RankThreads(4, 3), 3u);
  EXPECT_EQ(RankThreads(1, 64), 1u);
  EXPECT_EQ(RankThreads(8, 0), 1u);
  EXPECT_GE(RankThreads(0, 64), 1u);  // the hardware's concurrency
}

TEST(RankPoolTest, EveryRankRunsOnce) {
  for (int jobs : {0, 1, 3, 8}) {
    std::vector<std::atomic<int>> calls(100);
    ASSERT_TRUE(RunRanks(calls.size(), jobs, [&](size_t rank_idx) {
                  calls[rank_idx].fetch_add(1);
                  return Status::Ok();
                }).ok());
    for (const std::atomic<int>& count : calls) EXPECT_EQ(count.load(), 1) << "jobs " << jobs;
  }
  EXPECT_TRUE(RunRanks(0, 4, [](size_t) { return Internal("no rank to run"); }).ok());
}

TEST(RankPoolTest, AnExceptionIsThatRanksInternalError) {
  for (int jobs : {1, 4}) {
    const Status status = RunRanks(8, jobs, [](size_t rank_idx) -> Status {
      if (rank_idx == 3) throw std::runtime_error("type must be number, but is string");
      return Status::Ok();
    });
    EXPECT_EQ(status.code(), StatusCode::kInternal);
    EXPECT_EQ(status.message(),
              "internal error at rank 3: type must be number, but is string; please report it "
              "with the command line");
  }
}

TEST(RankPoolTest, TheLowestFailingRanksErrorIsReturned) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    const Status status = RunRanks(64, 4, [&](size_t rank_idx) -> Status {
      // Rank 9 fails late, ranks 11 and 40 at once: a sequential loop stops at rank 9.
      if (rank_idx == 9) {
        usleep(2000);
        return DataLoss("rank 9");
      }
      if (rank_idx == 11 || rank_idx == 40) return DataLoss("rank " + std::to_string(rank_idx));
      return Status::Ok();
    });
    EXPECT_EQ(status.message(), "rank 9");
  }
}

// Runs of 6 ranks, 4 steps of 2,000 GPT-like ops each.
SyntheticOptions Ranks() {
  SyntheticOptions options;
  options.ops = 8'000;
  options.steps = 4;
  options.world_size = 6;
  return options;
}

std::string TestDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("upguard_rank_pool_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// A run of Ranks(); `plants` maps a rank to the change planted on it.
std::string WriteRun(const std::string& name,
                     const std::vector<std::pair<uint32_t, Plant>>& plants) {
  const std::string dir = TestDir(name);
  SyntheticOptions options = Ranks();
  EXPECT_TRUE(synthetic::WriteSyntheticRunMeta(dir, options).ok());
  for (uint32_t rank = 0; rank < options.world_size; ++rank) {
    SyntheticOptions rank_options = options;
    rank_options.rank = rank;
    for (const auto& [planted_rank, plant] : plants) {
      if (planted_rank != rank) continue;
      rank_options.plant = plant;
      rank_options.plant_at = 2'000 * (rank % 4) + 700;  // a different step on each rank
    }
    const StatusOr<synthetic::SyntheticSummary> summary =
        synthetic::WriteSyntheticRank(dir, rank_options);
    EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  }
  return dir;
}

struct Outcome {
  std::string error;
  std::string text;
  std::string json;
};

// `upguard diff A B` with `jobs` threads: traces mapped and indexed as the diff walks.
Outcome Diff(const std::string& a, const std::string& b, int jobs) {
  LoadOptions load;
  load.index_on_demand = true;
  StatusOr<Run> run_a = LoadRun(a, load);
  StatusOr<Run> run_b = LoadRun(b, load);
  EXPECT_TRUE(run_a.ok() && run_b.ok());
  if (!run_a.ok() || !run_b.ok()) return Outcome{"cannot load", "", ""};
  DiffOptions options;
  options.jobs = jobs;
  StatusOr<DiffResult> result = DiffRuns(*run_a, *run_b, options);
  if (!result.ok()) return Outcome{result.status().ToString(), "", ""};
  return Outcome{"", RenderDiffText(*result, *run_a, *run_b),
                 DiffToJson(*result, *run_a, *run_b).dump(1)};
}

void ExpectSameOnEveryPool(const std::string& a, const std::string& b, const Outcome& reference) {
  for (int jobs : {2, 4, 0}) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      const Outcome outcome = Diff(a, b, jobs);
      EXPECT_EQ(outcome.error, reference.error) << "jobs " << jobs;
      EXPECT_EQ(outcome.text, reference.text) << "jobs " << jobs;
      EXPECT_EQ(outcome.json, reference.json) << "jobs " << jobs;
    }
  }
}

TEST(RankPoolTest, MultiRankDiffIsTheSameOnOneThreadOrMany) {
  const std::string a = WriteRun("a", {});
  // Rank 1's extra op makes the verdict structural; rank 4's culprit comes later in rank order.
  const std::string b = WriteRun("b", {{1, Plant::kStructural}, {4, Plant::kCulprit}});
  const Outcome reference = Diff(a, b, 1);
  ASSERT_TRUE(reference.error.empty()) << reference.error;
  const nlohmann::json json = nlohmann::json::parse(reference.json);
  EXPECT_EQ(json["verdict"], "structural");
  ASSERT_EQ(json["ranks"].size(), 6u);
  for (size_t rank_idx = 0; rank_idx < 6; ++rank_idx) {
    const char* verdict = rank_idx == 1 ? "structural" : rank_idx == 4 ? "culprit" : "identical";
    EXPECT_EQ(json["ranks"][rank_idx]["verdict"], verdict) << "rank " << rank_idx;
  }
  EXPECT_EQ(json["ranks"][4]["divergence"]["step"], 0);  // plant_at 700: step 0
  ExpectSameOnEveryPool(a, b, reference);
  ExpectSameOnEveryPool(a, a, Diff(a, a, 1));
}

TEST(RankPoolTest, MultiRankDiffFailsAtTheLowestRankThatCannotBeCompared) {
  const std::string a = WriteRun("a", {});
  const std::string b = WriteRun("b", {{0, Plant::kCulprit}});
  // Rank 2 recorded another step only, rank 5 another program: the rank 2 error comes first.
  ASSERT_TRUE(
      WriteTraceFromText("op step=9 name=aten::relu\nstepend 9\nend\n", "rank2", b + "/rank2.ugt")
          .ok());
  ASSERT_TRUE(
      WriteTraceFromText("op name=aten::conv2d\nstepend 0\nend\n", "rank5", b + "/rank5.ugt").ok());
  const Outcome reference = Diff(a, b, 1);
  EXPECT_NE(reference.error.find("rank 2: "), std::string::npos) << reference.error;
  EXPECT_NE(reference.error.find("no step in common"), std::string::npos) << reference.error;
  ExpectSameOnEveryPool(a, b, reference);
  fs::remove(b + "/rank2.ugt");
  ASSERT_TRUE(synthetic::WriteSyntheticRank(b,
                                            [] {
                                              SyntheticOptions options = Ranks();
                                              options.rank = 2;
                                              return options;
                                            }())
                  .ok());
  const Outcome programs = Diff(a, b, 1);
  EXPECT_NE(programs.error.find("different programs"), std::string::npos) << programs.error;
  ExpectSameOnEveryPool(a, b, programs);
}

}  // namespace
}  // namespace upguard
