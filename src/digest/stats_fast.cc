// The baseline statistics kernel (stats_fast.h) and the choice of kernel.
#include "digest/stats_fast.h"

#include <cstdlib>
#include <string_view>
#include <type_traits>

#include "digest/stats_kernel.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace upguard::internal {
namespace {

using kernel::Finish;
using kernel::kLanesV1;
using kernel::kLanesV2;
using kernel::Lanes;
using kernel::LoadBFloat16;
using kernel::LoadFloat16;
using kernel::LoadFloat32;

// The baseline kernel, in GCC/Clang vector extensions of the build's own 16-byte vectors (SSE2
// on x86-64, NEON on AArch64): each operation is the lane-wise IEEE operation, so pairs of
// lanes compute exactly the spec's scalar lanes. min and max are taken on OrderKey keys.
using F64x2 = double __attribute__((vector_size(16)));
using F32x4 = float __attribute__((vector_size(16)));
using I32x4 = int32_t __attribute__((vector_size(16)));
using U32x4 = uint32_t __attribute__((vector_size(16)));
using U16x4 = uint16_t __attribute__((vector_size(8)));

// Four consecutive elements as binary32 bit patterns. float16 goes by cases on the exponent:
// normal values rebias it (15 -> 127), Inf and NaN keep an all-ones one, zeros and subnormals
// are fraction * 2^-24 (an exact conversion and an exact scaling to a normal binary32).
template <typename Load>
UPGUARD_ALWAYS_INLINE I32x4 Bits4(const uint8_t* p) {
  I32x4 bits;
  if constexpr (std::is_same_v<Load, LoadFloat32>) {
    std::memcpy(&bits, p, sizeof(bits));
    return bits;
  }
  U16x4 raw;
  std::memcpy(&raw, p, sizeof(raw));
#if defined(__SSE2__)  // GCC widens U16x4 element by element
  const auto half = reinterpret_cast<U32x4>(_mm_unpacklo_epi16(
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), _mm_setzero_si128()));
#else
  const U32x4 half = __builtin_convertvector(raw, U32x4);
#endif
  if constexpr (std::is_same_v<Load, LoadBFloat16>) return reinterpret_cast<I32x4>(half << 16);
  const U32x4 exponent = half & 0x7C00;
  const U32x4 fraction = half & 0x3FF;
  const U32x4 normal = ((half & 0x7FFF) << 13) + ((127 - 15) << 23);
  const U32x4 special = (fraction << 13) | 0x7F800000;
  const F32x4 small = __builtin_convertvector(reinterpret_cast<I32x4>(fraction), F32x4) * 0x1p-24f;
  const U32x4 magnitude = exponent == 0x7C00 ? special
                          : exponent == 0    ? reinterpret_cast<U32x4>(small)
                                             : normal;
  return reinterpret_cast<I32x4>(((half & 0x8000) << 16) | magnitude);
}

// Both halves of four binary32 values as binary64.
UPGUARD_ALWAYS_INLINE void Widen(F32x4 values, F64x2* low, F64x2* high) {
#if defined(__SSE2__)  // GCC converts a two-float vector element by element
  *low = _mm_cvtps_pd(values);
  *high = _mm_cvtps_pd(_mm_movehl_ps(values, values));
#else
  *low = __builtin_convertvector(__builtin_shufflevector(values, values, 0, 1), F64x2);
  *high = __builtin_convertvector(__builtin_shufflevector(values, values, 2, 3), F64x2);
#endif
}

constexpr int32_t kExponent = 0x7F800000;  // a binary32's exponent bits: all set for NaN and Inf

