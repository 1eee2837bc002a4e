#include "diff/diff.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "align/align_ops.h"
#include "diff/align_summary.h"
#include "diff/allowed_divergence.h"
#include "diff/compare.h"
#include "diff/diff_rank.h"
#include "diff/raw_compare.h"
#include "trace/trace_index.h"

namespace upguard {
namespace {

constexpr size_t kProducerSearchLimit = 1 << 22;  // ops searched backwards for a producer

// The latest op before `before` (in step order) with a tensor output of digest `digest`. Decodes
// earlier steps on demand, newest first; the step holding the producer joins `held`.
StatusOr<Producer> FindProducer(const RankTrace& trace, const OpLocation& before,
                                const Digest128& digest,
                                std::vector<std::shared_ptr<const StepOps>>* held) {
  Producer producer;
  size_t searched = 0;
  const uint64_t cuts = trace.cuts();
  RETURN_IF_ERROR(trace.FindStep(before.step).status());  // every step up to it is known
  for (size_t step_idx = trace.steps().size(); step_idx-- > 0;) {
    if (trace.steps()[step_idx].step > before.step) continue;
    ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> step, trace.Ops(step_idx));
    if (trace.cuts() != cuts) return producer;  // the caller starts over
    const std::vector<OpRecord>& ops = step->ops;
    size_t end = step->step == before.step ? std::min(before.index, ops.size()) : ops.size();
    for (size_t op_idx = end; op_idx-- > 0;) {
      const OpRecord& op = ops[op_idx];
      for (size_t out_idx = 0; out_idx < op.outputs.size(); ++out_idx) {
        const ArgRecord& out = op.outputs[out_idx];
        if (out.kind == ArgKind::kTensor && out.digest == digest) {
          producer.found = true;
          producer.location = OpLocation{step->step, op_idx, &op};
          producer.output_index = out_idx;
          held->push_back(std::move(step));
          return producer;
        }
      }
      if (++searched >= kProducerSearchLimit) return producer;
    }
  }
  return producer;
}

enum class OpOutcome : uint8_t {
  kSame,      // no slot differs
  kLatent,    // a scalar input differs, every tensor slot is equal (or within tolerance)
  kWithin,    // some tensor slots differ, all within tolerance
  kDiverges,  // a tensor input or an output differs beyond tolerance
};

// Compares one aligned op pair; fills `out` unless kSame. With a `judge`, tensor slots that
// are not equal are judged against the op's tolerance. The producers of a propagated op's
// differing input are looked up later, for the op reported.
OpOutcome CompareOp(const RankTrace& ta, const StepOps& sa, size_t ia, const RankTrace& tb,
                    const StepOps& sb, size_t ib, const ToleranceJudge* judge,
                    NumericDivergence* out) {
  const OpRecord& a = sa.ops[ia];
  const OpRecord& b = sb.ops[ib];
  if (SameArgs(a, b)) return OpOutcome::kSame;  // the common case, without building the slots
  std::vector<ArgComparison> inputs = CompareArgs(a.inputs, b.inputs, true, ta);
  std::vector<ArgComparison> outputs = CompareArgs(a.outputs, b.outputs, false, ta);
  // A collective that did not complete in one run (its peer died, or the step ended first)
  // delivered nothing to compare: its outputs are not a difference.
  if ((a.collective != nullptr && !a.collective->completed) ||
      (b.collective != nullptr && !b.collective->completed)) {
    for (ArgComparison& slot : outputs) {
      slot.equal = true;
      slot.compared = false;
    }
  }
  if (judge != nullptr) {
    JudgeSlots(*judge, ta.Str(a.op), ta.Str(a.module), &inputs);
    JudgeSlots(*judge, ta.Str(a.op), ta.Str(a.module), &outputs);
  }
  std::optional<size_t> bad_tensor_input;
  bool within = false;
  bool scalar_differs = false;
  for (const ArgComparison& slot : inputs) {
    const bool is_scalar = slot.a != nullptr && slot.a->kind == ArgKind::kScalar &&
                           slot.b != nullptr && slot.b->kind == ArgKind::kScalar;
    within |= slot.tolerated == Tolerated::kWithin;
    scalar_differs |= is_scalar && slot.Differs();
    if (slot.Differs() && !is_scalar) {
      bad_tensor_input = slot.index;
      break;
    }
  }
  bool output_differs = false;
  for (const ArgComparison& slot : outputs) {
    within |= slot.tolerated == Tolerated::kWithin;
    output_differs |= slot.Differs();
  }
  // Latent only where a value came out equal: an op whose results are views or uninitialized
  // buffers (empty, as_strided) shows nothing with its arguments; the ops using them will.
  bool value_output = false;
  for (const ArgComparison& slot : outputs) {
    value_output |= slot.a != nullptr && slot.a->kind == ArgKind::kTensor && slot.compared;
  }
  if (!bad_tensor_input && !output_differs && scalar_differs && value_output) {
    out->verdict = Verdict::kLatent;
    out->a = OpLocation{sa.step, ia, &a};
    out->b = OpLocation{sb.step, ib, &b};
    out->inputs = std::move(inputs);
    out->outputs = std::move(outputs);
    if (judge != nullptr) out->tolerance = judge->Describe(ta.Str(a.op), ta.Str(a.module));
    return OpOutcome::kLatent;
  }
  if (!bad_tensor_input && !output_differs) {
    if (!within) return OpOutcome::kSame;
    out->a = OpLocation{sa.step, ia, &a};
    out->b = OpLocation{sb.step, ib, &b};
    out->outputs = std::move(outputs);
    return OpOutcome::kWithin;
  }

  out->a = OpLocation{sa.step, ia, &a};
  out->b = OpLocation{sb.step, ib, &b};
  out->inputs = std::move(inputs);
  out->outputs = std::move(outputs);
  if (bad_tensor_input) {
    out->verdict = Verdict::kPropagated;
    out->first_bad_input = bad_tensor_input;
  } else {
    out->verdict = Verdict::kCulprit;
  }
  if (judge != nullptr) out->tolerance = judge->Describe(ta.Str(a.op), ta.Str(a.module));
  return OpOutcome::kDiverges;
}

// What made `n` diverge, as digests a consumer higher up would see again: the differing
// tensor input (propagated) or the differing non-tensor arguments (a culprit by argument).
// Empty for a culprit whose arguments all match: that op's own kernel differed.
std::vector<Digest128> Cause(const NumericDivergence& n) {
  std::vector<Digest128> cause;
  if (n.verdict == Verdict::kPropagated) {
    const ArgRecord* bad = n.inputs[*n.first_bad_input].a;
    if (bad != nullptr) cause.push_back(bad->digest);
    return cause;
  }
  for (const ArgComparison& slot : n.inputs) {
    if (slot.Differs() && slot.a != nullptr && slot.a->kind == ArgKind::kScalar) {
      cause.push_back(slot.a->digest);
    }
  }
  return cause;
}

// Does the enclosing op `up` carry the same cause? A propagated child's differing input can
// only have come in through its enclosing op's inputs (possibly reshaped on the way, so the
// digests need not match): an enclosing op that is itself propagated carries it. An argument
// must reach the enclosing op as the same argument.
bool CarriesCause(const OpRecord& up, const NumericDivergence& up_diff, bool up_diverges,
                  const NumericDivergence& n, const std::vector<Digest128>& cause) {
  if (n.verdict == Verdict::kPropagated) {
    return up_diverges && up_diff.verdict == Verdict::kPropagated;
  }
  for (const ArgRecord& arg : up.inputs) {
    if (arg.kind != ArgKind::kScalar && arg.kind != ArgKind::kTensor) continue;
    if (std::find(cause.begin(), cause.end(), arg.digest) != cause.end()) return true;
  }
  return false;
}

// Nested ops come before their enclosing op, so the first divergent record is the innermost.
// When its cause (a differing input tensor, or a differing argument) reached it through
// enclosing ops, report the outermost of those that also diverges with the same verdict: the
// op the user called (aten::mul for `grad * scale`, not the dtype conversion inside it). A
// culprit whose arguments all match stays innermost: the precise kernel. Then list what
// encloses the chosen op. Only enclosing ops paired with each other are climbed.
void Settle(const RankTrace& ta, const StepOps& sa, const RankTrace& tb, const StepOps& sb,
            const StepAlignment& alignment, const ToleranceJudge* judge, NumericDivergence* n) {
  const std::vector<Digest128> cause = Cause(*n);
  std::optional<size_t> pa = ParentIndex(sa.ops, n->a.index);
  std::optional<size_t> pb = ParentIndex(sb.ops, n->b.index);
  NumericDivergence chosen = *n;
  while (!cause.empty() && pa && pb && ta.Str(sa.ops[*pa].op) == tb.Str(sb.ops[*pb].op) &&
         alignment.Paired(*pa, *pb)) {
    NumericDivergence up;
    const bool up_diverges =
        CompareOp(ta, sa, *pa, tb, sb, *pb, judge, &up) == OpOutcome::kDiverges;
    if (!CarriesCause(sa.ops[*pa], up, up_diverges, *n, cause)) break;
    if (up_diverges && up.verdict == n->verdict) chosen = std::move(up);
    pa = ParentIndex(sa.ops, *pa);
    pb = ParentIndex(sb.ops, *pb);
  }
  *n = std::move(chosen);
  for (std::optional<size_t> up = ParentIndex(sa.ops, n->a.index); up;
       up = ParentIndex(sa.ops, *up)) {
    n->enclosing.push_back(OpLocation{sa.step, *up, &sa.ops[*up]});
  }
}

// The depth-0 op enclosing ops[index] (itself at depth 0).
size_t OutermostIndex(const std::vector<OpRecord>& ops, size_t index) {
  for (std::optional<size_t> up = index; up; up = ParentIndex(ops, *up)) index = *up;
  return index;
}

// Whether a top-level op has a result that can vouch for what ran inside it. One that returns
// nothing (DDP's reducer::copy_bucket_to_grad, which writes the gradients through a nested
// copy_) cannot: its equality says nothing about what it wrote.
bool HasResult(const OpRecord& op) { return !op.outputs.empty(); }

// A nested op whose enclosing top-level op has identical inputs and outputs in both runs
// did not change the training: differing values inside it are scratch memory a kernel read
// before overwriting it (or an internal path), not a divergence.
bool InsideCleanTopLevelOp(const RankTrace& ta, const StepOps& sa, size_t ia, const RankTrace& tb,
                           const StepOps& sb, size_t ib, const StepAlignment& alignment,
                           const ToleranceJudge* judge) {
  if (sa.ops[ia].depth == 0 || sb.ops[ib].depth == 0) return false;
  const size_t top_a = OutermostIndex(sa.ops, ia);
  const size_t top_b = OutermostIndex(sb.ops, ib);
  if (top_a == ia || top_b == ib || sa.ops[top_a].depth != 0 || sb.ops[top_b].depth != 0 ||
      ta.Str(sa.ops[top_a].op) != tb.Str(sb.ops[top_b].op) || !alignment.Paired(top_a, top_b) ||
      !HasResult(sa.ops[top_a])) {
    return false;
  }
  NumericDivergence unused;
  return CompareOp(ta, sa, top_a, tb, sb, top_b, judge, &unused) != OpOutcome::kDiverges;
}

// The same rule for ops without counterpart: is every op of `block` nested inside a paired
// top-level op whose inputs and outputs are identical in both runs? `clean` caches the
// answer by A's top-level op.
bool BlockInsideCleanOps(const RankTrace& ta, const StepOps& sa, const RankTrace& tb,
                         const StepOps& sb, const StepAlignment& alignment, const OpBlock& block,
                         const ToleranceJudge* judge, std::unordered_map<size_t, bool>* clean) {
  const StepOps* steps[2] = {&sa, &sb};
  const size_t begin[2] = {block.index_a, block.index_b};
  const size_t count[2] = {block.count_a, block.count_b};
  for (int side = 0; side < 2; ++side) {
    const std::vector<OpRecord>& ops = steps[side]->ops;
    for (size_t op_idx = begin[side]; op_idx < begin[side] + count[side]; ++op_idx) {
      size_t top = op_idx;
      for (std::optional<size_t> up = alignment.Parent(side, top); up;
           up = alignment.Parent(side, *up)) {
        top = *up;
      }
      const std::optional<size_t> partner = alignment.Partner(side, top);
      if (top == op_idx || ops[top].depth != 0 || !partner || !HasResult(ops[top])) {
        return false;
      }
      const size_t top_a = side == 0 ? top : *partner;
      const size_t top_b = side == 0 ? *partner : top;
      auto [known, added] = clean->emplace(top_a, false);
      if (added) {
        NumericDivergence unused;
        known->second =
            CompareOp(ta, sa, top_a, tb, sb, top_b, judge, &unused) != OpOutcome::kDiverges;
      }
      if (!known->second) return false;
    }
  }
  return true;
}

// A block of ops without counterpart that are all input-pipeline ops: DataLoader work whose
// place among the training's ops depends on when worker batches arrived. Not a difference.
bool InputPipelineOnly(const StepOps& sa, const StepOps& sb, const OpBlock& block) {
  for (size_t op_idx = block.index_a; op_idx < block.index_a + block.count_a; ++op_idx) {
    if (sa.ops[op_idx].phase != Phase::kInput) return false;
  }
  for (size_t op_idx = block.index_b; op_idx < block.index_b + block.count_b; ++op_idx) {
    if (sb.ops[op_idx].phase != Phase::kInput) return false;
  }
  return true;
}

// A block of ops without counterpart that are all upguard::state, in one run only: the other
// run was recorded without the model state (an upguard from before it).
bool ModelStateOnly(const RankTrace& ta, const StepOps& sa, const RankTrace& tb, const StepOps& sb,
                    const OpBlock& block) {
  if ((block.count_a == 0) == (block.count_b == 0)) return false;
  for (size_t op_idx = block.index_a; op_idx < block.index_a + block.count_a; ++op_idx) {
    if (ta.Str(sa.ops[op_idx].op) != kStateOp) return false;
  }
  for (size_t op_idx = block.index_b; op_idx < block.index_b + block.count_b; ++op_idx) {
    if (tb.Str(sb.ops[op_idx].op) != kStateOp) return false;
  }
  return true;
}

// Counts an op pair whose differing slots are all within tolerance.
void NoteWithin(const NumericDivergence& within, const RankTrace& ta, const ToleranceJudge& judge,
                ToleranceSummary* summary) {
  if (summary->within_ops++ > 0) return;
  summary->first_within_a = within.a;
  summary->first_within_b = within.b;
  summary->first_within_tolerance =
      judge.Describe(ta.Str(within.a.op->op), ta.Str(within.a.op->module));
}

// Walks one step of both runs: pairs their ops (in place, or aligned when the op names differ),
// adds the ops without counterpart to `structure`, and compares the pairs in order up to the
// first numerical divergence that is not allowed (`allowed`: null without a tolerance).
// `start` ops at the beginning of both steps are known to be equal.
Status WalkStep(const RankTrace& ta, const std::shared_ptr<const StepOps>& step_a,
                const RankTrace& tb, const std::shared_ptr<const StepOps>& step_b, size_t start,
                const DiffOptions& options, OpKeyer* keyer, StructureBuilder* structure,
                AllowedTracker* allowed, RankDiff* diff) {
  const ToleranceJudge* judge = options.tolerance.get();
  const StepOps& sa = *step_a;
  const StepOps& sb = *step_b;
  const StepAlignment alignment = SameOpNames(ta, sa, tb, sb, start)
                                      ? StepAlignment::Positional(start, sa.ops.size())
                                      : StepAlignment::Align(keyer, sa, sb, start, options.align);
  bool hold = false;
  if (!alignment.blocks().empty()) {
    std::unordered_map<size_t, bool> clean;
    std::vector<bool> inside_clean;
    std::vector<bool> skipped;
    for (const OpBlock& block : alignment.blocks()) {
      inside_clean.push_back(BlockInsideCleanOps(ta, sa, tb, sb, alignment, block, judge, &clean));
      const bool state_only = ModelStateOnly(ta, sa, tb, sb, block);
      if (state_only && !diff->state_in_one_run) {
        diff->state_in_one_run = true;
        diff->notes.push_back("only " + (block.count_a > 0 ? ta : tb).path +
                              " recorded the model state at each step's end (the other was "
                              "recorded by an older upguard): the model state is not compared");
      }
      skipped.push_back(state_only || InputPipelineOnly(sa, sb, block));
    }
    hold = structure->AddStep(ta, sa, tb, sb, alignment, inside_clean, skipped);
  }
  for (size_t pair_idx = 0; pair_idx < alignment.pair_count(); ++pair_idx) {
    const KeyMatch pair = alignment.pair(pair_idx);
    // The input pipeline is not compared by position (trace.md §4.2, phase input).
    if (sa.ops[pair.a].phase == Phase::kInput || sb.ops[pair.b].phase == Phase::kInput) continue;
    NumericDivergence numeric;
    const OpOutcome outcome = CompareOp(ta, sa, pair.a, tb, sb, pair.b, judge, &numeric);
    if (outcome == OpOutcome::kSame) continue;
    if (outcome == OpOutcome::kLatent) {
      // Like a nested difference, a latent one inside an equal top-level op changed nothing.
      if (!diff->latent &&
          !InsideCleanTopLevelOp(ta, sa, pair.a, tb, sb, pair.b, alignment, judge)) {
        numeric.enclosing.clear();
        for (std::optional<size_t> up = ParentIndex(sa.ops, pair.a); up;
             up = ParentIndex(sa.ops, *up)) {
          numeric.enclosing.push_back(OpLocation{sa.step, *up, &sa.ops[*up]});
        }
        diff->latent = std::move(numeric);
        hold = true;
      }
      continue;
    }
    if (outcome == OpOutcome::kWithin) {
      hold |= diff->tolerance.within_ops == 0;  // the first one is reported
      NoteWithin(numeric, ta, *judge, &diff->tolerance);
      if (allowed != nullptr) allowed->NoteWithin(numeric);
      continue;
    }
    if (InsideCleanTopLevelOp(ta, sa, pair.a, tb, sb, pair.b, alignment, judge)) continue;
    // Allowed nondeterminism, at the innermost record or at the op the report settles on.
    const auto absorbed = [&] {
      const size_t listed = diff->tolerance.listed();
      if (allowed == nullptr || !allowed->Absorb(ta, sa, numeric, &diff->tolerance)) return false;
      hold |= diff->tolerance.listed() > listed;  // listed ops point into both steps
      return true;
    };
    if (absorbed()) continue;
    Settle(ta, sa, tb, sb, alignment, judge, &numeric);
    if (absorbed()) continue;
    if (numeric.first_bad_input) {
      const ArgComparison& slot = numeric.inputs[*numeric.first_bad_input];
      if (slot.a != nullptr) {
        ASSIGN_OR_RETURN(numeric.producer_a,
                         FindProducer(ta, numeric.a, slot.a->digest, &diff->held_steps));
      }
      if (slot.b != nullptr) {
        ASSIGN_OR_RETURN(numeric.producer_b,
                         FindProducer(tb, numeric.b, slot.b->digest, &diff->held_steps));
      }
      for (int side = 0; side < 2; ++side) {
        Producer& producer = side == 0 ? numeric.producer_a : numeric.producer_b;
        producer.unpaired = producer.found && structure->Unpaired(side, producer.location.step,
                                                                  producer.location.index);
      }
    }
    diff->numeric = std::move(numeric);
    hold = true;
    break;
  }
  if (hold) {
    diff->held_steps.push_back(step_a);
    diff->held_steps.push_back(step_b);
  }
  return Status::Ok();
}

// The verdict of a rank: its first numerical divergence, unless an op that only one run ran
// produced the differing input (then that structural difference is the cause); else structural
// when a block counts; else identical.
Verdict RankVerdict(const RankDiff& diff) {
  if (diff.latent) return Verdict::kLatent;  // found before any numerical divergence
  if (diff.numeric) {
    const NumericDivergence& n = *diff.numeric;
    const bool caused_by_structure =
        n.verdict == Verdict::kPropagated && (n.producer_a.unpaired || n.producer_b.unpaired);
    if (!caused_by_structure || !diff.structural) return n.verdict;
  }
  return diff.structural ? Verdict::kStructural : Verdict::kIdentical;
}

bool StepsIdentical(const StepInfo& sa, const StepInfo& sb) {
  return sa.end && sb.end && sa.end->op_count == sb.end->op_count &&
         sa.end->digest == sb.end->digest;
}

// From version 3 on, a step digest covers exactly what the comparison compares (trace.md §5.4):
// differing digests mean some compared op differs.
constexpr uint16_t kFirstComparableDigestVersion = 3;

bool DigestsDiffer(const RankTrace& ta, const StepInfo& sa, const RankTrace& tb,
                   const StepInfo& sb) {
  return ta.version >= kFirstComparableDigestVersion && ta.version == tb.version && sa.end &&
         sb.end && sa.end->digest != sb.end->digest;
}

// A step cut short is compared with the other run's ops up to the same count: the ops the
// other run went on to record are not structural differences, they are what the process
// never reached. A step is cut short when it is its trace's last step, has no StepEnd record
// and holds fewer ops than the other run's: the process was killed inside it, or the program
// died of an exception there (e.g. in a collective whose peer had died) and upguard closed the
// trace on the way out without ending the step (trace.md §5.5).
void CutToCommonPrefix(const RankTrace& ta, bool a_last, std::shared_ptr<const StepOps>* a,
                       const RankTrace& tb, bool b_last, std::shared_ptr<const StepOps>* b,
                       std::vector<std::string>* notes) {
  const size_t na = (*a)->ops.size();
  const size_t nb = (*b)->ops.size();
  const bool a_cut = !(*a)->end && a_last && na < nb;
  const bool b_cut = !(*b)->end && b_last && nb < na;
  if (a_cut == b_cut) return;
  std::shared_ptr<const StepOps>& longer = a_cut ? *b : *a;
  const size_t count = (a_cut ? *a : *b)->ops.size();
  notes->push_back("step " + std::to_string((*a)->step) + " of " + (a_cut ? ta : tb).path +
                   " stops after " + std::to_string(count) +
                   " ops (the trace ends there); compared with the other run's first " +
                   std::to_string(count));
  if (longer->ops.size() <= count) return;
  auto cut = std::make_shared<StepOps>();
  cut->step = longer->step;
  cut->ops.assign(longer->ops.begin(), longer->ops.begin() + count);
  longer = std::move(cut);
}

}  // namespace

