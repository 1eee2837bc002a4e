// Explaining a divergence element by element: the first divergent op's tensors, captured in
// both runs (safetensors files written by `upguard record --capture`), compared input by input
// and output by output.
//
//   ASSIGN_OR_RETURN(Explanation e, ExplainCaptures(path_a, path_b, *rank_diff.numeric, ta, tb));
//   for (const TensorExplanation& out : e.outputs) ... out.comparison->differing ...
//
// Each captured tensor carries the digest its run recorded for it; a capture whose digest
// differs from the trace's record was not reproduced by the re-run (a program that does not
// compute the same values twice) and is flagged, because its elements may not be the ones that
// diverged.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "capture/element_compare.h"
#include "capture/tolerance.h"
#include "diff/diff.h"
#include "upguard/status.h"

namespace upguard {

struct TensorExplanation {
  bool is_input = true;
  size_t index = 0;   // position in the op record's inputs / outputs
  std::string name;   // schema argument name ("self"), or empty
  bool in_a = false;  // captured on that side
  bool in_b = false;
  bool bitwise_equal = false;
  std::optional<ElementComparison> comparison;  // when both sides were captured
  // With a tolerance (ApplyTolerance): whether every element pair passes it.
  std::optional<bool> within_tolerance;
};

struct Explanation {
  std::string capture_a, capture_b;  // the files compared
  std::string op;                    // "aten::gelu"
  std::vector<TensorExplanation> inputs;
  std::vector<TensorExplanation> outputs;
  // Captures whose digest is not the one the run recorded: "A output 0 (self): captured
  // 1f2e..., recorded 9a8b...: the re-run did not reproduce the recorded values".
  std::vector<std::string> not_reproduced;
  std::string tolerance;  // the op's tolerance when one was applied: "ulp:4"
};

// The explanation with how it was obtained: the re-runs that captured each side.
struct ExplainedDivergence {
  Explanation explanation;
  uint32_t step_a = 0, step_b = 0;
  size_t index_a = 0, index_b = 0;
  double rerun_seconds_a = 0, rerun_seconds_b = 0;
  bool b_captured_live = false;  // record --against captured B while it ran: not re-run
};

// Compares the captures of `divergence`'s op in run A (`path_a`) and run B (`path_b`).
StatusOr<Explanation> ExplainCaptures(const std::string& path_a, const std::string& path_b,
                                      const NumericDivergence& divergence, const RankTrace& ta);

// Judges each compared tensor's elements against `t` (ComparisonWithin), the op's tolerance.
// A bitwise tolerance changes nothing: bitwise_equal already says it.
void ApplyTolerance(const Tolerance& t, Explanation* explanation);

// One sentence for people: "inputs bitwise identical; output 0: 12 of 196,608 elements differ
// (0.0061%), all by 1 ULP; ...". When a capture does not hold the values its run recorded
// (not_reproduced), says that there is no explanation instead.
std::string ExplanationHeadline(const Explanation& explanation);

}  // namespace upguard
