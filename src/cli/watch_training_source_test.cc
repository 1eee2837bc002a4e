#include "cli/watch_training_source.h"

#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "watch/ring_writer.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;

double MonotonicSeconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

std::map<std::string, double> ByName(const std::vector<machines::MetricValue>& metrics) {
  std::map<std::string, double> out;
  for (const machines::MetricValue& metric : metrics) out[metric.CsvName()] = metric.value;
  return out;
}

std::unique_ptr<watch::RingWriter> Ring(const fs::path& dir, const std::string& name, int rank) {
  StatusOr<std::unique_ptr<watch::RingWriter>> ring =
      watch::RingWriter::Create((dir / "watch" / name).string(), {rank, 3, rank, getpid(), "h"});
  EXPECT_TRUE(ring.ok()) << ring.status().message();
  return ring.ok() ? std::move(*ring) : nullptr;
}

void Sleep(double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); }

TEST(ParseRankList, ListsAndRanges) {
  StatusOr<std::set<int>> ranks = ParseRankList("0,2,4-6");
  ASSERT_TRUE(ranks.ok());
  EXPECT_EQ(*ranks, (std::set<int>{0, 2, 4, 5, 6}));
  EXPECT_FALSE(ParseRankList("").ok());
  EXPECT_FALSE(ParseRankList("1,,2").ok());
  EXPECT_FALSE(ParseRankList("3-1").ok());
  EXPECT_NE(ParseRankList("0,x").status().message().find("\"x\" is not a rank"), std::string::npos);
}

// Ranks 0 and 1 of this machine step alike; rank 1 waits in a collective the whole time while
// rank 0 does not wait at all. Rank 2 (another machine's) and an NCCL ring are not read.
TEST(WatchTrainingSource, StepTimeAndWaitFromSyntheticRings) {
  const fs::path dir = fs::temp_directory_path() / ("upguard_wts_" + std::to_string(getpid()));
  fs::create_directories(dir / "watch");
  auto rank0 = Ring(dir, "rank0.ring", 0);
  auto rank1 = Ring(dir, "rank1.ring", 1);
  auto rank2 = Ring(dir, "rank2.ring", 2);
  auto nccl1 = Ring(dir, "rank1.nccl.ring", 1);
  ASSERT_TRUE(rank0 && rank1 && rank2 && nccl1);
  StatusOr<std::unique_ptr<WatchTrainingSource>> source = WatchTrainingSource::Create(dir, {0, 1});
  ASSERT_TRUE(source.ok()) << source.status().message();

  EXPECT_TRUE((*source)->Sample(MonotonicSeconds()).empty());  // opens the first interval
  for (auto* ring : {rank0.get(), rank1.get(), rank2.get()}) ring->NoteStep(1);
  const int group0 = rank0->Group({"0", "gloo", 3, 0, {0, 1, 2}});
  const int group1 = rank1->Group({"0", "gloo", 3, 1, {0, 1, 2}});
  const double opened = MonotonicSeconds();
  std::vector<machines::MetricValue> first = (*source)->Sample(opened);
  EXPECT_EQ(ByName(first).count("training_step_seconds"), 0u);  // one step end seen: no time
  const uint64_t waiting = rank1->Issue({group1, "allreduce", "float32", "t.py:1", 4, 16});
  const uint64_t quick = rank0->Issue({group0, "allreduce", "float32", "t.py:1", 4, 16});
  rank0->Completed(quick);
  rank1->Issue({rank1->Group({"0", "gloo", 3, 1, {0, 1, 2}}), "barrier", "", "", 0, 0});
  (void)waiting;  // still in flight at the next sample
  nccl1->NoteStep(50);
  rank2->NoteStep(2);
  Sleep(0.2);
  for (int step = 2; step <= 3; ++step) {  // two steps of ~0.1 s each
    rank0->NoteStep(step);
    rank1->NoteStep(step);
    Sleep(0.1);
  }
  const double now = MonotonicSeconds();
  std::map<std::string, double> metrics = ByName((*source)->Sample(now));
  ASSERT_EQ(metrics.count("training_step_seconds"), 1u);
  // Steps 2 and 3 ended ~0.2 s and ~0.3 s after step 1: (E3 - E1) / 2 ~ 0.15 s.
  EXPECT_GT(metrics["training_step_seconds"], 0.149);
  EXPECT_LT(metrics["training_step_seconds"], 0.35);
  // Rank 1 waited the whole interval, rank 0 almost none of it.
  EXPECT_GT(metrics["collective_wait_fraction"], 0.45);
  EXPECT_LE(metrics["collective_wait_fraction"], 0.55);

  // Rank 1 ends the watch (its training finished): only rank 0 is left, and it waits in none.
  rank1->Close();
  Sleep(0.05);
  metrics = ByName((*source)->Sample(MonotonicSeconds()));
  EXPECT_LT(metrics["collective_wait_fraction"], 0.05);
  fs::remove_all(dir);
}

TEST(WatchTrainingSource, RingsNotThereYetAreNoError) {
  StatusOr<std::unique_ptr<WatchTrainingSource>> source =
      WatchTrainingSource::Create("/nonexistent/run", {});
  ASSERT_TRUE(source.ok());
  EXPECT_TRUE((*source)->Sample(1).empty());
  EXPECT_TRUE((*source)->Sample(2).empty());
  EXPECT_FALSE(WatchTrainingSource::Create("/proc/self/stat", {}).ok());
}

}  // namespace
}  // namespace upguard
