// The watch ring's bytes (docs/formats/watch-ring.md is the normative spec): one file per rank,
// written by the training process (ring_writer.h) and read by the monitor (ring_reader.h) while
// the rank runs, hangs, is stopped or is dead. Both sides share these structs through a
// MAP_SHARED mapping of the same file; the fields marked atomic in the spec are accessed only
// through the helpers at the bottom.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace upguard::watch {

inline constexpr char kRingMagic[8] = {'U', 'G', 'W', 'R', 'I', 'N', 'G', '\0'};
inline constexpr uint32_t kRingVersion = 1;
inline constexpr uint32_t kByteOrderMark = 0x01020304;
inline constexpr uint32_t kGroupCapacity = 32;
inline constexpr uint32_t kGroupMembersStored = 40;
inline constexpr uint32_t kStepEndsKept = 32;
inline constexpr uint32_t kStackBytes = 8192;
inline constexpr uint32_t kDefaultSlotCount = 1024;

// A collective's state in its slot; serialized, never renumbered.
enum class SlotState : uint32_t {
  kEmpty = 0,
  kIssued = 1,
  kStarted = 2,
  kCompleted = 3,
  kFailed = 4,
};

struct RingHeader {
  char magic[8];
  uint32_t version;
  uint32_t byte_order;
  uint32_t header_size;
  uint32_t slot_size;
  uint32_t slot_count;
  uint32_t group_capacity;
  uint64_t activity_offset;
  uint64_t groups_offset;
  uint64_t stack_offset;
  uint64_t slots_offset;
  int32_t rank;
  int32_t world_size;
  int32_t local_rank;
  int32_t pid;
  uint64_t start_realtime_ns;
  uint64_t start_monotonic_ns;
  uint64_t heartbeat_ns;    // atomic
  uint64_t entries;         // atomic
  uint32_t group_count;     // atomic
  uint32_t closed;          // atomic
  uint64_t net_tx_bytes;    // atomic
  uint64_t net_rx_bytes;    // atomic
  uint64_t net_sampled_ns;  // atomic
  uint32_t net_links_up;    // atomic
  uint32_t net_links;       // atomic
  char hostname[64];
  uint64_t net_throttled;    // atomic
  uint64_t channels_offset;  // 0: no channel progress part (§6.1)
  uint32_t channel_count;
  uint32_t channel_block_size;
  uint8_t reserved[16];
};
static_assert(sizeof(RingHeader) == 256);
static_assert(offsetof(RingHeader, channels_offset) == 224);
static_assert(offsetof(RingHeader, channel_block_size) == 236);
static_assert(offsetof(RingHeader, heartbeat_ns) == 96);
static_assert(offsetof(RingHeader, hostname) == 152);
static_assert(offsetof(RingHeader, net_throttled) == 216);

struct RingActivity {
  uint64_t sequence;  // atomic; odd while written
  int64_t step;
  uint64_t ops;
  uint64_t last_op_ns;
  uint64_t dataloader_since_ns;
  uint64_t steps_recorded;
  char last_op[64];
  uint64_t step_end_ns[kStepEndsKept];
  uint8_t reserved[144];
};
static_assert(sizeof(RingActivity) == 512);
static_assert(offsetof(RingActivity, step_end_ns) == 112);

struct RingGroup {
  char name[48];
  char backend[16];
  uint32_t size;
  int32_t rank_in_group;
  uint64_t issued_seq;     // atomic
  uint64_t completed_seq;  // atomic
  uint32_t members_stored;
  uint32_t reserved;
  int32_t members[kGroupMembersStored];
};
static_assert(sizeof(RingGroup) == 256);

struct RingSlot {
  uint64_t entry;  // atomic; entry number + 1, 0 while written
  uint32_t group;
  uint32_t state;  // atomic; SlotState
  uint64_t seq;
  int64_t step;
  uint64_t issued_ns;
  uint64_t started_ns;    // atomic
  uint64_t completed_ns;  // atomic
  uint64_t count;
  uint64_t bytes;
  char op[24];
  char dtype[16];
  char call_site[128];
  int32_t root;
  uint8_t reserved[12];
};
static_assert(sizeof(RingSlot) == 256);
static_assert(offsetof(RingSlot, call_site) == 112);

