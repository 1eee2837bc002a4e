// The AVX2 statistics kernel (stats_fast.h): eight float32 or sixteen 16-bit elements per step.
// Lanes 0-3 of the spec live in the *_low vectors, lanes 4-7 in the *_high ones. One chunk at a
// time: two side by side, to overlap their chains of additions, need more than the sixteen
// vector registers, and the spills made float32 2x slower (measured).
#include "digest/stats_kernel.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace upguard::internal::kernel {
namespace {

#define UPGUARD_AVX2 inline __attribute__((always_inline, target("avx2,f16c")))

struct Acc {
  __m256d sum_low, sum_high, sumsq_low, sumsq_high;
  __m256i min_unsigned, max_unsigned, max_signed;  // of raw element bits
};

UPGUARD_AVX2 void AddEight(__m256d low, __m256d high, Acc* acc) {
  acc->sum_low = _mm256_add_pd(acc->sum_low, low);
  acc->sumsq_low = _mm256_add_pd(acc->sumsq_low, _mm256_mul_pd(low, low));
  acc->sum_high = _mm256_add_pd(acc->sum_high, high);
  acc->sumsq_high = _mm256_add_pd(acc->sumsq_high, _mm256_mul_pd(high, high));
}

// Elements [0, 8) of a step as binary32 -> lanes 0-3 and 4-7.
UPGUARD_AVX2 void AddEight(__m256 values, Acc* acc) {
  AddEight(_mm256_cvtps_pd(_mm256_castps256_ps128(values)),
           _mm256_cvtps_pd(_mm256_extractf128_ps(values, 1)), acc);
}

template <DType kDType>
UPGUARD_AVX2 void Step(const uint8_t* p, Acc* acc) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if constexpr (kDType == DType::kFloat32) {
    AddEight(_mm256_cvtps_pd(_mm_loadu_ps(reinterpret_cast<const float*>(p))),
             _mm256_cvtps_pd(_mm_loadu_ps(reinterpret_cast<const float*>(p) + 4)), acc);
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
    AddEight(_mm256_cvtps_pd(_mm256_castps256_ps128(low)),
             _mm256_cvtps_pd(_mm256_castps256_ps128(high)), acc);
    AddEight(_mm256_cvtps_pd(_mm256_extractf128_ps(low, 1)),
             _mm256_cvtps_pd(_mm256_extractf128_ps(high, 1)), acc);
  } else {  // float16: F16C converts exactly, subnormals included
    AddEight(_mm256_cvtph_ps(_mm256_castsi256_si128(raw)), acc);
    AddEight(_mm256_cvtph_ps(_mm256_extracti128_si256(raw, 1)), acc);
  }
  acc->min_unsigned = _mm256_min_epu16(acc->min_unsigned, raw);
  acc->max_unsigned = _mm256_max_epu16(acc->max_unsigned, raw);
  acc->max_signed = _mm256_max_epi16(acc->max_signed, raw);
}

UPGUARD_AVX2 __m128i Low(__m256i v) { return _mm256_castsi256_si128(v); }
UPGUARD_AVX2 __m128i High(__m256i v) { return _mm256_extracti128_si256(v, 1); }

template <size_t kElemSize>
UPGUARD_AVX2 Acc Start() {
  Acc acc;
  acc.sum_low = acc.sum_high = acc.sumsq_low = acc.sumsq_high = _mm256_setzero_pd();
  acc.min_unsigned = _mm256_set1_epi32(-1);
  acc.max_unsigned = _mm256_setzero_si256();
  acc.max_signed = kElemSize == 4 ? _mm256_set1_epi32(std::numeric_limits<int32_t>::min())
                                  : _mm256_set1_epi16(std::numeric_limits<int16_t>::min());
  return acc;
}

// Halves the extremes to 128 bits with vector operations (a fresh value, so the accumulators
// stay in registers through the loop), then finishes in scalar code.
template <typename Load>
UPGUARD_AVX2 bool Done(const Acc& acc, const uint8_t* bytes, size_t full, size_t num_elements,
                       ChunkStats* out) {
  Lanes lanes;
  _mm256_storeu_pd(lanes.sum, acc.sum_low);
  _mm256_storeu_pd(lanes.sum + 4, acc.sum_high);
  _mm256_storeu_pd(lanes.sumsq, acc.sumsq_low);
  _mm256_storeu_pd(lanes.sumsq + 4, acc.sumsq_high);
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

template <DType kDType, typename Load>
UPGUARD_AVX2 bool Kernel(const uint8_t* bytes, size_t num_elements, ChunkStats* out,
                         Prefetch prefetch) {
  constexpr size_t kStep = 32 / Load::kSize;  // elements per step
  Acc acc = Start<Load::kSize>();
  const size_t full = num_elements - num_elements % kStep;
  for (size_t offset = 0; offset < full * Load::kSize; offset += 32) {
    PrefetchAt(prefetch, offset);
    Step<kDType>(bytes + offset, &acc);
  }
  return Done<Load>(acc, bytes, full, num_elements, out);
}

}  // namespace

__attribute__((target("avx2,f16c"))) bool FastChunkAvx2(DType dtype, const uint8_t* bytes,
                                                        size_t num_elements, ChunkStats* out,
                                                        Prefetch prefetch) {
  bool ok;
  switch (dtype) {
    case DType::kFloat32:
      ok = Kernel<DType::kFloat32, LoadFloat32>(bytes, num_elements, out, prefetch);
      break;
    case DType::kBFloat16:
      ok = Kernel<DType::kBFloat16, LoadBFloat16>(bytes, num_elements, out, prefetch);
      break;
    default:
      ok = Kernel<DType::kFloat16, LoadFloat16>(bytes, num_elements, out, prefetch);
      break;
  }
  // Explicitly: GCC 12 omitted it in a similar function (digest_benchmark.cc), and legacy-SSE
  // code after a dirty upper vector state runs up to 4x slower.
  _mm256_zeroupper();
  return ok;
}

}  // namespace upguard::internal::kernel

#endif  // defined(__x86_64__)
