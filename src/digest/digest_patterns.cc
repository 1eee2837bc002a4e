// The deterministic input patterns of the digest test vectors (digest.md §8).
#include <cstring>
#include <string>

#include "digest/digest_vectors.h"

namespace upguard {
namespace {

constexpr int kSpecialCount = 10;
// +0, -0, 1, -1.5, +inf, -inf, quiet NaN, least subnormal, greatest finite, -0.125.
constexpr uint16_t kSpecialFloat16[kSpecialCount] = {0x0000, 0x8000, 0x3C00, 0xBE00, 0x7C00,
                                                     0xFC00, 0x7E00, 0x0001, 0x7BFF, 0xB000};
constexpr uint16_t kSpecialBFloat16[kSpecialCount] = {0x0000, 0x8000, 0x3F80, 0xBFC0, 0x7F80,
                                                      0xFF80, 0x7FC0, 0x0001, 0x7F7F, 0xBE00};
constexpr uint32_t kSpecialFloat32[kSpecialCount] = {0x00000000, 0x80000000, 0x3F800000, 0xBFC00000,
                                                     0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001,
                                                     0x7F7FFFFF, 0xBE000000};
constexpr uint64_t kSpecialFloat64[kSpecialCount] = {
    0x0000000000000000, 0x8000000000000000, 0x3FF0000000000000, 0xBFF8000000000000,
    0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0x0000000000000001,
    0x7FEFFFFFFFFFFFFF, 0xBFC0000000000000};

// Significand bits (with the implicit one) of a floating dtype or complex component.
int Precision(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return 11;
    case DType::kBFloat16:
      return 8;
    case DType::kFloat32:
    case DType::kComplex64:
      return 24;
    default:
      return 53;
  }
}

// Stores `value`, exactly representable in `dtype` and zero or normal there, as its bits.
void StoreFloat(DType dtype, double value, uint8_t* out) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if (dtype == DType::kFloat64 || dtype == DType::kComplex128) {
    std::memcpy(out, &value, 8);
  } else if (dtype == DType::kFloat16) {
    const uint64_t exponent = (bits >> 52) & 0x7FF;
    uint16_t half = static_cast<uint16_t>((bits >> 48) & 0x8000);
    if (exponent != 0)
      half |= static_cast<uint16_t>(((exponent - 1008) << 10) | ((bits >> 42) & 0x3FF));
    std::memcpy(out, &half, 2);
  } else {
    const auto single = static_cast<float>(value);
    if (dtype == DType::kBFloat16) {
      uint32_t wide;
      std::memcpy(&wide, &single, 4);
      const auto half = static_cast<uint16_t>(wide >> 16);
      std::memcpy(out, &half, 2);
    } else {
      std::memcpy(out, &single, 4);
    }
  }
}

void StoreInt(uint64_t bits, size_t size, uint8_t* out) {
  for (size_t byte_idx = 0; byte_idx < size; ++byte_idx) {
    out[byte_idx] = static_cast<uint8_t>(bits >> (8 * byte_idx));
  }
}

bool IsComplex(DType dtype) { return dtype == DType::kComplex64 || dtype == DType::kComplex128; }

DType ComponentType(DType dtype) {
  return dtype == DType::kComplex64 ? DType::kFloat32 : DType::kFloat64;
}

void Iota(DType dtype, uint64_t elem_idx, uint8_t* out) {
  const size_t size = DTypeSize(dtype);
  if (dtype == DType::kBool) {
    out[0] = static_cast<uint8_t>(elem_idx & 1);
  } else if (IsComplex(dtype)) {
    StoreFloat(ComponentType(dtype), static_cast<double>(elem_idx), out);
    StoreFloat(ComponentType(dtype), 0.5, out + size / 2);
  } else if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) {
    StoreFloat(dtype, static_cast<double>(elem_idx % 256), out);
  } else if (DTypeIsFloating(dtype)) {
    StoreFloat(dtype, static_cast<double>(elem_idx), out);
  } else {
    StoreInt(elem_idx, size, out);
  }
}

