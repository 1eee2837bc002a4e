// The diff: the first operator where two runs part ways, and why.
//
//   ASSIGN_OR_RETURN(Run a, LoadRun("runs/a", {}));          // mapped and indexed, not decoded
//   ASSIGN_OR_RETURN(Run b, LoadRun("runs/b", {}));
//   ASSIGN_OR_RETURN(DiffResult result, DiffRuns(a, b, DiffOptions{}));
//   if (result.verdict == Verdict::kCulprit) ... result.divergence->a_op ...
//
// Algorithm, per rank and step in order: equal StepEnd digests and op counts mean the step is
// identical and is skipped without decoding its ops (they are read from the trace only for the
// steps walked, and for the producer search, newest step first). A step whose ops compare equal
// in place (raw_compare.h) is done too. In any other step the two op streams are paired: op by
// op when both hold the same op names in the same order, otherwise by aligning them on op
// identity (align_ops.h: phase, module, op, depth, enclosing op; a longest common subsequence,
// align.h). Ops without a counterpart are structural differences; all of them are collected
// (StructuralSummary). The paired ops are compared in order: a tensor input that differs makes
// the op "propagated" (and the op that produced that input is looked up); identical tensor
// inputs with a differing output make it the "culprit" (non-tensor arguments that differ are
// reported as the likely reason). Steps are walked until the first numerical divergence.
//
// The verdict is that numerical divergence, with the structural differences beside it; it is
// "structural" when there is none, or when it is propagated from an op that only one run ran
// (that op caused it). Ops without counterpart that are nested inside a paired top-level op with
// identical inputs and outputs (a copy_ a kernel adds with more threads) are listed but make no
// verdict, as a differing value there does not either.
//
// With a tolerance (DiffOptions::tolerance, tolerance_judge.h) a tensor slot whose digests
// differ is judged from its statistics: within tolerance it counts as equal, so an op whose
// every slot is equal or within is counted (ToleranceSummary) and the walk goes on; an input
// "differs" only beyond tolerance. A divergence at an op marked nondeterministic, or one whose
// differing inputs all came from such ops, is listed and not the verdict (allowed_divergence.h).
//
// Traces list ops in completion order, so nested ops come before the op that encloses them and
// the first divergent record is the innermost: for a culprit that is the precise kernel. For a
// propagated op the report climbs to the outermost enclosing op that consumed the same
// differing tensor (aten::embedding rather than the aten::view inside it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "align/align.h"
#include "diff/tolerance_judge.h"
#include "run/run_loader.h"
#include "upguard/status.h"