// The whole blocks of kLanes elements [0, full) summed into `lanes`, in the spec's order. With
// kMasked (a chunk holding a NaN or an infinity), each non-finite element adds +0.0 instead,
// which changes no lane: a lane starts at +0.0 and a sum of binary64 values is -0.0 only when
// both are, so no lane is ever -0.0 and `lane + 0.0 == lane` (no finite value of these dtypes
// can overflow a lane either); its key stays out of min and max, and it is counted by class in
// `out`. Without kMasked there are no per-element tests: a NaN or an infinity leaves its lane's
// sum of squares non-finite, for Finish to report.
// Each block is kLanes / 4 quads of elements, quad `quad` feeding lane pairs 2 * quad and
// 2 * quad + 1.
template <typename Load, bool kMasked, int kLanes>
UPGUARD_ALWAYS_INLINE void SumBlocks(const uint8_t* bytes, size_t full, kernel::Prefetch prefetch,
                                     Lanes<kLanes>* lanes, ChunkStats* out) {
  F64x2 sum[kLanes / 2] = {}, sumsq[kLanes / 2] = {};
  I32x4 min_key = I32x4{} + std::numeric_limits<int32_t>::max();
  I32x4 max_key = I32x4{} + std::numeric_limits<int32_t>::min();
  I32x4 nan = {}, pos_inf = {}, neg_inf = {};  // the counts, negated (a true mask is -1)
  for (size_t block = 0; block < full; block += kLanes) {
#pragma GCC unroll 8
    for (int quad = 0; quad < kLanes / 4; ++quad) {  // elements 4*quad .. 4*quad+3 of the block
      const size_t offset = (block + 4 * quad) * Load::kSize;
      if (quad % 2 == 0) kernel::PrefetchAt(prefetch, offset);
      const I32x4 bits = Bits4<Load>(bytes + offset);
      I32x4 finite = I32x4{} - 1;
      if constexpr (kMasked) {
        finite = (bits & kExponent) != kExponent;
        nan += (bits & 0x7FFFFFFF) > kExponent;
        pos_inf += bits == kExponent;
        neg_inf += bits == static_cast<int32_t>(0xFF800000u);
      }
      F64x2 low, high;
      Widen(reinterpret_cast<F32x4>(kMasked ? bits & finite : bits), &low, &high);
      sum[2 * quad] += low;
      sumsq[2 * quad] += low * low;
      sum[2 * quad + 1] += high;
      sumsq[2 * quad + 1] += high * high;
      const I32x4 key = bits ^ ((bits >> 31) & 0x7FFFFFFF);
      if constexpr (kMasked) {
        min_key = (finite & (key < min_key)) ? key : min_key;
        max_key = (finite & (key > max_key)) ? key : max_key;
      } else {
        min_key = key < min_key ? key : min_key;
        max_key = key > max_key ? key : max_key;
      }
    }
  }
  for (int lane = 0; lane < kLanes; ++lane) {
    lanes->sum[lane] = sum[lane / 2][lane % 2];
    lanes->sumsq[lane] = sumsq[lane / 2][lane % 2];
  }
  for (int lane = 0; lane < 4; ++lane) {
    lanes->min_key = std::min(lanes->min_key, min_key[lane]);
    lanes->max_key = std::max(lanes->max_key, max_key[lane]);
    out->nan_count += static_cast<uint64_t>(-nan[lane]);
    out->pos_inf_count += static_cast<uint64_t>(-pos_inf[lane]);
    out->neg_inf_count += static_cast<uint64_t>(-neg_inf[lane]);
  }
}

template <typename Load, int kLanes>
UPGUARD_ALWAYS_INLINE bool BaselineKernel(const uint8_t* bytes, size_t num_elements,
                                          ChunkStats* out, kernel::Prefetch prefetch) {
  const size_t full = num_elements - num_elements % kLanes;
  Lanes<kLanes> lanes;
  SumBlocks<Load, false>(bytes, full, prefetch, &lanes, out);
  return Finish<Load>(bytes, full, num_elements, &lanes, out);
}

template <int kLanes>
bool FastChunkBaseline(DType dtype, const uint8_t* bytes, size_t num_elements, ChunkStats* out,
                       kernel::Prefetch prefetch) {
  switch (dtype) {
    case DType::kFloat32:
      return BaselineKernel<LoadFloat32, kLanes>(bytes, num_elements, out, prefetch);
    case DType::kBFloat16:
      return BaselineKernel<LoadBFloat16, kLanes>(bytes, num_elements, out, prefetch);
    default:
      return BaselineKernel<LoadFloat16, kLanes>(bytes, num_elements, out, prefetch);
  }
}