struct Lcg {
  uint64_t state;
  uint64_t Next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state;
  }
  // (top p bits - 2^(p-1)) / 2^(p-2): exact, in [-2, 2).
  double NextFloat(int precision) {
    const auto top = static_cast<int64_t>(Next() >> (64 - precision));
    return static_cast<double>(top - (int64_t{1} << (precision - 1))) /
           static_cast<double>(int64_t{1} << (precision - 2));
  }
};

void Random(DType dtype, Lcg* lcg, uint8_t* out) {
  const size_t size = DTypeSize(dtype);
  if (dtype == DType::kBool) {
    out[0] = static_cast<uint8_t>(lcg->Next() >> 63);
  } else if (IsComplex(dtype)) {
    const double real = lcg->NextFloat(Precision(dtype));
    StoreFloat(ComponentType(dtype), real, out);
    StoreFloat(ComponentType(dtype), lcg->NextFloat(Precision(dtype)), out + size / 2);
  } else if (DTypeIsFloating(dtype)) {
    StoreFloat(dtype, lcg->NextFloat(Precision(dtype)), out);
  } else {
    StoreInt(lcg->Next() >> (64 - 8 * size), size, out);
  }
}

void Special(DType dtype, uint64_t elem_idx, uint8_t* out) {
  const size_t entry = elem_idx % kSpecialCount;
  switch (dtype) {
    case DType::kFloat16:
      return StoreInt(kSpecialFloat16[entry], 2, out);
    case DType::kBFloat16:
      return StoreInt(kSpecialBFloat16[entry], 2, out);
    case DType::kFloat32:
      return StoreInt(kSpecialFloat32[entry], 4, out);
    default:
      return StoreInt(kSpecialFloat64[entry], 8, out);
  }
}

// "lcg:<decimal seed>".
bool ParseLcgSeed(std::string_view pattern, uint64_t* seed) {
  constexpr std::string_view kPrefix = "lcg:";
  if (pattern.substr(0, kPrefix.size()) != kPrefix || pattern.size() == kPrefix.size()) {
    return false;
  }
  *seed = 0;
  for (const char c : pattern.substr(kPrefix.size())) {
    if (c < '0' || c > '9' || __builtin_mul_overflow(*seed, 10, seed) ||
        __builtin_add_overflow(*seed, static_cast<uint64_t>(c - '0'), seed)) {
      return false;
    }
  }
  return true;
}

}  // namespace

StatusOr<std::vector<uint8_t>> GeneratePattern(DType dtype, uint64_t numel,
                                               std::string_view pattern) {
  const size_t size = DTypeSize(dtype);
  if (size == 0) return InvalidArgument("GeneratePattern: invalid dtype");
  std::vector<uint8_t> bytes(numel * size);
  if (pattern == "iota") {
    for (uint64_t elem_idx = 0; elem_idx < numel; ++elem_idx) {
      Iota(dtype, elem_idx, &bytes[elem_idx * size]);
    }
  } else if (uint64_t seed = 0; ParseLcgSeed(pattern, &seed)) {
    Lcg lcg{seed};
    for (uint64_t elem_idx = 0; elem_idx < numel; ++elem_idx) {
      Random(dtype, &lcg, &bytes[elem_idx * size]);
    }
  } else if (pattern == "special" && DTypeIsFloating(dtype)) {
    for (uint64_t elem_idx = 0; elem_idx < numel; ++elem_idx) {
      Special(dtype, elem_idx, &bytes[elem_idx * size]);
    }
  } else {
    return InvalidArgument("GeneratePattern: unknown pattern '" + std::string(pattern) + "' for " +
                           std::string(DTypeName(dtype)) +
                           " (use iota, lcg:<seed>, or special for floating dtypes)");
  }
  return bytes;
}

}  // namespace upguard
