#include "watch/nccl/nccl_profiler.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

namespace upguard::watch {
namespace {

struct DtypeInfo {
  const char* nccl;
  const char* name;
  uint32_t size;
};
constexpr DtypeInfo kDtypes[] = {
    {"ncclInt8", "int8", 1},
    {"ncclUint8", "uint8", 1},
    {"ncclInt32", "int32", 4},
    {"ncclUint32", "uint32", 4},
    {"ncclInt64", "int64", 8},
    {"ncclUint64", "uint64", 8},
    {"ncclFloat16", "float16", 2},
    {"ncclFloat32", "float32", 4},
    {"ncclFloat64", "float64", 8},
    {"ncclBfloat16", "bfloat16", 2},
    {"ncclFloat8e4m3", "float8_e4m3fn", 1},
    {"ncclFloat8e5m2", "float8_e5m2", 1},
};

std::string Hex(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

NcclProfiler::NcclProfiler(std::unique_ptr<RingWriter> ring, int rank, int world_size)
    : ring_(std::move(ring)), rank_(rank), world_size_(world_size), pid_(getpid()) {}

NcclProfiler::~NcclProfiler() { ring_->Close(); }

std::string NcclProfiler::RingPath(const std::string& run_dir, int rank) {
  return run_dir + "/watch/rank" + std::to_string(rank) + ".nccl.ring";
}

std::string NcclProfiler::OpName(const char* func) {
  // "AllReduce" -> "allreduce", "ReduceScatter" -> "reducescatter": the c10d op's name without
  // its underscores, as the adapter writes it.
  std::string out;
  for (const char* c = func ? func : ""; *c != '\0'; ++c) out += char(std::tolower(*c));
  return out;
}

std::string NcclProfiler::DtypeName(const char* datatype, uint32_t* element_size) {
  *element_size = 0;
  if (datatype == nullptr) return "";
  for (const DtypeInfo& known : kDtypes) {
    if (std::strcmp(known.nccl, datatype) == 0) {
      *element_size = known.size;
      return known.name;
    }
  }
  return std::strncmp(datatype, "nccl", 4) == 0 ? OpName(datatype + 4) : OpName(datatype);
}

NcclComm* NcclProfiler::AddComm(uint64_t comm_hash, int nranks, int rank_in_comm) {
  auto comm = std::make_unique<NcclComm>();
  comm->nranks = nranks;
  GroupInfo info;
  info.name = "nccl:" + Hex(comm_hash);
  info.backend = "nccl";
  info.size = uint32_t(std::max(nranks, 0));
  info.rank_in_group = rank_in_comm;
  // NCCL does not name a communicator's global ranks; a communicator of the whole world whose
  // rank is this process's rank is taken to be the world in order.
  if (nranks == world_size_ && rank_in_comm == rank_) {
    for (int idx = 0; idx < nranks; ++idx) info.members.push_back(idx);
  }
  comm->group = ring_->Group(info);
  std::lock_guard<std::mutex> lock(comms_mutex_);
  comms_.push_back(std::move(comm));
  return comms_.back().get();
}

void NcclProfiler::RemoveComm(NcclComm* comm) {
  std::lock_guard<std::mutex> lock(comms_mutex_);
  comms_.erase(
      std::remove_if(comms_.begin(), comms_.end(),
                     [&](const std::unique_ptr<NcclComm>& held) { return held.get() == comm; }),
      comms_.end());
}

bool NcclProfiler::HasComms() const {
  std::lock_guard<std::mutex> lock(comms_mutex_);
  return !comms_.empty();
}

NcclEvent* NcclProfiler::StartCall(NcclComm* comm, const NcclCall& call) {
  uint32_t element_size = 0;
  const std::string dtype = DtypeName(call.datatype, &element_size);
  const std::string op = OpName(call.func);
  CollectiveIssue issue;
  issue.group = comm->group;
  issue.op = op;
  issue.dtype = dtype;
  // The input's elements, as the adapter counts them: NCCL gives a reduce-scatter's output
  // count (one rank's share).
  issue.count = call.count * (op == "reducescatter" ? uint64_t(std::max(comm->nranks, 1)) : 1);
  issue.bytes = issue.count * element_size;
  // NCCL passes 0 as the root of an unrooted collective.
  const bool rooted =
      call.p2p || op == "broadcast" || op == "reduce" || op == "gather" || op == "scatter";
  issue.root = rooted ? call.root : -1;
  issue.backend_seq = call.seq_number;
  issue.channels = call.channels;
  issue.warps = call.warps;
  issue.algo = call.algo ? call.algo : "";
  issue.proto = call.proto ? call.proto : "";
  NcclCollEvent* event = comm->colls.Take();
  event->entry.store(RingWriter::kNoEntry, std::memory_order_relaxed);
  event->channels = call.channels;
  event->host_stopped.store(false, std::memory_order_relaxed);
  event->started.store(false, std::memory_order_relaxed);
  event->completed.store(false, std::memory_order_relaxed);
  event->open_ops.store(0, std::memory_order_relaxed);
  event->ops_seen.store(0, std::memory_order_relaxed);
  event->kernels_seen.store(0, std::memory_order_relaxed);
  event->kernels_done.store(0, std::memory_order_relaxed);
  event->entry.store(ring_->Issue(issue), std::memory_order_release);
  return event;
}

NcclCollEvent* NcclProfiler::CallOf(void* parent) {
  if (parent == nullptr) return nullptr;
  auto* event = static_cast<NcclEvent*>(parent);
  return event->kind == NcclEventKind::kColl ? static_cast<NcclCollEvent*>(event) : nullptr;
}

NcclEvent* NcclProfiler::StartProxyOp(NcclComm* comm, void* parent, pid_t pid, uint32_t channel,
                                      int steps, bool is_send) {
  // A proxy operation of another process (PXN) names a parent in that process's memory.
  if (pid != pid_) return nullptr;
  NcclCollEvent* call = CallOf(parent);
  if (call == nullptr) return nullptr;
  NcclProxyOpEvent* event = comm->ops.Take();
  event->parent = call;
  event->entry = call->entry.load(std::memory_order_acquire);
  event->channel = channel;
  event->is_send = is_send;
  call->open_ops.fetch_add(1, std::memory_order_acq_rel);
  call->ops_seen.fetch_add(1, std::memory_order_acq_rel);
  ring_->ProxyOpStarted(event->entry, channel);
  ring_->Progress(event->entry, channel,
                  is_send ? ChannelCounter::kSendSteps : ChannelCounter::kRecvSteps,
                  uint32_t(std::max(steps, 0)));
  MarkStarted(*call);
  return event;
}

NcclEvent* NcclProfiler::StartProxyStep(NcclComm* comm, void* parent) {
  if (parent == nullptr) return nullptr;
  auto* base = static_cast<NcclEvent*>(parent);
  if (base->kind != NcclEventKind::kProxyOp) return nullptr;
  auto* op = static_cast<NcclProxyOpEvent*>(base);
  NcclProxyStepEvent* event = comm->steps.Take();
  event->entry = op->entry;
  event->channel = op->channel;
  event->is_send = op->is_send;
  event->moved.store(false, std::memory_order_relaxed);
  ring_->Progress(event->entry, event->channel,
                  op->is_send ? ChannelCounter::kSendPosted : ChannelCounter::kRecvPosted);
  return event;
}

NcclEvent* NcclProfiler::StartKernelCh(NcclComm* comm, void* parent, uint32_t channel) {
  NcclCollEvent* call = CallOf(parent);
  if (call == nullptr) return nullptr;
  NcclKernelChEvent* event = comm->kernels.Take();
  event->parent = call;
  event->entry = call->entry.load(std::memory_order_acquire);
  event->channel = channel;
  call->kernels_seen.fetch_add(1, std::memory_order_acq_rel);
  ring_->Kernel(event->entry, channel, KernelState::kRunning);
  MarkStarted(*call);
  return event;
}

void NcclProfiler::RecordState(void* handle, int state) {
  if (handle == nullptr) return;
  auto* base = static_cast<NcclEvent*>(handle);
  if (base->kind == NcclEventKind::kKernelCh && state == nccl_abi::kKernelChStop) {
    auto* kernel = static_cast<NcclKernelChEvent*>(base);
    ring_->Kernel(kernel->entry, kernel->channel, KernelState::kFinished);
    return;
  }
  if (base->kind != NcclEventKind::kProxyStep) return;
  auto* step = static_cast<NcclProxyStepEvent*>(base);
  // A step is counted once as moved: a send handed to the network, a receive whose data came
  // (its flush wait; a receive seen first waiting for the GPU came without a flush wait).
  const bool moved = step->is_send ? state == nccl_abi::kProxyStepSendWait
                                   : (state == nccl_abi::kProxyStepRecvFlushWait ||
                                      state == nccl_abi::kProxyStepRecvGpuWait);
  if (!moved || step->moved.exchange(true, std::memory_order_acq_rel)) return;
  ring_->Progress(step->entry, step->channel,
                  step->is_send ? ChannelCounter::kSendTransmitted : ChannelCounter::kRecvReceived);
}

void NcclProfiler::Stop(void* handle) {
  if (handle == nullptr) return;
  auto* base = static_cast<NcclEvent*>(handle);
  switch (base->kind) {
    case NcclEventKind::kColl: {
      auto* call = static_cast<NcclCollEvent*>(base);
      call->host_stopped.store(true, std::memory_order_release);
      MaybeComplete(*call);
      return;
    }
    case NcclEventKind::kProxyOp: {
      auto* op = static_cast<NcclProxyOpEvent*>(base);
      if (op->parent->entry.load(std::memory_order_acquire) != op->entry) return;  // reused
      op->parent->open_ops.fetch_sub(1, std::memory_order_acq_rel);
      MaybeComplete(*op->parent);
      return;
    }
    case NcclEventKind::kProxyStep: {
      auto* step = static_cast<NcclProxyStepEvent*>(base);
      ring_->Progress(step->entry, step->channel,
                      step->is_send ? ChannelCounter::kSendDone : ChannelCounter::kRecvDone);
      return;
    }
    case NcclEventKind::kKernelCh: {
      auto* kernel = static_cast<NcclKernelChEvent*>(base);
      ring_->Kernel(kernel->entry, kernel->channel, KernelState::kFinished);
      if (kernel->parent->entry.load(std::memory_order_acquire) != kernel->entry) return;
      kernel->parent->kernels_done.fetch_add(1, std::memory_order_acq_rel);
      MaybeComplete(*kernel->parent);
      return;
    }
  }
}

void NcclProfiler::MarkStarted(NcclCollEvent& call) {
  if (call.started.exchange(true, std::memory_order_acq_rel)) return;
  ring_->Started(call.entry.load(std::memory_order_acquire));
}

void NcclProfiler::MaybeComplete(NcclCollEvent& call) {
  if (!call.host_stopped.load(std::memory_order_acquire)) return;
  if (call.open_ops.load(std::memory_order_acquire) > 0) return;
  const int kernels_seen = call.kernels_seen.load(std::memory_order_acquire);
  const int kernels_done = call.kernels_done.load(std::memory_order_acquire);
  const bool kernels_finished =
      kernels_seen > 0 && kernels_done >= std::max<int>(int(call.channels), kernels_seen);
  const bool ops_finished = kernels_seen == 0 && call.ops_seen.load(std::memory_order_acquire) > 0;
  if (!kernels_finished && !ops_finished) return;
  if (call.completed.exchange(true, std::memory_order_acq_rel)) return;
  ring_->Completed(call.entry.load(std::memory_order_acquire));
}

}  // namespace upguard::watch
