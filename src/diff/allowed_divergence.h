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
//             or in run B, a digest that an allowed or following op output while differing, or,
//             once an op was allowed, one that no op of run B output while it differed (views
//             carry values on without a digest: a reshaped gradient reaches a copy_ under a new
//             digest no op output); or when no tensor input differs and the op encloses an
//             allowed or following op of the same step (its outputs carry the nested op's
//             difference);
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

  // `n` differed within tolerance: its outputs are no longer "from nowhere" (see `follows`).
  void NoteWithin(const NumericDivergence& n);

  // `n` diverges beyond tolerance at ops[n.a.index] of `sa`. True when that is allowed: then it
  // is counted (and listed) in `summary` once, and its differing outputs are remembered. The
  // walk asks for the innermost record first, then for the op the report would settle on (a
  // consumer reached through views: aten::stack rather than the aten::cat inside it reading
  // unsqueezed inputs no op output as tensors).
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
  // Run B's differing outputs of ops within tolerance, once an op was allowed.
  std::unordered_set<Digest128, DigestHash> within_b_;
  std::optional<uint32_t> step_;          // the step `enclosing_` is about
  std::unordered_set<size_t> enclosing_;  // indices in `step_` of ops enclosing an absorbed one
  std::unordered_set<size_t> absorbed_;   // indices in `step_` of absorbed ops
};

}  // namespace upguard
