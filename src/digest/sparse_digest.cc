#include "digest/sparse_digest.h"

#include <string>

namespace upguard {
namespace {

void AppendLe64(uint64_t value, std::string* out) {
  for (int byte_idx = 0; byte_idx < 8; ++byte_idx)
    out->push_back(static_cast<char>(value >> (8 * byte_idx)));
}

void AppendBe64(uint64_t value, std::string* out) {
  for (int byte_idx = 7; byte_idx >= 0; --byte_idx)
    out->push_back(static_cast<char>(value >> (8 * byte_idx)));
}

}  // namespace

StatusOr<TensorDigest> DigestSparse(SparseLayout layout, DType dtype, const int64_t* sizes,
                                    int ndim, const TensorView* parts, size_t num_parts,
                                    const DigestOptions& options) {
  const size_t want = layout == SparseLayout::kCoo ? 2 : 3;
  if (num_parts != want) {
    return InvalidArgument("a sparse tensor of this layout has " + std::to_string(want) +
                           " parts, not " + std::to_string(num_parts));
  }
  if (DTypeSize(dtype) == 0) return InvalidArgument("sparse tensor of an unknown dtype");
  if (ndim < 0 || ndim > kMaxDigestDims || (ndim > 0 && sizes == nullptr)) {
    return InvalidArgument("sparse tensor with " + std::to_string(ndim) + " dims");
  }
  // §7.1: tag, dtype, ndim, reserved, sizes, part count, then each part's digest, canonical.
  std::string message = layout == SparseLayout::kCoo ? "UGS1" : "UGC1";
  message.push_back(static_cast<char>(dtype));
  message.push_back(static_cast<char>(ndim));
  message.append(2, '\0');
  for (int dim = 0; dim < ndim; ++dim) {
    if (sizes[dim] < 0) return InvalidArgument("sparse tensor with a negative size");
    AppendLe64(static_cast<uint64_t>(sizes[dim]), &message);
  }
  AppendLe64(num_parts, &message);
  TensorDigest result;
  for (size_t part = 0; part < num_parts; ++part) {
    DigestOptions part_options = options;
    part_options.stats = options.stats && part + 1 == num_parts;  // the values' statistics
    ASSIGN_OR_RETURN(TensorDigest digest, DigestTensor(parts[part], part_options));
    AppendBe64(digest.digest.high, &message);
    AppendBe64(digest.digest.low, &message);
    if (part + 1 == num_parts) {
      result.has_stats = digest.has_stats;
      result.stats = digest.stats;
    }
  }
  result.digest = DigestBytes(message.data(), message.size());
  return result;
}

}  // namespace upguard
