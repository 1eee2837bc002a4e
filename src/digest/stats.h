// Statistics of floating tensors, computed one chunk at a time (docs/formats/digest.md §6).
//
//   StatsAccumulator total;
//   for (each chunk of the logical byte stream, in order)
//     total.Add(ComputeChunkStats(dtype, chunk, chunk_bytes, kStatsVersionV2));
//   TensorStats stats = total.Finish();
//
// A chunk's partial sums use 8 (v1) or 32 (v2) interleaved lanes combined by a fixed tree, and
// chunk partials are folded in chunk order. Both orders are part of the format, so the result is
// the same bit for bit whichever thread computed which chunk.
#pragma once

#include <cstddef>
#include <cstdint>

#include "digest/digest.h"
#include "upguard/tensor.h"

namespace upguard {

// Partial statistics of one chunk. min/max are meaningful only when finite_count > 0.
struct ChunkStats {
  double sum = 0;    // tree-combined lane sums of the finite values
  double sumsq = 0;  // the same for their squares
  double min = 0;
  double max = 0;
  uint64_t finite_count = 0;
  uint64_t nan_count = 0;
  uint64_t pos_inf_count = 0;
  uint64_t neg_inf_count = 0;
};

// Precondition: DTypeIsFloating(dtype); num_bytes is a multiple of DTypeSize(dtype) and at most
// kDigestChunkBytes; stats_version is kStatsVersionV1 or kStatsVersionV2 (digest.md §6.1; any
// other value is a programmer error). `bytes` need not be aligned. `next`, when not null, holds
// `next_bytes` bytes the caller reads after this chunk (the next chunk of a contiguous tensor):
// they are prefetched as the chunk is summed, so that fetching them from memory overlaps this
// chunk's statistics and hash (float32, float16 and bfloat16).
ChunkStats ComputeChunkStats(DType dtype, const uint8_t* bytes, size_t num_bytes, int stats_version,
                             const uint8_t* next = nullptr, size_t next_bytes = 0);

// Folds chunk partials in the order they are added.
class StatsAccumulator {
 public:
  void Add(const ChunkStats& chunk);
  TensorStats Finish() const;

 private:
  ChunkStats total_;
};

}  // namespace upguard
