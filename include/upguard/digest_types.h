// The digest of a tensor as the recorder reports it: a 128-bit digest of its values and, for
// floating dtypes, statistics (docs/formats/digest.md). Plain data; the functions that compute
// them are internal (src/digest/digest.h).
#pragma once

#include <cstdint>
#include <string>

namespace upguard {

struct Digest128 {
  uint64_t high = 0;
  uint64_t low = 0;

  bool operator==(const Digest128& other) const { return high == other.high && low == other.low; }
  bool operator!=(const Digest128& other) const { return !(*this == other); }
  // 32 lowercase hex digits, high word first (XXH128's canonical order).
  std::string Hex() const;
  // The first 8 hex digits, for tables.
  std::string Short() const { return Hex().substr(0, 8); }

  // The 16-byte canonical form (XXH128_canonical_t): `high` big-endian, then `low` big-endian.
  // This is how leaves enter the root hash and how binary formats should store a digest.
  void ToCanonical(uint8_t out[16]) const;
  static Digest128 FromCanonical(const uint8_t in[16]);
};

// Statistics over a floating tensor's values (float64 arithmetic). min/max/mean/l2 cover the
// finite values only; with no finite value they are 0 and finite_count is 0.
struct TensorStats {
  double min = 0;
  double max = 0;
  double mean = 0;
  double l2 = 0;  // sqrt(sum of squares of finite values)
  uint64_t finite_count = 0;
  uint64_t nan_count = 0;
  uint64_t pos_inf_count = 0;
  uint64_t neg_inf_count = 0;
};

struct TensorDigest {
  Digest128 digest;
  bool has_stats = false;  // true for floating dtypes when options.stats
  TensorStats stats;
};

}  // namespace upguard
