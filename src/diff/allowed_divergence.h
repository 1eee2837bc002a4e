// Ops allowed to differ (`--allow-nondeterministic`, `nondeterministic` policy rules): a
// divergence of theirs is listed, not the verdict, and so is what follows from it downstream.
//
//   AllowedTracker allowed(*options.tolerance);
//   ... for each op pair diverging beyond tolerance, innermost first:
//   if (allowed.Absorb(ta, sa, numeric, &rank_diff.tolerance)) continue;  // listed, walk on
//
// An op pair diverging beyond tolerance is
//   allowed   when no tensor input differs (beyond tolerance) and the op, or an op enclosing
//             it, is marked nondeterministic;
//   follows   (from allowed nondeterminism) when every differing tensor input carries, in run A
//             or in run B, a digest that an allowed or following op output while differing; or
//             when no tensor input differs and the op encloses an allowed or following op of
//             the same step (its outputs carry the nested op's difference);
//   neither   otherwise: culprit or propagated as usual.
// The differing outputs of allowed and following ops are remembered by digest, per run, for the
// rest of the rank's walk. So a real culprit after an allowed op is still found when its inputs
// did not come through the allowed op's outputs; one whose inputs did cannot be told apart
// from the allowed difference (docs/cli.md "Nondeterministic ops").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_set>

#include "diff/diff.h"

namespace upguard {

class AllowedTracker {
 public:
  static constexpr size_t kListed = 8;  // allowed ops listed in ToleranceSummary::allowed

  explicit AllowedTracker(const ToleranceJudge& judge) : judge_(judge) {}

  // `n` diverges beyond tolerance at ops[n.a.index] of `sa` (its innermost record). True when
  // that is allowed: then it is counted (and listed) in `summary` and its differing outputs are
  // remembered.
  bool Absorb(const RankTrace& ta, const StepOps& sa, const NumericDivergence& n,
              ToleranceSummary* summary);

 private:
  struct DigestHash {
    size_t operator()(const Digest128& digest) const { return static_cast<size_t>(digest.low); }
  };
  enum class Kind { kNone, kAllowed, kFollows };

  Kind Classify(const RankTrace& ta, const StepOps& sa, const NumericDivergence& n) const;
  bool Remembered(const ArgComparison& slot) const;

  const ToleranceJudge& judge_;
  std::unordered_set<Digest128, DigestHash> remembered_[2];  // per run: A, B
  std::optional<uint32_t> step_;                             // the step `enclosing_` is about
  std::unordered_set<size_t> enclosing_;  // indices in `step_` of ops enclosing an absorbed one
};

}  // namespace upguard
