// What the recorder makes of one argument or result of an op (ArgRecord), and the enumerations
// a trace stores (docs/formats/trace.md §4.2): plain data shared by the public recorder API and
// the trace format. Strings are interned by the recorder: a StringId names them.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "upguard/digest_types.h"
#include "upguard/tensor.h"

namespace upguard {

class PendingDigest;  // src/digest/hash_pool.h

using StringId = uint32_t;
inline constexpr StringId kEmptyString = 0;

// Serialized: fixed values, never renumber.
enum class Phase : uint8_t {
  kOther = 0,
  kForward = 1,
  kBackward = 2,
  kOptimizer = 3,
  kInput = 4,  // the input pipeline: DataLoader work in the training process (version 3)
  // A forward op run again during backward (activation checkpointing), attributed to the
  // module whose forward runs again (version 4, trace.md §5.3.3).
  kRecompute = 5,
};
inline constexpr Phase kMaxPhase = Phase::kRecompute;
// "other", "forward", "backward", "optimizer", "input", "recompute"
std::string_view PhaseName(Phase phase);

// What one argument (input) or result (output) of an op holds. Serialized: never renumber.
enum class ArgKind : uint8_t {
  kTensor = 1,  // a readable tensor: dtype, shape, digest, optional stats
  kScalar = 2,  // a non-tensor value (number, bool, string, int list, ...): `text` is its repr
  kAlias = 3,   // a view: an output aliasing an input, or an input a view op never reads
  kUninit = 4,  // a tensor whose values are not defined yet (empty*, resize_): dtype, shape
  kNone = 5,    // None / absent optional
  kOpaque = 6,  // a tensor upguard cannot read (sparse, meta, another device): dtype, shape
};
std::string_view ArgKindName(ArgKind kind);

struct ArgRecord {
  ArgKind kind = ArgKind::kNone;
  StringId name = kEmptyString;   // schema argument name ("self", "weight"); empty if unknown
  DType dtype = DType::kInvalid;  // tensor kinds only
  std::vector<int64_t> shape;     // tensor kinds only
  Digest128 digest;               // kTensor: of the values; kScalar: of the text
  bool has_stats = false;         // kTensor with a floating dtype
  TensorStats stats;
  // Decoded only: has_stats, but the record left the statistics out (trace.md §5.3.1);
  // SharedStats::Resolve fills them in and clears this.
  bool stats_shared = false;
  StringId text = kEmptyString;  // kScalar only
  // The tensor's name in the user's model ("fc.weight", "exp_avg_sq of fc.weight"), empty when
  // unknown. Descriptive only: never compared, never part of any digest (trace.md §5.3.2).
  StringId label = kEmptyString;
  // Recording only, never written: kTensor digested by the recorder's hash pool, not done when
  // DigestArgs returned; `digest` and `stats` are filled in before the record is written.
  std::shared_ptr<const PendingDigest> pending;
};

}  // namespace upguard
