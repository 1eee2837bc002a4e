// The diff: the first operator where two runs part ways, and why.
//
//   ASSIGN_OR_RETURN(Run a, LoadRun("runs/a", {}));          // mapped and indexed, not decoded
//   ASSIGN_OR_RETURN(Run b, LoadRun("runs/b", {}));
//   ASSIGN_OR_RETURN(DiffResult result, DiffRuns(a, b, DiffOptions{}));
//   if (result.verdict == Verdict::kCulprit) ... result.divergence->a_op ...
//
// Algorithm, per rank and step in order: equal StepEnd digests and op counts mean the step is
// identical and is skipped without decoding its ops (they are read from the trace only for the
// steps walked, and for the producer search, newest step first). In the first other step the two op
// streams are walked together. Where op names differ, a bounded look-ahead finds the smallest
// run of ops inserted on one side after which the streams agree again (structural); the walk
// continues past it. Where names agree, arguments are compared: a tensor input that differs
// makes the op "propagated" (and the op that produced that input is looked up); identical
// tensor inputs with a differing output make it the "culprit" (non-tensor arguments that
// differ are reported as the likely reason). The first divergence in op order gives the
// verdict; a structural difference before it is the verdict itself, with the first numerical
// divergence after realignment reported beside it.
//
// Traces list ops in completion order, so nested ops come before the op that encloses them and
// the first divergent record is the innermost: for a culprit that is the precise kernel. For a
// propagated op the report climbs to the outermost enclosing op that consumed the same
// differing tensor (aten::embedding rather than the aten::view inside it).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "diff/run_loader.h"
#include "upguard/status.h"

namespace upguard {

// Serialized in --json output as strings; values fixed.
enum class Verdict : uint8_t {
  kIdentical = 0,
  kCulprit = 1,
  kPropagated = 2,
  kStructural = 3,
};
std::string_view VerdictName(Verdict verdict);  // "identical", "culprit", ...

// One input or output slot compared across the runs.
struct ArgComparison {
  bool is_input = true;
  size_t index = 0;
  std::string name;
  const ArgRecord* a = nullptr;  // null when the slot exists on one side only
  const ArgRecord* b = nullptr;
  bool equal = true;
  bool compared = true;  // false for kinds without values (views, uninitialized, opaque)
};

// Where an op sits in one run.
struct OpLocation {
  uint32_t step = 0;
  size_t index = 0;  // index of the op within its step
  const OpRecord* op = nullptr;
};

// The op that produced a differing input, found by its output digest.
struct Producer {
  bool found = false;
  OpLocation location;
  size_t output_index = 0;
};

struct NumericDivergence {
  Verdict verdict = Verdict::kCulprit;  // kCulprit or kPropagated
  OpLocation a;
  OpLocation b;
  std::vector<ArgComparison> inputs;
  std::vector<ArgComparison> outputs;
  // kPropagated: the first differing tensor input and where each run produced it.
  std::optional<size_t> first_bad_input;
  Producer producer_a;
  Producer producer_b;
  // The ops that enclose `a` (nearest first), e.g. aten::linear around aten::addmm.
  std::vector<OpLocation> enclosing;
};

struct StructuralDivergence {
  uint32_t step = 0;
  size_t index_a = 0;  // where the streams stop agreeing
  size_t index_b = 0;
  std::vector<const OpRecord*> only_a;  // ops present only in A here (the first 16)
  std::vector<const OpRecord*> only_b;
  size_t only_a_count = 0;  // all of them
  size_t only_b_count = 0;
  bool realigned = false;  // false: no realignment within the look-ahead window
};

struct RankDiff {
  int rank = 0;
  // The decoded steps the OpRecord pointers in this result point into (kept alive with it).
  std::vector<std::shared_ptr<const StepOps>> held_steps;
  Verdict verdict = Verdict::kIdentical;
  uint32_t steps_compared = 0;
  uint32_t steps_identical = 0;  // skipped by their step digests
  std::optional<uint32_t> first_step;
  std::optional<uint32_t> last_step;
  std::optional<StructuralDivergence> structural;  // the first one
  std::optional<NumericDivergence> numeric;        // the first one
  std::vector<std::string> notes;                  // e.g. a trace that ends early
};

struct DiffOptions {
  size_t lookahead = 64;    // ops searched for realignment after a structural difference
  size_t match_window = 4;  // ops that must agree to call the streams realigned
};

struct DiffResult {
  Verdict verdict = Verdict::kIdentical;
  std::vector<RankDiff> ranks;
  std::vector<std::string> notes;
};

// Fails for runs that cannot be compared (world sizes, no common step, different programs) and
// for damage found in an op payload when the runs were loaded without allow_damaged.
StatusOr<DiffResult> DiffRuns(const Run& a, const Run& b, const DiffOptions& options);

}  // namespace upguard
