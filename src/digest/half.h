// Exact conversions of the 16-bit floating formats to binary64, for statistics.
//
//   double one = BFloat16ToDouble(0x3F80);   // 1.0
//   double inf = Float16ToDouble(0x7C00);    // +inf
//
// Every float16 and bfloat16 value (subnormals included) is exactly representable in binary64,
// so these are exact; NaN payloads are not preserved (only NaN-ness and sign matter to stats).
// Host and device code (the CUDA digest) share them.
#pragma once

#include <cstdint>
#include <cstring>

#include "digest/portable/hd.h"

namespace upguard {

// IEEE 754 binary16: 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits.
UPGUARD_HD double Float16ToDouble(uint16_t bits) {
  const uint64_t sign = static_cast<uint64_t>(bits >> 15) << 63;
  const uint32_t exponent = (bits >> 10) & 0x1F;
  const uint64_t fraction = bits & 0x3FF;
  uint64_t out;
  if (exponent == 0x1F) {  // inf or NaN
    out = sign | (uint64_t{0x7FF} << 52) | (fraction << 42);
  } else if (exponent != 0) {  // normal: rebias 15 -> 1023
    out = sign | (uint64_t{exponent + 1008} << 52) | (fraction << 42);
  } else {  // zero or subnormal: fraction * 2^-24, exact
    const double magnitude = static_cast<double>(fraction) * 0x1p-24;
    return sign ? -magnitude : magnitude;
  }
  double value;
  std::memcpy(&value, &out, sizeof(value));
  return value;
}

// bfloat16 is the upper half of a binary32.
UPGUARD_HD double BFloat16ToDouble(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return static_cast<double>(value);
}

}  // namespace upguard
