// Digests of tensors already hashed, so the same bytes are not hashed twice: most op inputs
// are outputs of earlier ops (activations) or parameters hashed at their last update.
//
// Invariant: a hit returns the digest of the bytes the tensor holds now. Never the digest of
// bytes that are no longer there. What enforces it:
//   - An entry is keyed by what fixes a tensor's values: its storage, offset, dtype, sizes,
//     strides and the storage's version counter, which every declared in-place or out= write
//     through autograd moves.
//   - Every write an op makes is also dropped by storage when the op ends (ForgetWritten): its
//     value results and the inputs it writes (OpInfo::written_inputs), including writes the
//     schema does not declare and that move no version counter (undeclared_writes.h, measured
//     by write_probe.h: batch norm's running statistics, RReLU's noise). An op with undeclared
//     writes that is not recorded drops them at its entry instead.
//   - Inference tensors have no version counter and may be written in place inside
//     inference_mode: they are never cached.
//   - An entry pins its storage with a weak reference, so a freed storage's address cannot be
//     reused by a new tensor while the entry lives.
// Not seen: memory written behind PyTorch's back (numpy writing into a from_numpy tensor's
// buffer in place); such a change shows up at the consuming op's output instead of its input,
// and in the model state at the step's end.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "digest/digest.h"
#include "digest/hash_pool.h"

namespace upguard::torch_adapter {

// A digest the cache holds: known, or still being made by the recorder's hash pool (`pending`
// set; `digest` then means nothing yet).
struct CachedDigest {
  TensorDigest digest;
  std::shared_ptr<const PendingDigest> pending;
};

class DigestCache {
 public:
  std::optional<CachedDigest> Find(const at::Tensor& tensor);
  void Put(const at::Tensor& tensor, const TensorDigest& digest,
           std::shared_ptr<const PendingDigest> pending = nullptr);
  // An op wrote `tensor`'s storage: forget every entry on it.
  void Invalidate(const at::Tensor& tensor);
  // Drops entries whose storage was freed; clears all beyond a size bound.
  void Trim();
  void Clear();

 private:
  struct Entry {
    explicit Entry(c10::weak_intrusive_ptr<c10::StorageImpl> storage_ref)
        : storage(std::move(storage_ref)) {}

    c10::weak_intrusive_ptr<c10::StorageImpl> storage;
    int64_t offset = 0;
    c10::ScalarType dtype = c10::ScalarType::Undefined;
    int64_t version = 0;
    // Inline up to 6 dimensions: an entry is made for most results of most ops.
    c10::SmallVector<int64_t, 6> sizes;
    c10::SmallVector<int64_t, 6> strides;
    TensorDigest digest;
    std::shared_ptr<const PendingDigest> pending;  // until the pool's digest is taken in

    bool Matches(const at::Tensor& tensor) const;
  };

  std::mutex mu_;
  // Most storages hold one tensor's values: their entry inline.
  std::unordered_map<const c10::StorageImpl*, c10::SmallVector<Entry, 1>> by_storage_;
  size_t entries_ = 0;
};

DigestCache& Digests();

}  // namespace upguard::torch_adapter
