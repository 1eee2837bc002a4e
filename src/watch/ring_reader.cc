#include "watch/ring_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace upguard::watch {
namespace {

constexpr int kTornRetries = 16;  // then the part is reported as being written

template <size_t N>
std::string Text(const char (&field)[N]) {
  return std::string(field, strnlen(field, N));
}

}  // namespace

StatusOr<std::unique_ptr<RingReader>> RingReader::Open(const std::string& path) {
  bool writable = true;
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && (errno == EACCES || errno == EROFS)) {
    writable = false;
    fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) {
    if (errno == ENOENT) return NotFound("no watch ring " + path);
    return IoError("cannot open watch ring " + path + ": " + std::strerror(errno));
  }
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    std::string why = std::strerror(errno);
    close(fd);
    return IoError("cannot stat watch ring " + path + ": " + why);
  }
  const uint64_t size = uint64_t(info.st_size);
  if (size < sizeof(RingHeader)) {
    close(fd);
    return DataLoss("watch ring " + path + " is " + std::to_string(size) +
                    " bytes, shorter than its 256-byte header (not a ring, or cut short)");
  }
  void* map = mmap(nullptr, size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    return IoError("cannot map watch ring " + path + ": " + std::strerror(errno));
  }
  const auto* header = static_cast<const RingHeader*>(map);
  auto fail = [&](const std::string& why) {
    munmap(map, size);
    return DataLoss("watch ring " + path + ": " + why);
  };
  if (std::memcmp(header->magic, kRingMagic, sizeof(kRingMagic)) != 0) {
    return fail("bad magic at offset 0 (not an upguard watch ring)");
  }
  if (header->version != kRingVersion) {
    return fail("version " + std::to_string(header->version) +
                " at offset 8; this upguard reads "
                "version " +
                std::to_string(kRingVersion) + " (use the upguard that wrote it)");
  }
  if (header->byte_order != kByteOrderMark) {
    return fail("written on a machine of another byte order (offset 12); read it there");
  }
  if (header->header_size != sizeof(RingHeader) || header->slot_size != sizeof(RingSlot) ||
      header->group_capacity != kGroupCapacity || header->activity_offset != kActivityOffset ||
      header->groups_offset != kGroupsOffset || header->stack_offset != kStackOffset ||
      header->slots_offset != kSlotsOffset || header->slot_count == 0 ||
      (header->slot_count & (header->slot_count - 1)) != 0) {
    return fail("unexpected sizes or offsets in the header (offsets 16-63)");
  }
  if (header->channels_offset != 0 &&
      (header->channels_offset != RingFileSize(header->slot_count) || header->channel_count == 0 ||
       header->channel_count > kMaxChannelCount ||
       header->channel_block_size != ChannelBlockSize(header->channel_count))) {
    return fail("unexpected channel progress part in the header (offsets 224-239)");
  }
  const uint32_t channel_count = header->channels_offset != 0 ? header->channel_count : 0;
  if (size < RingFileSize(header->slot_count, channel_count)) {
    return fail("cut short: " + std::to_string(size) + " bytes for " +
                std::to_string(header->slot_count) + " slots (" +
                std::to_string(RingFileSize(header->slot_count, channel_count)) + " expected)");
  }
  return std::unique_ptr<RingReader>(new RingReader(path, static_cast<char*>(map), size, writable));
}

RingReader::~RingReader() { munmap(base_, size_); }

