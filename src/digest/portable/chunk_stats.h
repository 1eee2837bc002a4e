// The statistics of digest v1 and v2 (docs/formats/digest.md §6) lane by lane, in plain C++
// for the host and, under nvcc, the device: eight threads take one chunk. In v1 thread `l` sums
// lane `l` (elements l, l + 8, l + 16, ... in order); in v2 it sums lanes l, l + 8, l + 16 and
// l + 24 of the 32 and adds them as the first level of v2's tree does (t[l] of §6.1). Either
// way the eight results are combined by v1's tree. The CPU's vector kernels (stats.h) compute
// the same bits; tests hold the two together (chunk_digest_test.cc).
//
//   LaneStats lanes[8];
//   for (int l = 0; l < 8; ++l) lanes[l] = ChunkThreadStats(dtype, chunk, num_elements, l, 2);
//   ChunkSummary chunk_stats = CombineLanes(lanes);
//   FoldChunk(chunk_stats, &total);  ... TensorStats stats = FinishStats(total);
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "digest/half.h"
#include "digest/portable/hd.h"
#include "upguard/digest_types.h"
#include "upguard/tensor.h"

namespace upguard::portable {

inline constexpr int kStatsLanes = 8;   // threads (and v1 lanes) per chunk (§6.1)
inline constexpr int kStatsGroups = 4;  // v2: lanes l, l + 8, l + 16, l + 24 per thread

// Lanes per chunk of a statistics version (§6.1): v1 8, v2 32.
UPGUARD_HD constexpr int StatsLaneCount(int stats_version) {
  return stats_version == 1 ? kStatsLanes : kStatsLanes * kStatsGroups;
}

struct LaneStats {
  double sum = 0;
  double sumsq = 0;
  double min = 0, max = 0;  // meaningful when finite > 0
  uint64_t finite = 0, nan = 0, pos_inf = 0, neg_inf = 0;
};
using ChunkSummary = LaneStats;  // a chunk's lanes combined, or a tensor's chunks folded

// IEEE binary64 operations rounded one at a time: never fused into a multiply-add (§6), which
// nvcc does by default.
UPGUARD_HD double AddRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
UPGUARD_HD double MulRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// §6.1's tree over a chunk's lane sums: v1's (kLanes 8), or v2's (kLanes 32: the four groups of
// eight lanes added lane-wise, (l[i] + l[i + 8]) + (l[i + 16] + l[i + 24]), then v1's tree).
template <int kLanes>
UPGUARD_HD double LaneTree(const double (&lanes)[kLanes]) {
  static_assert(kLanes == 8 || kLanes == 32, "digest.md §6.1 has 8 or 32 lanes");
  double t[8];
  for (int idx = 0; idx < 8; ++idx) {
    t[idx] = kLanes == 8 ? lanes[idx]
                         : AddRn(AddRn(lanes[idx], lanes[(idx + 8) % kLanes]),
                                 AddRn(lanes[(idx + 16) % kLanes], lanes[(idx + 24) % kLanes]));
  }
  return AddRn(AddRn(AddRn(t[0], t[1]), AddRn(t[2], t[3])),
               AddRn(AddRn(t[4], t[5]), AddRn(t[6], t[7])));
}

UPGUARD_HD bool SignBit(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return (bits >> 63) != 0;
}
// Finite values ordered with -0.0 below +0.0 (§6.2).
UPGUARD_HD bool TotalLess(double a, double b) {
  return a < b || (a == b && SignBit(a) && !SignBit(b));
}

// Bytes per element of a floating dtype (DTypeSize's, for device code).
UPGUARD_HD size_t ElementSize(DType dtype) {
  return dtype == DType::kFloat64 ? 8 : dtype == DType::kFloat32 ? 4 : 2;
}

// Element `idx` of a floating dtype, exactly as binary64.
UPGUARD_HD double ElementAsDouble(DType dtype, const uint8_t* bytes, size_t idx) {
  switch (dtype) {
    case DType::kFloat32: {
      float value;
      std::memcpy(&value, bytes + 4 * idx, sizeof(value));
      return value;
    }
    case DType::kFloat64: {
      double value;
      std::memcpy(&value, bytes + 8 * idx, sizeof(value));
      return value;
    }
    case DType::kFloat16:
      return Float16ToDouble(uint16_t(bytes[2 * idx]) | uint16_t(bytes[2 * idx + 1] << 8));
    default:  // kBFloat16
      return BFloat16ToDouble(uint16_t(bytes[2 * idx]) | uint16_t(bytes[2 * idx + 1] << 8));
  }
}

UPGUARD_HD void AddValue(double v, LaneStats* lane) {
  if (v - v == 0) {  // finite (NaN and +-Inf give NaN)
    if (lane->finite == 0 || TotalLess(v, lane->min)) lane->min = v;
    if (lane->finite == 0 || TotalLess(lane->max, v)) lane->max = v;
    ++lane->finite;
    lane->sum = AddRn(lane->sum, v);
    lane->sumsq = AddRn(lane->sumsq, MulRn(v, v));
  } else if (v != v) {
    ++lane->nan;
  } else if (v > 0) {
    ++lane->pos_inf;
  } else {
    ++lane->neg_inf;
  }
}

// Lane `lane` of `lane_count` of a chunk of `num_elements` elements (§6.1).
UPGUARD_HD LaneStats ChunkLaneStats(DType dtype, const uint8_t* chunk, size_t num_elements,
                                    int lane, int lane_count) {
  LaneStats out;
  for (size_t idx = static_cast<size_t>(lane); idx < num_elements;
       idx += static_cast<size_t>(lane_count)) {
    AddValue(ElementAsDouble(dtype, chunk, idx), &out);
  }
  return out;
}

// Extremes and counts of `from` into `into` (sums are the caller's: their order matters).
UPGUARD_HD void MergeCountsAndExtremes(const LaneStats& from, LaneStats* into) {
  if (from.finite > 0) {
    if (into->finite == 0 || TotalLess(from.min, into->min)) into->min = from.min;
    if (into->finite == 0 || TotalLess(into->max, from.max)) into->max = from.max;
  }
  into->finite += from.finite;
  into->nan += from.nan;
  into->pos_inf += from.pos_inf;
  into->neg_inf += from.neg_inf;
}

// v2's first level (§6.1): t[l] = (s[l] + s[l + 8]) + (s[l + 16] + s[l + 24]) for
// lanes = {s[l], s[l + 8], s[l + 16], s[l + 24]}; counts and extremes merged.
UPGUARD_HD LaneStats CombineGroups(const LaneStats (&lanes)[kStatsGroups]) {
  LaneStats out;
  for (const LaneStats& lane : lanes) MergeCountsAndExtremes(lane, &out);
  out.sum = AddRn(AddRn(lanes[0].sum, lanes[1].sum), AddRn(lanes[2].sum, lanes[3].sum));
  out.sumsq = AddRn(AddRn(lanes[0].sumsq, lanes[1].sumsq), AddRn(lanes[2].sumsq, lanes[3].sumsq));
  return out;
}

// What thread `thread` (0-7) of a chunk contributes to CombineLanes: lane `thread` in v1,
// t[thread] of lanes thread, thread + 8, thread + 16, thread + 24 in v2.
UPGUARD_HD LaneStats ChunkThreadStats(DType dtype, const uint8_t* chunk, size_t num_elements,
                                      int thread, int stats_version) {
  if (stats_version == 1) return ChunkLaneStats(dtype, chunk, num_elements, thread, kStatsLanes);
  LaneStats groups[kStatsGroups];
  for (int group = 0; group < kStatsGroups; ++group) {
    groups[group] = ChunkLaneStats(dtype, chunk, num_elements, thread + kStatsLanes * group,
                                   kStatsLanes * kStatsGroups);
  }
  return CombineGroups(groups);
}

// The chunk's statistics from its eight lanes (v1) or eight t[i] (v2): sums by v1's tree.
UPGUARD_HD ChunkSummary CombineLanes(const LaneStats (&lanes)[kStatsLanes]) {
  ChunkSummary out;
  for (const LaneStats& lane : lanes) MergeCountsAndExtremes(lane, &out);
  out.sum = AddRn(AddRn(AddRn(lanes[0].sum, lanes[1].sum), AddRn(lanes[2].sum, lanes[3].sum)),
                  AddRn(AddRn(lanes[4].sum, lanes[5].sum), AddRn(lanes[6].sum, lanes[7].sum)));
  out.sumsq =
      AddRn(AddRn(AddRn(lanes[0].sumsq, lanes[1].sumsq), AddRn(lanes[2].sumsq, lanes[3].sumsq)),
            AddRn(AddRn(lanes[4].sumsq, lanes[5].sumsq), AddRn(lanes[6].sumsq, lanes[7].sumsq)));
  return out;
}

// The tensor's totals: chunks folded in chunk order from +0.0 (§6.2).
UPGUARD_HD void FoldChunk(const ChunkSummary& chunk, ChunkSummary* total) {
  total->sum = AddRn(total->sum, chunk.sum);
  total->sumsq = AddRn(total->sumsq, chunk.sumsq);
  MergeCountsAndExtremes(chunk, total);
}

// The tensor's statistics from its folded chunks: mean and l2 as §6.2 defines them (min, max,
// mean and l2 all +0.0 without a finite value). Host only: the device hands back the totals.
inline TensorStats FinishStats(const ChunkSummary& total) {
  TensorStats stats;
  stats.finite_count = total.finite;
  stats.nan_count = total.nan;
  stats.pos_inf_count = total.pos_inf;
  stats.neg_inf_count = total.neg_inf;
  if (total.finite > 0) {
    stats.min = total.min;
    stats.max = total.max;
    stats.mean = total.sum / static_cast<double>(total.finite);
    stats.l2 = std::sqrt(total.sumsq);
  }
  return stats;
}

}  // namespace upguard::portable
