// Test helpers for the digest: an independent reference implementation of
// docs/formats/digest.md (whole logical byte string in memory, one-shot hashes, element-by-
// element statistics) and small tensor builders. Tests only.
#pragma once

#include <xxhash.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "digest/digest.h"
#include "digest/half.h"
#include "upguard/tensor.h"

namespace upguard::testing {

inline std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t dim_idx = shape.size(); dim_idx-- > 0;) {
    strides[dim_idx] = stride;
    stride *= shape[dim_idx];
  }
  return strides;
}

inline uint64_t Numel(const std::vector<int64_t>& shape) {
  uint64_t numel = 1;
  for (const int64_t size : shape) numel *= static_cast<uint64_t>(size);
  return numel;
}

// A tensor that owns its shape and strides; `data` is borrowed.
struct OwnedView {
  DType dtype;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  const void* data;
  TensorView view() const {
    return TensorView{dtype, sizes.data(), strides.data(), static_cast<int>(sizes.size()), data};
  }
};

// The logical byte stream of a view, one element at a time from the stride formula.
inline std::vector<uint8_t> LogicalBytes(const OwnedView& tensor) {
  const size_t elem_size = DTypeSize(tensor.dtype);
  const uint64_t numel = Numel(tensor.sizes);
  std::vector<uint8_t> out(numel * elem_size);
  for (uint64_t elem_idx = 0; elem_idx < numel; ++elem_idx) {
    uint64_t rest = elem_idx;
    int64_t offset = 0;
    for (size_t dim_idx = tensor.sizes.size(); dim_idx-- > 0;) {
      const auto size = static_cast<uint64_t>(tensor.sizes[dim_idx]);
      offset += static_cast<int64_t>(rest % size) * tensor.strides[dim_idx];
      rest /= size;
    }
    std::memcpy(&out[elem_idx * elem_size],
                static_cast<const uint8_t*>(tensor.data) + offset * elem_size, elem_size);
  }
  return out;
}

// digest.md §5, literally: build header ‖ canonical leaves in one string and hash it once.
inline Digest128 ReferenceDigest(DType dtype, const std::vector<int64_t>& shape,
                                 const std::vector<uint8_t>& logical) {
  auto put_u64 = [](std::string* s, uint64_t v) {
    for (int byte_idx = 0; byte_idx < 8; ++byte_idx) s->push_back(char(v >> (8 * byte_idx)));
  };
  std::string message = "UGD1";
  message.push_back(static_cast<char>(dtype));
  message.push_back(static_cast<char>(shape.size()));
  message.append(2, '\0');
  for (const int64_t size : shape) put_u64(&message, static_cast<uint64_t>(size));
  const uint64_t chunks = (logical.size() + kDigestChunkBytes - 1) / kDigestChunkBytes;
  put_u64(&message, logical.size());
  put_u64(&message, chunks);
  for (uint64_t chunk_idx = 0; chunk_idx < chunks; ++chunk_idx) {
    const size_t begin = chunk_idx * kDigestChunkBytes;
    const size_t size = std::min(kDigestChunkBytes, logical.size() - begin);
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits(logical.data() + begin, size));
    message.append(reinterpret_cast<const char*>(canonical.digest), 16);
  }
  const XXH128_hash_t root = XXH3_128bits(message.data(), message.size());
  return Digest128{root.high64, root.low64};
}

inline double ElementAsDouble(DType dtype, const uint8_t* p) {
  uint16_t half;
  float single;
  double wide;
  switch (dtype) {
    case DType::kFloat16:
      std::memcpy(&half, p, 2);
      return Float16ToDouble(half);
    case DType::kBFloat16:
      std::memcpy(&half, p, 2);
      return BFloat16ToDouble(half);
    case DType::kFloat32:
      std::memcpy(&single, p, 4);
      return single;
    default:
      std::memcpy(&wide, p, 8);
      return wide;
  }
}

// v1's tree of digest.md §6.1 over eight values.
inline double ReferenceTree8(const double (&l)[8]) {
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

// A chunk's sum from its lanes (§6.1): v1's tree over 8 lanes; v2's over 32, whose groups of
// eight are added lane-wise first.
inline double ReferenceChunkSum(const double (&lanes)[32], int stats_version) {
  double t[8];
  for (int i = 0; i < 8; ++i) {
    t[i] =
        stats_version == 1 ? lanes[i] : (lanes[i] + lanes[i + 8]) + (lanes[i + 16] + lanes[i + 24]);
  }
  return ReferenceTree8(t);
}

// digest.md §6, literally, one element at a time, for statistics version 1 (8 lanes) or 2 (32).
inline TensorStats ReferenceStats(DType dtype, const std::vector<uint8_t>& logical,
                                  int stats_version) {
  const size_t lanes = stats_version == 1 ? 8 : 32;
  const size_t elem_size = DTypeSize(dtype);
  const size_t chunk_elems = kDigestChunkBytes / elem_size;
  const size_t numel = logical.size() / elem_size;
  TensorStats stats;
  double sum = 0, sumsq = 0;
  bool have_finite = false;
  for (size_t chunk_begin = 0; chunk_begin < numel; chunk_begin += chunk_elems) {
    double s[32] = {}, q[32] = {};
    for (size_t j = 0; j < chunk_elems && chunk_begin + j < numel; ++j) {
      const double v = ElementAsDouble(dtype, &logical[(chunk_begin + j) * elem_size]);
      if (std::isnan(v)) {
        ++stats.nan_count;
      } else if (std::isinf(v)) {
        ++(v > 0 ? stats.pos_inf_count : stats.neg_inf_count);
      } else {
        ++stats.finite_count;
        s[j % lanes] = s[j % lanes] + v;
        volatile double square = v * v;  // no contraction into an FMA
        q[j % lanes] = q[j % lanes] + square;
        const bool less = v < stats.min || (v == stats.min && std::signbit(v));
        const bool greater = v > stats.max || (v == stats.max && !std::signbit(v));
        if (!have_finite || less) stats.min = v;
        if (!have_finite || greater) stats.max = v;
        have_finite = true;
      }
    }
    sum = sum + ReferenceChunkSum(s, stats_version);
    sumsq = sumsq + ReferenceChunkSum(q, stats_version);
  }
  if (have_finite) {
    stats.mean = sum / static_cast<double>(stats.finite_count);
    stats.l2 = std::sqrt(sumsq);
  }
  return stats;
}

inline bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

// Bitwise equality of every field, so -0.0 != +0.0 and the last bit of a sum counts.
inline bool StatsBitEqual(const TensorStats& a, const TensorStats& b) {
  return SameBits(a.min, b.min) && SameBits(a.max, b.max) && SameBits(a.mean, b.mean) &&
         SameBits(a.l2, b.l2) && a.finite_count == b.finite_count && a.nan_count == b.nan_count &&
         a.pos_inf_count == b.pos_inf_count && a.neg_inf_count == b.neg_inf_count;
}

inline std::string StatsText(const TensorStats& s) {
  char text[256];
  std::snprintf(text, sizeof(text),
                "finite=%llu nan=%llu +inf=%llu -inf=%llu min=%a max=%a "
                "mean=%a l2=%a",
                (unsigned long long)s.finite_count, (unsigned long long)s.nan_count,
                (unsigned long long)s.pos_inf_count, (unsigned long long)s.neg_inf_count, s.min,
                s.max, s.mean, s.l2);
  return text;
}

}  // namespace upguard::testing
