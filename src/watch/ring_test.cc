#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <thread>

#include "watch/ring_reader.h"
#include "watch/ring_writer.h"

namespace upguard::watch {
namespace {

std::string TempRing(const char* name) {
  return ::testing::TempDir() + "/" + name + std::to_string(getpid()) + ".ring";
}

RingIdentity Rank(int rank) { return {rank, 4, rank, 4242, "host-a"}; }

TEST(Ring, WrittenIsReadBack) {
  const std::string path = TempRing("written");
  auto writer = RingWriter::Create(path, Rank(2), 8);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  RingWriter& ring = **writer;
  const int group = ring.Group({"0", "gloo", 4, 2, {0, 1, 2, 3}});
  EXPECT_EQ(group, 0);
  EXPECT_EQ(ring.Group({"0", "gloo", 4, 2, {0, 1, 2, 3}}), 0);  // the same group again
  EXPECT_EQ(ring.Group({"sub", "gloo", 2, 1, {1, 2}}), 1);
  ring.NoteStep(3);
  const uint64_t first = ring.Issue({group, "allreduce", "float32", "train.py:57", 100, 400});
  ring.Started(first);
  ring.Completed(first);
  const uint64_t second = ring.Issue({group, "broadcast", "int64", "", 7, 56, 0});
  ring.NoteOp("aten::mm");
  ring.NoteDataloader(true);
  ring.Beat({1000, 2000, 1, 2});

  auto reader = RingReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  RingSnapshot now = (*reader)->Snapshot();
  EXPECT_EQ((std::tuple{now.rank, now.world_size, now.pid, now.hostname}),
            (std::tuple{2, 4, 4242, std::string("host-a")}));
  ASSERT_EQ(now.groups.size(), 2u);
  EXPECT_EQ(now.groups[0].members, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ((std::tuple{now.groups[0].issued_seq, now.groups[0].completed_seq}),
            (std::tuple{uint64_t{2}, uint64_t{1}}));
  ASSERT_EQ(now.slots.size(), 2u);
  const SlotView& done = now.slots[0];
  EXPECT_EQ((std::tuple{done.entry, done.seq, done.step, done.op, done.dtype, done.call_site}),
            (std::tuple{first, uint64_t{1}, int64_t{3}, std::string("allreduce"),
                        std::string("float32"), std::string("train.py:57")}));
  EXPECT_EQ(done.state, SlotState::kCompleted);
  EXPECT_LE(done.issued_ns, done.started_ns);
  EXPECT_LE(done.started_ns, done.completed_ns);
  const SlotView& open = now.slots[1];
  EXPECT_EQ((std::tuple{open.entry, open.seq, open.root, open.count, open.bytes}),
            (std::tuple{second, uint64_t{2}, 0, uint64_t{7}, uint64_t{56}}));
  EXPECT_EQ(open.state, SlotState::kIssued);
  EXPECT_EQ(open.completed_ns, 0u);
  EXPECT_TRUE(now.activity.consistent);
  EXPECT_EQ((std::tuple{now.activity.step, now.activity.ops, now.activity.last_op}),
            (std::tuple{int64_t{3}, uint64_t{1}, std::string("aten::mm")}));
  EXPECT_NE(now.activity.dataloader_since_ns, 0u);
  EXPECT_EQ(now.activity.step_ends.size(), 1u);
  EXPECT_EQ((std::tuple{now.net.tx_bytes, now.net.rx_bytes, now.net.links_up, now.net.links}),
            (std::tuple{uint64_t{1000}, uint64_t{2000}, 1u, 2u}));
  EXPECT_FALSE(now.closed);
  EXPECT_EQ(now.channel_count, 0u);  // the adapter's rings carry no channel progress
  EXPECT_TRUE(done.channels.empty());
  ring.Progress(first, 0, ChannelCounter::kSendPosted);  // ignored without the part
  ring.Close();
  EXPECT_TRUE((*reader)->Snapshot().closed);
  std::remove(path.c_str());
}

TEST(Ring, WrapsKeepingTheNewestEntries) {
  const std::string path = TempRing("wraps");
  auto writer = RingWriter::Create(path, Rank(0), 4);
  ASSERT_TRUE(writer.ok());
  const int group = (*writer)->Group({"0", "gloo", 2, 0, {0, 1}});
  uint64_t oldest = 0;
  for (int idx = 0; idx < 10; ++idx) {
    uint64_t entry = (*writer)->Issue({group, "allreduce", "float32", "", 1, 4});
    if (idx == 0) oldest = entry;
  }
  (*writer)->Completed(oldest);  // its slot was reused: ignored
  auto reader = RingReader::Open(path);
  ASSERT_TRUE(reader.ok());
  RingSnapshot now = (*reader)->Snapshot();
  ASSERT_EQ(now.slots.size(), 4u);
  EXPECT_EQ((std::tuple{now.slots.front().seq, now.slots.back().seq}),
            (std::tuple{uint64_t{7}, uint64_t{10}}));
  for (const SlotView& slot : now.slots) EXPECT_EQ(slot.state, SlotState::kIssued);
  EXPECT_EQ(now.groups[0].completed_seq, 0u);
  std::remove(path.c_str());
}

TEST(Ring, ReaderNeverSeesATornEntryWhileTheRankWrites) {
  const std::string path = TempRing("torn");
  auto writer = RingWriter::Create(path, Rank(1), 16);
  ASSERT_TRUE(writer.ok());
  RingWriter& ring = **writer;
  const int group = ring.Group({"0", "gloo", 2, 1, {0, 1}});
  std::atomic<bool> stop{false};
  std::thread rank([&] {
    for (uint64_t n = 1; !stop.load(); ++n) {
      // Every field of an entry derives from its count, so a torn copy shows.
      std::string site = "train.py:" + std::to_string(n);
      uint64_t entry = ring.Issue({group, "allreduce", "float32", site, n, 4 * n});
      ring.Completed(entry);
      ring.NoteOp(n % 2 ? "aten::mm" : "aten::add");
    }
  });
  auto reader = RingReader::Open(path);
  ASSERT_TRUE(reader.ok());
  int checked = 0;
  for (int round = 0; round < 200000 && checked < 20000; ++round) {
    for (const SlotView& slot : (*reader)->Snapshot().slots) {
      ASSERT_EQ(slot.bytes, 4 * slot.count);
      ASSERT_EQ(slot.call_site, "train.py:" + std::to_string(slot.count));
      ++checked;
    }
  }
  stop = true;
  rank.join();
  EXPECT_GT(checked, 0);
  std::remove(path.c_str());
}

TEST(Ring, ChannelProgressIsReadBack) {
  const std::string path = TempRing("channels");
  auto writer = RingWriter::Create(path, Rank(1), 4, 8);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  RingWriter& ring = **writer;
  const int group = ring.Group({"nccl:1f", "nccl", 2, 1, {0, 1}});
  CollectiveIssue issue{group, "allreduce", "float32", "", 1024, 4096};
  issue.backend_seq = 41;
  issue.channels = 2;
  issue.warps = 16;
  issue.algo = "RING";
  issue.proto = "SIMPLE";
  const uint64_t entry = ring.Issue(issue);
  ring.ProxyOpStarted(entry, 1);
  ring.Progress(entry, 1, ChannelCounter::kSendSteps, 4);
  ring.Progress(entry, 1, ChannelCounter::kSendPosted);
  ring.Progress(entry, 1, ChannelCounter::kSendPosted);
  ring.Progress(entry, 1, ChannelCounter::kSendDone);
  ring.Progress(entry, 1, ChannelCounter::kRecvReceived);
  ring.Kernel(entry, 0, KernelState::kFinished);
  ring.Progress(entry, 8, ChannelCounter::kSendPosted);  // past the 8 channels kept: ignored

  auto reader = RingReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  RingSnapshot now = (*reader)->Snapshot();
  EXPECT_EQ(now.channel_count, 8u);
  ASSERT_EQ(now.slots.size(), 1u);
  const SlotView& call = now.slots[0];
  EXPECT_EQ((std::tuple{call.backend_seq, call.channels_used, call.warps, call.algo, call.proto}),
            (std::tuple{uint64_t{41}, 2u, 16u, std::string("RING"), std::string("SIMPLE")}));
  ASSERT_EQ(call.channels.size(), 2u);  // channels without progress are left out
  EXPECT_EQ((std::tuple{call.channels[0].channel, call.channels[0].kernel}),
            (std::tuple{0u, KernelState::kFinished}));
  const ChannelView& one = call.channels[1];
  EXPECT_EQ((std::tuple{one.channel, one.proxy_ops, one.send_steps, one.send_posted, one.send_done,
                        one.recv_received, one.recv_done}),
            (std::tuple{1u, 1u, 4u, 2u, 1u, 1u, 0u}));
  EXPECT_NE(one.last_ns, 0u);
  EXPECT_GE(call.progress_ns, one.last_ns);

  // The slot is reused by entry + 4: its block starts from zero, and a late event of the old
  // entry is dropped.
  for (int idx = 0; idx < 4; ++idx) ring.Issue({group, "allreduce", "float32", "", 1, 4});
  ring.Progress(entry, 1, ChannelCounter::kSendDone);
  now = (*reader)->Snapshot();
  ASSERT_EQ(now.slots.size(), 4u);
  for (const SlotView& slot : now.slots) EXPECT_TRUE(slot.channels.empty());
  std::remove(path.c_str());
}

TEST(Ring, StackRequestIsAnswered) {
  const std::string path = TempRing("stack");
  auto writer = RingWriter::Create(path, Rank(0), 4);
  ASSERT_TRUE(writer.ok());
  auto reader = RingReader::Open(path);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*writer)->StackRequest(), 0u);
  ASSERT_TRUE((*reader)->RequestStack());
  EXPECT_EQ((*writer)->StackRequest(), 1u);
  (*writer)->AnswerStack(1, "train.py:12 in main\ntrain.py:40 in step");
  RingSnapshot now = (*reader)->Snapshot();
  EXPECT_EQ((std::tuple{now.stack.request, now.stack.answered, now.stack.text}),
            (std::tuple{uint64_t{1}, uint64_t{1},
                        std::string("train.py:12 in main\ntrain.py:40 in step")}));
  std::remove(path.c_str());
}

TEST(Ring, BadFilesAreNamedWithTheReason) {
  const std::string path = TempRing("bad");
  { std::ofstream(path) << "not a ring"; }
  auto short_file = RingReader::Open(path);
  ASSERT_FALSE(short_file.ok());
  EXPECT_NE(short_file.status().message().find(path), std::string::npos);
  EXPECT_NE(short_file.status().message().find("shorter than its 256-byte header"),
            std::string::npos);
  { std::ofstream(path) << std::string(300, 'x'); }
  auto bad_magic = RingReader::Open(path);
  ASSERT_FALSE(bad_magic.ok());
  EXPECT_NE(bad_magic.status().message().find("bad magic"), std::string::npos);
  std::remove(path.c_str());
  auto missing = RingReader::Open(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(RingWriter::Create(path, Rank(0), 6).ok());  // not a power of two
}

}  // namespace
}  // namespace upguard::watch
