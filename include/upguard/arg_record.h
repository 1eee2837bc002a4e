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
  // A tensor upguard could not read, in traces of version 5 and before (the reason unknown):
  // dtype, shape. A writer of version 6 writes kUnread instead.
  kOpaque = 6,
  // A tensor whose values upguard did not read (version 6): dtype, shape, and why
  // (UnreadReason, with a detail such as the device "cuda:0"). Nothing compares its values:
  // an op with such an argument is not compared there (trace.md §5.3).
  kUnread = 7,
};
inline constexpr ArgKind kMaxArgKind = ArgKind::kUnread;
std::string_view ArgKindName(ArgKind kind);

// Why a tensor's values were not read (ArgKind::kUnread). Serialized: never renumber.
enum class UnreadReason : uint8_t {
  kUnknown = 0,  // a kOpaque argument of a version 5 trace, or a reason this upguard lacks
  kDevice = 1,   // on a device upguard does not read (detail: "cuda:0"); it reads CPU memory
  kLayout = 2,   // a layout upguard does not read (detail: "nested", "mkldnn", "sparse_bsr")
  kStorage = 3,  // its storage does not hold every element the view reaches (a tensor
                 // subclass's wrapper, a storage resized to nothing)
  kDtype = 4,    // a dtype upguard has no code for (detail: the dtype's name)
  // A collective is still writing it (a program that reads before waiting): its bytes depend on
  // timing. The values the collective wrote are read at its completion (its Collective record).
  kInFlight = 5,
};
inline constexpr UnreadReason kMaxUnreadReason = UnreadReason::kInFlight;
// "unknown", "device", "layout", "storage", "dtype", "in_flight"
std::string_view UnreadReasonName(UnreadReason reason);
// Whether the values of a tensor left unread for `reason` are nowhere in the trace: every
// reason but kInFlight (a collective's written values are read when it completes).
inline bool UnreadHidesValues(UnreadReason reason) { return reason != UnreadReason::kInFlight; }
// Whether `kind` is a tensor whose values were not read (kOpaque of old traces, kUnread).
inline bool IsUnreadKind(ArgKind kind) {
  return kind == ArgKind::kOpaque || kind == ArgKind::kUnread;
}

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
  StringId text = kEmptyString;  // kScalar: the value's text; kUnread: the reason's detail
  UnreadReason unread = UnreadReason::kUnknown;  // kUnread, kOpaque (always kUnknown) only
  // The tensor's name in the user's model ("fc.weight", "exp_avg_sq of fc.weight"), empty when
  // unknown. Descriptive only: never compared, never part of any digest (trace.md §5.3.2).
  StringId label = kEmptyString;
  // Recording only, never written: kTensor digested by the recorder's hash pool, not done when
  // DigestArgs returned; `digest` and `stats` are filled in before the record is written.
  std::shared_ptr<const PendingDigest> pending;
};

}  // namespace upguard
