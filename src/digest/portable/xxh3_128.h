// XXH3-128 (seed 0, the default secret) in plain C++ that compiles for the host and, under
// nvcc, for the device: the leaf and root hash of the digest (docs/formats/digest.md §5) for
// implementations that cannot call libxxhash, the CUDA digest first. Written from xxHash's
// specification (doc/xxhash_spec.md, "XXH3 Algorithm Description"); tested against libxxhash
// for every length range (xxh3_128_test.cc).
//
// Inputs longer than 240 bytes keep eight independent 64-bit accumulators: Xxh3LongLane
// computes one of them, so eight threads can hash one input together (lane `i` reads stripe
// words `i` and `i ^ 1`), and Xxh3LongFinish merges them.
//
//   uint64_t low, high;
//   upguard::portable::Xxh3_128(bytes, size, &low, &high);  // == XXH3_128bits(bytes, size)
#pragma once

#include <cstddef>
#include <cstdint>

#include "digest/portable/hd.h"

namespace upguard::portable {

// The default secret, 192 bytes.
#define UPGUARD_XXH3_SECRET_BYTES                                                                 \
  0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c, \
      0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67,   \
      0x1f, 0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff,   \
      0x72, 0x21, 0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81,   \
      0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b,   \
      0x1b, 0x53, 0x2e, 0xa3, 0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef,   \
      0x46, 0xa9, 0xde, 0xac, 0xd8, 0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc,   \
      0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d, 0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8,   \
      0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64, 0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3,   \
      0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb, 0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda,   \
      0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e, 0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47,   \
      0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce, 0x45, 0xcb, 0x3a, 0x8f, 0x95,   \
      0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e

#if defined(__CUDACC__)
__constant__ static const uint8_t kXxh3SecretDevice[192] = {UPGUARD_XXH3_SECRET_BYTES};
#endif
inline constexpr uint8_t kXxh3SecretHost[192] = {UPGUARD_XXH3_SECRET_BYTES};

UPGUARD_HD const uint8_t* Xxh3Secret() {
#if defined(__CUDA_ARCH__)
  return kXxh3SecretDevice;
#else
  return kXxh3SecretHost;
#endif
}

inline constexpr size_t kXxh3SecretSize = 192;
inline constexpr size_t kXxh3StripeBytes = 64;
inline constexpr size_t kXxh3StripesPerBlock = (kXxh3SecretSize - 64) / 8;  // 16
inline constexpr size_t kXxh3BlockBytes = kXxh3StripeBytes * kXxh3StripesPerBlock;

inline constexpr uint64_t kPrime32_1 = 0x9E3779B1u;
inline constexpr uint64_t kPrime32_2 = 0x85EBCA77u;
inline constexpr uint64_t kPrime32_3 = 0xC2B2AE3Du;
inline constexpr uint64_t kPrime64_1 = 0x9E3779B185EBCA87ull;
inline constexpr uint64_t kPrime64_2 = 0xC2B2AE3D27D4EB4Full;
inline constexpr uint64_t kPrime64_3 = 0x165667B19E3779F9ull;
inline constexpr uint64_t kPrime64_4 = 0x85EBCA77C2B2AE63ull;
inline constexpr uint64_t kPrime64_5 = 0x27D4EB2F165667C5ull;
inline constexpr uint64_t kPrimeMx1 = 0x165667919E3779F9ull;
inline constexpr uint64_t kPrimeMx2 = 0x9FB21C651E98DF25ull;

// Little-endian loads, one byte at a time: any alignment, any host.
UPGUARD_HD uint32_t Load32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
UPGUARD_HD uint64_t Load64(const uint8_t* p) {
  return uint64_t(Load32(p)) | (uint64_t(Load32(p + 4)) << 32);
}

UPGUARD_HD void Multiply128(uint64_t a, uint64_t b, uint64_t* low, uint64_t* high) {
#if defined(__CUDA_ARCH__)
  *low = a * b;
  *high = __umul64hi(a, b);
#else
  const unsigned __int128 product = static_cast<unsigned __int128>(a) * b;
  *low = static_cast<uint64_t>(product);
  *high = static_cast<uint64_t>(product >> 64);
#endif
}
UPGUARD_HD uint64_t MultiplyFold(uint64_t a, uint64_t b) {
  uint64_t low, high;
  Multiply128(a, b, &low, &high);
  return low ^ high;
}

UPGUARD_HD uint32_t Swap32(uint32_t x) {
  return ((x & 0xffu) << 24) | ((x & 0xff00u) << 8) | ((x >> 8) & 0xff00u) | (x >> 24);
}
UPGUARD_HD uint64_t Swap64(uint64_t x) {
  return (uint64_t(Swap32(static_cast<uint32_t>(x))) << 32) |
         Swap32(static_cast<uint32_t>(x >> 32));
}
UPGUARD_HD uint32_t Rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

UPGUARD_HD uint64_t Avalanche(uint64_t x) {
  x ^= x >> 37;
  x *= kPrimeMx1;
  return x ^ (x >> 32);
}
UPGUARD_HD uint64_t AvalancheXxh64(uint64_t x) {
  x ^= x >> 33;
  x *= kPrime64_2;
  x ^= x >> 29;
  x *= kPrime64_3;
  return x ^ (x >> 32);
}

// ---- 0 to 16 bytes ----

UPGUARD_HD void Small(const uint8_t* in, size_t len, uint64_t* low, uint64_t* high) {
  const uint8_t* secret = Xxh3Secret();
  if (len == 0) {
    *low = AvalancheXxh64(Load64(secret + 64) ^ Load64(secret + 72));
    *high = AvalancheXxh64(Load64(secret + 80) ^ Load64(secret + 88));
  } else if (len <= 3) {
    const uint32_t combined = uint32_t(in[len - 1]) | (uint32_t(len) << 8) |
                              (uint32_t(in[0]) << 16) | (uint32_t(in[len >> 1]) << 24);
    const uint64_t lo = uint64_t(Load32(secret) ^ Load32(secret + 4)) ^ combined;
    const uint64_t hi =
        uint64_t(Load32(secret + 8) ^ Load32(secret + 12)) ^ Rotl32(Swap32(combined), 13);
    *low = AvalancheXxh64(lo);
    *high = AvalancheXxh64(hi);
  } else if (len <= 8) {
    const uint64_t first = Load32(in), last = Load32(in + len - 4);
    const uint64_t value = (Load64(secret + 16) ^ Load64(secret + 24)) ^ (first | (last << 32));
    uint64_t lo, hi;
    Multiply128(value, kPrime64_1 + (uint64_t(len) << 2), &lo, &hi);
    hi += lo << 1;
    lo ^= hi >> 3;
    lo ^= lo >> 35;
    lo *= kPrimeMx2;
    lo ^= lo >> 28;
    *low = lo;
    *high = Avalanche(hi);
  } else {
    const uint64_t first = Load64(in), last = Load64(in + len - 8);
    const uint64_t val1 = (Load64(secret + 32) ^ Load64(secret + 40)) ^ first ^ last;
    const uint64_t val2 = (Load64(secret + 48) ^ Load64(secret + 56)) ^ last;
    uint64_t lo, hi;
    Multiply128(val1, kPrime64_1, &lo, &hi);
    lo += uint64_t(len - 1) << 54;
    hi += (val2 & 0xFFFFFFFF00000000ull) + uint64_t(static_cast<uint32_t>(val2)) * kPrime32_2;
    lo ^= Swap64(hi);
    uint64_t lo2, hi2;
    Multiply128(lo, kPrime64_2, &lo2, &hi2);
    hi2 += hi * kPrime64_2;
    *low = Avalanche(lo2);
    *high = Avalanche(hi2);
  }
}

// ---- 17 to 240 bytes ----

UPGUARD_HD uint64_t MixStep(const uint8_t* data, const uint8_t* secret, uint64_t seed) {
  return MultiplyFold(Load64(data) ^ (Load64(secret) + seed),
                      Load64(data + 8) ^ (Load64(secret + 8) - seed));
}

UPGUARD_HD void MixTwo(const uint8_t* d1, const uint8_t* d2, const uint8_t* secret, uint64_t seed,
                       uint64_t acc[2]) {
  acc[0] += MixStep(d1, secret, seed);
  acc[1] += MixStep(d2, secret + 16, seed);
  acc[0] ^= Load64(d2) + Load64(d2 + 8);
  acc[1] ^= Load64(d1) + Load64(d1 + 8);
}

UPGUARD_HD void Medium(const uint8_t* in, size_t len, uint64_t* low, uint64_t* high) {
  const uint8_t* secret = Xxh3Secret();
  uint64_t acc[2] = {uint64_t(len) * kPrime64_1, 0};
  if (len <= 128) {
    for (int round = static_cast<int>((len - 1) >> 5); round >= 0; --round) {
      const size_t start = size_t(round) * 16, end = len - size_t(round) * 16 - 16;
      MixTwo(in + start, in + end, secret + size_t(round) * 32, 0, acc);
    }
  } else {
    const size_t pairs = len >> 5;
    for (size_t idx = 0; idx < 4; ++idx) {
      MixTwo(in + idx * 32, in + idx * 32 + 16, secret + idx * 32, 0, acc);
    }
    acc[0] = Avalanche(acc[0]);
    acc[1] = Avalanche(acc[1]);
    for (size_t idx = 4; idx < pairs; ++idx) {
      MixTwo(in + idx * 32, in + idx * 32 + 16, secret + (idx - 4) * 32 + 3, 0, acc);
    }
    MixTwo(in + len - 16, in + len - 32, secret + 103, 0, acc);
  }
  *low = Avalanche(acc[0] + acc[1]);
  *high = 0 - Avalanche(acc[0] * kPrime64_1 + acc[1] * kPrime64_4 + uint64_t(len) * kPrime64_2);
}

// ---- longer than 240 bytes: eight accumulators ----

UPGUARD_HD uint64_t LongLaneStart(int lane) {
  const uint64_t start[8] = {kPrime32_3, kPrime64_1, kPrime64_2, kPrime64_3,
                             kPrime64_4, kPrime32_2, kPrime64_5, kPrime32_1};
  return start[lane];
}

// Accumulator `lane` after one stripe, with the secret at `secret`.
UPGUARD_HD uint64_t LaneAccumulate(uint64_t acc, const uint8_t* stripe, const uint8_t* secret,
                                   int lane) {
  const uint64_t value = Load64(stripe + 8 * lane) ^ Load64(secret + 8 * lane);
  acc += Load64(stripe + 8 * (lane ^ 1));
  return acc + (value & 0xFFFFFFFFull) * (value >> 32);
}

UPGUARD_HD uint64_t LaneScramble(uint64_t acc, int lane) {
  const uint8_t* secret = Xxh3Secret() + kXxh3SecretSize - 64;
  acc ^= acc >> 47;
  acc ^= Load64(secret + 8 * lane);
  return acc * kPrime32_1;
}

// Accumulator `lane` (0-7) of XXH3 over `len` > 240 bytes, ready for Xxh3LongFinish.
UPGUARD_HD uint64_t Xxh3LongLane(const uint8_t* in, size_t len, int lane) {
  const uint8_t* secret = Xxh3Secret();
  uint64_t acc = LongLaneStart(lane);
  const size_t blocks = (len - 1) / kXxh3BlockBytes;  // the last block is left for the end
  for (size_t block = 0; block < blocks; ++block) {
    const uint8_t* base = in + block * kXxh3BlockBytes;
    for (size_t stripe = 0; stripe < kXxh3StripesPerBlock; ++stripe) {
      acc = LaneAccumulate(acc, base + stripe * kXxh3StripeBytes, secret + stripe * 8, lane);
    }
    acc = LaneScramble(acc, lane);
  }
  const size_t last_len = len - blocks * kXxh3BlockBytes;  // 1 to a whole block
  const uint8_t* last = in + blocks * kXxh3BlockBytes;
  const size_t full_stripes = (last_len - 1) / kXxh3StripeBytes;
  for (size_t stripe = 0; stripe < full_stripes; ++stripe) {
    acc = LaneAccumulate(acc, last + stripe * kXxh3StripeBytes, secret + stripe * 8, lane);
  }
  return LaneAccumulate(acc, in + len - kXxh3StripeBytes, secret + kXxh3SecretSize - 71, lane);
}

UPGUARD_HD uint64_t MergeAccumulators(const uint64_t acc[8], const uint8_t* secret,
                                      uint64_t start) {
  uint64_t result = start;
  for (int pair = 0; pair < 4; ++pair) {
    result += MultiplyFold(acc[2 * pair] ^ Load64(secret + 16 * pair),
                           acc[2 * pair + 1] ^ Load64(secret + 16 * pair + 8));
  }
  return Avalanche(result);
}

// The hash of `len` > 240 bytes from its eight accumulators.
UPGUARD_HD void Xxh3LongFinish(const uint64_t acc[8], size_t len, uint64_t* low, uint64_t* high) {
  const uint8_t* secret = Xxh3Secret();
  *low = MergeAccumulators(acc, secret + 11, uint64_t(len) * kPrime64_1);
  *high = MergeAccumulators(acc, secret + kXxh3SecretSize - 75, ~(uint64_t(len) * kPrime64_2));
}

// XXH3_128bits(in, len): `low` and `high` as XXH128_hash_t's low64 and high64.
UPGUARD_HD void Xxh3_128(const uint8_t* in, size_t len, uint64_t* low, uint64_t* high) {
  if (len <= 16) return Small(in, len, low, high);
  if (len <= 240) return Medium(in, len, low, high);
  uint64_t acc[8];
  for (int lane = 0; lane < 8; ++lane) acc[lane] = Xxh3LongLane(in, len, lane);
  Xxh3LongFinish(acc, len, low, high);
}

}  // namespace upguard::portable
