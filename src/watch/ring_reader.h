// The monitor's side of the watch ring (docs/formats/watch-ring.md): a consistent copy of what
// a rank wrote, taken without ever waiting on the rank (it may be hung, stopped or dead).
//
//   ASSIGN_OR_RETURN(auto ring, RingReader::Open("runs/w/watch/rank1.ring"));
//   RingSnapshot now = ring->Snapshot();
//   for (const SlotView& call : now.slots) ...   // oldest first
//   ring->RequestStack();  // the rank answers in now.stack within ~50 ms, if it can
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "upguard/status.h"
#include "watch/ring_layout.h"
#include "watch/ring_writer.h"

namespace upguard::watch {

struct GroupView {
  std::string name;
  std::string backend;
  uint32_t size = 0;
  int rank_in_group = -1;
  uint64_t issued_seq = 0;
  uint64_t completed_seq = 0;
  std::vector<int> members;
};

// One channel's progress in a collective (§6.1); only channels with some progress are listed.
struct ChannelView {
  uint32_t channel = 0;
  uint32_t send_steps = 0;
  uint32_t send_posted = 0;
  uint32_t send_transmitted = 0;
  uint32_t send_done = 0;
  uint32_t recv_steps = 0;
  uint32_t recv_posted = 0;
  uint32_t recv_received = 0;
  uint32_t recv_done = 0;
  uint64_t last_ns = 0;
  KernelState kernel = KernelState::kUnknown;
  uint32_t proxy_ops = 0;
};

struct SlotView {
  uint64_t entry = 0;
  uint32_t group = 0;
  SlotState state = SlotState::kEmpty;
  uint64_t seq = 0;
  int64_t step = 0;
  uint64_t issued_ns = 0;
  uint64_t started_ns = 0;
  uint64_t completed_ns = 0;
  uint64_t count = 0;
  uint64_t bytes = 0;
  std::string op;
  std::string dtype;
  std::string call_site;
  int root = -1;
  // From the channel progress part (§6.1); zero and empty in a ring without one.
  uint64_t backend_seq = 0;
  uint32_t channels_used = 0;  // the block's `channels`
  uint32_t warps = 0;
  std::string algo;
  std::string proto;
  uint64_t progress_ns = 0;
  std::vector<ChannelView> channels;
};

struct ActivityView {
  bool consistent = false;  // false: the rank was writing it every time we looked
  int64_t step = 0;
  uint64_t ops = 0;
  uint64_t last_op_ns = 0;
  uint64_t dataloader_since_ns = 0;
  std::string last_op;
  std::vector<uint64_t> step_ends;  // the last steps' ends, oldest first
};

struct StackView {
  uint64_t request = 0;
  uint64_t answered = 0;
  uint64_t answered_ns = 0;
  std::string text;
};

struct RingSnapshot {
  std::string path;
  int rank = 0;
  int world_size = 0;
  int local_rank = -1;
  int pid = 0;
  std::string hostname;
  uint64_t start_realtime_ns = 0;
  uint64_t start_monotonic_ns = 0;
  uint64_t heartbeat_ns = 0;
  uint64_t entries = 0;
  bool closed = false;
  NetSample net;
  uint64_t net_sampled_ns = 0;
  uint32_t channel_count = 0;  // channel records per slot (§6.1); 0: none
  std::vector<GroupView> groups;
  ActivityView activity;
  std::vector<SlotView> slots;  // the entries still in the ring, oldest first
  StackView stack;
};

class RingReader {
 public:
  // DataLoss for a file that is not a version-1 ring or is cut short, naming the file and field.
  static StatusOr<std::unique_ptr<RingReader>> Open(const std::string& path);
  ~RingReader();
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;

  RingSnapshot Snapshot() const;
  // Asks the rank for its Python stacks; false when the file is mapped read-only.
  bool RequestStack();

  const std::string& path() const { return path_; }

 private:
  RingReader(std::string path, char* base, uint64_t size, bool writable)
      : path_(std::move(path)), base_(base), size_(size), writable_(writable) {}
  const RingHeader& header() const { return *reinterpret_cast<const RingHeader*>(base_); }
  // Fills view's channel progress from its slot's block, if the block describes the entry.
  void ReadChannels(uint64_t slot_index, SlotView& view) const;

  std::string path_;
  char* base_;
  uint64_t size_;
  bool writable_;
};

}  // namespace upguard::watch
