// The digest of tensors in GPU memory, computed on the GPU: the same bits as DigestTensor by
// construction (the kernel runs digest/portable/'s steps: eight threads per 64 KiB chunk, then
// the root), launched on the tensor's stream, results collected in batches with no host sync
// per tensor. Built when CMake finds nvcc (UPGUARD_HAVE_CUDA); this header needs no CUDA header.
//
//   ASSIGN_OR_RETURN(auto digester, cuda::Digester::Create(/*stats=*/true));
//   ASSIGN_OR_RETURN(uint64_t ticket, digester->Enqueue({DType::kFloat32, {4, 8}, ptr}, stream));
//   ... more Enqueue calls, training goes on ...
//   ASSIGN_OR_RETURN(auto done, digester->Collect(/*wait=*/false));  // (ticket, digest) in order
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "upguard/digest_types.h"
#include "upguard/status.h"
#include "upguard/tensor.h"

namespace upguard::cuda {

// A CUDA device is present and usable (false when none, or the driver is missing).
bool DeviceAvailable();

// A contiguous tensor in device memory: `data` points at element [0, ..., 0].
struct DeviceTensor {
  DType dtype = DType::kInvalid;
  std::vector<int64_t> sizes;
  const void* data = nullptr;
};

class Digester {
 public:
  // Statistics of version `stats_version` (1 or 2, docs/formats/digest.md §6.1; the digest is
  // the same in both). FailedPrecondition when no device is usable; InvalidArgument for
  // another version.
  static StatusOr<std::unique_ptr<Digester>> Create(bool stats, int stats_version = 2);
  ~Digester();
  Digester(const Digester&) = delete;
  Digester& operator=(const Digester&) = delete;

  // Enqueues the digest of `tensor` on `stream` (a cudaStream_t; null: the legacy default
  // stream) after the work already queued there, so it hashes what that work wrote. Returns a
  // ticket (0, 1, 2, ...). Blocks only when kMaxPending digests are uncollected.
  StatusOr<uint64_t> Enqueue(const DeviceTensor& tensor, void* stream);

  // The digests whose work finished, in ticket order (stopping at the first unfinished one);
  // with `wait`, all of them.
  StatusOr<std::vector<std::pair<uint64_t, TensorDigest>>> Collect(bool wait);

  static constexpr size_t kMaxPending = 1024;

 private:
  struct Impl;
  explicit Digester(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace upguard::cuda
