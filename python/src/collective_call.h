// What collectives.cc and collective_ops.cc share about one collective call and the calling
// thread: private to those two files (collectives.h is the interface).
#pragma once

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "collective_state.h"
#include "collectives.h"
#include "upguard/recorder.h"

namespace upguard::torch_adapter {

struct CollectiveCall {
  // Fixed at launch.
  std::string_view op;
  std::string_view written_name;
  c10::IValue written;            // the written argument (holds its tensors until completion)
  std::vector<const void*> data;  // every tensor's data, to match the scope
  std::vector<const c10::StorageImpl*> storages;  // the written tensors' storages
  GroupInfo group;
  uint64_t seq = 0;
  CollectiveTable* table = nullptr;  // the recording that launched it
  // A functional collective: it writes its results, set at its return, and completes at the
  // wait_tensor on them (or at its staged writes), never at a backend scope.
  bool functional = false;
  std::vector<const c10::StorageImpl*> arg_storages;  // every argument tensor's storage

  // Guarded by the table's mutex.
  CallState state = CallState::kLaunched;  // collective_state.h
  // Besides the state: a backend scope took it (so no other scope does), in whatever state.
  bool matched = false;
  // The work completed with an error (a peer died): nothing delivered, written as not
  // completed. Judged at the completion, or for a work that completed before its op returned,
  // again at the return, when its future is known.
  bool failed = false;
  // Set at return: the work's future, whose completion the waiter sees (measured with gloo:
  // the future completes before the scope ends, so a waiter may read the tensors first), and
  // the recorder on then (null before the return, or when not recording).
  c10::intrusive_ptr<c10::ivalue::Future> future;
  // A functional call's: the future of the Work its nested c10d op returned, to tell a failed
  // work (a peer died) at the wait; not a completion route (the wait is).
  c10::intrusive_ptr<c10::ivalue::Future> nested_future;
  Recorder* recorder = nullptr;
  RecordedOp recorded;
  uint64_t ops_at_completion = 0;  // the recorder's ops_in_step() at completion
  std::vector<ArgRecord> outputs;  // digested at completion, when recorded
  // Tensors the op made for its work that are none of its own (collectives.h), held so that
  // their storages are not reused while the call is open; and how many of the written
  // tensors implementation ops have copied out of them.
  std::vector<at::Tensor> staging;
  size_t staged_writes = 0;
};

// Per thread: the collective op running (launched at its entry) and its depth; how many
// collective scopes are open on this thread as the backend's worker; the wait_tensor ops
// running, by depth, with the calls they complete; the implementation op running (it reads a
// staging buffer of `implementing`) and whether it writes the call's output.
struct ThreadCollectives {
  std::shared_ptr<CollectiveCall> launching;
  uint32_t launching_depth = 0;
  int worker_scopes = 0;
  std::vector<std::pair<uint32_t, std::vector<std::shared_ptr<CollectiveCall>>>> waits;
  std::shared_ptr<CollectiveCall> implementing;
  uint32_t implementing_depth = 0;
  bool implementing_writes = false;
};

ThreadCollectives& ThisThread();

const c10::StorageImpl* StorageOf(const at::Tensor& t);
bool Contains(const std::vector<const c10::StorageImpl*>& storages,
              const c10::StorageImpl* storage);
// The work's future says it is done (a waiter may go on and read the tensors).
bool FutureDone(const c10::intrusive_ptr<c10::ivalue::Future>& future);
// The future of the Work among a c10d op's results; null when there is none, or the Work has
// no future (its scope's end, or a staged write, completes it).
c10::intrusive_ptr<c10::ivalue::Future> WorkFuture(const std::vector<c10::IValue>& outputs);

}  // namespace upguard::torch_adapter
