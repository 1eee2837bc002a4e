#include "watch/analyzer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "watch/ring_reader.h"
#include "watch/ring_writer.h"

namespace upguard::watch {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kSecond = 1'000'000'000ull;

// Two ranks that both issued the same all-reduce 10 s ago, which completes on neither; their
// heartbeats are fresh (as a live rank's are) unless the process says otherwise.
std::vector<RankLook> BothIssued(const std::string& name, ProcessState rank1) {
  const std::string dir = ::testing::TempDir() + "/" + name + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<RankLook> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string path = dir + "/rank" + std::to_string(rank) + ".ring";
    auto writer = RingWriter::Create(path, {rank, 2, rank, int(getpid()), "host"}, 8);
    EXPECT_TRUE(writer.ok()) << writer.status().message();
    const int group = (*writer)->Group({"0", "gloo", 2, rank, {0, 1}});
    (*writer)->Started((*writer)->Issue({group, "allreduce", "float32", "train.py:9", 8, 32}));
    (*writer)->Beat({});
    auto reader = RingReader::Open(path);
    EXPECT_TRUE(reader.ok()) << reader.status().message();
    RankLook look;
    look.ring = (*reader)->Snapshot();
    look.ring.slots.at(0).issued_ns -= 10 * kSecond;
    look.ring.slots.at(0).started_ns -= 10 * kSecond;
    look.process = rank == 1 ? rank1 : ProcessState::kRunning;
    ranks.push_back(look);
  }
  return ranks;
}

TEST(Analyzer, ARankStoppedInsideACollectiveIsItsCauseNotTheNetwork) {
  Analyzer analyzer;
  const std::vector<Alert> alerts =
      analyzer.Look(BothIssued("stopped_inside", ProcessState::kStopped), RealtimeNs());
  ASSERT_FALSE(alerts.empty());
  bool stall = false;
  for (const Alert& alert : alerts) {
    EXPECT_EQ(alert.ranks, std::vector<int>{1}) << alert.trigger << ": " << alert.detail;
    EXPECT_EQ(alert.cause, "stopped") << alert.trigger << ": " << alert.detail;
    if (alert.trigger == "stall") {
      stall = true;
      EXPECT_NE(alert.detail.find("every rank issued it; rank 1 cannot finish it"),
                std::string::npos)
          << alert.detail;
    }
  }
  EXPECT_TRUE(stall);
}

TEST(Analyzer, EveryRankRunningInsideAStuckCollectiveIsTheNetwork) {
  Analyzer analyzer;
  const std::vector<Alert> alerts =
      analyzer.Look(BothIssued("running_inside", ProcessState::kRunning), RealtimeNs());
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].trigger, "stall");
  EXPECT_EQ(alerts[0].cause, "network") << alerts[0].detail;
}

// One rank's look whose step ends are `steps` (seconds each) ending now.
RankLook Steps(const std::string& name, const std::vector<double>& steps, uint64_t now_mono) {
  std::vector<RankLook> ranks = BothIssued(name, ProcessState::kRunning);
  RankLook look = ranks[0];
  look.ring.slots.clear();
  uint64_t end = now_mono;
  std::vector<uint64_t> ends{end};
  for (auto step = steps.rbegin(); step != steps.rend(); ++step) {
    end -= uint64_t(*step * 1e9);
    ends.insert(ends.begin(), end);
  }
  look.ring.activity.step_ends = ends;
  return look;
}

TEST(Analyzer, AFewSlowShortStepsAreNoThroughputDrop) {
  std::vector<double> steps(20, 0.005);
  for (int idx = 0; idx < 4; ++idx) steps.push_back(0.012);  // 48 ms taken by another process
  Analyzer analyzer;
  const RankLook look = Steps("hiccup", steps, MonotonicNs());
  const uint64_t now = RingRealtime(look.ring, MonotonicNs());
  EXPECT_TRUE(analyzer.Look({look}, now).empty());
  // Slow at every look for a while: a drop, named once.
  EXPECT_TRUE(analyzer.Look({look}, now + kSecond / 2).empty());
  const std::vector<Alert> alerts = analyzer.Look({look}, now + kSecond + kSecond / 10);
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].trigger, "throughput");
}

TEST(Analyzer, SlowStepsSpanningASecondAreADropAtOnce) {
  std::vector<double> steps(20, 0.2);
  for (int idx = 0; idx < 3; ++idx) steps.push_back(0.5);
  Analyzer analyzer;
  const RankLook look = Steps("drop", steps, MonotonicNs());
  const std::vector<Alert> alerts = analyzer.Look({look}, RingRealtime(look.ring, MonotonicNs()));
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].trigger, "throughput");
  EXPECT_NE(alerts[0].detail.find("2.5x"), std::string::npos) << alerts[0].detail;
}

}  // namespace
}  // namespace upguard::watch
