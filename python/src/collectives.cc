#include "collectives.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <tuple>
#include <unordered_map>

#include "collective_call.h"
#include "collective_state.h"
#include "digest_cache.h"
#include "ivalue_args.h"
#include "python_release.h"
#include "session.h"

namespace upguard::torch_adapter {

namespace {

// The module's way to name process groups (SetGroupResolver): the process's, not a recording's.
std::mutex g_resolver_mu;
GroupResolver g_resolver;

struct ScopeContext : at::ObserverContext {
  std::shared_ptr<CollectiveCall> call;  // null when no call matched
  bool worker = false;                   // opened outside any op: the backend's worker
  std::thread::id thread;
};

// The C++ object behind a TorchBind ProcessGroup argument: its address names the group.
const void* GroupKey(const c10::IValue& value) {
  if (!value.isObject()) return nullptr;
  const c10::ivalue::Object& object = value.toObjectRef();
  if (object.slots().empty() || !object.getSlot(0).isCapsule()) return nullptr;
  return object.getSlot(0).toCapsule().get();
}

// Where a tensor's values start, to match a scope's tensors to a call's; null for one without
// strided storage (sparse), whose data_ptr() would throw.
const void* DataOf(const at::Tensor& t) {
  return t.has_storage() && t.layout() == c10::kStrided ? t.data_ptr() : nullptr;
}

// Writes the call's Collective record, if the op was recorded by a recorder still on. The
// caller moves the state (the record is written at most once: only the transitions marked (*)
// and kWrittenIncomplete write it).
void WriteLocked(CollectiveCall& call, bool completed) {
  if (call.recorder == nullptr || !call.recorded.written || !call.recorder->enabled()) return;
  CollectiveEvent event;
  event.op = call.recorded;
  event.group = call.group.name;
  event.ranks = call.group.ranks;
  event.group_rank = call.group.group_rank;
  event.group_size = call.group.group_size;
  event.seq = call.seq;
  event.completed = completed;
  const uint64_t after_return = call.recorded.index + 1;
  event.ops_before_completion =
      call.ops_at_completion > after_return ? call.ops_at_completion - after_return : 0;
  call.recorder->RecordCollective(event,
                                  completed ? std::move(call.outputs) : std::vector<ArgRecord>());
}

// The work wrote its tensors behind their version counters: forget their cached digests, and
// that they were uninitialized (a recv or scatter into torch.empty).
void ForgetWritten(const CollectiveCall& call) {
  ForEachTensor(call.written, [](const at::Tensor& t) {
    Digests().Invalidate(t);
    Uninit().MarkWritten(t);
  });
}

// A work that succeeded completed its future before its scope ended (gloo sets the future
// first, NCCL ends the scope from the future's callback); one that failed did not, or holds
// the error. (The Work itself cannot be asked: its scope ends under the Work's own lock.)
bool Failed(const c10::intrusive_ptr<c10::ivalue::Future>& future) {
  return future.defined() && (!future->completed() || future->hasError());
}

}  // namespace

std::string CollectiveKind(std::string_view name) {
  const size_t colon = name.rfind(':');
  if (colon != std::string_view::npos) name.remove_prefix(colon + 1);
  std::string out;
  for (char c : name) {
    if (c != '_') out += c;
  }
  return out;
}

std::string ScopeKind(std::string_view kind) {
  std::string out(kind);
  if (out.rfind("sparse", 0) == 0) out.erase(0, 6);
  for (std::string_view suffix : {"coalesced", "base", "intotensor", "tensor"}) {
    if (out.size() > suffix.size() &&
        out.compare(out.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.erase(out.size() - suffix.size());
    }
  }
  return out;
}

namespace {}  // namespace

ThreadCollectives& ThisThread() {
  thread_local ThreadCollectives state;
  return state;
}

const c10::StorageImpl* StorageOf(const at::Tensor& t) {
  return t.defined() && t.has_storage() ? t.storage().unsafeGetStorageImpl() : nullptr;
}

bool Contains(const std::vector<const c10::StorageImpl*>& storages,
              const c10::StorageImpl* storage) {
  return storage != nullptr &&
         std::find(storages.begin(), storages.end(), storage) != storages.end();
}

// The work's future says it is done (a waiter may go on and read the tensors).
bool FutureDone(const c10::intrusive_ptr<c10::ivalue::Future>& future) {
  return future.defined() && future->completed();
}

// The future of the Work among a c10d op's results; null when there is none, or the Work has
// no future (its scope's end, or a staged write, completes it).
c10::intrusive_ptr<c10::ivalue::Future> WorkFuture(const std::vector<c10::IValue>& outputs) {
  c10::intrusive_ptr<c10::ivalue::Future> future;
  for (const c10::IValue& value : outputs) {
    if (!value.isObject()) continue;
    const c10::ivalue::Object& object = value.toObjectRef();
    if (object.slots().empty() || !object.getSlot(0).isCapsule()) continue;
    auto* work = static_cast<c10d::Work*>(object.getSlot(0).toCapsule().get());
    try {
      future = work->getFuture();
    } catch (const std::exception&) {  // Work::getFuture throws for a Work without one
    }
  }
  return future;
}

std::vector<std::pair<const void*, GroupInfo>> ResolveGroupsNow() {
  GroupResolver resolver;
  {
    std::lock_guard<std::mutex> lock(g_resolver_mu);
    resolver = g_resolver;
  }
  return resolver ? resolver() : std::vector<std::pair<const void*, GroupInfo>>();
}

void SetGroupResolver(GroupResolver resolver) {
  std::lock_guard<std::mutex> lock(g_resolver_mu);
  g_resolver = std::move(resolver);
}

void CollectiveTable::AskResolver() {
  // A group not seen yet (created after the last lookup): ask torch.distributed, with no lock
  // held, since the resolver takes the GIL.
  std::vector<std::pair<const void*, GroupInfo>> groups = ResolveGroupsNow();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [group_key, info] : groups) groups_[group_key] = std::move(info);
}

GroupInfo CollectiveTable::FindGroup(const void* key) {
  if (key == nullptr) return {};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = groups_.find(key);
    if (it != groups_.end()) return it->second;
  }
  AskResolver();
  std::lock_guard<std::mutex> lock(mu_);
  return groups_[key];  // an unknown group stays unnamed
}

