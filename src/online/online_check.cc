#include "online/online_check.h"

#include "diff/compare.h"

namespace upguard {
namespace {

// Describes how two same-named ops differ; "" when they hold the same values.
std::optional<OnlineDivergence> CompareOps(const OpRecord& candidate, const OpRecord& reference,
                                           const RankTrace& trace) {
  if (reference.collective != nullptr && reference.collective->completed) {
    // The reference's outputs are what the collective delivered, read at its completion; the
    // live record's are what the call returned (aliases), before it completed. A delivered
    // difference shows online at the first op that reads it.
    OpRecord call = reference;
    call.outputs = candidate.outputs;
    call.collective = nullptr;
    return CompareOps(candidate, call, trace);
  }
  if (SameArgs(reference, candidate)) return std::nullopt;
  OnlineDivergence divergence;
  std::vector<ArgComparison> inputs = CompareArgs(reference.inputs, candidate.inputs, true, trace);
  for (const ArgComparison& slot : inputs) {
    const bool scalar = slot.a != nullptr && slot.a->kind == ArgKind::kScalar;
    if (slot.equal || scalar) continue;
    divergence.kind = "propagated";
    divergence.detail = "input " + std::to_string(slot.index) +
                        (slot.name.empty() ? "" : " (" + slot.name + ")") + " differs";
    return divergence;
  }
  std::vector<ArgComparison> outputs =
      CompareArgs(reference.outputs, candidate.outputs, false, trace);
  for (const ArgComparison& slot : outputs) {
    if (slot.equal) continue;
    divergence.kind = "culprit";
    divergence.detail = "output " + std::to_string(slot.index) + " differs";
    for (const ArgComparison& input : inputs) {
      if (!input.equal) divergence.detail += "; argument " + input.name + " differs";
    }
    return divergence;
  }
  return std::nullopt;  // only a scalar argument differs and nothing it made: not a divergence
}

}  // namespace

StatusOr<std::unique_ptr<OnlineChecker>> OnlineChecker::Open(const std::string& reference_dir,
                                                             int rank) {
  LoadOptions options;
  options.index_on_demand = true;
  options.allow_damaged = true;  // compare as far as the reference can be read
  ASSIGN_OR_RETURN(Run run, LoadRun(reference_dir, options));
  if (rank < 0 || static_cast<size_t>(rank) >= run.ranks.size()) {
    return FailedPrecondition("--against " + reference_dir + ": the reference has " +
                              std::to_string(run.ranks.size()) + " rank(s), no rank " +
                              std::to_string(rank) + "; record the reference with as many ranks");
  }
  return std::unique_ptr<OnlineChecker>(
      new OnlineChecker(reference_dir, std::move(run.ranks[rank])));
}

const StepOps* OnlineChecker::ReferenceStep(uint32_t step) {
  if (step_ && *step_ == step) return step_ops_.get();
  step_ = step;
  step_ops_.reset();
  compared_.clear();
  position_ = 0;
  StatusOr<std::optional<size_t>> found = trace_.FindStep(step);
  if (!found.ok() || !found->has_value()) {
    notes_.push_back("the reference has no step " + std::to_string(step) +
                     (found.ok() ? "" : ": " + found.status().message()) +
                     "; that step was not compared");
    return nullptr;
  }
  StatusOr<std::shared_ptr<const StepOps>> ops = trace_.Ops(**found);
  if (!ops.ok()) {
    notes_.push_back("the reference's step " + std::to_string(step) +
                     " cannot be read: " + ops.status().message());
    return nullptr;
  }
  step_ops_ = std::move(*ops);
  for (size_t op_idx = 0; op_idx < step_ops_->ops.size(); ++op_idx) {
    if (step_ops_->ops[op_idx].phase != Phase::kInput) compared_.push_back(op_idx);
  }
  return step_ops_.get();
}

std::optional<OnlineDivergence> OnlineChecker::Settle(std::optional<OnlineDivergence> found,
                                                      uint32_t depth) {
  if (depth > 0) {  // nested: certain only when the top-level op around it ends
    if (found && !pending_) pending_ = std::move(found);
    return std::nullopt;
  }
  std::optional<OnlineDivergence> result;
  if (found) result = pending_ ? std::move(pending_) : std::move(found);
  pending_.reset();  // a top-level op that matches contains what differed inside it
  if (result) done_ = true;
  return result;
}

std::optional<OnlineDivergence> OnlineChecker::Check(const OpRecord& op, uint64_t index,
                                                     std::string_view op_name) {
  if (done_) return std::nullopt;
  const StepOps* reference = ReferenceStep(op.step);
  if (reference == nullptr) return std::nullopt;
  // The input pipeline is not compared by position (the diff's rule, trace.md §4.2): how many
  // batches a DataLoader's workers delivered by now depends on timing.
  if (op.phase == Phase::kInput) return std::nullopt;
  const size_t position = position_++;
  std::optional<OnlineDivergence> found;
  if (position >= compared_.size()) {
    found =
        OnlineDivergence{"reference ended",
                         op.step,
                         index,
                         std::string(op_name),
                         "",
                         "the reference's step " + std::to_string(op.step) + " has only " +
                             std::to_string(compared_.size()) + " ops outside the input pipeline"};
    done_ = true;  // nothing after this can be compared by position
    return found;
  }
  const OpRecord& ref = reference->ops[compared_[position]];
  const std::string& ref_name = trace_.Str(ref.op);
  if (ref_name != op_name) {
    done_ = true;
    pending_.reset();
    return OnlineDivergence{"structural", op.step,
                            index,        std::string(op_name),
                            ref_name,     "the reference ran " + ref_name + " here"};
  }
  found = CompareOps(op, ref, trace_);
  if (found) {
    found->step = op.step;
    found->index = index;
    found->op = std::string(op_name);
    found->reference_op = ref_name;
  }
  // A top-level op that returns nothing cannot vouch for the ops inside it (see HasResult in
  // diff.cc): what differed inside it stands.
  if (op.depth == 0 && op.outputs.empty() && pending_ && !found) {
    found = std::move(pending_);
    pending_.reset();
  }
  return Settle(std::move(found), op.depth);
}

}  // namespace upguard
