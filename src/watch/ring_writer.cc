#include "watch/ring_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace upguard::watch {
namespace {

uint64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// Copies `text` into a NUL-padded char[n], cut at n - 1 bytes.
template <size_t N>
void CopyText(char (&out)[N], std::string_view text) {
  size_t used = std::min(text.size(), N - 1);
  if (used != 0) std::memcpy(out, text.data(), used);  // an empty view's data() may be null
  std::memset(out + used, 0, N - used);
}

bool PowerOfTwo(uint32_t n) { return n != 0 && (n & (n - 1)) == 0; }

}  // namespace

uint64_t MonotonicNs() { return ClockNs(CLOCK_MONOTONIC); }
uint64_t RealtimeNs() { return ClockNs(CLOCK_REALTIME); }

StatusOr<std::unique_ptr<RingWriter>> RingWriter::Create(const std::string& path,
                                                         const RingIdentity& identity,
                                                         uint32_t slot_count,
                                                         uint32_t channel_count) {
  if (!PowerOfTwo(slot_count)) {
    return InvalidArgument("watch ring " + path + ": slot count " + std::to_string(slot_count) +
                           " is not a power of two");
  }
  if (channel_count > kMaxChannelCount) {
    return InvalidArgument("watch ring " + path + ": " + std::to_string(channel_count) +
                           " channels per slot, more than " + std::to_string(kMaxChannelCount));
  }
  const uint64_t size = RingFileSize(slot_count, channel_count);
  const std::string temp = path + ".tmp" + std::to_string(getpid());
  int fd = open(temp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return IoError("cannot create watch ring " + temp + ": " + std::strerror(errno) +
                   " (is the run directory writable?)");
  }
  if (ftruncate(fd, off_t(size)) != 0) {
    std::string why = std::strerror(errno);
    close(fd);
    unlink(temp.c_str());
    return IoError("cannot size watch ring " + temp + " to " + std::to_string(size) +
                   " bytes: " + why);
  }
  void* map = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    unlink(temp.c_str());
    return IoError("cannot map watch ring " + temp + ": " + std::strerror(errno));
  }
  auto* header = static_cast<RingHeader*>(map);  // the file is zero-filled by ftruncate
  header->version = kRingVersion;
  header->byte_order = kByteOrderMark;
  header->header_size = sizeof(RingHeader);
  header->slot_size = sizeof(RingSlot);
  header->slot_count = slot_count;
  header->group_capacity = kGroupCapacity;
  header->activity_offset = kActivityOffset;
  header->groups_offset = kGroupsOffset;
  header->stack_offset = kStackOffset;
  header->slots_offset = kSlotsOffset;
  if (channel_count > 0) {
    header->channels_offset = RingFileSize(slot_count);
    header->channel_count = channel_count;
    header->channel_block_size = uint32_t(ChannelBlockSize(channel_count));
  }
  header->rank = identity.rank;
  header->world_size = identity.world_size;
  header->local_rank = identity.local_rank;
  header->pid = identity.pid;
  header->start_realtime_ns = RealtimeNs();
  header->start_monotonic_ns = MonotonicNs();
  header->heartbeat_ns = header->start_monotonic_ns;
  CopyText(header->hostname, identity.hostname);
  std::memcpy(header->magic, kRingMagic, sizeof(kRingMagic));
  if (rename(temp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    munmap(map, size);
    unlink(temp.c_str());
    return IoError("cannot move watch ring " + temp + " to " + path + ": " + why);
  }
  return std::unique_ptr<RingWriter>(new RingWriter(path, static_cast<char*>(map), size));
}

RingWriter::RingWriter(std::string path, char* base, uint64_t size)
    : path_(std::move(path)), base_(base), size_(size) {
  slot_mask_ = header().slot_count - 1;
  channel_count_ = header().channel_count;
  channels_offset_ = header().channels_offset;
  block_size_ = header().channel_block_size;
}

RingWriter::~RingWriter() { munmap(base_, size_); }

