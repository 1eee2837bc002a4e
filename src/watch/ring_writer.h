// The training process's side of the watch ring (docs/formats/watch-ring.md): collectives as they
// are issued, started and completed, the op and step the rank is at, its heartbeat and network
// counters, and its Python stack when the monitor asks. Lock-free on the hot path: a collective
// reserves its slot with one atomic increment; the activity is written under a sequence word
// that a second writing thread skips instead of waiting for.
//
//   ASSIGN_OR_RETURN(auto ring, RingWriter::Create("runs/w/watch/rank0.ring", identity));
//   int group = ring->Group({"0", "gloo", 2, 0, {0, 1}});
//   uint64_t entry = ring->Issue({group, "allreduce", "float32", "train.py:57", 4096, 16384});
//   ring->Started(entry);   // the backend began (any thread)
//   ring->Completed(entry);
//
// The file stays when the writer goes: it is the dead rank's last word to the monitor.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "upguard/status.h"
#include "watch/ring_layout.h"

namespace upguard::watch {

struct RingIdentity {
  int rank = 0;
  int world_size = 1;
  int local_rank = -1;
  int pid = 0;
  std::string hostname;
};

struct GroupInfo {
  std::string name;  // torch.distributed's group name ("0" for the default group)
  std::string backend;
  uint32_t size = 0;
  int rank_in_group = -1;
  std::vector<int> members;  // global ranks, in group order
};

struct CollectiveIssue {
  int group = -1;  // from Group()
  std::string_view op;
  std::string_view dtype;
  std::string_view call_site;
  uint64_t count = 0;
  uint64_t bytes = 0;
  int root = -1;
  // The channel progress block (§6.1), in a ring made with channels; ignored otherwise.
  uint64_t backend_seq = 0;
  uint32_t channels = 0;
  uint32_t warps = 0;
  std::string_view algo = {};
  std::string_view proto = {};
};

struct NetSample {
  uint64_t tx_bytes = 0;
  uint64_t rx_bytes = 0;
  uint32_t links_up = 0;
  uint32_t links = 0;
  uint64_t throttled = 0;  // queue-discipline overlimits + drops (net_sample.h)
};

class RingWriter {
 public:
  // Creates the file (under a temporary name, renamed into place when its header is complete)
  // and maps it. An existing file of that name is replaced: it is this rank's ring of an
  // earlier run in the same directory. `channel_count` > 0 adds the channel progress part
  // (§6.1) with that many channel records per slot.
  static StatusOr<std::unique_ptr<RingWriter>> Create(const std::string& path,
                                                      const RingIdentity& identity,
                                                      uint32_t slot_count = kDefaultSlotCount,
                                                      uint32_t channel_count = 0);
  ~RingWriter();
  RingWriter(const RingWriter&) = delete;
  RingWriter& operator=(const RingWriter&) = delete;

  // The index of the group named info.name, entered on first sight; -1 when the table is full
  // (its collectives are then not written).
  int Group(const GroupInfo& info);
  // Writes a new entry (state issued, the next sequence number of its group); returns its
  // number for Started/Completed, or kNoEntry when the group is -1.
  static constexpr uint64_t kNoEntry = ~uint64_t{0};
  uint64_t Issue(const CollectiveIssue& issue);
  // The backend began to run entry / finished it. Ignored for an entry whose slot has been
  // reused since, and for kNoEntry.
  void Started(uint64_t entry);
  void Completed(uint64_t entry, bool failed = false);

  // Channel progress of an entry (a ring made with channels; otherwise, and for a channel past
  // channel_count(), an entry whose slot was reused or kNoEntry, ignored). Any thread.
  void Progress(uint64_t entry, uint32_t channel, ChannelCounter counter, uint32_t add = 1);
  void ProxyOpStarted(uint64_t entry, uint32_t channel);
  void Kernel(uint64_t entry, uint32_t channel, KernelState state);
  uint32_t channel_count() const { return channel_count_; }

  // A compute op began (`name` must outlive the call; a repeated pointer is not copied again).
  void NoteOp(const char* name);
  void NoteStep(int64_t steps_done);
  void NoteDataloader(bool inside);

  void Beat(const NetSample& net);
  uint64_t StackRequest() const;
  // The request the stack text answers (0 on a new ring: no answer yet).
  uint64_t StackAnswered() const;
  void AnswerStack(uint64_t request, std::string_view text);
  // The process ends the watch normally.
  void Close();

  const std::string& path() const { return path_; }
  int64_t steps_done() const { return steps_done_.load(std::memory_order_relaxed); }

 private:
  RingWriter(std::string path, char* base, uint64_t size);
  RingHeader& header() { return *reinterpret_cast<RingHeader*>(base_); }
  RingActivity& activity() { return *reinterpret_cast<RingActivity*>(base_ + kActivityOffset); }
  RingGroup& group(uint32_t index) {
    return reinterpret_cast<RingGroup*>(base_ + kGroupsOffset)[index];
  }
  RingStack& stack() { return *reinterpret_cast<RingStack*>(base_ + kStackOffset); }
  RingSlot& slot(uint64_t entry) {
    return reinterpret_cast<RingSlot*>(base_ + kSlotsOffset)[entry & slot_mask_];
  }
  RingChannelBlock& block(uint64_t entry) {
    return *reinterpret_cast<RingChannelBlock*>(base_ + channels_offset_ +
                                                (entry & slot_mask_) * block_size_);
  }
  // The record of `channel` in entry's block while the block still describes entry; else null.
  RingChannel* LiveChannel(uint64_t entry, uint32_t channel);
  // Runs write() on the activity under its sequence word; skipped (returns false) while
  // another thread writes it.
  template <typename Write>
  bool WriteActivity(Write write);

  std::string path_;
  char* base_;
  uint64_t size_;
  uint64_t slot_mask_;
  uint32_t channel_count_ = 0;
  uint64_t channels_offset_ = 0;
  uint64_t block_size_ = 0;
  std::mutex groups_mutex_;  // Group(): rare, never on an op's path
  std::vector<std::string> group_names_;
  std::atomic<bool> activity_busy_{false};
  const char* last_op_name_ = nullptr;  // under activity_busy_
  std::atomic<int64_t> steps_done_{0};
};

}  // namespace upguard::watch
