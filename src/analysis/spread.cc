#include "analysis/spread.h"

#include <algorithm>
#include <cmath>

#include "align/align_ops.h"
#include "diff/compare.h"
#include "diff/step_pair.h"

namespace upguard {
namespace {

struct Measure {
  bool differs = false, measured = false, nonfinite = false;
  double relative = 0;
};

Measure MeasureOutputs(const OpRecord& a, const OpRecord& b) {
  Measure out;
  const size_t count = std::min(a.outputs.size(), b.outputs.size());
  if (a.outputs.size() != b.outputs.size()) out.differs = true;
  for (size_t slot = 0; slot < count; ++slot) {
    const ArgRecord& x = a.outputs[slot];
    const ArgRecord& y = b.outputs[slot];
    bool compared = true;
    if (ArgsEqual(x, y, &compared)) continue;
    out.differs = true;
    if (!x.has_stats || !y.has_stats) continue;
    out.measured = true;
    if (x.stats.nan_count != y.stats.nan_count || x.stats.pos_inf_count != y.stats.pos_inf_count ||
        x.stats.neg_inf_count != y.stats.neg_inf_count) {
      out.nonfinite = true;
    }
    const double base = std::abs(x.stats.l2);
    const double gap = std::abs(x.stats.l2 - y.stats.l2);
    const double relative = base > 0 ? gap / base : (gap > 0 ? 1.0 : 0.0);
    out.relative = std::max(out.relative, relative);
  }
  // Inputs that differ with equal outputs do not make the op's outputs differ; arguments that
  // differ (an eps) show in the op's own outputs or not at all.
  return out;
}

// The step of the first divergence the verdict is about, and run A's op index there.
std::optional<std::pair<uint32_t, size_t>> DivergentOp(const RankDiff& diff) {
  if (diff.latent) return std::pair{diff.latent->a.step, diff.latent->a.index};
  if (diff.numeric) return std::pair{diff.numeric->a.step, diff.numeric->a.index};
  if (diff.structural) return std::pair{diff.structural->step, diff.structural->index_a};
  return std::nullopt;
}

struct StepPairOps {
  std::shared_ptr<const StepOps> a, b;
};

StatusOr<std::optional<StepPairOps>> Decode(const RankTrace& ta, const RankTrace& tb,
                                            uint32_t step) {
  ASSIGN_OR_RETURN(std::optional<size_t> ia, ta.FindStep(step));
  ASSIGN_OR_RETURN(std::optional<size_t> ib, tb.FindStep(step));
  if (!ia || !ib) return std::optional<StepPairOps>();
  ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> sa, ta.Ops(*ia));
  ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> sb, tb.Ops(*ib));
  return std::optional<StepPairOps>(StepPairOps{sa, sb});
}

// The step's loss: a fingerprint step's upguard::loss (its first input's mean), else the last
// one-value output of a forward op that reduced a larger tensor, before the step's first
// backward op (a heuristic: the loss of a usual step; a metric computed after it would be taken).
std::optional<double> Loss(const RankTrace& trace, const StepOps& step) {
  for (const OpRecord& op : step.ops) {
    if (trace.Str(op.op) != "upguard::loss") continue;
    for (const ArgRecord& arg : op.inputs) {
      if (arg.has_stats) return arg.stats.mean;
    }
  }
  auto numel = [](const ArgRecord& arg) {
    int64_t count = 1;
    for (int64_t size : arg.shape) count *= size;
    return count;
  };
  std::optional<double> loss;
  for (const OpRecord& op : step.ops) {
    if (op.phase == Phase::kBackward) break;
    if (op.phase != Phase::kForward) continue;
    // A reduction to one value (a loss), not a scalar made from a scalar (the ones_like that
    // seeds backward).
    const bool reduces = std::any_of(op.inputs.begin(), op.inputs.end(), [&](const ArgRecord& in) {
      return in.kind == ArgKind::kTensor && numel(in) > 1;
    });
    for (const ArgRecord& out : op.outputs) {
      if (reduces && out.kind == ArgKind::kTensor && out.has_stats && numel(out) == 1 &&
          out.stats.finite_count == 1) {
        loss = out.stats.mean;
      }
    }
  }
  return loss;
}

// The largest relative L2 difference over the model's tensors at the step's end.
std::optional<double> StateDifference(const RankTrace& ta, const StepOps& sa, const RankTrace& tb,
                                      const StepOps& sb) {
  auto find = [](const RankTrace& trace, const StepOps& step) -> const OpRecord* {
    for (auto op = step.ops.rbegin(); op != step.ops.rend(); ++op) {
      const std::string& name = trace.Str(op->op);
      if (name == kStateOp || name == "upguard::grads") return &*op;
    }
    return nullptr;
  };
  const OpRecord* a = find(ta, sa);
  const OpRecord* b = find(tb, sb);
  if (a == nullptr || b == nullptr || a->inputs.size() != b->inputs.size()) return std::nullopt;
  double largest = 0;
  for (size_t slot = 0; slot < a->inputs.size(); ++slot) {
    const ArgRecord& x = a->inputs[slot];
    const ArgRecord& y = b->inputs[slot];
    bool compared = true;
    if (ArgsEqual(x, y, &compared) || !x.has_stats || !y.has_stats) continue;
    const double base = std::abs(x.stats.l2);
    largest = std::max(largest, base > 0 ? std::abs(x.stats.l2 - y.stats.l2) / base : 1.0);
  }
  return largest;
}

