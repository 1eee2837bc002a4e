// Drives the built libupguard_nccl_profiler.so as NCCL 2.28 would: dlopen, the exported
// ncclProfiler_v5 (or _v4) table, init for a communicator, a collective's host event, its
// kernel channels, proxy operations and network steps with their state transitions, then
// finalize; and reads what it wrote with RingReader. No GPU and no NCCL library are needed.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "watch/nccl/profiler_abi.h"
#include "watch/ring_reader.h"

namespace upguard::watch {
namespace {

namespace abi = nccl_abi;
namespace fs = std::filesystem;

constexpr int kExpectedMask =
    abi::kColl | abi::kP2p | abi::kProxyOp | abi::kProxyStep | abi::kKernelCh;

class NcclPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/nccl_plugin" + std::to_string(getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    setenv("UPGUARD_WATCH_DIR", dir_.c_str(), 1);
    setenv("RANK", "3", 1);
    setenv("WORLD_SIZE", "4", 1);
    library_ = dlopen(UPGUARD_NCCL_PROFILER, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << dlerror();
    v5_ = static_cast<abi::ProfilerV5*>(dlsym(library_, "ncclProfiler_v5"));
    v4_ = static_cast<abi::ProfilerV4*>(dlsym(library_, "ncclProfiler_v4"));
    ASSERT_NE(v5_, nullptr);
    ASSERT_NE(v4_, nullptr);
  }
  void TearDown() override {
    if (library_ != nullptr) dlclose(library_);
    fs::remove_all(dir_);
  }

  std::string RingPath() const { return dir_ + "/watch/rank3.nccl.ring"; }
  RingSnapshot Read() const {
    auto reader = RingReader::Open(RingPath());
    EXPECT_TRUE(reader.ok()) << reader.status().message();
    return reader.ok() ? (*reader)->Snapshot() : RingSnapshot{};
  }

  void* Start(void* context, abi::EventDescrV5 descr) {
    void* handle = nullptr;
    EXPECT_EQ(v5_->start_event(context, &handle, &descr), abi::kSuccess);
    return handle;
  }
  void* StartAllReduce(void* context, uint64_t seq, uint8_t channels) {
    abi::EventDescrV5 descr{};
    descr.type = abi::kColl;
    descr.rank = 3;
    descr.data.coll = {seq,           "AllReduce", nullptr, nullptr, 1024,     0,
                       "ncclFloat32", channels,    16,      "RING",  "SIMPLE", nullptr};
    return Start(context, descr);
  }
  void* StartProxyOp(void* context, void* call, uint8_t channel, int steps, bool send) {
    abi::EventDescrV5 descr{};
    descr.type = abi::kProxyOp;
    descr.parent_obj = call;
    descr.data.proxy_op = {getpid(), channel, send ? 0 : 2, steps, 1 << 19, send ? 1 : 0};
    return Start(context, descr);
  }
  void* StartKernel(void* context, void* call, uint8_t channel) {
    abi::EventDescrV5 descr{};
    descr.type = abi::kKernelCh;
    descr.parent_obj = call;
    descr.data.kernel_ch = {channel, 1000};
    return Start(context, descr);
  }
  // One network step through the states NCCL's net transport records, up to `stop` (false:
  // the step hangs where it is).
  void Step(void* context, void* op, bool send, bool finish) {
    abi::EventDescrV5 descr{};
    descr.type = abi::kProxyStep;
    descr.parent_obj = op;
    void* step = Start(context, descr);
    ASSERT_NE(step, nullptr);
    abi::StateArgs args{};
    const int states_send[] = {abi::kProxyStepSendGpuWait, abi::kProxyStepSendPeerWait,
                               abi::kProxyStepSendWait};
    const int states_recv[] = {abi::kProxyStepRecvWait, abi::kProxyStepRecvFlushWait,
                               abi::kProxyStepRecvGpuWait};
    for (int state : send ? states_send : states_recv) {
      if (!finish && (state == abi::kProxyStepSendWait || state == abi::kProxyStepRecvFlushWait)) {
        return;  // the data never moves
      }
      EXPECT_EQ(v5_->record_event_state(step, state, &args), abi::kSuccess);
    }
    EXPECT_EQ(v5_->stop_event(step), abi::kSuccess);
  }
  // A channel's send and receive operations of `steps` steps, `done` of them finished.
  void Channel(void* context, void* call, uint8_t channel, int steps, int done) {
    for (bool send : {true, false}) {
      void* op = StartProxyOp(context, call, channel, steps, send);
      ASSERT_NE(op, nullptr);
      for (int step = 0; step < steps; ++step) Step(context, op, send, step < done);
      if (done == steps) {
        EXPECT_EQ(v5_->stop_event(op), abi::kSuccess);
      }
    }
  }