namespace upguard {

// The pseudo-op that ends each recorded step with the model's parameters, buffers and
// optimizer state (analysis/state_check.h). A run recorded by an upguard from before it has none: a
// block of ops without counterpart that holds only these is not a difference.
inline constexpr std::string_view kStateOp = "upguard::state";

// Serialized in --json output as strings; values fixed.
enum class Verdict : uint8_t {
  kIdentical = 0,
  kCulprit = 1,
  kPropagated = 2,
  kStructural = 3,
  kRng = 4,   // the first divergence is in the random state (analysis/setup_check.h)
  kData = 5,  // the first divergence is in the batch entering the model
  // An op's non-tensor argument differs while every tensor it read and wrote is equal (a
  // momentum that only shows in later steps): the first difference, when nothing diverged
  // numerically before it.
  kLatent = 6,
  // The step digests differ, yet no compared op differs: recorded bytes differ where the diff
  // cannot attribute them to an op. Never reported as identical (RankDiff::unattributed).
  kUnattributed = 7,
  // The first difference is a tensor of the model (parameter, buffer, optimizer state) at a
  // step's end that no recorded op's output showed (analysis/state_check.h).
  kState = 8,
  // Fingerprint runs (`record --fingerprint`): the first divergent step, where the loss, the
  // gradients or the model state differ first; its ops were not recorded
  // (analysis/fingerprint_check.h). A random state or batch that differs first there stays
  // kRng / kData.
  kStep = 9,
  // Nothing diverged in what was compared, but some tensors were not read (another device, a
  // layout or dtype upguard does not read: ArgKind::kUnread), so the runs are not known to be
  // identical (RankDiff::unread_a/_b say how many and why). Also the verdict where the first
  // difference is an op whose output differs while an input of it was not read: whether it
  // computed differently or was given different values is unknown (NumericDivergence::
  // unread_inputs). Never reported as identical; `upguard diff` exits 3 (docs/cli.md).
  kUnverified = 10,
};
// Whether `verdict` says the runs part somewhere: neither identical nor unverified.
inline bool Diverged(Verdict verdict) {
  return verdict != Verdict::kIdentical && verdict != Verdict::kUnverified;
}
std::string_view VerdictName(Verdict verdict);  // "identical", "culprit", ...

// One input or output slot compared across the runs.
struct ArgComparison {
  bool is_input = true;
  size_t index = 0;
  std::string name;
  const ArgRecord* a = nullptr;  // null when the slot exists on one side only
  const ArgRecord* b = nullptr;
  bool equal = true;     // bitwise
  bool compared = true;  // false for kinds without values (views, uninitialized, opaque)
  Tolerated tolerated = Tolerated::kNotJudged;  // a tensor slot that is not equal, judged
  // Not equal and not within tolerance: what makes an op diverge.
  bool Differs() const { return !equal && tolerated != Tolerated::kWithin; }
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
  bool unpaired = false;  // found, and the other run has no counterpart of that op
  // Not found: the latest op before it in its step that made a view of the same dtype and shape
  // (a view is recorded by its shape, not its values, so no digest leads to it): the input is
  // likely that view of an earlier result, not something from outside. Null when none did.
  std::optional<OpLocation> view_maker;
};

struct NumericDivergence {
  Verdict verdict = Verdict::kCulprit;  // kCulprit, kPropagated or kLatent
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
  std::string tolerance;  // the op's tolerance ("rel:1e-05") when one was given
  // Inputs of `a` or `b` whose values were not read (ArgKind::kUnread): a culprit with any is
  // not one (Verdict::kUnverified).
  size_t unread_inputs = 0;
};

// An op pair that diverged beyond tolerance where that is allowed: the op (or one enclosing
// it) is marked nondeterministic, or it follows from such an op (every differing tensor input
// came out of an allowed op, or it encloses one).
struct AllowedDivergence {
  bool follows = false;  // false: nondeterministic itself; true: follows from one
  OpLocation a;
  OpLocation b;
  std::vector<ArgComparison> outputs;
};

// What a tolerance let through in one rank's steps compared.
struct ToleranceSummary {
  size_t within_ops = 0;  // op pairs not bitwise equal, every slot equal or within tolerance
  std::optional<OpLocation> first_within_a;
  std::optional<OpLocation> first_within_b;
  std::string first_within_tolerance;
  size_t allowed_ops = 0;                  // AllowedDivergence with follows = false
  size_t follows_ops = 0;                  // and with follows = true
  std::vector<AllowedDivergence> allowed;  // the first few nondeterministic ones, in order
  std::optional<AllowedDivergence> first_follows;
  size_t listed() const { return allowed.size() + (first_follows ? 1 : 0); }
};

// One block of ops without counterpart, between two paired ops (or a step's ends).
struct StructuralDivergence {
  uint32_t step = 0;
  size_t index_a = 0;  // where the streams stop agreeing: only_a[k] is op index_a + k
  size_t index_b = 0;
  std::vector<const OpRecord*> only_a;  // ops present only in A here (the first 16)
  std::vector<const OpRecord*> only_b;
  size_t only_a_count = 0;  // all of them
  size_t only_b_count = 0;
  bool realigned = false;  // false: the alignment gave up here (AlignOptions::max_edit_distance)
  // Every op here is nested inside a paired top-level op whose inputs and outputs are
  // identical in both runs: listed, but no divergence.
  bool inside_clean_op = false;
  // 1: only A's ops here include torch.compile's (a compiled frame, graph or generated kernel,
  // python/upguard/_compiled.py), 2: only B's; 0: neither or both. A compiled region against
  // eager ops: bitwise equality is not expected, the ops are not comparable one by one.
  int compiled_only = 0;
};

struct StepIndex {
  uint32_t step = 0;
  size_t index = 0;
};

// Ops without counterpart, grouped by the outermost of them (an op whose enclosing op has a
// counterpart, or a top-level one): its module, its name and its enclosing op's name
// ("aten::copy_ inside aten::sum"). The ops nested inside it count in its group.
struct StructuralGroup {
  std::string module;
  std::string op;
  std::string inside;  // the enclosing op's name; empty for a top-level op
  size_t only_a = 0;   // outermost ops of the group only in A
  size_t only_b = 0;
  size_t ops_a = 0;  // with the ops nested inside them
  size_t ops_b = 0;
  std::optional<StepIndex> first_a;  // where the first of them is in each run
  std::optional<StepIndex> first_b;
};

// Every structural difference of the steps paired: all steps compared when there is no
// numerical divergence, else up to and including the step of the first one.
struct StructuralSummary {
  size_t only_a_count = 0;  // ops without counterpart
  size_t only_b_count = 0;
  size_t inside_clean_a = 0;  // of those, the ones nested inside a clean paired top-level op
  size_t inside_clean_b = 0;
  size_t blocks = 0;
  size_t unaligned_blocks = 0;  // where the alignment gave up
  uint32_t first_step = 0;      // steps holding a block
  uint32_t last_step = 0;
  std::vector<StructuralDivergence> first_blocks;  // the first few blocks, in op order
  // Grouped by module (in order of first appearance), then by first appearance; a bounded
  // number of groups, the ops of the others counted in other_a / other_b.
  std::vector<StructuralGroup> groups;
  size_t other_a = 0;
  size_t other_b = 0;
};

// What differs in the first divergent step of fingerprint runs (analysis/fingerprint_check.h).
struct FingerprintDivergence {
  uint32_t step = 0;
  // What differs first, in the order a step records it: "random state", "batch", "loss",
  // "gradients", "model state".
  std::string first;
  bool rng_differs = false;
  bool batch_differs = false;
  // The loss of each backward of the step, in each run ("2.30258512"; "?" without statistics).
  std::vector<std::string> loss_a;
  std::vector<std::string> loss_b;
  bool loss_differs = false;
  std::vector<std::string> grads_differ;  // the gradients that differ, by name, in order
  size_t grads = 0;                       // gradients in the step's fingerprint
  std::vector<std::string> state_differ;  // parameters, buffers, optimizer state
  size_t state = 0;
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
  std::optional<StructuralDivergence> structural;  // the first block not inside a clean op
  std::optional<StructuralSummary> structure;      // every block, when there is any
  std::optional<NumericDivergence> numeric;        // the first one
  // The first op whose non-tensor argument differs while all its tensors are equal, if it
  // comes before `numeric` (the walk stops at numeric). The verdict when set.
  std::optional<NumericDivergence> latent;
  // kUnattributed: the first step whose step digests differ though no compared op differs.
  std::optional<uint32_t> unattributed_step;
  // Only one run holds upguard::state ops (kStateOp): their step digests cannot agree, so the
  // digest invariant is not checked.
  bool state_in_one_run = false;
  ToleranceSummary tolerance;      // empty without DiffOptions::tolerance
  std::vector<std::string> notes;  // e.g. a trace that ends early
  // kRng / kData: what was set up differently, where it first showed ("RNG state differs at
  // step 2 (before op aten::bernoulli_, module drop, model.py:116)"). Set by ApplySetupChecks.
  // kState: which of the model's tensors differ at which step's end (ApplyStateCheck).
  std::string setup;
  std::vector<std::string> state_differs;  // kState: the differing tensors, by name
  // The first divergence lies in a fingerprint step (ApplyFingerprintCheck); the verdict is
  // then kStep, kRng or kData.
  std::optional<FingerprintDivergence> fingerprint;
  // The tensors of the steps compared whose values were not read, in each run, by reason and
  // detail (trace/unread_tally.h): what the diff could not compare.
  std::vector<UnreadCount> unread_a;
  std::vector<UnreadCount> unread_b;
};

struct DiffOptions {
  AlignOptions align;  // for steps whose op streams differ
  // Tolerances and nondeterministic ops (a policy, see tolerance_judge.h); null: bitwise.
  std::shared_ptr<const ToleranceJudge> tolerance;
  // Ranks diffed at once, each on its own thread (rank_pool.h); 0: the hardware's concurrency.
  // The result does not depend on it. Memory grows with it: each rank being diffed keeps up to
  // 20 MiB of each of its two traces mapped and decodes the steps it walks (measured: 26 MiB
  // per rank in flight, docs/architecture.md "Scale").
  int jobs = 0;
  // Called after each step compared (skipped as identical or walked), from the thread diffing
  // that rank: the rank, the step and its op count in run A. For a progress line; must be
  // thread-safe with jobs > 1.
  std::function<void(int rank, uint32_t step, uint64_t ops)> progress;
};

struct DiffResult {
  Verdict verdict = Verdict::kIdentical;
  std::vector<RankDiff> ranks;
  std::vector<std::string> notes;
  // Numerics-relevant environment that differs ("OMP_NUM_THREADS 1 vs 2"), named beside the
  // verdict. Set by ApplySetupChecks (analysis/setup_check.h).
  std::vector<std::string> environment;
  std::string tolerance;  // ToleranceJudge::Summary() when a tolerance was given
  // Every rank's unread tensors (RankDiff::unread_a/_b) summed.
  std::vector<UnreadCount> unread_a;
  std::vector<UnreadCount> unread_b;
};

// Ranks are diffed on DiffOptions::jobs threads; the result (ranks in rank order, the verdict of
// the lowest divergent rank) and the error (the lowest failing rank's) are those of diffing the
// ranks one after another. Fails for runs that cannot be compared (world sizes, no common step,
// different programs) and for damage found in an op payload when the runs were loaded without
// allow_damaged.
StatusOr<DiffResult> DiffRuns(const Run& a, const Run& b, const DiffOptions& options);

// A propagated divergence whose differing input no op of both runs produced, where the runs
// had parted structurally before it: the structure is the first event, and the verdict
// structural, once no setup check (rng, data, state) has explained the input
// (analysis/conclude.cc applies it after them).
bool StructureComesFirst(const RankDiff& diff);

// Two steps are identical, and skipped, when their StepEnd op counts and digests agree.
bool StepsIdentical(const StepInfo& sa, const StepInfo& sb);

}  // namespace upguard
