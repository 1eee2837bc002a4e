// Pieces shared by the statistics kernels of stats_fast.h (stats_fast.cc, stats_avx2.cc,
// stats_avx512.cc); not for other callers.
//
// A kernel sums whole rounds of elements (a multiple of the spec's lane count: 8 in v1, 32 in
// v2) into the lanes, in order, keeps the least and greatest value, and hands the rest to
// Finish: the last few elements, the finiteness check and the tree sums. Everything is a
// template on the lane count kLanes, so v1 and v2 share each kernel's code. Helpers here are
// always inlined, so they are compiled for the instruction set of the kernel that calls them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "digest/half.h"
#include "digest/portable/chunk_stats.h"
#include "digest/stats.h"

#define UPGUARD_ALWAYS_INLINE inline __attribute__((always_inline))

namespace upguard::internal::kernel {

// The lane counts of the format (digest.md §6.1).
constexpr int kLanesV1 = portable::StatsLaneCount(kStatsVersionV1);  // 8
constexpr int kLanesV2 = portable::StatsLaneCount(kStatsVersionV2);  // 32

// Scalar loaders: one element widened exactly to a binary32 bit pattern.
struct LoadFloat32 {
  static constexpr size_t kSize = 4;
  static UPGUARD_ALWAYS_INLINE uint32_t Bits(const uint8_t* p) {
    uint32_t bits;
    std::memcpy(&bits, p, sizeof(bits));
    return bits;
  }
};
struct LoadBFloat16 {  // the high half of a binary32
  static constexpr size_t kSize = 2;
  static UPGUARD_ALWAYS_INLINE uint32_t Bits(const uint8_t* p) {
    uint16_t raw;
    std::memcpy(&raw, p, sizeof(raw));
    return static_cast<uint32_t>(raw) << 16;
  }
};
struct LoadFloat16 {
  static constexpr size_t kSize = 2;
  static UPGUARD_ALWAYS_INLINE uint32_t Bits(const uint8_t* p) {
    uint16_t raw;
    std::memcpy(&raw, p, sizeof(raw));
    const auto value = static_cast<float>(Float16ToDouble(raw));  // exact
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
  }
};

// A key whose signed integer order is IEEE totalOrder of the binary32 (-0.0 below +0.0); the
// map is its own inverse.
UPGUARD_ALWAYS_INLINE int32_t OrderKey(int32_t bits) { return bits ^ ((bits >> 31) & 0x7FFFFFFF); }

// A chunk after its whole blocks: the spec's lanes, and the least and greatest key so far
// (INT32_MAX and INT32_MIN when there was none).
template <int kLanes>
struct Lanes {
  double sum[kLanes];
  double sumsq[kLanes];
  int32_t min_key = std::numeric_limits<int32_t>::max();
  int32_t max_key = std::numeric_limits<int32_t>::min();
};

// Copies vector accumulators into `lanes`: vector v of `sum` and `sumsq` holds lanes
// v * width .. (v + 1) * width - 1, so their memory is the lanes in order.
template <int kLanes, typename Vector, size_t kVectors>
UPGUARD_ALWAYS_INLINE void StoreLaneSums(const Vector (&sum)[kVectors],
                                         const Vector (&sumsq)[kVectors], Lanes<kLanes>* lanes) {
  static_assert(sizeof(sum) == sizeof(lanes->sum), "one double per lane");
  std::memcpy(lanes->sum, sum, sizeof(lanes->sum));
  std::memcpy(lanes->sumsq, sumsq, sizeof(lanes->sumsq));
}

// Folds extremes of raw element bits (Unsigned is the element's width) into lanes' keys.
// Floating formats are sign-magnitude, so among raw bits: when any value is negative, the
// greatest unsigned one is the least value (the negative of largest magnitude), else the least
// unsigned one is; when any value is non-negative, the greatest signed one is the greatest
// value, else (all negative) the least unsigned one is. -0.0 (the sign bit alone) is negative
// here, so it sorts below +0.0 as totalOrder wants. Kernels reduce these three with plain
// integer min/max instead of mapping every element to a key.
template <typename Load, typename Unsigned, size_t kCount, typename LaneSums>
UPGUARD_ALWAYS_INLINE void KeysFromRawExtremes(const Unsigned (&min_unsigned)[kCount],
                                               const Unsigned (&max_unsigned)[kCount],
                                               const Unsigned (&max_signed)[kCount],
                                               LaneSums* lanes) {
  using Signed = std::make_signed_t<Unsigned>;
  Unsigned min_u = min_unsigned[0], max_u = max_unsigned[0];
  auto max_s = static_cast<Signed>(max_signed[0]);
  for (size_t idx = 1; idx < kCount; ++idx) {
    min_u = std::min(min_u, min_unsigned[idx]);
    max_u = std::max(max_u, max_unsigned[idx]);
    max_s = std::max(max_s, static_cast<Signed>(max_signed[idx]));
  }
  constexpr Unsigned kSign = Unsigned{1} << (8 * sizeof(Unsigned) - 1);
  const Unsigned least = (max_u & kSign) ? max_u : min_u;
  const Unsigned greatest = max_s >= 0 ? static_cast<Unsigned>(max_s) : min_u;
  lanes->min_key =
      OrderKey(static_cast<int32_t>(Load::Bits(reinterpret_cast<const uint8_t*>(&least))));
  lanes->max_key =
      OrderKey(static_cast<int32_t>(Load::Bits(reinterpret_cast<const uint8_t*>(&greatest))));
}

// The chunk's sums (the spec's tree over the lanes), extremes and finite count, from its lanes
// and its non-finite counts (already in `out`). With no finite value, min and max are the
// definition's +Inf and -Inf.
template <int kLanes>
UPGUARD_ALWAYS_INLINE void FillFromLanes(const Lanes<kLanes>& lanes, size_t num_elements,
                                         ChunkStats* out) {
  out->sum = portable::LaneTree<kLanes>(lanes.sum);
  out->sumsq = portable::LaneTree<kLanes>(lanes.sumsq);
  out->finite_count = num_elements - out->nan_count - out->pos_inf_count - out->neg_inf_count;
  if (out->finite_count == 0) {
    out->min = std::numeric_limits<double>::infinity();
    out->max = -std::numeric_limits<double>::infinity();
    return;
  }
  const int32_t bits[2] = {OrderKey(lanes.min_key), OrderKey(lanes.max_key)};
  float extremes[2];
  std::memcpy(extremes, bits, sizeof(extremes));
  out->min = extremes[0];
  out->max = extremes[1];
}

// Adds the elements [full, num_elements) (a few; `full` is a multiple of kLanes) to their lanes
// and fills `out`; false when a lane's sum of squares is not finite (a NaN or +-Inf was summed;
// the squares of these dtypes cannot overflow binary64), and then `out` is unspecified.
template <typename Load, int kLanes>
UPGUARD_ALWAYS_INLINE bool Finish(const uint8_t* bytes, size_t full, size_t num_elements,
                                  Lanes<kLanes>* lanes, ChunkStats* out) {
  for (size_t elem_idx = full; elem_idx < num_elements; ++elem_idx) {
    const uint32_t bits = Load::Bits(bytes + elem_idx * Load::kSize);
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    const double v = value;
    lanes->sum[elem_idx % kLanes] += v;
    lanes->sumsq[elem_idx % kLanes] += v * v;
    const int32_t key = OrderKey(static_cast<int32_t>(bits));
    lanes->min_key = std::min(lanes->min_key, key);
    lanes->max_key = std::max(lanes->max_key, key);
  }
  for (const double lane : lanes->sumsq) {
    if (!std::isfinite(lane)) return false;
  }
  out->nan_count = out->pos_inf_count = out->neg_inf_count = 0;
  FillFromLanes(*lanes, num_elements, out);
  return true;
}

// What a kernel prefetches: up to `size` bytes from `bytes` (null: nothing).
struct Prefetch {
  const uint8_t* bytes;
  size_t size;
};

// Called by kernels once per step at `offset` bytes into the chunk: one cache line of the next
// bytes per 64 bytes summed, so the prefetches stay level with the reads.
UPGUARD_ALWAYS_INLINE void PrefetchAt(const Prefetch& prefetch, size_t offset) {
  if (offset % 64 == 0 && offset < prefetch.size) __builtin_prefetch(prefetch.bytes + offset);
}

// The instruction-set kernels (x86-64 only), as FastChunkStats with `lanes` kLanesV1 or
// kLanesV2; the caller checked the CPU.
bool FastChunkAvx2(int lanes, DType dtype, const uint8_t* bytes, size_t num_elements,
                   ChunkStats* out, Prefetch prefetch);
bool FastChunkAvx512(int lanes, DType dtype, const uint8_t* bytes, size_t num_elements,
                     ChunkStats* out, Prefetch prefetch);

// Elements a kernel's loop takes per iteration: whole steps of kStep elements (one vector load)
// covering every one of the kLanes lanes the same number of times.
template <int kLanes, size_t kStep>
constexpr size_t kRoundElements = kStep > kLanes ? kStep : kLanes;

}  // namespace upguard::internal::kernel
