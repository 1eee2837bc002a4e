// What a diff of two runs concludes: the one owner of the verdict. `upguard diff`, `demo` and
// `record --against` print what ConcludeDiff returns and decide nothing themselves, so a test
// that calls it gets exactly what `upguard diff --json` prints (report/conclusion_report.h).
//
//   ConcludeOptions options;
//   options.policy = policy;  // optional: judges the diff and the explanation
//   options.explain = [](const Run& a, const Run& b, const RankDiff& rank) {
//     return ExplainDivergence(a, b, rank);  // cli/explain_runner.h: re-runs both programs
//   };
//   ASSIGN_OR_RETURN(Conclusion conclusion, ConcludeDiff(a, b, options));
//   std::printf("%s", RenderConclusionText(conclusion, a, b).c_str());
//
// In order, it
//   1. diffs every rank (DiffRuns) under the policy's tolerances;
//   2. runs the setup checks (setup_check.h): random state, data, environment, model state;
//   3. with several ranks, orders their first divergences through the collectives
//      (global_order.h); the run's verdict becomes the first rank's of that order (the origin),
//      and each receiving, collective or unrecorded rank gets a note saying so;
//   4. with an explainer, explains the origin rank's numeric divergence, else the first rank
//      in rank order that has one, and judges the explanation under the policy's tolerance
//      for that op.
// The explain step re-runs programs, which the library does not do: the caller injects it.
#pragma once

#include <functional>
#include <optional>

#include "analysis/explain.h"
#include "analysis/global_order.h"
#include "capture/tolerance.h"
#include "diff/diff.h"
#include "upguard/status.h"

namespace upguard {

struct Conclusion {
  DiffResult result;
  std::optional<GlobalOrder> order;              // several ranks
  std::optional<ExplainedDivergence> explained;  // with an explainer and a numeric divergence
};

// Captures `rank`'s first numeric divergence in both runs and compares it element by element.
using Explainer =
    std::function<StatusOr<ExplainedDivergence>(const Run& a, const Run& b, const RankDiff& rank)>;

struct ConcludeOptions {
  DiffOptions diff;
  // Tolerances and nondeterministic ops: when set, the diff is judged by it (it replaces
  // diff.tolerance) and so is the explanation.
  std::optional<TolerancePolicy> policy;
  Explainer explain;  // null: no explanation
};

StatusOr<Conclusion> ConcludeDiff(const Run& a, const Run& b, const ConcludeOptions& options);

// Step 4 alone, for a caller that prints the diff before the re-runs start (`upguard demo`):
// ConcludeDiff with options.explain is ConcludeDiff without it, then this. Does nothing when
// options.explain is null or no rank has a numeric divergence.
Status ExplainConclusion(const Run& a, const Run& b, const ConcludeOptions& options,
                         Conclusion* conclusion);

}  // namespace upguard
