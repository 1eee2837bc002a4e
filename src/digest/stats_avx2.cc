// The AVX2 statistics kernel (stats_fast.h): eight float32 or sixteen 16-bit elements per step.
// Lanes 4v .. 4v + 3 of the spec live in vector v: two vectors per sum in v1, eight in v2 (summed
// half at a time, see Kernel). One chunk at a time: two side by side, to overlap v1's chains of
// additions, need more than the sixteen vector registers, and the spills made float32 2x slower
// (measured).
#include "digest/stats_kernel.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace upguard::internal::kernel {
namespace {

#define UPGUARD_AVX2 inline __attribute__((always_inline, target("avx2,f16c,fma")))

// The lanes as kVectors vectors of four: lanes 4v .. 4v + 3 in sum[v] and sumsq[v].
template <int kLanes>
struct Acc {
  static constexpr int kVectors = kLanes / 4;
  __m256d sum[kVectors], sumsq[kVectors];
  __m256i min_unsigned, max_unsigned, max_signed;  // of raw element bits
};

// Elements kFirst .. kFirst + 3 of a round, as binary64: one for each lane of vector
// (kFirst / 4) mod kVectors. Squares are exact in binary64 for these dtypes, so a fused
// multiply-add rounds as the spec's separate operations do (digest.md §9).
template <int kFirst, int kLanes>
UPGUARD_AVX2 void AddFour(__m256d values, Acc<kLanes>* acc) {
  constexpr int kVector = (kFirst / 4) % Acc<kLanes>::kVectors;
  acc->sum[kVector] = _mm256_add_pd(acc->sum[kVector], values);
  acc->sumsq[kVector] = _mm256_fmadd_pd(values, values, acc->sumsq[kVector]);
}

// Elements kFirst .. kFirst + 7 of a round as binary32.
template <int kFirst, int kLanes>
UPGUARD_AVX2 void AddEight(__m256 values, Acc<kLanes>* acc) {
  AddFour<kFirst>(_mm256_cvtps_pd(_mm256_castps256_ps128(values)), acc);
  AddFour<kFirst + 4>(_mm256_cvtps_pd(_mm256_extractf128_ps(values, 1)), acc);
}

// 32 bytes whose first element is element kFirst of a round.
template <DType kDType, int kFirst, int kLanes>
UPGUARD_AVX2 void Step(const uint8_t* p, Acc<kLanes>* acc) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if constexpr (kDType == DType::kFloat32) {
    AddFour<kFirst>(_mm256_cvtps_pd(_mm_loadu_ps(reinterpret_cast<const float*>(p))), acc);
    AddFour<kFirst + 4>(_mm256_cvtps_pd(_mm_loadu_ps(reinterpret_cast<const float*>(p) + 4)), acc);
    acc->min_unsigned = _mm256_min_epu32(acc->min_unsigned, raw);
    acc->max_unsigned = _mm256_max_epu32(acc->max_unsigned, raw);
    acc->max_signed = _mm256_max_epi32(acc->max_signed, raw);
    return;
  }
  if constexpr (kDType == DType::kBFloat16) {
    // Zero low halves make binary32s. Unpacking works within 128-bit halves: `low` holds
    // elements 0-3 and 8-11, `high` elements 4-7 and 12-15.
    const __m256 low = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), raw));
    const __m256 high = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), raw));
    AddFour<kFirst>(_mm256_cvtps_pd(_mm256_castps256_ps128(low)), acc);
    AddFour<kFirst + 4>(_mm256_cvtps_pd(_mm256_castps256_ps128(high)), acc);
    AddFour<kFirst + 8>(_mm256_cvtps_pd(_mm256_extractf128_ps(low, 1)), acc);
    AddFour<kFirst + 12>(_mm256_cvtps_pd(_mm256_extractf128_ps(high, 1)), acc);
  } else {  // float16: F16C converts exactly, subnormals included
    AddEight<kFirst>(_mm256_cvtph_ps(_mm256_castsi256_si128(raw)), acc);
    AddEight<kFirst + 8>(_mm256_cvtph_ps(_mm256_extracti128_si256(raw, 1)), acc);
  }
  acc->min_unsigned = _mm256_min_epu16(acc->min_unsigned, raw);
  acc->max_unsigned = _mm256_max_epu16(acc->max_unsigned, raw);
  acc->max_signed = _mm256_max_epi16(acc->max_signed, raw);
}

// Steps kStepIdx .. kSteps - 1 of the round at `offset` bytes into the chunk.
template <DType kDType, typename Load, int kLanes, size_t kStepIdx, size_t kSteps>
UPGUARD_AVX2 void Round(const uint8_t* bytes, size_t offset, Prefetch prefetch, Acc<kLanes>* acc) {
  PrefetchAt(prefetch, offset + 32 * kStepIdx);
  Step<kDType, static_cast<int>(kStepIdx * 32 / Load::kSize)>(bytes + offset + 32 * kStepIdx, acc);
  if constexpr (kStepIdx + 1 < kSteps) {
    Round<kDType, Load, kLanes, kStepIdx + 1, kSteps>(bytes, offset, prefetch, acc);
  }
}

UPGUARD_AVX2 __m128i Low(__m256i v) { return _mm256_castsi256_si128(v); }
UPGUARD_AVX2 __m128i High(__m256i v) { return _mm256_extracti128_si256(v, 1); }

