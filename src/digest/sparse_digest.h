// The digest of a sparse tensor from its parts (docs/formats/digest.md §7.1): a COO tensor from
// its indices and values, a CSR one from its row offsets, column indices and values. The dense
// view is never built: each part is digested as the tensor it is (§5) and the part digests are
// combined under a header that binds the layout, the dtype and the dense shape.
//
//   TensorView parts[] = {indices_view, values_view};
//   ASSIGN_OR_RETURN(TensorDigest d,
//                    DigestSparse(SparseLayout::kCoo, DType::kFloat32, sizes, 2, parts, 2, {}));
//
// The statistics are the stored values' (the last part), not the dense tensor's: the implicit
// zeros are not counted.
#pragma once

#include <cstddef>
#include <cstdint>

#include "digest/digest.h"

namespace upguard {

// Serialized as the header's tag: never renumber.
enum class SparseLayout : uint8_t {
  kCoo = 1,  // parts: indices [sparse_dim, nnz] (int64), values [nnz, dense dims...]
  kCsr = 2,  // parts: crow_indices, col_indices, values
};

// Fails (InvalidArgument) where DigestTensor fails on a part, for a dtype or shape DigestTensor
// would refuse, and for a part count that is not the layout's (2 for kCoo, 3 for kCsr).
StatusOr<TensorDigest> DigestSparse(SparseLayout layout, DType dtype, const int64_t* sizes,
                                    int ndim, const TensorView* parts, size_t num_parts,
                                    const DigestOptions& options);

}  // namespace upguard
