// Every statistics kernel this CPU can run gives bitwise the result of the spec's definition
// (the reference of digest_test_util.h), and reports exactly the chunks that hold a NaN or an
// infinity (STYLE.md habit 4). Kernels this CPU lacks are skipped, so a CI machine checks what
// it can run; UPGUARD_DIGEST_ISA does not affect these tests.
#include "digest/stats_fast.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "digest/digest_test_util.h"
#include "digest/digest_vectors.h"

namespace upguard::internal {
namespace {

using testing::StatsBitEqual;
using testing::StatsText;

std::vector<StatsIsa> AvailableIsas() {
  std::vector<StatsIsa> isas;
  for (const StatsIsa isa : {StatsIsa::kBaseline, StatsIsa::kAvx2, StatsIsa::kAvx512}) {
    if (StatsIsaAvailable(isa)) isas.push_back(isa);
  }
  return isas;
}

TensorStats Finished(const ChunkStats& chunk) {
  StatsAccumulator total;
  total.Add(chunk);
  return total.Finish();
}

// The statistics versions (digest.md §6.1) and their lane counts.
struct Version {
  int version;
  int lanes;
};
constexpr Version kVersions[] = {{kStatsVersionV1, 8}, {kStatsVersionV2, 32}};

// Runs every kernel, with the lanes of every version, on the first `num_elements` values of
// `bytes` and compares with the reference: bitwise equal statistics when all are finite, "not
// finite" otherwise.
void ExpectAllKernelsExact(DType dtype, const std::vector<uint8_t>& bytes, size_t num_elements,
                           const std::string& what) {
  const std::vector<uint8_t> chunk(bytes.begin(), bytes.begin() + num_elements * DTypeSize(dtype));
  for (const Version& v : kVersions) {
    const TensorStats want = testing::ReferenceStats(dtype, chunk, v.version);
    const bool finite = want.finite_count == num_elements;
    for (const StatsIsa isa : AvailableIsas()) {
      const std::string where = what + " " + StatsIsaName(isa) + " v" + std::to_string(v.version);
      ChunkStats out;
      const bool ok = FastChunkStats(isa, v.lanes, dtype, chunk.data(), num_elements, &out);
      EXPECT_EQ(ok, finite) << where;
      if (!ok || !finite) continue;
      const TensorStats got = Finished(out);
      EXPECT_TRUE(StatsBitEqual(got, want))
          << where << "\n got " << StatsText(got) << "\nwant " << StatsText(want);
    }
  }
}

std::vector<uint8_t> Pattern(DType dtype, uint64_t numel, const char* pattern) {
  StatusOr<std::vector<uint8_t>> bytes = GeneratePattern(dtype, numel, pattern);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>();
}

// Lengths around every step width (8, 16, 32 elements) and a whole chunk.
TEST(DigestStatsKernelTest, EveryKernelMatchesTheDefinition) {
  for (const DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const size_t per_chunk = kDigestChunkBytes / DTypeSize(dtype);
    for (const char* pattern : {"lcg:1", "lcg:77", "special", "iota"}) {
      const std::vector<uint8_t> bytes = Pattern(dtype, per_chunk, pattern);
      for (const size_t numel :
           {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{16}, size_t{17},
            size_t{31}, size_t{32}, size_t{33}, size_t{63}, size_t{64}, size_t{65}, size_t{100},
            size_t{127}, size_t{129}, per_chunk - 1, per_chunk}) {
        ExpectAllKernelsExact(
            dtype, bytes, numel,
            std::string(DTypeName(dtype)) + " " + pattern + " numel " + std::to_string(numel));
      }
    }
  }
}

// `numel` random finite values of every exponent below 2 (top byte's bit 6 clear: subnormals
// to 2^1): each lane's sum and sum of squares rounds, so that which lane a value went to, and
// how the lanes are paired in the tree, show in the result.
std::vector<uint8_t> WideRandom(DType dtype, size_t numel, uint64_t seed) {
  const size_t elem_size = DTypeSize(dtype);
  std::vector<uint8_t> bytes(numel * elem_size);
  uint64_t state = seed;
  for (uint8_t& byte : bytes) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    byte = static_cast<uint8_t>(state >> 56);
  }
  for (size_t idx = 0; idx < numel; ++idx) bytes[idx * elem_size + elem_size - 1] &= 0xBF;
  return bytes;
}

// Whole chunks of WideRandom values, and a chunk less a few, for every kernel and version.
TEST(DigestStatsKernelTest, WideRangeChunksMatchTheDefinition) {
  for (const DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const size_t per_chunk = kDigestChunkBytes / DTypeSize(dtype);
    for (const uint64_t seed : {1, 2, 3}) {
      const std::vector<uint8_t> bytes = WideRandom(dtype, per_chunk, seed);
      for (const size_t numel : {per_chunk, per_chunk - 5, size_t{1000}}) {
        ExpectAllKernelsExact(dtype, bytes, numel,
                              std::string(DTypeName(dtype)) + " wide seed " + std::to_string(seed) +
                                  " numel " + std::to_string(numel));
      }
    }
  }
}

// Every length from 0 to 300 (every tail of every round, for 8 and 32 lanes), in random values
// with lanes that differ: ordinary values, values of every exponent (WideRandom), and values
// whose sums depend on the order of additions (large and small together), so that a value in a
// wrong lane changes the result.
TEST(DigestStatsKernelTest, EveryLengthMatchesTheDefinition) {
  for (const DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const std::vector<uint8_t> random = Pattern(dtype, 300, "lcg:21");
    const std::vector<uint8_t> wide = WideRandom(dtype, 300, 5);
    // Every 37th value near the largest finite one, every third a subnormal: sums and sums of
    // squares round, so they depend on which lane each value went to.
    std::vector<uint8_t> skewed = random;
    const size_t elem_size = DTypeSize(dtype);
    const uint8_t large = dtype == DType::kFloat16 ? 0x7B : 0x7E;
    for (size_t idx = 0; idx < 300; ++idx) {
      uint8_t* top = &skewed[idx * elem_size + elem_size - 1];
      if (idx % 37 == 0) *top = static_cast<uint8_t>((*top & 0x80) | large);
      if (idx % 3 == 1) *top &= 0x80;
    }
    for (size_t numel = 0; numel <= 300; ++numel) {
      const std::string what = std::string(DTypeName(dtype)) + " numel " + std::to_string(numel);
      ExpectAllKernelsExact(dtype, random, numel, what);
      ExpectAllKernelsExact(dtype, wide, numel, what + " wide");
      ExpectAllKernelsExact(dtype, skewed, numel, what + " skewed");
    }
  }
}

// Every finite float16 and bfloat16 bit pattern (conversions, subnormals, both zeros, the
// extremes), in two orders so that min and max move both ways.
TEST(DigestStatsKernelTest, EveryFiniteHalfWidthValue) {
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const uint16_t exponent_mask = dtype == DType::kFloat16 ? 0x7C00 : 0x7F80;
    std::vector<uint16_t> values;
    for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
      if ((bits & exponent_mask) != exponent_mask) values.push_back(static_cast<uint16_t>(bits));
    }
    for (const bool reversed : {false, true}) {
      std::vector<uint16_t> ordered = values;
      if (reversed) std::reverse(ordered.begin(), ordered.end());
      std::vector<uint8_t> bytes(ordered.size() * 2);
      std::memcpy(bytes.data(), ordered.data(), bytes.size());
      const size_t per_chunk = kDigestChunkBytes / 2;
      const std::string what = std::string(DTypeName(dtype)) + (reversed ? " reversed" : "");
      ExpectAllKernelsExact(dtype, bytes, per_chunk, what);
      // The rest (fewer than a chunk), and a chunk that straddles the sign change.
      ExpectAllKernelsExact(dtype,
                            std::vector<uint8_t>(bytes.begin() + kDigestChunkBytes, bytes.end()),
                            values.size() - per_chunk, what + " rest");
      ExpectAllKernelsExact(dtype,
                            std::vector<uint8_t>(bytes.begin() + bytes.size() / 4, bytes.end()),
                            per_chunk, what + " straddle");
    }
  }
}

