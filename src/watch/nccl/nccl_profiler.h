// What the NCCL profiler plugin (libupguard_nccl_profiler.so, docs/watch.md) does with NCCL's
// events, apart from the ABI (profiler_abi.h, plugin.cc): each communicator becomes a group of
// the process's watch ring `DIR/watch/rank<R>.nccl.ring`, each collective or point-to-point
// call an entry, and the proxy's network steps and the kernel's channels its channel progress
// (docs/formats/watch-ring.md §6.1).
//
//   NcclProfiler profiler(std::move(ring), rank, world_size);
//   Comm* comm = profiler.AddComm(comm_hash, nranks, rank_in_comm);
//   Event* coll = profiler.StartColl(comm, {...});   // enqueued (NCCL's host-side event)
//   Event* op = profiler.StartProxyOp(comm, coll, pid, channel, steps, is_send);
//   Event* step = profiler.StartProxyStep(comm, op);
//   profiler.RecordState(step, nccl_abi::kProxyStepSendWait);
//   profiler.Stop(step); profiler.Stop(op); profiler.Stop(coll);
//
// A collective is started when its first channel begins (a kernel channel or a proxy
// operation) and completed once NCCL stopped its host event, every proxy operation it started
// has stopped, and its kernel finished on every channel it runs on (or, when no kernel channel
// event came, its proxy operations were all done). NCCL's host "stop" of a collective only
// means enqueued, so it is not the completion.
//
// Events live in fixed pools per communicator, reused round-robin: no allocation on NCCL's
// hot paths. A pool is sized for far more events than are open at once; an event that stays
// open while its pool wraps can only miscount its own collective, as every ring write is
// guarded by the entry it names.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "watch/nccl/profiler_abi.h"
#include "watch/ring_writer.h"

namespace upguard::watch {

enum class NcclEventKind : uint8_t { kColl = 1, kProxyOp = 2, kProxyStep = 3, kKernelCh = 4 };

// Every event handle the plugin gives NCCL starts with its kind.
struct NcclEvent {
  NcclEventKind kind;
};

struct NcclCollEvent : NcclEvent {
  NcclCollEvent() : NcclEvent{NcclEventKind::kColl} {}
  std::atomic<uint64_t> entry{RingWriter::kNoEntry};
  uint32_t channels = 0;
  std::atomic<bool> host_stopped{false};
  std::atomic<bool> started{false};
  std::atomic<bool> completed{false};
  std::atomic<int> open_ops{0};
  std::atomic<int> ops_seen{0};
  std::atomic<int> kernels_seen{0};
  std::atomic<int> kernels_done{0};
};

struct NcclProxyOpEvent : NcclEvent {
  NcclProxyOpEvent() : NcclEvent{NcclEventKind::kProxyOp} {}
  NcclCollEvent* parent = nullptr;
  uint64_t entry = RingWriter::kNoEntry;
  uint32_t channel = 0;
  bool is_send = false;
};

struct NcclProxyStepEvent : NcclEvent {
  NcclProxyStepEvent() : NcclEvent{NcclEventKind::kProxyStep} {}
  uint64_t entry = RingWriter::kNoEntry;
  uint32_t channel = 0;
  bool is_send = false;
  std::atomic<bool> moved{false};  // counted as transmitted (send) or received (recv)
};

struct NcclKernelChEvent : NcclEvent {
  NcclKernelChEvent() : NcclEvent{NcclEventKind::kKernelCh} {}
  NcclCollEvent* parent = nullptr;
  uint64_t entry = RingWriter::kNoEntry;
  uint32_t channel = 0;
};

// A fixed ring of T, handed out round-robin from any thread.
template <typename T>
class NcclEventPool {
 public:
  explicit NcclEventPool(size_t size) : items_(new T[size]), size_(size) {}
  T* Take() { return &items_[next_.fetch_add(1, std::memory_order_relaxed) % size_]; }

 private:
  std::unique_ptr<T[]> items_;
  size_t size_;
  std::atomic<uint64_t> next_{0};
};

// A collective or point-to-point call as NCCL describes it (either ABI version).
struct NcclCall {
  bool p2p = false;
  uint64_t seq_number = 0;
  const char* func = nullptr;
  const char* datatype = nullptr;
  uint64_t count = 0;
  int root = -1;  // the root of a rooted collective; the peer of a send or receive
  uint32_t channels = 0;
  uint32_t warps = 0;
  const char* algo = nullptr;
  const char* proto = nullptr;
};

// One communicator (NCCL's profiler context).
struct NcclComm {
  int group = -1;
  int nranks = 0;
  NcclEventPool<NcclCollEvent> colls{1024};
  NcclEventPool<NcclProxyOpEvent> ops{4096};
  NcclEventPool<NcclProxyStepEvent> steps{16384};
  NcclEventPool<NcclKernelChEvent> kernels{4096};
};

class NcclProfiler {
 public:
  // Ring channel records kept per slot: NCCL's MAXCHANNELS.
  static constexpr uint32_t kChannels = 64;
  static constexpr uint32_t kSlots = 512;

  NcclProfiler(std::unique_ptr<RingWriter> ring, int rank, int world_size);
  ~NcclProfiler();

  // The ring path for `rank` under the run directory.
  static std::string RingPath(const std::string& run_dir, int rank);
  // NCCL's "AllReduce" / "ncclFloat32" in the adapter's words ("allreduce", "float32").
  static std::string OpName(const char* func);
  static std::string DtypeName(const char* datatype, uint32_t* element_size);

  NcclComm* AddComm(uint64_t comm_hash, int nranks, int rank_in_comm);
  void RemoveComm(NcclComm* comm);
  bool HasComms() const;

  NcclEvent* StartCall(NcclComm* comm, const NcclCall& call);
  NcclEvent* StartProxyOp(NcclComm* comm, void* parent, pid_t pid, uint32_t channel, int steps,
                          bool is_send);
  NcclEvent* StartProxyStep(NcclComm* comm, void* parent);
  NcclEvent* StartKernelCh(NcclComm* comm, void* parent, uint32_t channel);
  void Stop(void* handle);
  void RecordState(void* handle, int state);

  RingWriter& ring() { return *ring_; }

 private:
  // The call `parent` names, if it is one of ours.
  static NcclCollEvent* CallOf(void* parent);
  void MarkStarted(NcclCollEvent& call);
  void MaybeComplete(NcclCollEvent& call);

  std::unique_ptr<RingWriter> ring_;
  int rank_;
  int world_size_;
  pid_t pid_;
  mutable std::mutex comms_mutex_;  // AddComm / RemoveComm: communicator set-up and tear-down
  std::vector<std::unique_ptr<NcclComm>> comms_;
};

}  // namespace upguard::watch
