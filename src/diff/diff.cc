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
#include "diff/step_pair.h"
#include "trace/trace_index.h"
#include "trace/unread_tally.h"

namespace upguard {
namespace {

constexpr size_t kProducerSearchLimit = 1 << 22;  // ops searched backwards for a producer

// The latest op before `before` (in step order) with a tensor output of digest `digest`. Decodes
// earlier steps on demand, newest first; the step holding the producer joins `held`.
// Whether `op` returns a view (an alias output) of `arg`'s dtype and shape.
bool MakesViewLike(const OpRecord& op, const ArgRecord& arg) {
  for (const ArgRecord& out : op.outputs) {
    if (out.kind == ArgKind::kAlias && out.dtype == arg.dtype && out.shape == arg.shape) {
      return true;
    }
  }
  return false;
}

StatusOr<Producer> FindProducer(const RankTrace& trace, const OpLocation& before,
                                const ArgRecord& wanted,
                                std::vector<std::shared_ptr<const StepOps>>* held) {
  const Digest128& digest = wanted.digest;
  Producer producer;
  std::shared_ptr<const StepOps> view_step;  // holds producer.view_maker's op
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
          producer.view_maker.reset();  // found by its values: no guess
          held->push_back(std::move(step));
          return producer;
        }
      }
      // aten::lift_fresh and its kin take a tensor in from Python (torch.tensor, from_numpy):
      // what they return entered from outside, it is no view of a result.
      if (!producer.view_maker && step->step == before.step && MakesViewLike(op, wanted) &&
          trace.Str(op.op).rfind("aten::lift", 0) != 0) {
        producer.view_maker = OpLocation{step->step, op_idx, &op};
        view_step = step;
      }
      if (++searched >= kProducerSearchLimit) break;
    }
    if (searched >= kProducerSearchLimit) break;
  }
  if (view_step) held->push_back(std::move(view_step));
  return producer;
}

// Counts an op pair whose differing slots are all within tolerance.
void NoteWithin(const NumericDivergence& within, const RankTrace& ta, const ToleranceJudge& judge,
                ToleranceSummary* summary) {
  if (summary->within_ops++ > 0) return;
  summary->first_within_a = within.a;
  summary->first_within_b = within.b;
  summary->first_within_tolerance = judge.Describe(
      ta.Str(within.a.op->op), ta.Str(within.a.op->module), PhaseName(within.a.op->phase));
}

// The walk of one rank: the two traces and the options, and what it carries from step to step
// (the op keys, the structural differences, the allowed nondeterminism, the result).
class RankWalk {
 public:
  RankWalk(const RankTrace& ta, const RankTrace& tb, const DiffOptions& options, RankDiff* diff)
      : ta_(ta), tb_(tb), options_(options), keyer_(ta, tb), diff_(diff) {
    if (options.tolerance) allowed_.emplace(*options.tolerance);
  }

  // Walks one step of both runs: pairs their ops (in place, or aligned when the op names
  // differ), adds the ops without counterpart to the structure, and compares the pairs in order
  // up to the first numerical divergence that is not allowed. `start` ops at the beginning of
  // both steps are known to be equal.
  Status WalkStep(const std::shared_ptr<const StepOps>& step_a,
                  const std::shared_ptr<const StepOps>& step_b, size_t start);

  // The structural differences found, into the result.
  void Finish() {
    diff_->structural = structure_.first_counted();
    diff_->structure = structure_.Finish();
  }

 private:
  const RankTrace& ta_;
  const RankTrace& tb_;
  const DiffOptions& options_;
  OpKeyer keyer_;
  StructureBuilder structure_;
  std::optional<AllowedTracker> allowed_;  // with a tolerance only
  RankDiff* diff_;
};

