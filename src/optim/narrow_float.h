// float32 <-> float16 / bfloat16 for the optimizer's parameters: exact widening, narrowing
// rounded to nearest even, and stochastic rounding for bfloat16.
//
//   uint16_t half = FloatToFloat16(1.0f);        // 0x3C00
//   float one = Float16ToFloat(half);            // 1.0f
//   uint16_t b = FloatToBFloat16Stochastic(x, noise);   // noise: 16 random bits
//
// Stochastic rounding rounds up with the probability of the cut-off fraction, so that an
// update much smaller than a bfloat16 ulp still moves the parameter on average (rounded to
// nearest it vanishes). Bitwise: it needs no floating-point environment, so a kernel gives the
// same bits on every machine and thread count.
#pragma once

#include <cstdint>
#include <cstring>

namespace upguard::optim {

inline uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

inline float BitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// IEEE binary16 -> binary32, exact (subnormals included).
inline float Float16ToFloat(uint16_t half) {
  const uint32_t sign = uint32_t(half & 0x8000) << 16;
  const uint32_t exponent = (half >> 10) & 0x1F;
  const uint32_t fraction = half & 0x3FF;
  if (exponent == 0x1F) return BitsFloat(sign | 0x7F800000 | (fraction << 13));
  if (exponent != 0) return BitsFloat(sign | ((exponent + 112) << 23) | (fraction << 13));
  const float magnitude = float(fraction) * 0x1p-24f;  // zero or subnormal: exact
  return sign ? -magnitude : magnitude;
}

// binary32 -> binary16, rounded to nearest even; overflow to infinity, NaN stays NaN.
inline uint16_t FloatToFloat16(float value) {
  const uint32_t bits = FloatBits(value);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude >= 0x7F800000) return sign | (magnitude > 0x7F800000 ? 0x7E00 : 0x7C00);
  if (magnitude >= 0x477FF000) return sign | 0x7C00;  // 65520 and above round to infinity
  if (magnitude < 0x38800000) {
    // Below 2^-14: a float16 subnormal, in units of 2^-24. Adding 0.5 (whose ulp is 2^-24)
    // rounds to nearest even in the hardware; the units are the bits above 0.5's.
    const float shifted = BitsFloat(magnitude) + 0.5f;
    return sign | uint16_t(FloatBits(shifted) - 0x3F000000);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
  magnitude += 0xC8000FFF + ((magnitude >> 13) & 1);
  return sign | uint16_t(magnitude >> 13);
}

inline float BFloat16ToFloat(uint16_t bf) { return BitsFloat(uint32_t(bf) << 16); }

inline uint16_t FloatToBFloat16(float value) {
  uint32_t bits = FloatBits(value);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) return uint16_t((bits >> 16) | 0x40);  // quiet NaN
  bits += 0x7FFF + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

// Rounds away from zero with the probability of the dropped 16 bits' fraction of an ulp
// (`noise`: 16 uniform random bits; the sum carries into the kept bits or not).
inline uint16_t FloatToBFloat16Stochastic(float value, uint16_t noise) {
  uint32_t bits = FloatBits(value);
  if ((bits & 0x7FFFFFFF) > 0x7F800000) return uint16_t((bits >> 16) | 0x40);
  bits += noise;
  return uint16_t(bits >> 16);
}

}  // namespace upguard::optim
