// The AVX-512 statistics kernel (stats_fast.h): sixteen float32 or thirty-two 16-bit elements
// per step. One 512-bit vector holds all eight lanes of the spec, so each block of eight
// elements is one addition per sum. (Summing two or four chunks side by side, to overlap their
// chains of additions, measured no faster.)
#include "digest/stats_kernel.h"

#if defined(__x86_64__)
// GCC 12 warns about the _mm512_undefined_* placeholders inside its own intrinsics (GCC bug
// 105593); nothing here reads an uninitialized value.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace upguard::internal::kernel {
namespace {

#define UPGUARD_AVX512_TARGET target("avx512f,avx512bw,avx2,f16c")
#define UPGUARD_AVX512 inline __attribute__((always_inline, UPGUARD_AVX512_TARGET))

struct Acc {
  __m512d sum, sumsq;
  __m512i min_unsigned, max_unsigned, max_signed;  // of raw element bits
};

// Eight binary32 values: one element for each lane.
UPGUARD_AVX512 void AddEight(__m256 values, Acc* acc) {
  const __m512d wide = _mm512_cvtps_pd(values);
  acc->sum = _mm512_add_pd(acc->sum, wide);
  acc->sumsq = _mm512_add_pd(acc->sumsq, _mm512_mul_pd(wide, wide));
}

// Sixteen binary32 values, elements 0-7 then 8-15 of the block.
UPGUARD_AVX512 void AddSixteen(__m512 values, Acc* acc) {
  AddEight(_mm512_castps512_ps256(values), acc);
  AddEight(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(values), 1)), acc);
}

template <DType kDType>
UPGUARD_AVX512 __m512 SixteenHalfWidth(__m256i raw) {
  if constexpr (kDType == DType::kBFloat16) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
  } else {
    return _mm512_cvtph_ps(raw);  // exact, subnormals included
  }
}

template <DType kDType>
UPGUARD_AVX512 void Step(const uint8_t* p, Acc* acc) {
  const __m512i raw = _mm512_loadu_si512(p);
  if constexpr (kDType == DType::kFloat32) {
    AddEight(_mm256_loadu_ps(reinterpret_cast<const float*>(p)), acc);  // no extract needed
    AddEight(_mm256_loadu_ps(reinterpret_cast<const float*>(p) + 8), acc);
    acc->min_unsigned = _mm512_min_epu32(acc->min_unsigned, raw);
    acc->max_unsigned = _mm512_max_epu32(acc->max_unsigned, raw);
    acc->max_signed = _mm512_max_epi32(acc->max_signed, raw);
    return;
  }
  AddSixteen(SixteenHalfWidth<kDType>(_mm512_castsi512_si256(raw)), acc);
  AddSixteen(SixteenHalfWidth<kDType>(_mm512_extracti64x4_epi64(raw, 1)), acc);
  acc->min_unsigned = _mm512_min_epu16(acc->min_unsigned, raw);
  acc->max_unsigned = _mm512_max_epu16(acc->max_unsigned, raw);
  acc->max_signed = _mm512_max_epi16(acc->max_signed, raw);
}

UPGUARD_AVX512 __m256i Low(__m512i v) { return _mm512_castsi512_si256(v); }
UPGUARD_AVX512 __m256i High(__m512i v) { return _mm512_extracti64x4_epi64(v, 1); }

template <size_t kElemSize>
UPGUARD_AVX512 Acc Start() {
  Acc acc;
  acc.sum = acc.sumsq = _mm512_setzero_pd();
  acc.min_unsigned = _mm512_set1_epi32(-1);
  acc.max_unsigned = _mm512_setzero_si512();
  acc.max_signed = kElemSize == 4 ? _mm512_set1_epi32(std::numeric_limits<int32_t>::min())
                                  : _mm512_set1_epi16(std::numeric_limits<int16_t>::min());
  return acc;
}

// Halves the extremes to 256 bits with vector operations (fresh values, so the accumulators
// stay in registers through the loop), then finishes in scalar code.
template <typename Load>
UPGUARD_AVX512 bool Done(const Acc& acc, const uint8_t* bytes, size_t full, size_t num_elements,
                         ChunkStats* out) {
  Lanes lanes;
  _mm512_storeu_pd(lanes.sum, acc.sum);
  _mm512_storeu_pd(lanes.sumsq, acc.sumsq);
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

template <DType kDType, typename Load>
UPGUARD_AVX512 bool Kernel(const uint8_t* bytes, size_t num_elements, ChunkStats* out,
                           Prefetch prefetch) {
  constexpr size_t kStep = 64 / Load::kSize;  // elements per step
  Acc acc = Start<Load::kSize>();
  const size_t full = num_elements - num_elements % kStep;
  for (size_t offset = 0; offset < full * Load::kSize; offset += 64) {
    PrefetchAt(prefetch, offset);
    Step<kDType>(bytes + offset, &acc);
  }
  return Done<Load>(acc, bytes, full, num_elements, out);
}

}  // namespace

__attribute__((UPGUARD_AVX512_TARGET)) bool FastChunkAvx512(DType dtype, const uint8_t* bytes,
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