Status RankWalk::WalkStep(const std::shared_ptr<const StepOps>& step_a,
                          const std::shared_ptr<const StepOps>& step_b, size_t start) {
  const RankTrace& ta = ta_;
  const RankTrace& tb = tb_;
  RankDiff* diff = diff_;
  const StepOps& sa = *step_a;
  const StepOps& sb = *step_b;
  const StepPair pair(RunStep{ta, sa}, RunStep{tb, sb},
                      SameOpNames(ta, sa, tb, sb, start)
                          ? StepAlignment::Positional(start, sa.ops.size())
                          : StepAlignment::Align(&keyer_, sa, sb, start, options_.align),
                      options_.tolerance.get());
  bool hold = false;
  if (!pair.alignment().blocks().empty()) {
    std::unordered_map<size_t, bool> clean;
    std::vector<bool> inside_clean;
    std::vector<bool> skipped;
    for (const OpBlock& block : pair.alignment().blocks()) {
      inside_clean.push_back(pair.BlockInsideCleanOps(block, &clean));
      const bool state_only = pair.ModelStateOnly(block);
      if (state_only && !diff->state_in_one_run) {
        diff->state_in_one_run = true;
        diff->notes.push_back("only " + (block.count_a > 0 ? ta : tb).path +
                              " recorded the model state at each step's end (the other was "
                              "recorded by an older upguard): the model state is not compared");
      }
      skipped.push_back(state_only || pair.InputPipelineOnly(block));
    }
    hold = structure_.AddStep(pair, inside_clean, skipped);
  }
  for (size_t pair_idx = 0; pair_idx < pair.alignment().pair_count(); ++pair_idx) {
    const KeyMatch ops = pair.alignment().pair(pair_idx);
    // The input pipeline is not compared by position (trace.md §4.2, phase input).
    if (sa.ops[ops.a].phase == Phase::kInput || sb.ops[ops.b].phase == Phase::kInput) continue;
    NumericDivergence numeric;
    const OpOutcome outcome = pair.CompareOp(ops, &numeric);
    if (outcome == OpOutcome::kSame) continue;
    if (outcome == OpOutcome::kLatent) {
      // Like a nested difference, a latent one inside an equal top-level op changed nothing.
      if (!diff->latent && !pair.InsideCleanTopLevelOp(ops)) {
        numeric.enclosing.clear();
        for (std::optional<size_t> up = ParentIndex(sa.ops, ops.a); up;
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
      NoteWithin(numeric, ta, *options_.tolerance, &diff->tolerance);
      if (allowed_) allowed_->NoteWithin(numeric);
      continue;
    }
    if (pair.InsideCleanTopLevelOp(ops)) continue;
    // Allowed nondeterminism, at the innermost record or at the op the report settles on.
    const auto absorbed = [&] {
      const size_t listed = diff->tolerance.listed();
      if (!allowed_ || !allowed_->Absorb(ta, sa, numeric, &diff->tolerance)) return false;
      hold |= diff->tolerance.listed() > listed;  // listed ops point into both steps
      return true;
    };
    if (absorbed()) continue;
    pair.Settle(&numeric);
    if (absorbed()) continue;
    // A fingerprint step recorded no op that could have produced a differing input.
    const bool fingerprint = IsFingerprintStep(step_a->end);
    if (numeric.first_bad_input && !fingerprint) {
      const ArgComparison& slot = numeric.inputs[*numeric.first_bad_input];
      if (slot.a != nullptr) {
        ASSIGN_OR_RETURN(numeric.producer_a,
                         FindProducer(ta, numeric.a, *slot.a, &diff->held_steps));
      }
      if (slot.b != nullptr) {
        ASSIGN_OR_RETURN(numeric.producer_b,
                         FindProducer(tb, numeric.b, *slot.b, &diff->held_steps));
      }
      for (int side = 0; side < 2; ++side) {
        Producer& producer = side == 0 ? numeric.producer_a : numeric.producer_b;
        producer.unpaired = producer.found && structure_.Unpaired(side, producer.location.step,
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

// torch.compile's ops as upguard records them: the compiled frame's scope, the compiled graph
// and the kernels Inductor generated for it (python/upguard/_compiled.py).
bool IsCompiledOp(const OpRecord& op, const RankTrace& trace) {
  const std::string name = trace.Str(op.op);
  return name == "Torch-Compiled Region" || name.rfind("inductor::", 0) == 0;
}

int CompiledOnly(const StructuralDivergence& s, const RankTrace& ta, const RankTrace& tb) {
  auto any = [](const std::vector<const OpRecord*>& ops, const RankTrace& trace) {
    return std::any_of(ops.begin(), ops.end(),
                       [&](const OpRecord* op) { return IsCompiledOp(*op, trace); });
  };
  const bool a = any(s.only_a, ta);
  const bool b = any(s.only_b, tb);
  return a == b ? 0 : (a ? 1 : 2);
}

void NoteCompiledBlocks(const RankTrace& ta, const RankTrace& tb, RankDiff* diff) {
  if (diff->structural) diff->structural->compiled_only = CompiledOnly(*diff->structural, ta, tb);
  if (!diff->structure) return;
  for (StructuralDivergence& block : diff->structure->first_blocks) {
    block.compiled_only = CompiledOnly(block, ta, tb);
  }
}

// Whether the structural difference `s` comes no later than the numerical divergence `n`.
// Version 6 writes each step's unread tensors into its StepEnd (trace.md §5.4); an older trace,
// or a step that never ended, is tallied from its decoded ops.
constexpr uint16_t kFirstTalliedVersion = 6;

Status TallyUnread(const RankTrace& trace, size_t step_idx, const StepInfo& step,
                   UnreadTally* tally) {
  if (trace.version >= kFirstTalliedVersion && step.end) {
    tally->Merge(step.end->unread);
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> ops, trace.Ops(step_idx));
  for (const OpRecord& op : ops->ops) tally->AddOp(op, trace.strings());
  return Status::Ok();
}

bool NoLater(const StructuralDivergence& s, const NumericDivergence& n) {
  return s.step < n.a.step || (s.step == n.a.step && s.index_a <= n.a.index);
}

// The verdict of a rank: its first numerical divergence, unless an op that only one run ran
// produced the differing input (then that structural difference is the cause), or one run ran
// compiled code where the other ran eager ops before it (what follows is not comparable op by
// op); else structural when a block counts; else identical.
Verdict RankVerdict(const RankDiff& diff) {
  if (diff.latent) return Verdict::kLatent;  // found before any numerical divergence
  if (diff.numeric) {
    const NumericDivergence& n = *diff.numeric;
    // An output differs and an input was not read: no culprit can be named there.
    if (n.verdict == Verdict::kCulprit && n.unread_inputs > 0 && !diff.structural) {
      return Verdict::kUnverified;
    }
    const bool caused_by_structure =
        n.verdict == Verdict::kPropagated && (n.producer_a.unpaired || n.producer_b.unpaired);
    const bool after_compiled =
        diff.structural && diff.structural->compiled_only != 0 && NoLater(*diff.structural, n);
    if ((!caused_by_structure && !after_compiled) || !diff.structural) return n.verdict;
  }
  return diff.structural ? Verdict::kStructural : Verdict::kIdentical;
}

// From version 3 on, a step digest covers exactly what the comparison compares (trace.md §5.4):
// differing digests mean some compared op differs. Version 4 (phase recompute) left the digest
// as version 3 defines it, so 3 and 4 compare with each other; version 5 places collectives
// among the compared ops only, so it compares with 5 only (equal digests still mean equal
// steps: StepsIdentical).
constexpr uint16_t kFirstComparableDigestVersion = 3;
constexpr uint16_t kCollectivesAmongComparedOps = 5;

bool DigestsDiffer(const RankTrace& ta, const StepInfo& sa, const RankTrace& tb,
                   const StepInfo& sb) {
  const bool same_definition =
      (ta.version >= kCollectivesAmongComparedOps) == (tb.version >= kCollectivesAmongComparedOps);
  return ta.version >= kFirstComparableDigestVersion &&
         tb.version >= kFirstComparableDigestVersion && same_definition && sa.end && sb.end &&
         sa.end->digest != sb.end->digest;
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

bool StructureComesFirst(const RankDiff& diff) {
  if (diff.verdict != Verdict::kPropagated || !diff.numeric || !diff.structural) return false;
  const NumericDivergence& n = *diff.numeric;
  const bool untraced = !n.producer_a.found || !n.producer_b.found;
  return untraced && NoLater(*diff.structural, n);
}

bool StepsIdentical(const StepInfo& sa, const StepInfo& sb) {
  return sa.end && sb.end && sa.end->op_count == sb.end->op_count &&
         sa.end->digest == sb.end->digest;
}

StatusOr<RankDiff> DiffRank(const RankTrace& ta, const RankTrace& tb, const DiffOptions& options) {
  RankDiff diff;
  diff.rank = ta.rank;
  const uint64_t cuts = ta.cuts() + tb.cuts();
  const TraceIndex* index_a = ta.store->index();
  const TraceIndex* index_b = tb.store->index();
  std::optional<RawComparer> raw;  // both traces mapped: compare ops before decoding them
  RankWalk walk(ta, tb, options, &diff);
  UnreadTally unread_a;  // the steps compared
  UnreadTally unread_b;
  if (index_a != nullptr && index_b != nullptr) raw.emplace(ta.strings(), tb.strings());
  std::optional<uint32_t> digests_differ;  // the first step whose step digests differ
  uint64_t mixed = 0;  // steps one run fingerprinted (record --fingerprint) and one recorded
  uint32_t mixed_first = 0;
  // Steps are indexed as the walk reaches them, so a step is compared while its pages are
  // mapped and cached.
  for (size_t ia = 0;; ++ia) {
    ASSIGN_OR_RETURN(bool more, ta.HasStep(ia));
    if (!more) break;
    const StepInfo sa = ta.steps()[ia];
    ASSIGN_OR_RETURN(const std::optional<size_t> ib, tb.FindStep(sa.step));
    if (!ib) continue;
    const StepInfo sb = tb.steps()[*ib];
    if (IsFingerprintStep(sa.end) !=
        IsFingerprintStep(sb.end)) {  // different ops were recorded: not comparable
      if (mixed++ == 0) mixed_first = sa.step;
      continue;
    }
    if (!diff.first_step) diff.first_step = sa.step;
    diff.last_step = sa.step;
    ++diff.steps_compared;
    RETURN_IF_ERROR(TallyUnread(ta, ia, sa, &unread_a));
    RETURN_IF_ERROR(TallyUnread(tb, *ib, sb, &unread_b));
    if (options.progress) options.progress(ta.rank, sa.step, sa.op_count);
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
    RETURN_IF_ERROR(walk.WalkStep(ops_a, ops_b, equal));
    if (ta.cuts() + tb.cuts() != cuts) return diff;
    if (diff.numeric) break;
  }
  // Damage past the steps compared still counts: index both traces to the end.
  RETURN_IF_ERROR(ta.IndexAll());
  RETURN_IF_ERROR(tb.IndexAll());
  if (mixed > 0) {
    diff.notes.push_back(std::to_string(mixed) + " step(s) from step " +
                         std::to_string(mixed_first) +
                         " on were recorded in full in one run and as a fingerprint in the "
                         "other (record --fingerprint --steps): not compared; record both runs "
                         "with the same --steps");
  }
  NoteIncomplete(ta, "compared", &diff.notes);
  NoteIncomplete(tb, "compared", &diff.notes);
  walk.Finish();
  NoteCompiledBlocks(ta, tb, &diff);
  diff.verdict = RankVerdict(diff);
  diff.unread_a = unread_a.Take();
  diff.unread_b = unread_b.Take();
  // What was not read was not compared: never identical then. (Before the digest invariant
  // below: a tensor read in one run and not in the other makes the step digests differ.)
  if (diff.verdict == Verdict::kIdentical &&
      (HiddenTotal(diff.unread_a).ops > 0 || HiddenTotal(diff.unread_b).ops > 0)) {
    diff.verdict = Verdict::kUnverified;
  }
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
    case Verdict::kStep:
      return "step";
    case Verdict::kUnverified:
      return "unverified";
  }
  return "unknown";
}

}  // namespace upguard
