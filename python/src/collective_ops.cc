// collectives.h, the calling thread's side: a collective op entering and returning, the
// waits that complete functional collectives, and the ops that implement a staged collective
// (gloo's reduce-scatter copying its chunk out inside wait()).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "collective_call.h"
#include "ivalue_args.h"
#include "op_info.h"
#include "session.h"

namespace upguard::torch_adapter {

void CollectiveTable::OpEntered(const OpInfo& info, c10::ArrayRef<const c10::IValue> inputs,
                                uint32_t depth) {
  ThreadCollectives& mine = ThisThread();
  if (info.collective_wait) {
    mine.waits.emplace_back(depth, Waited(inputs));
    return;
  }
  if (mine.launching != nullptr) return;  // inside a collective op: its implementation
  mine.launching = Launch(info, inputs);
  mine.launching_depth = depth;
}

std::vector<std::shared_ptr<CollectiveCall>> CollectiveTable::Waited(
    c10::ArrayRef<const c10::IValue> inputs) {
  std::vector<const c10::StorageImpl*> storages;
  for (const c10::IValue& value : inputs) {
    ForEachTensor(value, [&](const at::Tensor& t) { storages.push_back(StorageOf(t)); });
  }
  std::vector<std::shared_ptr<CollectiveCall>> calls;
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::shared_ptr<CollectiveCall>& call : open_) {
    if (!call->functional || !WorkRunning(call->state)) continue;
    for (const c10::StorageImpl* storage : storages) {
      if (Contains(call->storages, storage)) {
        calls.push_back(call);
        break;
      }
    }
  }
  return calls;
}

void CollectiveTable::NoteMade(const std::shared_ptr<CollectiveCall>& call,
                               const std::vector<c10::IValue>& outputs) {
  c10::intrusive_ptr<c10::ivalue::Future> future = WorkFuture(outputs);
  std::lock_guard<std::mutex> lock(mu_);
  if (future.defined()) call->nested_future = std::move(future);
  for (const c10::IValue& value : outputs) {
    ForEachTensor(value, [&](const at::Tensor& t) {
      const c10::StorageImpl* storage = StorageOf(t);
      if (storage == nullptr || Contains(call->arg_storages, storage)) return;
      for (const at::Tensor& held : call->staging) {
        if (StorageOf(held) == storage) return;
      }
      call->staging.push_back(t);
    });
  }
  if (!call->staging.empty() && call->state != CallState::kFinished) {
    staged_.store(std::count_if(
        open_.begin(), open_.end(),
        [](const std::shared_ptr<CollectiveCall>& open) { return !open->staging.empty(); }));
  }
}

void CollectiveTable::StagedWrite(const std::shared_ptr<CollectiveCall>& call, Recorder* current) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (++call->staged_writes < call->storages.size()) return;
  }
  Complete(call, current);
}

bool CollectiveTable::EnteringImplementation(const at::RecordFunction& fn, uint32_t depth) {
  ThreadCollectives& mine = ThisThread();
  if (mine.implementing != nullptr) {
    if (depth > mine.implementing_depth) return true;  // inside one
    mine.implementing = nullptr;                       // its exit was not seen
  }
  if (mine.launching != nullptr || staged_.load(std::memory_order_relaxed) == 0) return false;
  std::vector<const c10::StorageImpl*> storages;  // per input tensor, in argument order
  std::vector<size_t> arg_of;
  for (size_t arg_idx = 0; arg_idx < fn.inputs().size(); ++arg_idx) {
    ForEachTensor(fn.inputs()[arg_idx], [&](const at::Tensor& t) {
      storages.push_back(StorageOf(t));
      arg_of.push_back(arg_idx);
    });
  }
  if (storages.empty()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::shared_ptr<CollectiveCall>& call : open_) {
    if (call->staging.empty() || !WorkRunning(call->state)) continue;
    const bool reads_staging =
        std::any_of(call->staging.begin(), call->staging.end(),
                    [&](const at::Tensor& t) { return Contains(storages, StorageOf(t)); });
    if (!reads_staging) continue;
    // It writes the call's output when an argument it writes lies there (copy_'s self).
    const std::vector<int>& written = LookupOpInfo(fn).written_inputs;
    bool writes = false;
    for (size_t idx = 0; idx < storages.size(); ++idx) {
      const bool written_arg =
          std::find(written.begin(), written.end(), static_cast<int>(arg_of[idx])) != written.end();
      writes = writes || (written_arg && Contains(call->storages, storages[idx]));
    }
    mine.implementing = call;
    mine.implementing_depth = depth;
    mine.implementing_writes = writes;
    return true;
  }
  return false;
}

void CollectiveTable::OpExited(uint32_t depth, Recorder* recorder, const RecordedOp& recorded,
                               const std::vector<c10::IValue>& outputs) {
  ThreadCollectives& mine = ThisThread();
  if (mine.implementing != nullptr && mine.implementing_depth == depth) {
    std::shared_ptr<CollectiveCall> call = std::move(mine.implementing);
    mine.implementing = nullptr;
    if (mine.implementing_writes) call->table->StagedWrite(call, recorder);
    return;
  }
  while (!mine.waits.empty() && mine.waits.back().first >= depth) {
    std::vector<std::shared_ptr<CollectiveCall>> calls = std::move(mine.waits.back().second);
    const bool returned = mine.waits.back().first == depth;
    mine.waits.pop_back();
    if (!returned) continue;  // an exit not seen
    // A wait that raised (the work failed: a peer died) returns no result: its calls delivered
    // nothing and are written as not completed.
    for (const std::shared_ptr<CollectiveCall>& call : calls) {
      call->table->Complete(call, recorder, /*wait_failed=*/outputs.empty());
    }
  }
  if (mine.launching == nullptr || mine.launching_depth > depth) return;
  if (mine.launching_depth < depth) return mine.launching->table->NoteMade(mine.launching, outputs);
  std::shared_ptr<CollectiveCall> call = std::move(mine.launching);
  mine.launching = nullptr;
  call->table->Returned(call, recorder, recorded, outputs);
}

bool MayBeCollective(const char* name) {
  return std::strncmp(name, "c10d::", 6) == 0 || std::strncmp(name, "_c10d_functional", 16) == 0;
}

bool EnteringCollectiveImplementation(const at::RecordFunction& fn, uint32_t depth) {
  Session* session = Session::Active();
  return session != nullptr && !OnCollectiveWorker() &&
         session->collectives().EnteringImplementation(fn, depth);
}

}  // namespace upguard::torch_adapter