std::pair<const void*, GroupInfo> CollectiveTable::FindGroupByName(const std::string& name) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attempt > 0) AskResolver();
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, info] : groups_) {
      if (info.name == name) return {key, info};
    }
  }
  GroupInfo unknown;
  unknown.name = name;  // a group torch.distributed does not list: named, without its ranks
  return {nullptr, unknown};
}

CallState CollectiveTable::AdvanceLocked(CollectiveCall& call, CallEvent event) {
  const CallState from = call.state;
  call.state = NextCallState(from, event);
  if (WorkRunning(from) && !WorkRunning(call.state)) in_flight_.fetch_sub(1);
  return from;
}

void CollectiveTable::DropFinishedLocked() {
  open_.erase(std::remove_if(open_.begin(), open_.end(),
                             [](const std::shared_ptr<CollectiveCall>& call) {
                               return call->state == CallState::kFinished;
                             }),
              open_.end());
  staged_.store(std::count_if(
      open_.begin(), open_.end(),
      [](const std::shared_ptr<CollectiveCall>& call) { return !call->staging.empty(); }));
}

void CollectiveTable::Complete(const std::shared_ptr<CollectiveCall>& call, Recorder* current,
                               bool wait_failed) {
  bool wanted = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!WorkRunning(call->state)) return;  // completed already
    const CallState from = AdvanceLocked(*call, CallEvent::kWorkCompleted);
    // A functional call's wait may return before its Work's future completes (a device
    // stream), so only an error there says it failed.
    const c10::intrusive_ptr<c10::ivalue::Future>& nested = call->nested_future;
    call->failed = call->functional ? wait_failed || (FutureDone(nested) && nested->hasError())
                                    : wait_failed || Failed(call->future);
    wanted = from != CallState::kSettled && !call->failed;  // kSettled: no record to come
  }
  ForgetWritten(*call);
  std::vector<ArgRecord> outputs;
  if (wanted && current != nullptr && !call->written.isNone()) {
    ArgBatch batch;
    AppendTensorValues(call->written, call->written_name, &batch);
    outputs = current->DigestArgs(batch.args);
    RememberDigests(batch, outputs);
  }
  std::lock_guard<std::mutex> lock(mu_);
  const CallState from = AdvanceLocked(*call, CallEvent::kDigested);
  if (call->state != from) {  // else written already (the step ended) or forgotten
    call->outputs = std::move(outputs);
    // kCompleted: the op has not returned yet; Returned writes it, as completed before the
    // return (ops_at_completion 0).
    if (from == CallState::kCompletingAfterReturn) {
      call->ops_at_completion = call->recorder->ops_in_step();
    }
    if (call->state == CallState::kFinished) WriteLocked(*call, !call->failed);
  }
  DropFinishedLocked();
  digested_.notify_all();
}

void CollectiveTable::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  groups_.clear();
  counters_.clear();
  for (const std::shared_ptr<CollectiveCall>& call : open_) {
    AdvanceLocked(*call, CallEvent::kReset);
  }
  open_.clear();
  staged_.store(0);
}