template <size_t kElemSize, int kLanes>
UPGUARD_AVX2 Acc<kLanes> Start() {
  Acc<kLanes> acc;
  for (int vector = 0; vector < Acc<kLanes>::kVectors; ++vector) {
    acc.sum[vector] = acc.sumsq[vector] = _mm256_setzero_pd();
  }
  acc.min_unsigned = _mm256_set1_epi32(-1);
  acc.max_unsigned = _mm256_setzero_si256();
  acc.max_signed = kElemSize == 4 ? _mm256_set1_epi32(std::numeric_limits<int32_t>::min())
                                  : _mm256_set1_epi16(std::numeric_limits<int16_t>::min());
  return acc;
}

// Halves the extremes to 128 bits with vector operations (a fresh value, so the accumulators
// stay in registers through the loop), then finishes in scalar code.
template <typename Load, int kLanes>
UPGUARD_AVX2 bool Done(const Acc<kLanes>& acc, const uint8_t* bytes, size_t full,
                       size_t num_elements, ChunkStats* out) {
  Lanes<kLanes> lanes;
  StoreLaneSums(acc.sum, acc.sumsq, &lanes);
  if (full > 0) {
    using Unsigned = std::conditional_t<Load::kSize == 4, uint32_t, uint16_t>;
    constexpr size_t kCount = 16 / sizeof(Unsigned);
    Unsigned extremes[3][kCount];
    __m128i halves[3];
    if constexpr (Load::kSize == 4) {
      halves[0] = _mm_min_epu32(Low(acc.min_unsigned), High(acc.min_unsigned));
      halves[1] = _mm_max_epu32(Low(acc.max_unsigned), High(acc.max_unsigned));
      halves[2] = _mm_max_epi32(Low(acc.max_signed), High(acc.max_signed));
    } else {
      halves[0] = _mm_min_epu16(Low(acc.min_unsigned), High(acc.min_unsigned));
      halves[1] = _mm_max_epu16(Low(acc.max_unsigned), High(acc.max_unsigned));
      halves[2] = _mm_max_epi16(Low(acc.max_signed), High(acc.max_signed));
    }
    for (int idx = 0; idx < 3; ++idx) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(extremes[idx]), halves[idx]);
    }
    KeysFromRawExtremes<Load>(extremes[0], extremes[1], extremes[2], &lanes);
  }
  return Finish<Load>(bytes, full, num_elements, &lanes, out);
}

// Bytes of a chunk summed per pair of passes in v2 (a multiple of every round: 128 bytes).
constexpr size_t kHalvesBlockBytes = 4096;

template <DType kDType, typename Load, int kLanes>
UPGUARD_AVX2 bool Kernel(const uint8_t* bytes, size_t num_elements, ChunkStats* out,
                         Prefetch prefetch) {
  constexpr size_t kStep = 32 / Load::kSize;  // elements per step
  constexpr size_t kRound = kRoundElements<kLanes, kStep>;
  constexpr size_t kSteps = kRound / kStep, kRoundBytes = kRound * Load::kSize;
  Acc<kLanes> acc = Start<Load::kSize, kLanes>();
  const size_t full = num_elements - num_elements % kRound;
  const size_t full_bytes = full * Load::kSize;
  if constexpr (kLanes == kLanesV1) {
    for (size_t offset = 0; offset < full_bytes; offset += kRoundBytes) {
      Round<kDType, Load, kLanes, 0, kSteps>(bytes, offset, prefetch, &acc);
    }
    return Done<Load>(acc, bytes, full, num_elements, out);
  }
  // v2's 16 accumulators and the 3 extremes exceed the 16 registers: each block of the chunk
  // (in L1) is summed in two passes, the first half of every round's steps (lanes 0-15) and
  // then the second (lanes 16-31), 8 accumulators each. Every lane still adds its elements in
  // order.
  for (size_t block = 0; block < full_bytes; block += kHalvesBlockBytes) {
    const size_t block_end = std::min(full_bytes, block + kHalvesBlockBytes);
    for (size_t offset = block; offset < block_end; offset += kRoundBytes) {
      Round<kDType, Load, kLanes, 0, kSteps / 2>(bytes, offset, prefetch, &acc);
    }
    for (size_t offset = block; offset < block_end; offset += kRoundBytes) {
      Round<kDType, Load, kLanes, kSteps / 2, kSteps>(bytes, offset, prefetch, &acc);
    }
  }
  return Done<Load>(acc, bytes, full, num_elements, out);
}

template <int kLanes>
UPGUARD_AVX2 bool KernelFor(DType dtype, const uint8_t* bytes, size_t num_elements, ChunkStats* out,
                            Prefetch prefetch) {
  switch (dtype) {
    case DType::kFloat32:
      return Kernel<DType::kFloat32, LoadFloat32, kLanes>(bytes, num_elements, out, prefetch);
    case DType::kBFloat16:
      return Kernel<DType::kBFloat16, LoadBFloat16, kLanes>(bytes, num_elements, out, prefetch);
    default:
      return Kernel<DType::kFloat16, LoadFloat16, kLanes>(bytes, num_elements, out, prefetch);
  }
}

}  // namespace

__attribute__((target("avx2,f16c,fma"))) bool FastChunkAvx2(int lanes, DType dtype,
                                                            const uint8_t* bytes,
                                                            size_t num_elements, ChunkStats* out,
                                                            Prefetch prefetch) {
  const bool ok = lanes == kLanesV1
                      ? KernelFor<kLanesV1>(dtype, bytes, num_elements, out, prefetch)
                      : KernelFor<kLanesV2>(dtype, bytes, num_elements, out, prefetch);
  // Explicitly: GCC 12 omitted it in a similar function (digest_benchmark.cc), and legacy-SSE
  // code after a dirty upper vector state runs up to 4x slower.
  _mm256_zeroupper();
  return ok;
}

}  // namespace upguard::internal::kernel

#endif  // defined(__x86_64__)
