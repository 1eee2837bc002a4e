#include "watch/monitor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "watch/ring_writer.h"

namespace upguard::watch {
namespace {

namespace fs = std::filesystem;

std::string Hostname() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

// Two ranks of this process's pid whose adapter rings (rank<N>.ring) and NCCL profiler plugin
// rings (rank<N>.nccl.ring) both hold one all-reduce that never completes: NCCL's channel 1 on
// rank 1 moved 3 of its 8 send steps.
TEST(Monitor, NamesNcclChannelProgressOfACollectiveThatNeverCompletes) {
  const std::string dir = ::testing::TempDir() + "/nccl_monitor" + std::to_string(getpid());
  fs::remove_all(dir);
  fs::create_directories(dir + "/watch");
  std::vector<std::unique_ptr<RingWriter>> writers;
  for (int rank = 0; rank < 2; ++rank) {
    const RingIdentity identity{rank, 2, rank, int(getpid()), Hostname()};
    const std::string stem = dir + "/watch/rank" + std::to_string(rank);
    auto adapter = RingWriter::Create(stem + ".ring", identity);
    auto nccl = RingWriter::Create(stem + ".nccl.ring", identity, 8, 2);
    ASSERT_TRUE(adapter.ok() && nccl.ok());
    const int group = (*adapter)->Group({"0", "nccl", 2, rank, {0, 1}});
    (*adapter)->Started((*adapter)->Issue({group, "allreduce", "float32", "train.py:9", 8, 32}));
    const int comm = (*nccl)->Group({"nccl:5a3f", "nccl", 2, rank, {0, 1}});
    CollectiveIssue issue{comm, "allreduce", "float32", "", 8, 32};
    issue.channels = 2;
    const uint64_t entry = (*nccl)->Issue(issue);
    (*nccl)->Started(entry);
    for (uint32_t channel = 0; channel < 2; ++channel) {
      (*nccl)->Progress(entry, channel, ChannelCounter::kSendSteps, 8);
      (*nccl)->Progress(entry, channel, ChannelCounter::kRecvSteps, 8);
      (*nccl)->Progress(entry, channel, ChannelCounter::kRecvDone, 8);
      (*nccl)->Progress(entry, channel, ChannelCounter::kSendDone,
                        rank == 1 && channel == 1 ? 3 : 8);
    }
    writers.push_back(std::move(*adapter));
    writers.push_back(std::move(*nccl));
  }
  MonitorOptions options;
  options.dir = dir;
  options.analyzer.stall_floor_s = 0.05;
  auto monitor = Monitor::Open(options);
  ASSERT_TRUE(monitor.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (auto& writer : writers) writer->Beat({});
  auto alerts = (*monitor)->Poll();
  ASSERT_TRUE(alerts.ok()) << alerts.status().message();
  // Two ranks, not four: the plugin's rings join their process's look.
  ASSERT_EQ((*monitor)->ranks().size(), 2u);
  EXPECT_EQ((*monitor)->ranks()[1].nccl.size(), 1u);
  ASSERT_EQ(alerts->size(), 1u);
  const Alert& stall = (*alerts)[0];
  EXPECT_EQ(stall.trigger, "stall");
  EXPECT_EQ(stall.cause, "network");
  EXPECT_NE(stall.detail.find("; NCCL on rank 0 (nccl:5a3f allreduce): every channel done; NCCL "
                              "on rank 1 (nccl:5a3f allreduce): channel 1 sent 3 of 8 steps, "
                              "received 8 of 8"),
            std::string::npos)
      << stall.detail;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace upguard::watch