// A chunk that holds a NaN or an infinity (an attention mask filled with -Inf, a softmax over
// it): SumBlocks masked, then the last few elements by the definition.
template <typename Load, int kLanes>
UPGUARD_ALWAYS_INLINE void MaskedKernel(const uint8_t* bytes, size_t num_elements,
                                        ChunkStats* out) {
  const size_t full = num_elements - num_elements % kLanes;
  Lanes<kLanes> lanes;
  *out = ChunkStats{};
  SumBlocks<Load, true>(bytes, full, kernel::Prefetch{nullptr, 0}, &lanes, out);
  for (size_t elem_idx = full; elem_idx < num_elements; ++elem_idx) {
    const auto bits = static_cast<int32_t>(Load::Bits(bytes + elem_idx * Load::kSize));
    if ((bits & kExponent) == kExponent) {
      out->nan_count += (bits & 0x7FFFFFFF) > kExponent;
      out->pos_inf_count += bits == kExponent;
      out->neg_inf_count += bits == static_cast<int32_t>(0xFF800000u);
      continue;
    }
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    const double v = value;
    lanes.sum[elem_idx % kLanes] += v;
    lanes.sumsq[elem_idx % kLanes] += v * v;
    const int32_t key = kernel::OrderKey(bits);
    lanes.min_key = std::min(lanes.min_key, key);
    lanes.max_key = std::max(lanes.max_key, key);
  }
  kernel::FillFromLanes(lanes, num_elements, out);
}

template <int kLanes>
void MaskedChunk(DType dtype, const uint8_t* bytes, size_t num_elements, ChunkStats* out) {
  switch (dtype) {
    case DType::kFloat32:
      return MaskedKernel<LoadFloat32, kLanes>(bytes, num_elements, out);
    case DType::kBFloat16:
      return MaskedKernel<LoadBFloat16, kLanes>(bytes, num_elements, out);
    default:
      return MaskedKernel<LoadFloat16, kLanes>(bytes, num_elements, out);
  }
}

}  // namespace

bool StatsIsaAvailable(StatsIsa isa) {
  switch (isa) {
    case StatsIsa::kBaseline:
      return true;
#if defined(__x86_64__)
    case StatsIsa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
             __builtin_cpu_supports("fma");
    case StatsIsa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("fma");
#endif
    default:
      return false;
  }
}

const char* StatsIsaName(StatsIsa isa) {
  switch (isa) {
    case StatsIsa::kAvx2:
      return "avx2";
    case StatsIsa::kAvx512:
      return "avx512";
    default:
      return "baseline";
  }
}

StatsIsa BestStatsIsa() {
  static const StatsIsa best = [] {
    const char* cap = std::getenv("UPGUARD_DIGEST_ISA");
    bool skipping = cap != nullptr;  // until the named kernel
    for (const StatsIsa isa : {StatsIsa::kAvx512, StatsIsa::kAvx2}) {
      skipping = skipping && std::string_view(cap) != StatsIsaName(isa);
      if (!skipping && StatsIsaAvailable(isa)) return isa;
    }
    return StatsIsa::kBaseline;
  }();
  return best;
}

bool FastChunkStats(StatsIsa isa, int lanes, DType dtype, const uint8_t* bytes, size_t num_elements,
                    ChunkStats* out, const uint8_t* next, size_t next_bytes) {
  UPGUARD_CHECK((lanes == kLanesV1 || lanes == kLanesV2) && "FastChunkStats: 8 or 32 lanes");
  const kernel::Prefetch prefetch{next, next != nullptr ? next_bytes : 0};
#if defined(__x86_64__)
  if (isa == StatsIsa::kAvx512) {
    return kernel::FastChunkAvx512(lanes, dtype, bytes, num_elements, out, prefetch);
  }
  if (isa == StatsIsa::kAvx2) {
    return kernel::FastChunkAvx2(lanes, dtype, bytes, num_elements, out, prefetch);
  }
#endif
  if (lanes == kLanesV1)
    return FastChunkBaseline<kLanesV1>(dtype, bytes, num_elements, out, prefetch);
  return FastChunkBaseline<kLanesV2>(dtype, bytes, num_elements, out, prefetch);
}

void MaskedChunkStats(int lanes, DType dtype, const uint8_t* bytes, size_t num_elements,
                      ChunkStats* out) {
  UPGUARD_CHECK((lanes == kLanesV1 || lanes == kLanesV2) && "MaskedChunkStats: 8 or 32 lanes");
  if (lanes == kLanesV1) return MaskedChunk<kLanesV1>(dtype, bytes, num_elements, out);
  MaskedChunk<kLanesV2>(dtype, bytes, num_elements, out);
}

}  // namespace upguard::internal
