// Test vectors of the tensor digest (docs/formats/digest.md §8): deterministic input patterns
// and the one-line text form of tests/data/digest_vectors.txt (statistics v1) and
// tests/data/digest_vectors_v2.txt (v2). Shared by the generator
// (tools/gen_digest_vectors.cc) and DigestVectorsTest, so both read and write the same thing.
//
//   ASSIGN_OR_RETURN(DigestVector vector, MakeDigestVector(DType::kFloat32, {2, 3}, "lcg:7", 2));
//   std::string line = FormatDigestVector(vector);
//   ASSIGN_OR_RETURN(DigestVector parsed, ParseDigestVector(line));
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "digest/digest.h"
#include "upguard/status.h"
#include "upguard/tensor.h"

namespace upguard {

struct DigestVector {
  DType dtype = DType::kInvalid;
  std::vector<int64_t> shape;
  std::string pattern;  // "iota", "lcg:<seed>" or "special"
  TensorDigest expected;
};

// The logical bytes of `numel` elements of `pattern` (digest.md §8). InvalidArgument for an
// unknown pattern or "special" with a non-floating dtype.
StatusOr<std::vector<uint8_t>> GeneratePattern(DType dtype, uint64_t numel,
                                               std::string_view pattern);

// The vector file of a statistics version, relative to the source tree.
const char* DigestVectorsFile(int stats_version);

// Generates the input, digests it (contiguous, one thread, stats on, statistics of
// `stats_version`) and fills `expected`.
StatusOr<DigestVector> MakeDigestVector(DType dtype, std::vector<int64_t> shape,
                                        std::string pattern, int stats_version);

// "dtype=float32 shape=2,3 pattern=lcg:7 digest=<hex> finite=6 nan=0 ... l2=<%.17g>", or
// "... digest=<hex> stats=none" without statistics. No trailing newline.
std::string FormatDigestVector(const DigestVector& vector);
// The inverse; InvalidArgument naming the field at fault.
StatusOr<DigestVector> ParseDigestVector(std::string_view line);
// Every vector of a vector file's text, in order (blank and `#` lines skipped); the error names
// the line number.
StatusOr<std::vector<DigestVector>> ParseDigestVectors(std::string_view text);

}  // namespace upguard
