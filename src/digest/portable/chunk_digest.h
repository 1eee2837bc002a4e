// One chunk of the digest (docs/formats/digest.md §5.1 and §6.1) as eight cooperating lanes:
// what a CUDA kernel runs with eight threads per 64 KiB chunk, and what the host runs in a loop
// to check it (chunk_digest_test.cc). Lane `l` computes XXH3's accumulator `l` of the leaf and
// what thread `l` contributes to the statistics (ChunkThreadStats: lane `l` in v1, lanes l,
// l + 8, l + 16, l + 24 in v2); ChunkFinish, on one of them, makes the leaf and the chunk's
// statistics. `stats_version` is 1 or 2 (§6.1); 0 means no statistics.
//
//   uint64_t acc[8]; LaneStats lanes[8];
//   for (int l = 0; l < 8; ++l) ChunkLane(dtype, chunk, bytes, 2, l, &acc[l], &lanes[l]);
//   uint8_t leaf[16]; ChunkSummary summary;
//   ChunkFinish(chunk, bytes, acc, lanes, stats, leaf, &summary);
#pragma once

#include "digest/portable/chunk_stats.h"
#include "digest/portable/hd.h"
#include "digest/portable/xxh3_128.h"

namespace upguard::portable {

inline constexpr size_t kLongHashBytes = 241;  // from here XXH3 keeps eight accumulators

UPGUARD_HD void ChunkLane(DType dtype, const uint8_t* chunk, size_t bytes, int stats_version,
                          int lane, uint64_t* acc, LaneStats* lane_stats) {
  *acc = bytes >= kLongHashBytes ? Xxh3LongLane(chunk, bytes, lane) : 0;
  *lane_stats = stats_version != 0 ? ChunkThreadStats(dtype, chunk, bytes / ElementSize(dtype),
                                                      lane, stats_version)
                                   : LaneStats{};
}

// canonical(h): high64 then low64, each big-endian (§1).
UPGUARD_HD void StoreCanonical(uint64_t low, uint64_t high, uint8_t* out) {
  for (int idx = 0; idx < 8; ++idx) {
    out[idx] = static_cast<uint8_t>(high >> (56 - 8 * idx));
    out[8 + idx] = static_cast<uint8_t>(low >> (56 - 8 * idx));
  }
}

UPGUARD_HD void ChunkFinish(const uint8_t* chunk, size_t bytes, const uint64_t (&acc)[8],
                            const LaneStats (&lanes)[kStatsLanes], bool stats,
                            uint8_t* canonical_leaf, ChunkSummary* summary) {
  uint64_t low, high;
  if (bytes >= kLongHashBytes) {
    Xxh3LongFinish(acc, bytes, &low, &high);
  } else {
    Xxh3_128(chunk, bytes, &low, &high);
  }
  StoreCanonical(low, high, canonical_leaf);
  if (stats) *summary = CombineLanes(lanes);
}

}  // namespace upguard::portable