std::shared_ptr<CollectiveCall> CollectiveTable::Launch(const OpInfo& info,
                                                        c10::ArrayRef<const c10::IValue> inputs) {
  ReleaseDeferred();  // calls a backend's worker thread let go of last (python_release.h)
  std::shared_ptr<CollectiveCall> call(new CollectiveCall(), [](CollectiveCall* done) {
    ReleaseOnPythonThread([done] { delete done; });
  });
  call->op = info.name;
  call->table = this;
  call->functional = info.collective_functional;
  const void* key = nullptr;
  const int name_arg = info.collective_group_name_arg;
  if (name_arg >= 0 && static_cast<size_t>(name_arg) < inputs.size() &&
      inputs[name_arg].isString()) {
    std::tie(key, call->group) = FindGroupByName(inputs[name_arg].toStringRef());
  } else {
    if (info.collective_group_arg >= 0 &&
        static_cast<size_t>(info.collective_group_arg) < inputs.size()) {
      key = GroupKey(inputs[info.collective_group_arg]);
    }
    call->group = FindGroup(key);
  }
  for (const c10::IValue& value : inputs) {
    ForEachTensor(value, [&](const at::Tensor& t) {
      call->data.push_back(DataOf(t));
      call->arg_storages.push_back(StorageOf(t));
    });
  }
  const int written = info.collective_written_arg;
  if (written >= 0 && static_cast<size_t>(written) < inputs.size()) {
    call->written = inputs[written];
    call->written_name = info.input_names[written];
    ForEachTensor(call->written, [&](const at::Tensor& t) {
      if (t.has_storage()) call->storages.push_back(t.storage().unsafeGetStorageImpl());
    });
  }
  std::lock_guard<std::mutex> lock(mu_);
  call->seq = counters_[key]++;
  open_.push_back(call);
  in_flight_.fetch_add(1);
  return call;
}

void CollectiveTable::Returned(const std::shared_ptr<CollectiveCall>& call, Recorder* recorder,
                               const RecordedOp& recorded,
                               const std::vector<c10::IValue>& outputs) {
  c10::intrusive_ptr<c10::ivalue::Future> future = WorkFuture(outputs);
  // A functional call writes what it returns (until now, only this thread knows the call).
  std::vector<const c10::StorageImpl*> written_storages;
  if (call->functional && !outputs.empty()) {
    call->written = outputs[0];
    call->written_name = "result";
    ForEachTensor(call->written, [&](const at::Tensor& t) {
      if (StorageOf(t) != nullptr) written_storages.push_back(StorageOf(t));
    });
  }
  // Digests taken before the work wrote its tensors are stale from now on.
  ForEachTensor(call->written, [](const at::Tensor& t) { Digests().Invalidate(t); });
  std::lock_guard<std::mutex> lock(mu_);
  if (call->functional) {
    call->storages = written_storages;  // what it returns is no staging buffer
    call->staging.erase(std::remove_if(call->staging.begin(), call->staging.end(),
                                       [&](const at::Tensor& t) {
                                         return Contains(written_storages, StorageOf(t));
                                       }),
                        call->staging.end());
  }
  call->future = std::move(future);
  call->recorder = recorder;
  call->recorded = recorded;
  if (!recorded.written) {
    AdvanceLocked(*call, CallEvent::kOpReturnedUnrecorded);
  } else {
    const CallState from = AdvanceLocked(*call, CallEvent::kOpReturned);
    if (from == CallState::kCompleting || from == CallState::kCompleted) {
      // Completed before the call returned, before its future was known: judged by it now. If
      // its tensors are still being digested, Complete writes it when that is done; a failed
      // one is written now, as not completed.
      call->failed = call->failed || Failed(call->future);
      call->ops_at_completion = 0;
      if (from == CallState::kCompleted) {
        WriteLocked(*call, !call->failed);
      } else if (call->failed) {
        WriteLocked(*call, false);
        AdvanceLocked(*call, CallEvent::kWrittenIncomplete);
      }
    }
  }
  DropFinishedLocked();
}

bool OnCollectiveWorker() { return ThisThread().worker_scopes > 0; }

bool IsCollectiveScope(std::string_view name) {
  for (std::string_view backend : {"gloo:", "nccl:", "mpi:", "ucc:"}) {
    if (name.substr(0, backend.size()) == backend) return true;
  }
  return false;
}