// §6.1: a slot's channel progress block, then `channel_count` RingChannel records.
struct RingChannelBlock {
  uint64_t entry;  // atomic; entry number + 1, 0 while written
  uint64_t backend_seq;
  uint32_t channels;
  uint32_t warps;
  char algo[16];
  char proto[16];
  uint64_t progress_ns;  // atomic
};
static_assert(sizeof(RingChannelBlock) == 64);
static_assert(offsetof(RingChannelBlock, algo) == 24);
static_assert(offsetof(RingChannelBlock, progress_ns) == 56);

// The counters of a channel record, in their order there; serialized, never renumbered.
enum class ChannelCounter : uint32_t {
  kSendSteps = 0,
  kSendPosted = 1,
  kSendTransmitted = 2,
  kSendDone = 3,
  kRecvSteps = 4,
  kRecvPosted = 5,
  kRecvReceived = 6,
  kRecvDone = 7,
};
inline constexpr uint32_t kChannelCounters = 8;

// A channel record's `kernel`; serialized, never renumbered.
enum class KernelState : uint32_t {
  kUnknown = 0,
  kRunning = 1,
  kFinished = 2,
};

struct RingChannel {
  uint32_t counters[kChannelCounters];  // atomic; indexed by ChannelCounter
  uint64_t last_ns;                     // atomic
  uint32_t kernel;                      // atomic; KernelState
  uint32_t proxy_ops;                   // atomic
};
static_assert(sizeof(RingChannel) == 48);
static_assert(offsetof(RingChannel, last_ns) == 32);
static_assert(offsetof(RingChannel, proxy_ops) == 44);

// Channels a block may describe (a reader rejects more): NCCL's MAXCHANNELS is 64.
inline constexpr uint32_t kMaxChannelCount = 256;

inline constexpr uint64_t ChannelBlockSize(uint32_t channel_count) {
  return sizeof(RingChannelBlock) + uint64_t{sizeof(RingChannel)} * channel_count;
}

struct RingStack {
  uint64_t request;      // atomic; written by readers
  uint64_t answered;     // atomic
  uint64_t answered_ns;  // atomic
  uint32_t length;
  uint32_t reserved;
  char text[kStackBytes - 32];
};
static_assert(sizeof(RingStack) == kStackBytes);

inline constexpr uint64_t kActivityOffset = sizeof(RingHeader);
inline constexpr uint64_t kGroupsOffset = kActivityOffset + sizeof(RingActivity);
inline constexpr uint64_t kStackOffset = kGroupsOffset + sizeof(RingGroup) * kGroupCapacity;
inline constexpr uint64_t kSlotsOffset = kStackOffset + sizeof(RingStack);

inline uint64_t RingFileSize(uint32_t slot_count) {
  return kSlotsOffset + uint64_t{sizeof(RingSlot)} * slot_count;
}
// With a channel progress part of `channel_count` records per slot (0: none).
inline uint64_t RingFileSize(uint32_t slot_count, uint32_t channel_count) {
  if (channel_count == 0) return RingFileSize(slot_count);
  return RingFileSize(slot_count) + ChannelBlockSize(channel_count) * slot_count;
}

// Atomic access to a field of the shared mapping (the spec's "atomic" fields). The fields are
// naturally aligned and lock-free atomics of their size are address-free, so two processes
// mapping the same page agree.
template <typename T>
std::atomic<T>& AtomicField(T& field) {
  static_assert(std::atomic<T>::is_always_lock_free);
  static_assert(sizeof(std::atomic<T>) == sizeof(T));
  return *reinterpret_cast<std::atomic<T>*>(&field);
}
template <typename T>
T LoadAcquire(const T& field) {
  return AtomicField(const_cast<T&>(field)).load(std::memory_order_acquire);
}
template <typename T>
void StoreRelease(T& field, T value) {
  AtomicField(field).store(value, std::memory_order_release);
}

// CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds.
uint64_t MonotonicNs();
uint64_t RealtimeNs();

}  // namespace upguard::watch
