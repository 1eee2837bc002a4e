#include "digest/stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "digest/half.h"
#include "digest/portable/chunk_stats.h"
#include "digest/stats_fast.h"

namespace upguard {
namespace {

using portable::LaneTree;

constexpr double kInf = std::numeric_limits<double>::infinity();
// Fewer float32/float16/bfloat16 values than this go straight to the element-by-element
// definition: for them the vector kernels' set-up and reductions cost more (a 16-element tensor
// digested 20 ns faster, measured).
constexpr size_t kMinKernelElements = 32;

// Two lanes in one value (GCC/Clang vector extension): each operation is the lane-wise IEEE
// operation, so four of these compute exactly the spec's eight scalar lanes, in SSE2 or NEON.
using Pair = double __attribute__((vector_size(16)));

// Ordering of finite values with -0.0 below +0.0, so min/max are order independent.
inline bool TotalLess(double a, double b) {
  return a < b || (a == b && std::signbit(a) && !std::signbit(b));
}

template <typename T>
inline T LoadAs(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(value));
  return value;
}

// Each loader turns one element (One), or for float64 two consecutive ones (Two), into binary64.
struct LoadFloat32 {
  static constexpr size_t kSize = 4;
  static double One(const uint8_t* p) { return LoadAs<float>(p); }
};
struct LoadFloat64 {
  static constexpr size_t kSize = 8;
  static double One(const uint8_t* p) { return LoadAs<double>(p); }
  static Pair Two(const uint8_t* p) { return LoadAs<Pair>(p); }
};
struct LoadFloat16 {
  static constexpr size_t kSize = 2;
  static double One(const uint8_t* p) { return Float16ToDouble(LoadAs<uint16_t>(p)); }
};
struct LoadBFloat16 {
  static constexpr size_t kSize = 2;
  static double One(const uint8_t* p) { return BFloat16ToDouble(LoadAs<uint16_t>(p)); }
};

// The definition with kLanes lanes (8: v1, 32: v2), one element at a time: any chunk,
// including ones with NaN or +-Inf.
template <typename Load, int kLanes>
ChunkStats ExactChunk(const uint8_t* bytes, size_t num_elements) {
  double sum[kLanes] = {};
  double sumsq[kLanes] = {};
  ChunkStats out;
  out.min = kInf;
  out.max = -kInf;
  for (size_t elem_idx = 0; elem_idx < num_elements; ++elem_idx) {
    const double v = Load::One(bytes + elem_idx * Load::kSize);
    const size_t lane = elem_idx % kLanes;
    if (std::isfinite(v)) {
      ++out.finite_count;
      sum[lane] += v;
      sumsq[lane] += v * v;
      if (TotalLess(v, out.min)) out.min = v;
      if (TotalLess(out.max, v)) out.max = v;
    } else if (std::isnan(v)) {
      ++out.nan_count;
    } else if (v > 0) {
      ++out.pos_inf_count;
    } else {
      ++out.neg_inf_count;
    }
  }
  out.sum = LaneTree<kLanes>(sum);
  out.sumsq = LaneTree<kLanes>(sumsq);
  return out;
}

// Whether the chunk holds a zero with the given sign bit.
template <typename Load>
bool HasZero(const uint8_t* bytes, size_t num_elements, bool negative) {
  for (size_t elem_idx = 0; elem_idx < num_elements; ++elem_idx) {
    const double v = Load::One(bytes + elem_idx * Load::kSize);
    if (v == 0 && std::signbit(v) == negative) return true;
  }
  return false;
}

// The common case for float64, fast: the same lanes with no per-element tests, assuming every
// value is finite. A NaN or +-Inf leaves its lane's sum of squares non-finite for good, so checking
// the lanes at the end proves the assumption; false means "use ExactChunk" (so does a sum of
// squares that overflowed, harmlessly). Plain min/max may pick either zero; a zero min or max
// gets its sign from a rescan. min and max take four pairs whatever kLanes (their order does
// not matter), which leaves more registers to the sums.
template <typename Load, int kLanes>
bool FastChunk(const uint8_t* bytes, size_t num_elements, ChunkStats* out) {
  constexpr int kExtremes = 4;
  Pair sum[kLanes / 2] = {}, sumsq[kLanes / 2] = {}, min[kExtremes], max[kExtremes];
  for (int pair = 0; pair < kExtremes; ++pair) {
    min[pair] = Pair{} + kInf;
    max[pair] = Pair{} - kInf;
  }
  const size_t full = num_elements - num_elements % kLanes;
  for (size_t block = 0; block < full; block += kLanes) {
#pragma GCC unroll 16
    for (int pair = 0; pair < kLanes / 2; ++pair) {
      const Pair v = Load::Two(bytes + (block + 2 * pair) * Load::kSize);
      sum[pair] += v;
      sumsq[pair] += v * v;
      min[pair % kExtremes] = v < min[pair % kExtremes] ? v : min[pair % kExtremes];
      max[pair % kExtremes] = v > max[pair % kExtremes] ? v : max[pair % kExtremes];
    }
  }
  double lane_sum[kLanes], lane_sumsq[kLanes];
  out->min = kInf;
  out->max = -kInf;
  for (int lane = 0; lane < kLanes; ++lane) {
    lane_sum[lane] = sum[lane / 2][lane % 2];
    lane_sumsq[lane] = sumsq[lane / 2][lane % 2];
  }
  for (int lane = 0; lane < 2 * kExtremes; ++lane) {
    out->min = std::min(out->min, min[lane / 2][lane % 2]);
    out->max = std::max(out->max, max[lane / 2][lane % 2]);
  }
  for (size_t elem_idx = full; elem_idx < num_elements; ++elem_idx) {
    const double v = Load::One(bytes + elem_idx * Load::kSize);
    lane_sum[elem_idx - full] += v;
    lane_sumsq[elem_idx - full] += v * v;
    out->min = std::min(out->min, v);
    out->max = std::max(out->max, v);
  }
  for (const double lane : lane_sumsq) {
    if (!std::isfinite(lane)) return false;
  }
  out->sum = LaneTree<kLanes>(lane_sum);
  out->sumsq = LaneTree<kLanes>(lane_sumsq);
  out->finite_count = num_elements;
  if (out->min == 0) out->min = HasZero<Load>(bytes, num_elements, true) ? -0.0 : 0.0;
  if (out->max == 0) out->max = HasZero<Load>(bytes, num_elements, false) ? 0.0 : -0.0;
  return true;
}

// float64 takes FastChunk above; float32, float16 and bfloat16 the kernels of stats_fast.h,
// and, where they find a NaN or an infinity, its masked kernel.
template <int kLanes>
ChunkStats ChunkStatsWithLanes(DType dtype, const uint8_t* bytes, size_t num_bytes,
                               const uint8_t* next, size_t next_bytes) {
  ChunkStats out;
  if (dtype == DType::kFloat64) {
    if (FastChunk<LoadFloat64, kLanes>(bytes, num_bytes / 8, &out)) return out;
    return ExactChunk<LoadFloat64, kLanes>(bytes, num_bytes / 8);
  }
  const size_t num_elements = num_bytes / DTypeSize(dtype);
  if (num_elements >= kMinKernelElements) {
    if (!internal::FastChunkStats(internal::BestStatsIsa(), kLanes, dtype, bytes, num_elements,
                                  &out, next, next_bytes)) {
      internal::MaskedChunkStats(kLanes, dtype, bytes, num_elements, &out);  // a NaN or an Inf
    }
    return out;
  }
  switch (dtype) {
    case DType::kFloat32:
      return ExactChunk<LoadFloat32, kLanes>(bytes, num_elements);
    case DType::kFloat16:
      return ExactChunk<LoadFloat16, kLanes>(bytes, num_elements);
    default:
      return ExactChunk<LoadBFloat16, kLanes>(bytes, num_elements);
  }
}

}  // namespace

