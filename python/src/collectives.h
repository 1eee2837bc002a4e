// Collectives (c10d::allreduce_, broadcast_, allgather_, reduce_scatter_, alltoall_, barrier,
// send, recv_, ...): the op launches the work and returns; the backend runs it and it completes
// later. Measured with torch 1.13 and gloo: ProcessGroup work opens a USER_SCOPE
// RecordFunction named "<backend>:<collective>" ("gloo:all_reduce") when the work starts to run
// on the backend's worker thread and ends it there after the work has finished (recv: opened
// at the call, ended at wait()). The work's future completes before that scope ends, and a
// waiter may read the tensors in between (DDP's reducer reads its bucket there). So a
// collective completes at the first of: its scope's end, or an op touching its tensors once
// its future is done. Its written tensors are digested then and written as the op's
// Collective record (trace.md §5.6). Nothing here is gloo-specific: any backend whose Work
// carries a profiling title or a future reports completion the same way; a collective whose
// completion is not seen by the end of its step is written as not completed.
//
// The call is matched to its scope by kind ("gloo:all_reduce" to c10d::allreduce_) and by the
// first tensor the scope names (the work's inputs); a scope that names none (a barrier, a
// scatter off its root) takes the oldest call of its kind. Ops that run on a worker thread inside
// the scope are the collective's own implementation (gloo's flatten and copies), not the
// training's: they are not recorded. A tensor a collective is still writing is "in flight": an op
// that reads it before the completion (a program that does not wait) is given it unread (reason
// in_flight: trace.md §5.3), since its bytes then depend on timing.
//
// Functional collectives (_c10d_functional::all_reduce, all_gather_into_tensor,
// reduce_scatter_tensor, all_to_all_single, broadcast, ...: what DTensor, tensor parallelism
// and FSDP2's compiled paths issue) are calls too. Such an op returns the tensors it writes
// (its results; for all_reduce_ and the like its argument, returned) before the work has
// written them; they hold the collective's values only once a wait_tensor on them has
// returned, so that return completes the call, and no backend scope does (measured with gloo on
// torch 2.15: the scope ends before a reduce-scatter's output is written, see below). The
// group is named by its `group_name` argument, the name torch.distributed gives the group, so a
// functional call counts in the same group as a c10d one. The collective ops such an op runs
// inside itself (all_reduce runs all_reduce_ on a copy of its input, which runs
// c10d::allreduce_) are its implementation, not calls of their own.
//
// Some backends stage a result: gloo's reduce_scatter_tensor (what FSDP2 and
// reduce_scatter_tensor issue on gloo) clones the input inside the op, all-reduces the clone on
// its worker, and copies this rank's chunk of it into the output inside Work::wait(), on the
// waiter's thread, after the all-reduce's scope has ended. A tensor an op makes inside a
// collective op that is not one of the op's arguments or results is such a staging buffer; an
// op on the caller's thread that reads one is the collective's implementation (not recorded),
// and the call completes when such an op has written each of its written tensors.
//
// A call's life, the op returning and the work completing in either order, is the state machine
// of collective_state.h.
#pragma once

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collective_state.h"
#include "op_info.h"
#include "upguard/recorder.h"

namespace upguard::torch_adapter {

struct CollectiveCall;

// A process group as torch.distributed names it, found through the resolver.
struct GroupInfo {
  std::string name;            // "0" for the default group
  std::vector<int32_t> ranks;  // global ranks, in group-rank order
  uint32_t group_rank = 0;
  uint32_t group_size = 0;
  std::string backend;  // "gloo", "nccl", ...; "" unknown
};
// Describes every process group this process knows, keyed by the address of its C++ object.
// Installed by the Python module (it asks torch.distributed); called with no lock held.
using GroupResolver = std::function<std::vector<std::pair<const void*, GroupInfo>>()>;
void SetGroupResolver(GroupResolver resolver);
// The resolver's answer now (empty without one); takes the GIL, so call it with no lock held.
std::vector<std::pair<const void*, GroupInfo>> ResolveGroupsNow();
// "gloo:all_reduce" and "c10d::allreduce_" both become "allreduce": a backend's scope and the
// op that issued it have the same kind.
std::string CollectiveKind(std::string_view name);
// The kind a backend's scope carries for a call of that kind: a variant's suffix or prefix
// dropped ("allgatherbase", "allgatherintotensorcoalesced" -> "allgather"; gloo opens
// "gloo:all_gather" for c10d::_allgather_base_), so that either side matches the other.
std::string ScopeKind(std::string_view kind);

bool IsCollectiveScope(std::string_view name);
// Whether `name` may be a collective or a wait on one: a prefix test, before the schema lookup.
bool MayBeCollective(const char* name);
// This thread runs a collective's own implementation now: its ops are not recorded.
bool OnCollectiveWorker();

// At the entry of an op at `depth` on a thread that is not a backend worker: whether it is a
// collective's own implementation (it reads a staging buffer, or runs inside an op that does),
// which is not recorded. Its exit goes to CollectiveTable::OpExited as every op's does.
bool EnteringCollectiveImplementation(const at::RecordFunction& fn, uint32_t depth);

// Whether a collective of the recording on now (Session::Active) is writing into this
// tensor's storage; false when none is on. A work whose future is done completes here (the
// program waited for it before reading).
bool InFlight(const at::Tensor& tensor);

// The collective calls of one recording: a Session owns one (session.h). It holds the groups
// seen, each group's count of calls, and the calls launched and not finished. A call knows
// its table, so what happens to it later (its op returning, its scope ending) goes to the
// recording that launched it, even after that recording stopped.
class CollectiveTable {
 public:
  CollectiveTable() = default;
  CollectiveTable(const CollectiveTable&) = delete;
  CollectiveTable& operator=(const CollectiveTable&) = delete;