// Extremes of raw bits: all negative, all positive, only zeros of either sign, one -0.0 among
// positives, values of one sign with the other sign's zero.
TEST(DigestStatsKernelTest, MinimumAndMaximumByCase) {
  const std::vector<std::vector<float>> cases = {
      {-1.0f, -2.0f, -0.5f, -3.0f},
      {1.0f, 2.0f, 0.5f, 3.0f},
      {0.0f, 0.0f},
      {-0.0f, -0.0f},
      {0.0f, -0.0f},
      {5.0f, -0.0f, 1.0f},
      {-5.0f, 0.0f, -1.0f},
      {-1e-45f, 1e-45f},  // least subnormals
      {3.4028235e38f, -3.4028235e38f},
  };
  for (size_t case_idx = 0; case_idx < cases.size(); ++case_idx) {
    for (const size_t numel : {size_t{5}, size_t{40}, size_t{1000}}) {
      // The case's values repeated to numel: in the vector steps and in the scalar tail.
      std::vector<float> values(numel);
      for (size_t elem_idx = 0; elem_idx < numel; ++elem_idx) {
        values[elem_idx] = cases[case_idx][elem_idx % cases[case_idx].size()];
      }
      std::vector<uint8_t> bytes(values.size() * 4);
      std::memcpy(bytes.data(), values.data(), bytes.size());
      ExpectAllKernelsExact(DType::kFloat32, bytes, numel,
                            "case " + std::to_string(case_idx) + " numel " + std::to_string(numel));
      std::vector<uint8_t> halves(numel * 2);  // the same as bfloat16: the high halves
      for (size_t elem_idx = 0; elem_idx < numel; ++elem_idx) {
        std::memcpy(&halves[elem_idx * 2], &bytes[elem_idx * 4 + 2], 2);
      }
      ExpectAllKernelsExact(DType::kBFloat16, halves, numel,
                            "bf16 case " + std::to_string(case_idx));
    }
  }
}