  std::string dir_;
  void* library_ = nullptr;
  abi::ProfilerV5* v5_ = nullptr;
  abi::ProfilerV4* v4_ = nullptr;
};

TEST_F(NcclPlugin, CollectiveIsWrittenWithItsChannelProgress) {
  EXPECT_STREQ(v5_->name, "upguard");
  void* context = nullptr;
  int mask = 0;
  ASSERT_EQ(v5_->init(&context, 0xabc, &mask, "pg0", 1, 4, 3, nullptr), abi::kSuccess);
  ASSERT_NE(context, nullptr);
  EXPECT_EQ(mask, kExpectedMask);

  void* call = StartAllReduce(context, 7, 2);
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(v5_->stop_event(call), abi::kSuccess);  // enqueued: not yet completed
  RingSnapshot now = Read();
  ASSERT_EQ(now.slots.size(), 1u);
  EXPECT_EQ(now.slots[0].state, SlotState::kIssued);

  void* kernels[2] = {StartKernel(context, call, 0), StartKernel(context, call, 1)};
  EXPECT_EQ(Read().slots[0].state, SlotState::kStarted);
  Channel(context, call, 0, 4, 4);
  Channel(context, call, 1, 4, 4);
  abi::StateArgs args{};
  for (void* kernel : kernels) {
    EXPECT_EQ(v5_->record_event_state(kernel, abi::kKernelChStop, &args), abi::kSuccess);
    EXPECT_EQ(v5_->stop_event(kernel), abi::kSuccess);
  }

  now = Read();
  EXPECT_EQ((std::tuple{now.rank, now.world_size, now.channel_count}), (std::tuple{3, 4, 64u}));
  ASSERT_EQ(now.groups.size(), 1u);
  const GroupView& group = now.groups[0];
  EXPECT_EQ((std::tuple{group.name, group.backend, group.size, group.rank_in_group}),
            (std::tuple{std::string("nccl:0000000000000abc"), std::string("nccl"), 4u, 3}));
  EXPECT_EQ(group.members, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ((std::tuple{group.issued_seq, group.completed_seq}),
            (std::tuple{uint64_t{1}, uint64_t{1}}));
  ASSERT_EQ(now.slots.size(), 1u);
  const SlotView& slot = now.slots[0];
  EXPECT_EQ((std::tuple{slot.seq, slot.op, slot.dtype, slot.count, slot.bytes, slot.root}),
            (std::tuple{uint64_t{1}, std::string("allreduce"), std::string("float32"),
                        uint64_t{1024}, uint64_t{4096}, -1}));
  EXPECT_EQ(slot.state, SlotState::kCompleted);
  EXPECT_LE(slot.issued_ns, slot.started_ns);
  EXPECT_LE(slot.started_ns, slot.completed_ns);
  EXPECT_EQ((std::tuple{slot.backend_seq, slot.channels_used, slot.warps, slot.algo, slot.proto}),
            (std::tuple{uint64_t{7}, 2u, 16u, std::string("RING"), std::string("SIMPLE")}));
  ASSERT_EQ(slot.channels.size(), 2u);
  for (const ChannelView& channel : slot.channels) {
    EXPECT_EQ((std::tuple{channel.send_steps, channel.send_posted, channel.send_transmitted,
                          channel.send_done}),
              (std::tuple{4u, 4u, 4u, 4u}));
    EXPECT_EQ((std::tuple{channel.recv_steps, channel.recv_posted, channel.recv_received,
                          channel.recv_done}),
              (std::tuple{4u, 4u, 4u, 4u}));
    EXPECT_EQ((std::tuple{channel.proxy_ops, channel.kernel}),
              (std::tuple{2u, KernelState::kFinished}));
  }

  EXPECT_FALSE(now.closed);
  EXPECT_EQ(v5_->finalize(context), abi::kSuccess);
  EXPECT_TRUE(Read().closed);
}

TEST_F(NcclPlugin, AStalledChannelShowsInItsCounters) {
  void* context = nullptr;
  int mask = 0;
  ASSERT_EQ(v5_->init(&context, 0xabc, &mask, "pg0", 1, 4, 3, nullptr), abi::kSuccess);
  void* first = StartAllReduce(context, 0, 2);  // one healthy collective first
  EXPECT_EQ(v5_->stop_event(first), abi::kSuccess);
  Channel(context, first, 0, 2, 2);
  Channel(context, first, 1, 2, 2);

  void* call = StartAllReduce(context, 1, 2);
  EXPECT_EQ(v5_->stop_event(call), abi::kSuccess);
  void* kernels[2] = {StartKernel(context, call, 0), StartKernel(context, call, 1)};
  Channel(context, call, 0, 8, 8);
  EXPECT_EQ(v5_->stop_event(kernels[0]), abi::kSuccess);
  Channel(context, call, 1, 8, 3);  // channel 1's data stops moving after 3 steps
  (void)kernels[1];                 // and its kernel never finishes

  RingSnapshot now = Read();
  ASSERT_EQ(now.slots.size(), 2u);
  EXPECT_EQ(now.slots[0].state, SlotState::kCompleted);  // proxy ops done, no kernel events
  const SlotView& stalled = now.slots[1];
  EXPECT_EQ((std::tuple{stalled.seq, stalled.backend_seq}), (std::tuple{uint64_t{2}, uint64_t{1}}));
  EXPECT_EQ(stalled.state, SlotState::kStarted);
  EXPECT_EQ(now.groups[0].completed_seq, 1u);
  ASSERT_EQ(stalled.channels.size(), 2u);
  const ChannelView& healthy = stalled.channels[0];
  const ChannelView& stuck = stalled.channels[1];
  EXPECT_EQ((std::tuple{healthy.send_done, healthy.recv_done, healthy.kernel}),
            (std::tuple{8u, 8u, KernelState::kFinished}));
  EXPECT_EQ((std::tuple{stuck.send_steps, stuck.send_posted, stuck.send_transmitted,
                        stuck.send_done, stuck.recv_received, stuck.recv_done, stuck.kernel}),
            (std::tuple{8u, 8u, 3u, 3u, 3u, 3u, KernelState::kRunning}));
  EXPECT_LE(stuck.last_ns, stalled.progress_ns);
  EXPECT_EQ(v5_->finalize(context), abi::kSuccess);
}

TEST_F(NcclPlugin, VersionFourAndPointToPoint) {
  void* context = nullptr;
  int mask = 0;
  ASSERT_EQ(v4_->init(&context, &mask, "pg1", 0x5, 1, 2, 1, nullptr), abi::kSuccess);
  EXPECT_EQ(mask, kExpectedMask);
  abi::EventDescrV4 descr{};
  descr.type = uint8_t(abi::kP2p);
  descr.data.p2p = {"Send", nullptr, "ncclBfloat16", 10, 0, 1, nullptr};
  void* send = nullptr;
  ASSERT_EQ(v4_->start_event(context, &send, &descr), abi::kSuccess);
  ASSERT_NE(send, nullptr);
  RingSnapshot now = Read();
  ASSERT_EQ(now.slots.size(), 1u);
  EXPECT_EQ(
      (std::tuple{now.slots[0].op, now.slots[0].dtype, now.slots[0].bytes, now.slots[0].root}),
      (std::tuple{std::string("send"), std::string("bfloat16"), uint64_t{20}, 0}));
  EXPECT_TRUE(now.groups[0].members.empty());  // 2 of a world of 4: its ranks are unknown
  EXPECT_EQ(v4_->finalize(context), abi::kSuccess);
}

TEST_F(NcclPlugin, WithoutAWatchDirectoryItAsksForNoEvents) {
  unsetenv("UPGUARD_WATCH_DIR");
  void* context = reinterpret_cast<void*>(1);
  int mask = -1;
  ASSERT_EQ(v5_->init(&context, 0xabc, &mask, "pg0", 1, 4, 3, nullptr), abi::kSuccess);
  EXPECT_EQ((std::tuple{context, mask}), (std::tuple{nullptr, 0}));
  void* handle = reinterpret_cast<void*>(1);
  abi::EventDescrV5 descr{};
  descr.type = abi::kColl;
  EXPECT_EQ(v5_->start_event(context, &handle, &descr), abi::kSuccess);
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(v5_->stop_event(nullptr), abi::kSuccess);
  EXPECT_EQ(v5_->finalize(context), abi::kSuccess);
  EXPECT_FALSE(fs::exists(RingPath()));
}

}  // namespace
}  // namespace upguard::watch
