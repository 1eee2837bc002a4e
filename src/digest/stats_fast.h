// The fast path of chunk statistics for float32, float16 and bfloat16 (docs/formats/digest.md
// §6, implementation note §9), built for more than one instruction set and picked at run time.
//
//   ChunkStats out;
//   if (!internal::FastChunkStats(internal::BestStatsIsa(), 32, dtype, bytes, n, &out)) {
//     out = /* the element-by-element definition */;
//   }
//
// Algorithm: every element is widened exactly to binary32 (bfloat16 by a shift, float16 by
// F16C or integer arithmetic), then to binary64 for the spec's lane sums and sums of squares
// (8 lanes in v1, 32 in v2), in the spec's order (four lanes per vector with SSE2 pairs or
// AVX2, eight with AVX-512; every kernel is one template on the lane count). There are no
// per-element tests: a NaN or +-Inf makes its lane's sum of squares
// non-finite for good, so the lanes at the end tell whether the chunk was all finite (otherwise
// the caller recomputes it by the definition; squares of these dtypes cannot overflow
// binary64). min and max follow IEEE totalOrder (-0.0 below +0.0) with no rescan: the baseline
// kernel compares integer keys, the others reduce raw bits with integer min/max
// (stats_kernel.h). Every kernel performs the same IEEE additions and multiplications in the
// same order, so all give bitwise the same result (stats_fast_test.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "digest/stats.h"
#include "upguard/tensor.h"

namespace upguard::internal {

enum class StatsIsa {
  kBaseline,  // the build's own target (SSE2 on x86-64, NEON on AArch64)
  kAvx2,      // x86-64 with AVX2 and F16C, chosen at run time
  kAvx512,    // x86-64 with AVX-512 F and BW, chosen at run time
};

bool StatsIsaAvailable(StatsIsa isa);
// "baseline", "avx2" or "avx512" (the names UPGUARD_DIGEST_ISA takes).
const char* StatsIsaName(StatsIsa isa);
// The fastest available, computed once. The environment variable UPGUARD_DIGEST_ISA=avx2 (or
// baseline) caps it, to measure or check a slower kernel on a faster CPU; results are the same.
StatsIsa BestStatsIsa();

// Fills `out` with the statistics of `lanes` lanes (8: v1, 32: v2; digest.md §6.1) and returns
// true when all `num_elements` values are finite; returns false (out unspecified: recompute the
// chunk by the definition) otherwise. Prefetches up to `next_bytes` of `next` (may be null)
// along the way, as ComputeChunkStats. Preconditions: StatsIsaAvailable(isa); lanes is 8 or 32;
// dtype is kFloat32, kFloat16 or kBFloat16; num_elements * DTypeSize(dtype) <=
// kDigestChunkBytes.
bool FastChunkStats(StatsIsa isa, int lanes, DType dtype, const uint8_t* bytes, size_t num_elements,
                    ChunkStats* out, const uint8_t* next = nullptr, size_t next_bytes = 0);

// The statistics of any chunk, NaN and infinities included (where FastChunkStats returned
// false), bitwise the definition's, in the baseline kernel's vectors with no test per element:
// non-finite values add +0.0 to the lanes (which changes no lane), stay out of min and max and
// are counted by class with vector masks. Preconditions as FastChunkStats.
void MaskedChunkStats(int lanes, DType dtype, const uint8_t* bytes, size_t num_elements,
                      ChunkStats* out);

}  // namespace upguard::internal
