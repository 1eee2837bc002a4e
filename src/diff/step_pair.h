// One step of two runs, walked together (diff.cc): each run's trace and step, the alignment of
// their ops and the tolerance judge, held once, so that what the walk asks of an op pair is a
// method and run A and run B are named in one place only.
//
//   const StepPair pair(RunStep{ta, sa}, RunStep{tb, sb}, std::move(alignment), judge);
//   NumericDivergence numeric;
//   if (pair.CompareOp(match, &numeric) == OpOutcome::kDiverges &&
//       !pair.InsideCleanTopLevelOp(match)) {
//     pair.Settle(&numeric);   // the op the user called, and what encloses it
//   }
//
// An op pair is a KeyMatch {a, b}: op `a` of A with op `b` of B, by name, never by position in
// an argument list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>

#include "align/align_ops.h"
#include "diff/diff.h"

namespace upguard {

// One run's side of a step: its trace (for strings and the path) and the step's ops.
struct RunStep {
  const RankTrace& trace;
  const StepOps& step;
};

enum class OpOutcome : uint8_t {
  kSame,      // no slot differs
  kLatent,    // a scalar input differs, every tensor slot is equal (or within tolerance)
  kWithin,    // some tensor slots differ, all within tolerance
  kDiverges,  // a tensor input or an output differs beyond tolerance
};

class StepPair {
 public:
  // `judge`: null without a tolerance. Holds references: the traces and steps outlive it.
  StepPair(RunStep a, RunStep b, StepAlignment alignment, const ToleranceJudge* judge)
      : a_(a), b_(b), alignment_(std::move(alignment)), judge_(judge) {}

  const RunStep& a() const { return a_; }
  const RunStep& b() const { return b_; }
  // Run `side` (0: A, 1: B).
  const RunStep& side(int side) const { return side == 0 ? a_ : b_; }
  const StepAlignment& alignment() const { return alignment_; }

  // Compares one aligned op pair; fills `out` unless kSame. With a judge, tensor slots that are
  // not equal are judged against the op's tolerance. The producers of a propagated op's
  // differing input are looked up later, for the op reported.
  OpOutcome CompareOp(KeyMatch ops, NumericDivergence* out) const;

  // Nested ops come before their enclosing op, so the first divergent record is the
  // innermost. When its cause (a differing input tensor, or a differing argument) reached it
  // through enclosing ops, settles on the outermost of those that also diverges with the same
  // verdict: the op the user called (aten::mul for `grad * scale`, not the dtype conversion
  // inside it). A culprit whose arguments all match stays innermost: the precise kernel. Then
  // lists what encloses the chosen op. Only enclosing ops paired with each other are climbed.
  void Settle(NumericDivergence* n) const;

  // A nested op whose enclosing top-level op has identical inputs and outputs in both runs
  // did not change the training: differing values inside it are scratch memory a kernel read
  // before overwriting it (or an internal path), not a divergence.
  bool InsideCleanTopLevelOp(KeyMatch ops) const;

  // The same rule for ops without counterpart: is every op of `block` nested inside a paired
  // top-level op whose inputs and outputs are identical in both runs? `clean` caches the
  // answer by A's top-level op.
  bool BlockInsideCleanOps(const OpBlock& block, std::unordered_map<size_t, bool>* clean) const;

  // A block of ops without counterpart that are all input-pipeline ops: DataLoader work whose
  // place among the training's ops depends on when worker batches arrived. Not a difference.
  bool InputPipelineOnly(const OpBlock& block) const;

  // A block of ops without counterpart that are all upguard::state, in one run only: the
  // other run was recorded without the model state (an upguard from before it).
  bool ModelStateOnly(const OpBlock& block) const;

 private:
  RunStep a_;
  RunStep b_;
  StepAlignment alignment_;
  const ToleranceJudge* judge_;
};

}  // namespace upguard