RingSnapshot RingReader::Snapshot() const {
  const RingHeader& head = header();
  RingSnapshot out;
  out.path = path_;
  out.rank = head.rank;
  out.world_size = head.world_size;
  out.local_rank = head.local_rank;
  out.pid = head.pid;
  out.hostname = Text(head.hostname);
  out.start_realtime_ns = head.start_realtime_ns;
  out.start_monotonic_ns = head.start_monotonic_ns;
  out.heartbeat_ns = LoadAcquire(head.heartbeat_ns);
  out.entries = LoadAcquire(head.entries);
  out.closed = LoadAcquire(head.closed) != 0;
  out.net.tx_bytes = LoadAcquire(head.net_tx_bytes);
  out.net.rx_bytes = LoadAcquire(head.net_rx_bytes);
  out.net.links_up = LoadAcquire(head.net_links_up);
  out.net.links = LoadAcquire(head.net_links);
  out.net.throttled = LoadAcquire(head.net_throttled);
  out.net_sampled_ns = LoadAcquire(head.net_sampled_ns);
  out.channel_count = head.channels_offset != 0 ? head.channel_count : 0;

  const uint32_t group_count = std::min(LoadAcquire(head.group_count), kGroupCapacity);
  const auto* groups = reinterpret_cast<const RingGroup*>(base_ + kGroupsOffset);
  for (uint32_t idx = 0; idx < group_count; ++idx) {
    const RingGroup& in = groups[idx];
    GroupView view;
    view.name = Text(in.name);
    view.backend = Text(in.backend);
    view.size = in.size;
    view.rank_in_group = in.rank_in_group;
    view.issued_seq = LoadAcquire(in.issued_seq);
    view.completed_seq = LoadAcquire(in.completed_seq);
    const uint32_t stored = std::min(in.members_stored, kGroupMembersStored);
    view.members.assign(in.members, in.members + stored);
    out.groups.push_back(std::move(view));
  }

  const auto* live = reinterpret_cast<const RingActivity*>(base_ + kActivityOffset);
  for (int attempt = 0; attempt < kTornRetries && !out.activity.consistent; ++attempt) {
    const uint64_t before = LoadAcquire(live->sequence);
    if (before & 1) continue;
    RingActivity copy;
    std::memcpy(&copy, live, sizeof(copy));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (LoadAcquire(live->sequence) != before) continue;
    ActivityView& act = out.activity;
    act.consistent = true;
    act.step = copy.step;
    act.ops = copy.ops;
    act.last_op_ns = copy.last_op_ns;
    act.dataloader_since_ns = copy.dataloader_since_ns;
    act.last_op = Text(copy.last_op);
    const uint64_t kept = std::min<uint64_t>(copy.steps_recorded, kStepEndsKept);
    for (uint64_t back = kept; back > 0; --back) {
      act.step_ends.push_back(copy.step_end_ns[(copy.steps_recorded - back) % kStepEndsKept]);
    }
  }

  const auto* slots = reinterpret_cast<const RingSlot*>(base_ + kSlotsOffset);
  const uint64_t count = head.slot_count;
  const uint64_t first = out.entries > count ? out.entries - count : 0;
  for (uint64_t entry = first; entry < out.entries; ++entry) {
    const RingSlot& in = slots[entry % count];
    for (int attempt = 0; attempt < kTornRetries; ++attempt) {
      const uint64_t tag = LoadAcquire(in.entry);
      if (tag != entry + 1) {
        if (tag > entry + 1) break;  // overwritten by a later entry
        continue;                    // reserved, not yet written
      }
      RingSlot copy;
      std::memcpy(&copy, &in, sizeof(copy));
      std::atomic_thread_fence(std::memory_order_acquire);
      if (LoadAcquire(in.entry) != tag) continue;
      SlotView view;
      view.entry = entry;
      view.group = copy.group;
      view.state = SlotState(copy.state);
      view.seq = copy.seq;
      view.step = copy.step;
      view.issued_ns = copy.issued_ns;
      view.started_ns = copy.started_ns;
      view.completed_ns = copy.completed_ns;
      view.count = copy.count;
      view.bytes = copy.bytes;
      view.op = Text(copy.op);
      view.dtype = Text(copy.dtype);
      view.call_site = Text(copy.call_site);
      view.root = copy.root;
      ReadChannels(entry % count, view);
      out.slots.push_back(std::move(view));
      break;
    }
  }

  const auto* stack = reinterpret_cast<const RingStack*>(base_ + kStackOffset);
  out.stack.request = LoadAcquire(stack->request);
  out.stack.answered = LoadAcquire(stack->answered);
  out.stack.answered_ns = LoadAcquire(stack->answered_ns);
  if (out.stack.answered != 0) {
    out.stack.text.assign(stack->text, strnlen(stack->text, sizeof(stack->text)));
  }
  return out;
}

void RingReader::ReadChannels(uint64_t slot_index, SlotView& view) const {
  const RingHeader& head = header();
  if (head.channels_offset == 0) return;
  const auto* block = reinterpret_cast<const RingChannelBlock*>(
      base_ + head.channels_offset + slot_index * head.channel_block_size);
  const auto* records = reinterpret_cast<const RingChannel*>(block + 1);
  for (int attempt = 0; attempt < kTornRetries; ++attempt) {
    const uint64_t tag = LoadAcquire(block->entry);
    if (tag != view.entry + 1) {
      if (tag > view.entry + 1) return;  // reused by a later entry
      continue;                          // being written
    }
    SlotView copy;
    copy.backend_seq = block->backend_seq;
    copy.channels_used = block->channels;
    copy.warps = block->warps;
    copy.algo = Text(block->algo);
    copy.proto = Text(block->proto);
    copy.progress_ns = LoadAcquire(block->progress_ns);
    for (uint32_t idx = 0; idx < head.channel_count; ++idx) {
      const RingChannel& in = records[idx];
      ChannelView channel;
      channel.channel = idx;
      uint32_t* fields[kChannelCounters] = {
          &channel.send_steps, &channel.send_posted, &channel.send_transmitted, &channel.send_done,
          &channel.recv_steps, &channel.recv_posted, &channel.recv_received,    &channel.recv_done};
      uint32_t any = 0;
      for (uint32_t counter = 0; counter < kChannelCounters; ++counter) {
        *fields[counter] = LoadAcquire(in.counters[counter]);
        any |= *fields[counter];
      }
      channel.last_ns = LoadAcquire(in.last_ns);
      channel.kernel = KernelState(LoadAcquire(in.kernel));
      channel.proxy_ops = LoadAcquire(in.proxy_ops);
      if (any == 0 && channel.kernel == KernelState::kUnknown && channel.proxy_ops == 0) continue;
      copy.channels.push_back(channel);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (LoadAcquire(block->entry) != view.entry + 1) continue;
    view.backend_seq = copy.backend_seq;
    view.channels_used = copy.channels_used;
    view.warps = copy.warps;
    view.algo = std::move(copy.algo);
    view.proto = std::move(copy.proto);
    view.progress_ns = copy.progress_ns;
    view.channels = std::move(copy.channels);
    return;
  }
}

bool RingReader::RequestStack() {
  if (!writable_) return false;
  auto* stack = reinterpret_cast<RingStack*>(base_ + kStackOffset);
  AtomicField(stack->request).fetch_add(1, std::memory_order_acq_rel);
  return true;
}

}  // namespace upguard::watch