int RingWriter::Group(const GroupInfo& info) {
  std::lock_guard<std::mutex> lock(groups_mutex_);
  for (size_t idx = 0; idx < group_names_.size(); ++idx) {
    if (group_names_[idx] == info.name) return int(idx);
  }
  if (group_names_.size() >= kGroupCapacity) return -1;
  const uint32_t index = uint32_t(group_names_.size());
  RingGroup& entry = group(index);
  CopyText(entry.name, info.name);
  CopyText(entry.backend, info.backend);
  entry.size = info.size;
  entry.rank_in_group = info.rank_in_group;
  entry.members_stored = uint32_t(std::min<size_t>(info.members.size(), kGroupMembersStored));
  for (uint32_t idx = 0; idx < entry.members_stored; ++idx) entry.members[idx] = info.members[idx];
  group_names_.push_back(info.name);
  StoreRelease(header().group_count, index + 1);
  return int(index);
}

uint64_t RingWriter::Issue(const CollectiveIssue& issue) {
  if (issue.group < 0 || uint32_t(issue.group) >= kGroupCapacity) return kNoEntry;
  RingGroup& owner = group(uint32_t(issue.group));
  const uint64_t seq = AtomicField(owner.issued_seq).fetch_add(1, std::memory_order_acq_rel) + 1;
  const uint64_t entry = AtomicField(header().entries).fetch_add(1, std::memory_order_acq_rel);
  RingSlot& out = slot(entry);
  StoreRelease(out.entry, uint64_t{0});
  std::atomic_thread_fence(std::memory_order_release);
  out.group = uint32_t(issue.group);
  out.seq = seq;
  out.step = steps_done_.load(std::memory_order_relaxed);
  out.issued_ns = MonotonicNs();
  StoreRelease(out.started_ns, uint64_t{0});
  StoreRelease(out.completed_ns, uint64_t{0});
  out.count = issue.count;
  out.bytes = issue.bytes;
  CopyText(out.op, issue.op);
  CopyText(out.dtype, issue.dtype);
  CopyText(out.call_site, issue.call_site);
  out.root = issue.root;
  StoreRelease(out.state, uint32_t(SlotState::kIssued));
  if (channel_count_ > 0) {
    RingChannelBlock& progress = block(entry);
    StoreRelease(progress.entry, uint64_t{0});
    std::atomic_thread_fence(std::memory_order_release);
    progress.backend_seq = issue.backend_seq;
    progress.channels = issue.channels;
    progress.warps = issue.warps;
    CopyText(progress.algo, issue.algo);
    CopyText(progress.proto, issue.proto);
    StoreRelease(progress.progress_ns, uint64_t{0});
    auto* channels = reinterpret_cast<RingChannel*>(&progress + 1);
    for (uint32_t idx = 0; idx < channel_count_; ++idx) {
      for (uint32_t& counter : channels[idx].counters) StoreRelease(counter, 0u);
      StoreRelease(channels[idx].last_ns, uint64_t{0});
      StoreRelease(channels[idx].kernel, 0u);
      StoreRelease(channels[idx].proxy_ops, 0u);
    }
    StoreRelease(progress.entry, entry + 1);
  }
  StoreRelease(out.entry, entry + 1);
  return entry;
}

RingChannel* RingWriter::LiveChannel(uint64_t entry, uint32_t channel) {
  if (entry == kNoEntry || channel >= channel_count_) return nullptr;
  RingChannelBlock& progress = block(entry);
  if (LoadAcquire(progress.entry) != entry + 1) return nullptr;
  return reinterpret_cast<RingChannel*>(&progress + 1) + channel;
}

void RingWriter::Progress(uint64_t entry, uint32_t channel, ChannelCounter counter, uint32_t add) {
  RingChannel* record = LiveChannel(entry, channel);
  if (record == nullptr || uint32_t(counter) >= kChannelCounters) return;
  AtomicField(record->counters[uint32_t(counter)]).fetch_add(add, std::memory_order_acq_rel);
  const uint64_t now = MonotonicNs();
  StoreRelease(record->last_ns, now);
  StoreRelease(block(entry).progress_ns, now);
}

void RingWriter::ProxyOpStarted(uint64_t entry, uint32_t channel) {
  RingChannel* record = LiveChannel(entry, channel);
  if (record == nullptr) return;
  AtomicField(record->proxy_ops).fetch_add(1, std::memory_order_acq_rel);
}