// One NaN or infinity anywhere: in the first step, mid-chunk, or in the scalar tail.
TEST(DigestStatsKernelTest, NonFiniteAnywhereIsReported) {
  for (const DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const size_t elem_size = DTypeSize(dtype);
    const size_t numel = kDigestChunkBytes / elem_size - 3;  // with a tail
    const std::vector<uint8_t> bytes = Pattern(dtype, numel, "lcg:5");
    const std::vector<uint8_t> special = Pattern(dtype, 7, "special");  // +Inf, -Inf, NaN at 4..6
    for (const size_t position : {size_t{0}, size_t{9}, size_t{5000}, numel - 1}) {
      for (size_t which = 4; which <= 6; ++which) {
        std::vector<uint8_t> with_bad = bytes;
        std::memcpy(&with_bad[position * elem_size], &special[which * elem_size], elem_size);
        ExpectAllKernelsExact(dtype, with_bad, numel,
                              std::string(DTypeName(dtype)) + " special " + std::to_string(which) +
                                  " at " + std::to_string(position));
      }
    }
  }
}

// The masked kernel (chunks with a NaN or an infinity) against the definition, chunk fields
// included: the special values cycling (-0.0, subnormals, the greatest finite value among
// them), one non-finite value in random data at every kind of position, chunks with no finite
// value, and zeros of both signs beside NaN.
void ExpectMaskedExactVersion(DType dtype, const std::vector<uint8_t>& bytes, const Version& v,
                              const std::string& what) {
  const size_t numel = bytes.size() / DTypeSize(dtype);
  const TensorStats want = testing::ReferenceStats(dtype, bytes, v.version);
  ChunkStats out;
  MaskedChunkStats(v.lanes, dtype, bytes.data(), numel, &out);
  EXPECT_EQ(out.finite_count, want.finite_count) << what;
  EXPECT_EQ(out.nan_count, want.nan_count) << what;
  EXPECT_EQ(out.pos_inf_count, want.pos_inf_count) << what;
  EXPECT_EQ(out.neg_inf_count, want.neg_inf_count) << what;
  if (out.finite_count == 0) {  // the definition's chunk extremes with nothing finite
    EXPECT_EQ(out.min, std::numeric_limits<double>::infinity()) << what;
    EXPECT_EQ(out.max, -std::numeric_limits<double>::infinity()) << what;
  }
  const TensorStats got = Finished(out);
  EXPECT_TRUE(StatsBitEqual(got, want))
      << what << "\n got " << StatsText(got) << "\nwant " << StatsText(want);
}

void ExpectMaskedExact(DType dtype, const std::vector<uint8_t>& bytes, const std::string& base) {
  for (const Version& v : kVersions) {
    ExpectMaskedExactVersion(dtype, bytes, v, base + " v" + std::to_string(v.version));
  }
}

TEST(DigestStatsKernelTest, MaskedKernelMatchesTheDefinition) {
  for (const DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const size_t elem_size = DTypeSize(dtype);
    const std::string name(DTypeName(dtype));
    const size_t chunk = kDigestChunkBytes / elem_size;
    for (const size_t numel :
         {size_t{32}, size_t{33}, size_t{47}, size_t{1000}, chunk - 3, chunk}) {
      const std::vector<uint8_t> special = Pattern(dtype, numel, "special");
      ExpectMaskedExact(dtype, special, name + " special x" + std::to_string(numel));
      const std::vector<uint8_t> random = WideRandom(dtype, numel, 9);
      ExpectMaskedExact(dtype, random, name + " all finite x" + std::to_string(numel));
      const std::vector<uint8_t> values = Pattern(dtype, 10, "special");
      for (const size_t position : {size_t{0}, size_t{5}, size_t{17}, numel / 2, numel - 1}) {
        for (size_t which = 4; which <= 6; ++which) {  // +Inf, -Inf, NaN
          std::vector<uint8_t> bytes = random;
          std::memcpy(&bytes[position * elem_size], &values[which * elem_size], elem_size);
          ExpectMaskedExact(dtype, bytes,
                            name + " special " + std::to_string(which) + " at " +
                                std::to_string(position) + " x" + std::to_string(numel));
        }
      }
      for (size_t which = 4; which <= 6; ++which) {  // nothing finite; then -0.0 beside it
        std::vector<uint8_t> bytes(numel * elem_size);
        for (size_t idx = 0; idx < numel; ++idx) {
          const size_t pick = idx % 2 == 1 && which == 6 ? 1 : which;  // -0.0 between NaNs
          std::memcpy(&bytes[idx * elem_size], &values[pick * elem_size], elem_size);
        }
        ExpectMaskedExact(dtype, bytes,
                          name + " only " + std::to_string(which) + " x" + std::to_string(numel));
      }
    }
  }
}

}  // namespace
}  // namespace upguard::internal