ChunkStats ComputeChunkStats(DType dtype, const uint8_t* bytes, size_t num_bytes, int stats_version,
                             const uint8_t* next, size_t next_bytes) {
  UPGUARD_CHECK(DTypeIsFloating(dtype) && "ComputeChunkStats needs a floating dtype");
  UPGUARD_CHECK((stats_version == kStatsVersionV1 || stats_version == kStatsVersionV2) &&
                "ComputeChunkStats: stats_version must be 1 or 2");
  if (stats_version == kStatsVersionV1) {
    return ChunkStatsWithLanes<portable::StatsLaneCount(kStatsVersionV1)>(dtype, bytes, num_bytes,
                                                                          next, next_bytes);
  }
  return ChunkStatsWithLanes<portable::StatsLaneCount(kStatsVersionV2)>(dtype, bytes, num_bytes,
                                                                        next, next_bytes);
}

void StatsAccumulator::Add(const ChunkStats& chunk) {
  total_.sum += chunk.sum;
  total_.sumsq += chunk.sumsq;
  if (chunk.finite_count > 0) {
    if (total_.finite_count == 0 || TotalLess(chunk.min, total_.min)) total_.min = chunk.min;
    if (total_.finite_count == 0 || TotalLess(total_.max, chunk.max)) total_.max = chunk.max;
  }
  total_.finite_count += chunk.finite_count;
  total_.nan_count += chunk.nan_count;
  total_.pos_inf_count += chunk.pos_inf_count;
  total_.neg_inf_count += chunk.neg_inf_count;
}

TensorStats StatsAccumulator::Finish() const {
  TensorStats stats;
  stats.finite_count = total_.finite_count;
  stats.nan_count = total_.nan_count;
  stats.pos_inf_count = total_.pos_inf_count;
  stats.neg_inf_count = total_.neg_inf_count;
  if (total_.finite_count > 0) {
    stats.min = total_.min;
    stats.max = total_.max;
    stats.mean = total_.sum / static_cast<double>(total_.finite_count);
    stats.l2 = std::sqrt(total_.sumsq);
  }
  return stats;
}

}  // namespace upguard
