// The AVX-512 statistics kernel (stats_fast.h): sixteen float32 or thirty-two 16-bit elements
// per step. One 512-bit vector holds eight lanes of the spec, so each block of eight elements
// is one addition per sum: v1's eight lanes are one vector (one chain of additions per sum,
// bound by the add's latency; summing two or four chunks side by side measured no faster), v2's
// 32 lanes are four independent vectors.
#include "digest/stats_kernel.h"

#if defined(__x86_64__)
// GCC 12 warns about the _mm512_undefined_* placeholders inside its own intrinsics (GCC bug
// 105593); nothing here reads an uninitialized value.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace upguard::internal::kernel {
namespace {

#define UPGUARD_AVX512_TARGET target("avx512f,avx512bw,avx2,f16c,fma")
#define UPGUARD_AVX512 inline __attribute__((always_inline, UPGUARD_AVX512_TARGET))

// The lanes as kVectors vectors of eight: lanes 8v .. 8v + 7 in sum[v] and sumsq[v] (v2's
// tree adds these vectors lane-wise first, digest.md §6.1).
template <int kLanes>
struct Acc {
  static constexpr int kVectors = kLanes / 8;
  __m512d sum[kVectors], sumsq[kVectors];
  __m512i min_unsigned, max_unsigned, max_signed;  // of raw element bits
};

// Eight binary32 values, elements kFirst .. kFirst + 7 of a round: one for each lane of vector
// (kFirst / 8) mod kVectors. Squares are exact in binary64 for these dtypes, so a fused
// multiply-add rounds as the spec's separate operations do (digest.md §9).
template <int kFirst, int kLanes>
UPGUARD_AVX512 void AddEight(__m256 values, Acc<kLanes>* acc) {
  constexpr int kVector = (kFirst / 8) % Acc<kLanes>::kVectors;
  const __m512d wide = _mm512_cvtps_pd(values);
  acc->sum[kVector] = _mm512_add_pd(acc->sum[kVector], wide);
  acc->sumsq[kVector] = _mm512_fmadd_pd(wide, wide, acc->sumsq[kVector]);
}

// Sixteen binary32 values, elements kFirst .. kFirst + 15 of a round.
template <int kFirst, int kLanes>
UPGUARD_AVX512 void AddSixteen(__m512 values, Acc<kLanes>* acc) {
  AddEight<kFirst>(_mm512_castps512_ps256(values), acc);
  AddEight<kFirst + 8>(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(values), 1)), acc);
}

template <DType kDType>
UPGUARD_AVX512 __m512 SixteenHalfWidth(__m256i raw) {
  if constexpr (kDType == DType::kBFloat16) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
  } else {
    return _mm512_cvtph_ps(raw);  // exact, subnormals included
  }
}

// 64 bytes whose first element is element kFirst of a round.
template <DType kDType, int kFirst, int kLanes>
UPGUARD_AVX512 void Step(const uint8_t* p, Acc<kLanes>* acc) {
  const __m512i raw = _mm512_loadu_si512(p);
  if constexpr (kDType == DType::kFloat32) {
    AddEight<kFirst>(_mm256_loadu_ps(reinterpret_cast<const float*>(p)), acc);  // no extract
    AddEight<kFirst + 8>(_mm256_loadu_ps(reinterpret_cast<const float*>(p) + 8), acc);
    acc->min_unsigned = _mm512_min_epu32(acc->min_unsigned, raw);
    acc->max_unsigned = _mm512_max_epu32(acc->max_unsigned, raw);
    acc->max_signed = _mm512_max_epi32(acc->max_signed, raw);
    return;
  }
  AddSixteen<kFirst>(SixteenHalfWidth<kDType>(_mm512_castsi512_si256(raw)), acc);
  AddSixteen<kFirst + 16>(SixteenHalfWidth<kDType>(_mm512_extracti64x4_epi64(raw, 1)), acc);
  acc->min_unsigned = _mm512_min_epu16(acc->min_unsigned, raw);
  acc->max_unsigned = _mm512_max_epu16(acc->max_unsigned, raw);
  acc->max_signed = _mm512_max_epi16(acc->max_signed, raw);
}

