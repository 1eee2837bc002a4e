#include "analysis/nan_origin.h"

#include <algorithm>

namespace upguard {
namespace {

// The non-finite kinds a list of arguments holds, and whether every tensor among them is known
// (has statistics, or a dtype that has none because it cannot hold NaN or Inf).
struct ArgsKinds {
  uint8_t kinds = 0;
  bool all_known = true;
};

// The kinds one argument holds; nullopt when unknown. Views, uninitialized buffers, scalars and
// None hold no values here.
std::optional<uint8_t> ArgKinds(const ArgRecord& arg) {
  if (IsUnreadKind(arg.kind)) return std::nullopt;
  if (arg.kind != ArgKind::kTensor) return 0;
  if (arg.has_stats) return NonFiniteKinds(arg.stats);
  if (DTypeIsFloating(arg.dtype)) return std::nullopt;
  return 0;
}

ArgsKinds Inspect(const std::vector<ArgRecord>& args) {
  ArgsKinds result;
  for (const ArgRecord& arg : args) {
    std::optional<uint8_t> kinds = ArgKinds(arg);
    if (kinds) {
      result.kinds |= *kinds;
    } else {
      result.all_known = false;
    }
  }
  return result;
}

// The first argument holding one of `kinds`.
size_t FirstHolding(const std::vector<ArgRecord>& args, uint8_t kinds) {
  for (size_t arg_idx = 0; arg_idx < args.size(); ++arg_idx) {
    if ((ArgKinds(args[arg_idx]).value_or(0) & kinds) != 0) return arg_idx;
  }
  return 0;
}

// What the op made: every kind its outputs hold when its inputs are finite; when its inputs
// hold some, only a NaN they did not hold (an infinity from an infinity, of either sign, is
// carried, not made: `-x`, `x * -1`).
uint8_t MadeKinds(uint8_t input_kinds, uint8_t output_kinds) {
  if (input_kinds == 0) return output_kinds;
  return output_kinds & kNanKind & ~input_kinds;
}

// The ops enclosing ops[index], nearest first: in completion order, each is the first later
// op nested less deeply than the one before.
std::vector<OpLocation> EnclosingOps(const StepOps& step, size_t index) {
  std::vector<OpLocation> enclosing;
  uint32_t depth = step.ops[index].depth;
  for (size_t op_idx = index + 1; op_idx < step.ops.size() && depth > 0; ++op_idx) {
    if (step.ops[op_idx].depth >= depth) continue;
    depth = step.ops[op_idx].depth;
    enclosing.push_back(OpLocation{step.step, op_idx, &step.ops[op_idx]});
  }
  return enclosing;
}

// A nested finding whose top-level op outputs only known finite tensors never reached the
// program. Unknown when the trace ends before that op.
bool Contained(const std::vector<OpLocation>& enclosing) {
  if (enclosing.empty() || enclosing.back().op->depth != 0) return false;
  const std::vector<ArgRecord>& outputs = enclosing.back().op->outputs;
  const ArgsKinds kinds = Inspect(outputs);
  const bool any_tensor = std::any_of(outputs.begin(), outputs.end(), [](const ArgRecord& arg) {
    return arg.kind == ArgKind::kTensor;
  });
  return any_tensor && kinds.all_known && kinds.kinds == 0;
}

// The non-finite kinds the op's scalar inputs are (`-inf`); `first` gets the first such input.
uint8_t ScalarKinds(const OpRecord& op, const StringTable& strings, std::optional<size_t>* first) {
  uint8_t all = 0;
  for (size_t arg_idx = 0; arg_idx < op.inputs.size(); ++arg_idx) {
    const ArgRecord& arg = op.inputs[arg_idx];
    if (arg.kind != ArgKind::kScalar) continue;
    const uint8_t kinds = ScalarNonFiniteKinds(strings.Get(arg.text));
    if (kinds != 0 && !*first) *first = arg_idx;
    all |= kinds;
  }
  return all;
}

// Scans one step; returns true once the rank has its finding. `seen` is the kinds earlier
// ops' outputs held.
bool ScanStep(const RankTrace& trace, const std::shared_ptr<const StepOps>& step, uint8_t* seen,
              RankNanScan* scan) {
  for (size_t op_idx = 0; op_idx < step->ops.size(); ++op_idx) {
    const OpRecord& op = step->ops[op_idx];
    ++scan->ops_scanned;
    const ArgsKinds inputs = Inspect(op.inputs);
    const ArgsKinds outputs = Inspect(op.outputs);
    NanFinding finding;
    finding.at = OpLocation{step->step, op_idx, &op};
    if ((inputs.kinds & ~*seen) != 0) {
      finding.kind = NanFindingKind::kEntered;
      finding.kinds = inputs.kinds & ~*seen;
      finding.arg_index = FirstHolding(op.inputs, finding.kinds);
    } else if (inputs.all_known && MadeKinds(inputs.kinds, outputs.kinds) != 0) {
      finding.kind = NanFindingKind::kProduced;
      finding.kinds = MadeKinds(inputs.kinds, outputs.kinds);
      finding.arg_index = FirstHolding(op.outputs, finding.kinds);
      finding.inputs_finite = inputs.kinds == 0;
      const uint8_t scalar_kinds = ScalarKinds(op, trace.strings(), &finding.scalar);
      if ((finding.kinds & ~scalar_kinds) == 0) {
        if (scan->deliberate_fills++ == 0) {
          scan->first_fill = finding.at;
          scan->held_steps.push_back(step);
        }
        finding.kinds = 0;
      }
    }
    *seen |= outputs.kinds;
    if (finding.kinds == 0) continue;
    finding.enclosing = EnclosingOps(*step, op_idx);
    if (op.depth > 0 && Contained(finding.enclosing)) {
      ++scan->contained;
      continue;
    }
    scan->finding = std::move(finding);
    scan->held_steps.push_back(step);
    return true;
  }
  return false;
}

bool RecordedWithoutStats(const RankTrace& trace) {
  const nlohmann::json& options = trace.meta.value("record_options", nlohmann::json::object());
  return options.is_object() && options.value("stats", true) == false;
}

}  // namespace

uint8_t NonFiniteKinds(const TensorStats& stats) {
  return (stats.nan_count > 0 ? kNanKind : 0) | (stats.pos_inf_count > 0 ? kPosInfKind : 0) |
         (stats.neg_inf_count > 0 ? kNegInfKind : 0);
}

uint8_t ScalarNonFiniteKinds(std::string_view text) {
  if (text == "inf" || text == "+inf") return kPosInfKind;
  if (text == "-inf") return kNegInfKind;
  if (text == "nan" || text == "-nan") return kNanKind;
  return 0;
}

std::string NonFiniteKindsText(uint8_t kinds) {
  std::string text;
  for (auto [bit, name] : {std::pair{kNanKind, "NaN"}, std::pair{kPosInfKind, "+Inf"},
                           std::pair{kNegInfKind, "-Inf"}}) {
    if ((kinds & bit) == 0) continue;
    if (!text.empty()) text += ", ";
    text += name;
  }
  return text;
}

std::string_view NanFindingKindName(NanFindingKind kind) {
  return kind == NanFindingKind::kProduced ? "produced" : "entered";
}

StatusOr<RankNanScan> ScanRankForNan(const RankTrace& trace) {
  RankNanScan scan;
  scan.rank = trace.rank;
  uint8_t seen = 0;
  // A step whose ops turn out damaged comes back as its readable prefix and cuts the trace
  // there, so steps() ends with it: a sequential scan needs no restart.
  for (size_t step_idx = 0;; ++step_idx) {
    ASSIGN_OR_RETURN(bool more, trace.HasStep(step_idx));  // indexes on if loaded on demand
    if (!more) break;
    ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> step, trace.Ops(step_idx));
    if (!scan.first_step) scan.first_step = step->step;
    scan.last_step = step->step;
    ++scan.steps_scanned;
    if (ScanStep(trace, step, &seen, &scan)) break;
  }
  RETURN_IF_ERROR(trace.IndexAll());  // whether it ends cleanly; damage is a note, not an error
  NoteIncomplete(trace, "scanned", &scan.notes);
  return scan;
}

StatusOr<NanScan> ScanRunForNan(const Run& run, std::optional<int> rank) {
  if (rank && (*rank < 0 || static_cast<size_t>(*rank) >= run.ranks.size())) {
    return InvalidArgument("--rank " + std::to_string(*rank) + ": " + run.dir + " has " +
                           std::to_string(run.ranks.size()) + " rank(s)");
  }
  NanScan scan;
  for (size_t rank_idx = 0; rank_idx < run.ranks.size(); ++rank_idx) {
    if (rank && rank_idx != static_cast<size_t>(*rank)) continue;
    const RankTrace& trace = run.ranks[rank_idx];
    if (RecordedWithoutStats(trace)) {
      return FailedPrecondition(run.dir +
                                ": recorded without statistics (--no-stats); record again "
                                "without it to use `upguard nan`");
    }
    ASSIGN_OR_RETURN(RankNanScan rank_scan, ScanRankForNan(trace));
    rank_scan.rank = static_cast<int>(rank_idx);  // the file's rank; reports index ranks by it
    scan.found |= rank_scan.finding.has_value();
    scan.ranks.push_back(std::move(rank_scan));
  }
  return scan;
}

}  // namespace upguard