StatusOr<RankDiff> DiffRank(const RankTrace& ta, const RankTrace& tb, const DiffOptions& options) {
  RankDiff diff;
  diff.rank = ta.rank;
  const uint64_t cuts = ta.cuts() + tb.cuts();
  const TraceIndex* index_a = ta.store->index();
  const TraceIndex* index_b = tb.store->index();
  std::optional<RawComparer> raw;  // both traces mapped: compare ops before decoding them
  OpKeyer keyer(ta, tb);
  StructureBuilder structure;
  std::optional<AllowedTracker> allowed;
  if (options.tolerance) allowed.emplace(*options.tolerance);
  if (index_a != nullptr && index_b != nullptr) raw.emplace(ta.strings(), tb.strings());
  std::optional<uint32_t> digests_differ;  // the first step whose step digests differ
  // Steps are indexed as the walk reaches them, so a step is compared while its pages are
  // mapped and cached.
  for (size_t ia = 0;; ++ia) {
    ASSIGN_OR_RETURN(bool more, ta.HasStep(ia));
    if (!more) break;
    const StepInfo sa = ta.steps()[ia];
    ASSIGN_OR_RETURN(const std::optional<size_t> ib, tb.FindStep(sa.step));
    if (!ib) continue;
    const StepInfo sb = tb.steps()[*ib];
    if (!diff.first_step) diff.first_step = sa.step;
    diff.last_step = sa.step;
    ++diff.steps_compared;
    if (StepsIdentical(sa, sb)) {
      ++diff.steps_identical;
      continue;
    }
    if (!digests_differ && DigestsDiffer(ta, sa, tb, sb)) digests_differ = sa.step;
    // Leading ops equal in their bytes need no decoding; a step that is all such ops has
    // nothing to walk.
    uint64_t equal = 0;
    if (raw) {
      equal = raw->EqualPrefix(*index_a, ia, *index_b, *ib);
      if (equal == sa.op_count && equal == sb.op_count) {
        index_a->ReleaseStep(ia);
        index_b->ReleaseStep(*ib);
        continue;
      }
    }
    ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> ops_a, ta.Ops(ia));
    ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> ops_b, tb.Ops(*ib));
    if (ta.cuts() + tb.cuts() != cuts) return diff;
    ASSIGN_OR_RETURN(const bool a_goes_on, ta.HasStep(ia + 1));
    ASSIGN_OR_RETURN(const bool b_goes_on, tb.HasStep(*ib + 1));
    CutToCommonPrefix(ta, !a_goes_on, &ops_a, tb, !b_goes_on, &ops_b, &diff.notes);
    RETURN_IF_ERROR(WalkStep(ta, ops_a, tb, ops_b, equal, options, &keyer, &structure,
                             allowed ? &*allowed : nullptr, &diff));
    if (ta.cuts() + tb.cuts() != cuts) return diff;
    if (diff.numeric) break;
  }
  // Damage past the steps compared still counts: index both traces to the end.
  RETURN_IF_ERROR(ta.IndexAll());
  RETURN_IF_ERROR(tb.IndexAll());
  NoteIncomplete(ta, "compared", &diff.notes);
  NoteIncomplete(tb, "compared", &diff.notes);
  diff.structural = structure.first_counted();
  diff.structure = structure.Finish();
  diff.verdict = RankVerdict(diff);
  // The invariant: differing step digests are never "identical". Without a tolerance nothing
  // is excused that the digest covers, so a miss here is a gap in the diff, said plainly.
  if (diff.verdict == Verdict::kIdentical && digests_differ && !options.tolerance &&
      !diff.state_in_one_run) {
    diff.verdict = Verdict::kUnattributed;
    diff.unattributed_step = digests_differ;
  }
  return diff;
}

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kIdentical:
      return "identical";
    case Verdict::kCulprit:
      return "culprit";
    case Verdict::kPropagated:
      return "propagated";
    case Verdict::kStructural:
      return "structural";
    case Verdict::kRng:
      return "rng";
    case Verdict::kData:
      return "data";
    case Verdict::kLatent:
      return "latent";
    case Verdict::kUnattributed:
      return "unattributed";
    case Verdict::kState:
      return "state";
  }
  return "unknown";
}

}  // namespace upguard