// Steps kStepIdx .. kSteps - 1 of the round at `offset` bytes into the chunk.
template <DType kDType, typename Load, int kLanes, size_t kStepIdx, size_t kSteps>
UPGUARD_AVX512 void Round(const uint8_t* bytes, size_t offset, Prefetch prefetch,
                          Acc<kLanes>* acc) {
  PrefetchAt(prefetch, offset + 64 * kStepIdx);
  Step<kDType, static_cast<int>(kStepIdx * 64 / Load::kSize)>(bytes + offset + 64 * kStepIdx, acc);
  if constexpr (kStepIdx + 1 < kSteps) {
    Round<kDType, Load, kLanes, kStepIdx + 1, kSteps>(bytes, offset, prefetch, acc);
  }
}

UPGUARD_AVX512 __m256i Low(__m512i v) { return _mm512_castsi512_si256(v); }
UPGUARD_AVX512 __m256i High(__m512i v) { return _mm512_extracti64x4_epi64(v, 1); }

template <size_t kElemSize, int kLanes>
UPGUARD_AVX512 Acc<kLanes> Start() {
  Acc<kLanes> acc;
  for (int vector = 0; vector < Acc<kLanes>::kVectors; ++vector) {
    acc.sum[vector] = acc.sumsq[vector] = _mm512_setzero_pd();
  }
  acc.min_unsigned = _mm512_set1_epi32(-1);
  acc.max_unsigned = _mm512_setzero_si512();
  acc.max_signed = kElemSize == 4 ? _mm512_set1_epi32(std::numeric_limits<int32_t>::min())
                                  : _mm512_set1_epi16(std::numeric_limits<int16_t>::min());
  return acc;
}

// Halves the extremes to 256 bits with vector operations (fresh values, so the accumulators
// stay in registers through the loop), then finishes in scalar code.
template <typename Load, int kLanes>
UPGUARD_AVX512 bool Done(const Acc<kLanes>& acc, const uint8_t* bytes, size_t full,
                         size_t num_elements, ChunkStats* out) {
  Lanes<kLanes> lanes;
  StoreLaneSums(acc.sum, acc.sumsq, &lanes);
  if (full > 0) {
    using Unsigned = std::conditional_t<Load::kSize == 4, uint32_t, uint16_t>;
    Unsigned extremes[3][32 / sizeof(Unsigned)];
    __m256i halves[3];
    if constexpr (Load::kSize == 4) {
      halves[0] = _mm256_min_epu32(Low(acc.min_unsigned), High(acc.min_unsigned));
      halves[1] = _mm256_max_epu32(Low(acc.max_unsigned), High(acc.max_unsigned));
      halves[2] = _mm256_max_epi32(Low(acc.max_signed), High(acc.max_signed));
    } else {
      halves[0] = _mm256_min_epu16(Low(acc.min_unsigned), High(acc.min_unsigned));
      halves[1] = _mm256_max_epu16(Low(acc.max_unsigned), High(acc.max_unsigned));
      halves[2] = _mm256_max_epi16(Low(acc.max_signed), High(acc.max_signed));
    }
    for (int idx = 0; idx < 3; ++idx) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(extremes[idx]), halves[idx]);
    }
    KeysFromRawExtremes<Load>(extremes[0], extremes[1], extremes[2], &lanes);
  }
  return Finish<Load>(bytes, full, num_elements, &lanes, out);
}

template <DType kDType, typename Load, int kLanes>
UPGUARD_AVX512 bool Kernel(const uint8_t* bytes, size_t num_elements, ChunkStats* out,
                           Prefetch prefetch) {
  constexpr size_t kStep = 64 / Load::kSize;  // elements per step
  constexpr size_t kRound = kRoundElements<kLanes, kStep>;
  Acc<kLanes> acc = Start<Load::kSize, kLanes>();
  const size_t full = num_elements - num_elements % kRound;
  for (size_t offset = 0; offset < full * Load::kSize; offset += kRound * Load::kSize) {
    Round<kDType, Load, kLanes, 0, kRound / kStep>(bytes, offset, prefetch, &acc);
  }
  return Done<Load>(acc, bytes, full, num_elements, out);
}

template <int kLanes>
UPGUARD_AVX512 bool KernelFor(DType dtype, const uint8_t* bytes, size_t num_elements,
                              ChunkStats* out, Prefetch prefetch) {
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

__attribute__((UPGUARD_AVX512_TARGET)) bool FastChunkAvx512(int lanes, DType dtype,
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
