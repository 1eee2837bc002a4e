// How a divergence spread: for a rank's first divergent step, every op of run A's step in order
// with the size of its outputs' difference against its counterpart in run B; and for every step
// compared, whether it was identical and where it first differed. The HTML report draws both
// (report/diff_html.h); `upguard diff --json` carries them (docs/cli.md, "spread").
//
//   ASSIGN_OR_RETURN(RankSpread spread, ComputeSpread(a, b, result.ranks[0], {}));
//   for (const SpreadOp& op : spread.ops) ... op.relative ...
//
// The size of a difference is taken from the recorded statistics: over the op's floating
// tensor outputs, the largest |l2_a - l2_b| / l2_a (a lower bound of the relative L2 norm of
// the difference, which the trace does not hold). A NaN/Inf count that changed, or digests that
// differ with equal norms, still mark the op as differing (`differs`), so nothing that differs
// is drawn as equal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "align/align.h"
#include "diff/diff.h"
#include "run/run_loader.h"
#include "upguard/status.h"

namespace upguard {

struct SpreadOp {
  size_t index = 0;  // in run A's step
  // The op the diff's report names for this op's difference: an op enclosing it, when the
  // cause reached it through that op (StepPair::Settle), else itself (also when it is equal).
  size_t named = 0;
  std::string op, module, phase;
  uint32_t depth = 0;
  bool paired = true;      // false: only run A ran it here
  bool differs = false;    // paired, and some output slot differs
  bool measured = false;   // differs, and its size comes from statistics
  double relative = 0;     // the size of the difference (0 when equal)
  bool nonfinite = false;  // a NaN/Inf count differs
};

struct SpreadStep {
  uint32_t step = 0;
  bool identical = false;  // equal step digests (skipped by the diff)
  // Run A's index of the first op that differs, as the diff's report names it (SpreadOp::named).
  std::optional<size_t> first_differing;
  size_t ops = 0;  // in run A
  // The loss of each run: a fingerprint step's upguard::loss, else the last scalar a forward op
  // of the step output (the loss in a usual training step); absent without one.
  std::optional<double> loss_a, loss_b;
  // The largest |L2(A) - L2(B)| / L2(A) over the model's tensors at the step's end (its
  // upguard::state, or a fingerprint's gradients); absent without them.
  std::optional<double> state_relative;
};

struct RankSpread {
  int rank = 0;
  bool found = false;  // a divergent step to spread (a numeric or latent divergence)
  uint32_t step = 0;
  size_t divergent_index = 0;  // the verdict's op in run A's step
  std::vector<SpreadOp> ops;
  size_t only_b = 0;  // ops of run B's step without counterpart
  // The common steps from the first the diff compared, in order, at most kSpreadSteps: also
  // those after the divergence, to show how the difference grows.
  std::vector<SpreadStep> steps;
};

inline constexpr size_t kSpreadSteps = 512;

// The spread of `diff`'s rank (a result of DiffRuns on `a` and `b`).
StatusOr<RankSpread> ComputeSpread(const Run& a, const Run& b, const RankDiff& diff,
                                   const AlignOptions& options);

}  // namespace upguard