std::unique_ptr<at::ObserverContext> CollectiveTable::ScopeEntered(CollectiveTable* table,
                                                                   const at::RecordFunction& fn,
                                                                   bool outside_ops) {
  auto ctx = std::make_unique<ScopeContext>();
  if (outside_ops) {
    ctx->worker = true;
    ctx->thread = std::this_thread::get_id();
    ++ThisThread().worker_scopes;
  }
  if (table == nullptr) return ctx;
  const void* first = nullptr;
  for (const c10::IValue& value : fn.inputs()) {
    ForEachTensor(value, [&](const at::Tensor& t) {
      if (first == nullptr) first = DataOf(t);
    });
    if (first != nullptr) break;
  }
  const std::string kind = CollectiveKind(fn.name());
  std::lock_guard<std::mutex> lock(table->mu_);
  for (const std::shared_ptr<CollectiveCall>& call : table->open_) {
    if (call->matched || call->functional || CollectiveKind(call->op) != kind) continue;
    // The scope names the work's inputs (none for a barrier, or a scatter off its root).
    const bool match = first == nullptr ||
                       std::find(call->data.begin(), call->data.end(), first) != call->data.end();
    if (!match) continue;
    call->matched = true;
    ctx->call = call;
    break;
  }
  return ctx;
}

void CollectiveTable::ScopeLeft(at::ObserverContext* ctx_base) {
  if (ctx_base == nullptr) return;
  auto* ctx = static_cast<ScopeContext*>(ctx_base);
  if (ctx->worker && ctx->thread == std::this_thread::get_id() && ThisThread().worker_scopes > 0) {
    --ThisThread().worker_scopes;
    ctx->worker = false;
  }
}

void CollectiveTable::ScopeEnded(at::ObserverContext* ctx_base, Recorder* current) {
  if (ctx_base == nullptr) return;
  ScopeLeft(ctx_base);
  auto* ctx = static_cast<ScopeContext*>(ctx_base);
  if (ctx->call != nullptr) ctx->call->table->Complete(ctx->call, current);
}

bool CollectiveTable::InFlight(const at::Tensor& tensor) {
  if (in_flight_.load(std::memory_order_relaxed) == 0 || !tensor.has_storage()) return false;
  const c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  std::vector<std::shared_ptr<CollectiveCall>> writing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::shared_ptr<CollectiveCall>& call : open_) {
      if (WorkRunning(call->state) && std::find(call->storages.begin(), call->storages.end(),
                                                storage) != call->storages.end()) {
        writing.push_back(call);
      }
    }
  }
  bool in_flight = false;
  for (const std::shared_ptr<CollectiveCall>& call : writing) {
    Recorder* recorder = nullptr;
    c10::intrusive_ptr<c10::ivalue::Future> future;
    {
      std::lock_guard<std::mutex> lock(mu_);
      recorder = call->recorder;  // set at the return
      future = call->future;
    }
    if (recorder != nullptr && FutureDone(future)) {
      Complete(call, recorder);  // the program waited for it; its scope has not ended yet
    } else {
      in_flight = true;
    }
  }
  return in_flight;
}

bool InFlight(const at::Tensor& tensor) {
  Session* session = Session::Active();
  return session != nullptr && session->collectives().InFlight(tensor);
}

void CollectiveTable::Flush(Recorder* recorder) {
  std::vector<std::shared_ptr<CollectiveCall>> finished;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // A completion digesting what the work wrote (on the backend's thread, whose scope ended
    // after the program saw the work's future done and went on) writes the record itself: the
    // step's end waits for it rather than writing as not completed a collective the program
    // waited for (seen under load: a false origin across ranks). Bounded: a digest is fast.
    digested_.wait_for(lock, std::chrono::seconds(10), [&] {
      return std::none_of(open_.begin(), open_.end(),
                          [&](const std::shared_ptr<CollectiveCall>& call) {
                            return call->recorder == recorder && Digesting(call->state);
                          });
    });
    for (const std::shared_ptr<CollectiveCall>& call : open_) {
      // Returned, recorded and not written yet: written as not completed.
      if (call->recorder == recorder && Accepts(call->state, CallEvent::kWrittenIncomplete)) {
        WriteLocked(*call, false);
        AdvanceLocked(*call, CallEvent::kWrittenIncomplete);
      }
      // No scope will end for it and nothing says it is still running (no future, or a done
      // one): it stops counting as in flight, so the open calls do not grow step after step.
      if (Accepts(call->state, CallEvent::kGivenUp) && !call->matched &&
          (!call->future.defined() || call->future->completed())) {
        AdvanceLocked(*call, CallEvent::kGivenUp);
        finished.push_back(call);
      }
    }
    DropFinishedLocked();
  }
  for (const std::shared_ptr<CollectiveCall>& call : finished) ForgetWritten(*call);
}

}  // namespace upguard::torch_adapter
