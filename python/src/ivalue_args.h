// Turns an op's boxed IValues into upguard::Args the core can digest.
//
// Tensors on the CPU with a strided layout become TensorViews over their memory (no copy, no
// ATen call); others are read another way or recorded unread, with why (unread_args.h). Numbers, strings and lists
// become Scalar text. Tensor lists expand into one Arg per element ("tensors[2]").
#pragma once

#include <ATen/core/ivalue.h>

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "op_info.h"
#include "upguard/recorder.h"

namespace upguard::torch_adapter {

// The Args of one op and what they point into, valid while the callback runs (tensors stay
// owned by the RecordFunction's IValues). Built without heap allocation for names and texts
// unless an op has list arguments or scalars.
struct ArgBatch {
  std::vector<Arg> args;
  std::vector<const at::Tensor*> tensors;  // per arg: the tensor behind it, or nullptr
  // Deques: what the Args point to stays where it is while more is added.
  std::deque<std::string> strings;  // names of list elements, scalar texts
  std::deque<TensorDigest> known;   // cached digests the Args point to (Arg::known)
  std::deque<at::Tensor> owned;     // tensors made for the record (generator states)
  // Values resolved for the record (a conjugate view's), and their contiguous strides.
  std::deque<std::string> bytes;
  std::deque<std::vector<int64_t>> strides;

  // Empties it and keeps its memory, for the next op of the same thread.
  void Clear() {
    args.clear();
    tensors.clear();
    strings.clear();
    known.clear();
    owned.clear();
    bytes.clear();
    strides.clear();
  }
};

// A thread's batch for an op's entry (`which` 0) or exit (1), empty, its memory kept from the
// thread's ops before: an op's record allocates no vectors once a thread has recorded a few.
// A thread records one op at a time (ThreadState::busy), so one batch per side is enough.
// Emptied again when `ScopedBatch` goes.
class ScopedBatch {
 public:
  explicit ScopedBatch(int which);
  ~ScopedBatch() { batch_.Clear(); }
  ScopedBatch(const ScopedBatch&) = delete;
  ScopedBatch& operator=(const ScopedBatch&) = delete;
  ArgBatch& operator*() { return batch_; }
  ArgBatch* operator->() { return &batch_; }

 private:
  ArgBatch& batch_;
};

// Storages whose contents are not defined yet (results of empty*, resize_), by version.
// An input whose storage is listed at an unchanged version is recorded as kUninit.
class UninitTracker {
 public:
  void MarkUninit(const at::Tensor& tensor);
  void MarkWritten(const at::Tensor& tensor);
  bool IsUninit(const at::Tensor& tensor);
  void DropExpired();
  // Forgets every storage (a fingerprint step tracks none: steps.cc EndStep).
  void Clear();

 private:
  struct Entry {
    c10::weak_intrusive_ptr<c10::StorageImpl> storage;  // holds the address, not the data
    int64_t version;
  };
  std::mutex mu_;
  std::unordered_map<const c10::StorageImpl*, Entry> entries_;
};

UninitTracker& Uninit();

// upguard's dtype for a torch scalar type; kInvalid for ones upguard cannot read.
DType ToDType(c10::ScalarType type);
// A defined CPU tensor with a strided layout and a dtype upguard reads, whose memory holds its
// values as they are (not a lazily conjugated or negated view).
bool IsReadable(const at::Tensor& tensor);
// The storage holds every byte the view reaches (a non-empty view, no negative stride).
bool StorageCoversView(const at::Tensor& tensor);
// The tensor's memory as a TensorView (borrowed: valid while the tensor lives). For readable
// tensors only.
TensorView ViewOf(const at::Tensor& tensor);

void AppendInputs(const OpInfo& info, c10::ArrayRef<const c10::IValue> values, ArgBatch* batch);
void AppendOutputs(const OpInfo& info, const std::vector<c10::IValue>& values, ArgBatch* batch);
// Appends `value` (a tensor or a list of them) as values to digest now, named like an op's
// arguments ("tensors[1]").
void AppendTensorValues(const c10::IValue& value, std::string_view name, ArgBatch* batch);
void ForEachTensor(const c10::IValue& value, const std::function<void(const at::Tensor&)>& fn);
// Puts the digests the recorder just computed for `batch` into the digest cache (those its
// hash pool is still making too).
void RememberDigests(const ArgBatch& batch, const std::vector<ArgRecord>& records);
// Lets `recorder` digest the large tensors of `batch` it has no digest for on its hash pool:
// each gets a reference to its storage (Arg::owner), which it names as its memory. Only for
// tensors nothing writes before the op's exit (outputs; inputs of an op that writes none).
void OfferToHashPool(const Recorder& recorder, ArgBatch* batch);
// Before an op runs: waits for the hash pool's digests of every storage the op may write
// (OpInfo::mutable_inputs; everything for an op without a schema).
void WaitBeforeOpWrites(Recorder* recorder, const OpInfo& info,
                        c10::ArrayRef<const c10::IValue> inputs);
// An op wrote `tensor` (maybe behind its version counter): its cached digest is stale and its
// contents are defined.
void ForgetWritten(const at::Tensor& tensor);
// Updates the UninitTracker from an op's results (called for every op, recorded or not).
void TrackResults(const OpInfo& info, const std::vector<c10::IValue>& values);

}  // namespace upguard::torch_adapter