StepPair Pair(OpKeyer* keyer, const RankTrace& ta, const StepOps& sa, const RankTrace& tb,
              const StepOps& sb, const AlignOptions& options) {
  return StepPair(RunStep{ta, sa}, RunStep{tb, sb},
                  SameOpNames(ta, sa, tb, sb, 0) ? StepAlignment::Positional(0, sa.ops.size())
                                                 : StepAlignment::Align(keyer, sa, sb, 0, options),
                  /*judge=*/nullptr);
}

// The op the diff's report names for a difference at the pair `match` (its index in run A),
// or none where the diff sees none: an op whose arguments differ without a value to show it,
// or one nested in a top-level op identical in both runs. A divergence is settled as the diff
// settles it (StepPair::Settle): on the op the user called when the cause reached the nested
// op through it (aten::layer_norm around the aten::native_layer_norm its eps reached, recorded
// first), so the step table, the module tree and the verdict card give the op one number.
std::optional<size_t> NamedIndex(const StepPair& pair, KeyMatch match) {
  NumericDivergence numeric;
  const OpOutcome outcome = pair.CompareOp(match, &numeric);
  if (outcome == OpOutcome::kSame || pair.InsideCleanTopLevelOp(match)) return std::nullopt;
  if (outcome == OpOutcome::kDiverges) pair.Settle(&numeric);
  return numeric.a.index;
}

}  // namespace

StatusOr<RankSpread> ComputeSpread(const Run& a, const Run& b, const RankDiff& diff,
                                   const AlignOptions& options) {
  RankSpread spread;
  spread.rank = diff.rank;
  if (diff.rank < 0 || size_t(diff.rank) >= a.ranks.size() || size_t(diff.rank) >= b.ranks.size()) {
    return spread;
  }
  const RankTrace& ta = a.ranks[size_t(diff.rank)];
  const RankTrace& tb = b.ranks[size_t(diff.rank)];
  const std::optional<std::pair<uint32_t, size_t>> divergent = DivergentOp(diff);
  OpKeyer keyer(ta, tb);
  // Every common step from the first compared: identical by digest, else where it first
  // differs, with its loss and model-state difference.
  if (diff.first_step) {
    RETURN_IF_ERROR(ta.IndexAll());
    for (size_t ia = 0; ia < ta.steps().size() && spread.steps.size() < kSpreadSteps; ++ia) {
      const StepInfo info_a = ta.steps()[ia];
      if (info_a.step < *diff.first_step) continue;
      ASSIGN_OR_RETURN(std::optional<size_t> ib, tb.FindStep(info_a.step));
      if (!ib) continue;
      const StepInfo info_b = tb.steps()[*ib];
      if (IsFingerprintStep(info_a.end) != IsFingerprintStep(info_b.end)) continue;
      SpreadStep row;
      row.step = info_a.step;
      row.ops = info_a.op_count;
      row.identical = StepsIdentical(info_a, info_b);
      ASSIGN_OR_RETURN(std::optional<StepPairOps> decoded, Decode(ta, tb, info_a.step));
      if (decoded) {
        const StepOps& sa = *decoded->a;
        const StepOps& sb = *decoded->b;
        row.loss_a = Loss(ta, sa);
        row.loss_b = Loss(tb, sb);
        row.state_relative = StateDifference(ta, sa, tb, sb);
        if (!row.identical) {
          const StepPair pair = Pair(&keyer, ta, sa, tb, sb, options);
          const StepAlignment& pairs = pair.alignment();
          for (size_t pair_idx = 0; pair_idx < pairs.pair_count() && !row.first_differing;
               ++pair_idx) {
            const KeyMatch match = pairs.pair(pair_idx);
            if (sa.ops[match.a].phase == Phase::kInput) continue;
            row.first_differing = NamedIndex(pair, match);
          }
        }
      }
      spread.steps.push_back(row);
    }
  }
  if (!divergent) return spread;
  ASSIGN_OR_RETURN(std::optional<StepPairOps> ops, Decode(ta, tb, divergent->first));
  if (!ops) return spread;
  spread.found = true;
  spread.step = divergent->first;
  spread.divergent_index = divergent->second;
  const StepOps& sa = *ops->a;
  const StepOps& sb = *ops->b;
  const StepPair pair = Pair(&keyer, ta, sa, tb, sb, options);
  const StepAlignment& pairs = pair.alignment();
  spread.ops.reserve(sa.ops.size());
  for (size_t index = 0; index < sa.ops.size(); ++index) {
    const OpRecord& op = sa.ops[index];
    SpreadOp row;
    row.index = index;
    row.named = index;
    row.op = ta.Str(op.op);
    row.module = ta.Str(op.module);
    row.phase = std::string(PhaseName(op.phase));
    row.depth = op.depth;
    const std::optional<size_t> partner = pairs.Partner(0, index);
    row.paired = partner.has_value();
    if (partner) {
      const Measure measure = MeasureOutputs(op, sb.ops[*partner]);
      row.differs = measure.differs;
      row.measured = measure.measured;
      row.relative = measure.relative;
      row.nonfinite = measure.nonfinite;
      // A nested op's difference is named at the op the diff's report climbs to.
      if (row.differs && op.depth > 0) {
        const KeyMatch match{static_cast<uint32_t>(index), static_cast<uint32_t>(*partner)};
        row.named = NamedIndex(pair, match).value_or(index);
      }
    }
    spread.ops.push_back(std::move(row));
  }
  for (size_t index = 0; index < sb.ops.size(); ++index) {
    if (!pairs.Partner(1, index)) ++spread.only_b;
  }
  return spread;
}

}  // namespace upguard
