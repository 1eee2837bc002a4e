// The tensor digest: a 128-bit, order-aware, stable fingerprint of a tensor's logical values,
// plus (for floating dtypes) magnitude statistics computed in the same pass.
//
// Normative definition: docs/formats/digest.md. Summary: the tensor's logical bytes in
// row-major order are cut into fixed 64 KiB chunks; each chunk is hashed with XXH3-128; the
// root is XXH3-128 over a header (domain tag, dtype, shape) followed by the chunk digests in
// order. Any stride layout, any thread count, chunked or one-shot: the same digest.
//
//   upguard::DigestOptions options;  // stats on, 1 thread
//   upguard::StatusOr<upguard::TensorDigest> d = upguard::DigestTensor(view, options);
//   if (d.ok()) std::cout << d->digest.Hex();
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "upguard/digest_types.h"
#include "upguard/status.h"
#include "upguard/tensor.h"

namespace upguard {

// Size of one leaf chunk of logical bytes. Part of the format: changing it changes every digest.
inline constexpr size_t kDigestChunkBytes = 64 * 1024;
// Most dimensions a digestible tensor may have (the header stores ndim in one byte).
inline constexpr int kMaxDigestDims = 64;

// Parses the 32-hex-digit form written by Hex() (either case). InvalidArgument otherwise.
StatusOr<Digest128> ParseDigestHex(std::string_view hex);

// Versions of the statistics (docs/formats/digest.md §6.1): 1 sums each chunk in 8 lanes, 2 in
// 32 (faster: more independent chains of additions). The digest itself is the same in both;
// mean and l2 may differ in their last bits, so whoever stores statistics stores their version
// with them. Never renumbered.
inline constexpr int kStatsVersionV1 = 1;
inline constexpr int kStatsVersionV2 = 2;
inline constexpr int kStatsVersionLatest = kStatsVersionV2;

struct DigestOptions {
  bool stats = true;  // compute TensorStats for floating dtypes
  int threads = 1;    // worker threads for large tensors; the digest does not depend on it
  int stats_version = kStatsVersionLatest;  // 1 or 2; which §6.1 lanes the statistics use
};

// Fails (InvalidArgument) for kInvalid dtype, negative sizes or strides, or null data with
// numel > 0; also for ndim outside [0, kMaxDigestDims], null sizes/strides with ndim > 0,
// sizes or strides that address 2^63 bytes or more, options.threads < 1, and an
// options.stats_version other than 1 or 2.
// A tensor with zero elements has a valid digest (of its header).
StatusOr<TensorDigest> DigestTensor(const TensorView& tensor, const DigestOptions& options);

// The root of a tensor digest from its leaf digests (docs/formats/digest.md §5.3), for
// implementations that compute leaves elsewhere (a GPU kernel, a streaming reader).
// `leaves[k]` = XXH3-128 of chunk k of the logical byte stream. Fails (InvalidArgument) on an
// invalid dtype/shape or when num_leaves is not ceil(numel * DTypeSize(dtype) / 64 KiB).
StatusOr<Digest128> DigestFromLeaves(DType dtype, const int64_t* sizes, int ndim,
                                     const Digest128* leaves, size_t num_leaves);

// Digest of an arbitrary byte string (used for scalars, RNG states, step digests):
// XXH3-128 with seed 0, as Digest128.
Digest128 DigestBytes(const void* data, size_t size);

}  // namespace upguard
