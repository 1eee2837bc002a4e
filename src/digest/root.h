// The root of a tensor digest (docs/formats/digest.md §5.2–5.3): XXH3-128 over the header and
// the canonical leaf digests, fed as they are produced.
//
//   ASSIGN_OR_RETURN(TensorLayout layout, CheckShape("DigestTensor", dtype, sizes, ndim));
//   RootHasher root(dtype, sizes, ndim, layout);
//   for (const Digest128& leaf : leaves) root.AddLeaf(leaf);
//   Digest128 digest = root.Finish();
//
// The message is buffered on the stack while it is short (a small tensor's header and leaves)
// and hashed one-shot; longer messages switch to XXH3's streaming state. Both give XXH3-128 of
// the same bytes, so the split is invisible in the result. No heap allocation either way.
#pragma once

#include <cstddef>
#include <cstdint>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include "digest/digest.h"
#include "upguard/status.h"
#include "upguard/tensor.h"

namespace upguard {

// What dtype and shape imply about the logical byte stream.
struct TensorLayout {
  size_t elem_size = 0;
  uint64_t numel = 0;
  uint64_t byte_length = 0;  // numel * elem_size
  uint64_t chunk_count = 0;  // ceil(byte_length / kDigestChunkBytes)
};

// Checks dtype, ndim and sizes (digest.md §3; strides and data are the caller's) and derives
// the layout. `caller` starts the error message, e.g. "DigestTensor".
StatusOr<TensorLayout> CheckShape(const char* caller, DType dtype, const int64_t* sizes, int ndim);

// XXH3-128 (seed 0) of `size` bytes: a leaf (digest.md §5.1) or DigestBytes. Uses xxHash's
// run-time dispatch (SSE2, AVX2 or AVX-512) when the library has it; every path gives the same
// hash by XXH3's definition.
Digest128 HashChunk(const void* data, size_t size);
// Which XXH3 HashChunk calls, for benchmark reports.
const char* HashChunkImplementation();

// Most bytes a header takes (§5.2: 24 + 8 * kMaxDigestDims).
inline constexpr size_t kMaxDigestHeaderBytes = 24 + 8 * kMaxDigestDims;
// Writes the header of §5.2 into `out` (room for kMaxDigestHeaderBytes) and returns its length.
// Precondition: CheckShape accepted the arguments. (The CUDA digest hashes it with its leaves.)
size_t WriteDigestHeader(DType dtype, const int64_t* sizes, int ndim, const TensorLayout& layout,
                         uint8_t* out);

class RootHasher {
 public:
  // Starts the message with the header. Precondition: CheckShape accepted the arguments.
  RootHasher(DType dtype, const int64_t* sizes, int ndim, const TensorLayout& layout);
  RootHasher(const RootHasher&) = delete;
  RootHasher& operator=(const RootHasher&) = delete;

  // Appends canonical(leaf). Leaves must come in chunk order.
  void AddLeaf(const Digest128& leaf);
  Digest128 Finish();

 private:
  void Update(const void* bytes, size_t size);

  // Holds any header (at most 536 bytes) and, after a header of up to 8 dimensions, 28 leaves.
  uint8_t buffer_[1024];
  size_t buffered_ = 0;
  bool streaming_ = false;
  XXH3_state_t state_;  // initialized when streaming_ becomes true
};

}  // namespace upguard