  // At a collective op's entry (`info.collective`), for every call while recording is on,
  // recorded or not (the per-group numbers must count every call, and a completion must
  // invalidate cached digests). The call is this thread's until the op at `depth` exits; a
  // collective op entered inside it is part of it. At a wait_tensor's entry
  // (`info.collective_wait`): the functional calls writing its argument complete as it exits.
  void OpEntered(const OpInfo& info, c10::ArrayRef<const c10::IValue> inputs, uint32_t depth);
  // At every op's exit: when it is the collective entered at `depth` (by any table), `recorded`
  // is what Record() returned for it (written = false: not recorded) and `outputs` its results
  // (the Work, whose future tells a reader the work is done; a functional call's written
  // tensors). An op inside it leaves its staging buffers in `outputs`; a wait_tensor or an
  // implementation op that wrote a call's output completes the call (`recorder` digests it).
  static void OpExited(uint32_t depth, Recorder* recorder, const RecordedOp& recorded,
                       const std::vector<c10::IValue>& outputs);

  // EnteringCollectiveImplementation for this table's calls.
  bool EnteringImplementation(const at::RecordFunction& fn, uint32_t depth);

  // A backend's collective scope opened / ended, on whatever thread the backend uses. The scope
  // is matched to a call of `table` (null: the worker bookkeeping only). One opened outside any
  // op (`outside_ops`) runs on the backend's worker: until it ends there, that thread is
  // OnCollectiveWorker(). The context goes back to ScopeEnded.
  static std::unique_ptr<at::ObserverContext> ScopeEntered(CollectiveTable* table,
                                                           const at::RecordFunction& fn,
                                                           bool outside_ops);
  // `current` (the recorder on now, or null) digests the written tensors.
  static void ScopeEnded(at::ObserverContext* ctx, Recorder* current);
  // Only the worker bookkeeping of ScopeEnded, for a thread that cannot record now.
  static void ScopeLeft(at::ObserverContext* ctx);

  // InFlight(tensor) for this table's calls.
  bool InFlight(const at::Tensor& tensor);

  // Before the step ends: recorded collectives of the step that have not completed are written
  // as not completed (a Collective record precedes its step's StepEnd).
  void Flush(Recorder* recorder);

  // Forgets groups, counters and calls in flight: a newer recording starts, and calls of this
  // one that complete later are neither written nor digested.
  void Reset();

 private:
  // The group of a ProcessGroup object's address, or of a group's name (functional
  // collectives name theirs), with the address that keys it (null: unknown).
  GroupInfo FindGroup(const void* key);
  std::pair<const void*, GroupInfo> FindGroupByName(const std::string& name);
  void AskResolver();
  std::shared_ptr<CollectiveCall> Launch(const OpInfo& info,
                                         c10::ArrayRef<const c10::IValue> inputs);
  void Returned(const std::shared_ptr<CollectiveCall>& call, Recorder* recorder,
                const RecordedOp& recorded, const std::vector<c10::IValue>& outputs);
  // The collective completed: its tensors are digested now, while they hold what it
  // delivered, and its record is written once the op has returned. The first of the scope's
  // end and a reader that finds the work done does it.
  // `wait_failed`: the wait that completes it raised (its work failed).
  void Complete(const std::shared_ptr<CollectiveCall>& call, Recorder* current,
                bool wait_failed = false);
  // Moves `call` on `event` (collective_state.h) and returns the state it left; an event the
  // table ignores leaves it as it is. A call whose work stops running leaves the in-flight
  // count.
  CallState AdvanceLocked(CollectiveCall& call, CallEvent event);
  void DropFinishedLocked();
  // A tensor made inside `call`'s op: a staging buffer unless it is one of the call's own.
  void NoteMade(const std::shared_ptr<CollectiveCall>& call,
                const std::vector<c10::IValue>& outputs);
  // An implementation op wrote one of `call`'s written tensors from its staging buffer; when
  // every one is written, the call completes.
  void StagedWrite(const std::shared_ptr<CollectiveCall>& call, Recorder* current);
  // The functional calls whose work writes a tensor of `inputs` (a wait_tensor's argument).
  std::vector<std::shared_ptr<CollectiveCall>> Waited(c10::ArrayRef<const c10::IValue> inputs);

  std::mutex mu_;
  // Notified when a completion has digested its tensors (Flush waits for those in progress).
  std::condition_variable digested_;
  std::unordered_map<const void*, GroupInfo> groups_;
  std::unordered_map<const void*, uint64_t> counters_;  // per group: calls so far
  std::deque<std::shared_ptr<CollectiveCall>> open_;    // launched, not kFinished
  std::atomic<size_t> in_flight_{0};                    // how many calls' work runs (WorkRunning)
  std::atomic<size_t> staged_{0};  // open calls holding staging buffers (none: no op reads one)
};

}  // namespace upguard::torch_adapter