void RingWriter::Kernel(uint64_t entry, uint32_t channel, KernelState state) {
  RingChannel* record = LiveChannel(entry, channel);
  if (record == nullptr) return;
  StoreRelease(record->kernel, uint32_t(state));
  const uint64_t now = MonotonicNs();
  StoreRelease(record->last_ns, now);
  StoreRelease(block(entry).progress_ns, now);
}

void RingWriter::Started(uint64_t entry) {
  if (entry == kNoEntry) return;
  RingSlot& out = slot(entry);
  if (LoadAcquire(out.entry) != entry + 1) return;
  StoreRelease(out.started_ns, MonotonicNs());
  uint32_t expected = uint32_t(SlotState::kIssued);
  AtomicField(out.state).compare_exchange_strong(expected, uint32_t(SlotState::kStarted));
}

void RingWriter::Completed(uint64_t entry, bool failed) {
  if (entry == kNoEntry) return;
  RingSlot& out = slot(entry);
  if (LoadAcquire(out.entry) != entry + 1) return;
  StoreRelease(out.completed_ns, MonotonicNs());
  StoreRelease(out.state, uint32_t(failed ? SlotState::kFailed : SlotState::kCompleted));
  RingGroup& owner = group(out.group);
  uint64_t done = LoadAcquire(owner.completed_seq);
  while (done < out.seq && !AtomicField(owner.completed_seq).compare_exchange_weak(done, out.seq)) {
  }
}

template <typename Write>
bool RingWriter::WriteActivity(Write write) {
  if (activity_busy_.exchange(true, std::memory_order_acquire)) return false;
  RingActivity& act = activity();
  const uint64_t sequence = act.sequence;
  StoreRelease(act.sequence, sequence + 1);
  std::atomic_thread_fence(std::memory_order_release);
  write(act);
  StoreRelease(act.sequence, sequence + 2);
  activity_busy_.store(false, std::memory_order_release);
  return true;
}

void RingWriter::NoteOp(const char* name) {
  WriteActivity([&](RingActivity& act) {
    act.ops += 1;
    act.last_op_ns = MonotonicNs();
    if (name != last_op_name_) {
      CopyText(act.last_op, name ? std::string_view(name) : std::string_view());
      last_op_name_ = name;
    }
  });
}

void RingWriter::NoteStep(int64_t steps_done) {
  steps_done_.store(steps_done, std::memory_order_relaxed);
  const uint64_t now = MonotonicNs();
  // A step mark must not be lost to a racing op: wait for the other writer (a few ns).
  while (!WriteActivity([&](RingActivity& act) {
    act.step = steps_done;
    act.step_end_ns[act.steps_recorded % kStepEndsKept] = now;
    act.steps_recorded += 1;
  })) {
  }
}

void RingWriter::NoteDataloader(bool inside) {
  const uint64_t since = inside ? MonotonicNs() : 0;
  while (!WriteActivity([&](RingActivity& act) { act.dataloader_since_ns = since; })) {
  }
}

void RingWriter::Beat(const NetSample& net) {
  RingHeader& head = header();
  StoreRelease(head.net_tx_bytes, net.tx_bytes);
  StoreRelease(head.net_rx_bytes, net.rx_bytes);
  StoreRelease(head.net_links_up, net.links_up);
  StoreRelease(head.net_links, net.links);
  StoreRelease(head.net_throttled, net.throttled);
  const uint64_t now = MonotonicNs();
  StoreRelease(head.net_sampled_ns, now);
  StoreRelease(head.heartbeat_ns, now);
}

uint64_t RingWriter::StackRequest() const {
  return LoadAcquire(reinterpret_cast<const RingStack*>(base_ + kStackOffset)->request);
}

uint64_t RingWriter::StackAnswered() const {
  return LoadAcquire(reinterpret_cast<const RingStack*>(base_ + kStackOffset)->answered);
}

void RingWriter::AnswerStack(uint64_t request, std::string_view text) {
  RingStack& out = stack();
  const size_t used = std::min(text.size(), sizeof(out.text) - 1);
  if (used != 0) std::memcpy(out.text, text.data(), used);
  out.text[used] = '\0';
  out.length = uint32_t(used);
  StoreRelease(out.answered_ns, MonotonicNs());
  StoreRelease(out.answered, request);
}

void RingWriter::Close() { StoreRelease(header().closed, uint32_t{1}); }

}  // namespace upguard::watch
