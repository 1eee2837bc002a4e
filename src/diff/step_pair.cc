#include "diff/step_pair.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "diff/compare.h"

namespace upguard {
namespace {

KeyMatch Match(size_t a, size_t b) {
  return KeyMatch{static_cast<uint32_t>(a), static_cast<uint32_t>(b)};
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

// The depth-0 op enclosing ops[index] (itself at depth 0).
size_t OutermostIndex(const std::vector<OpRecord>& ops, size_t index) {
  for (std::optional<size_t> up = index; up; up = ParentIndex(ops, *up)) index = *up;
  return index;
}

// Whether a top-level op has a result that can vouch for what ran inside it. One that returns
// nothing (DDP's reducer::copy_bucket_to_grad, which writes the gradients through a nested
// copy_) cannot: its equality says nothing about what it wrote.
bool HasResult(const OpRecord& op) { return !op.outputs.empty(); }

}  // namespace

OpOutcome StepPair::CompareOp(KeyMatch ops, NumericDivergence* out) const {
  const RankTrace& ta = a_.trace;
  const OpRecord& a = a_.step.ops[ops.a];
  const OpRecord& b = b_.step.ops[ops.b];
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
  if (judge_ != nullptr) {
    JudgeSlots(*judge_, ta.Str(a.op), ta.Str(a.module), PhaseName(a.phase), &inputs);
    JudgeSlots(*judge_, ta.Str(a.op), ta.Str(a.module), PhaseName(a.phase), &outputs);
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
  const OpLocation at_a{a_.step.step, ops.a, &a};
  const OpLocation at_b{b_.step.step, ops.b, &b};
  if (!bad_tensor_input && !output_differs && scalar_differs && value_output) {
    out->verdict = Verdict::kLatent;
    out->a = at_a;
    out->b = at_b;
    out->inputs = std::move(inputs);
    out->outputs = std::move(outputs);
    if (judge_ != nullptr)
      out->tolerance = judge_->Describe(ta.Str(a.op), ta.Str(a.module), PhaseName(a.phase));
    return OpOutcome::kLatent;
  }
  if (!bad_tensor_input && !output_differs) {
    if (!within) return OpOutcome::kSame;
    out->a = at_a;
    out->b = at_b;
    out->outputs = std::move(outputs);
    return OpOutcome::kWithin;
  }

  out->a = at_a;
  out->b = at_b;
  out->inputs = std::move(inputs);
  out->outputs = std::move(outputs);
  if (bad_tensor_input) {
    out->verdict = Verdict::kPropagated;
    out->first_bad_input = bad_tensor_input;
  } else {
    out->verdict = Verdict::kCulprit;
    // Every input compared equal, or was not read: the latter leave the culprit unproven.
    for (const ArgComparison& slot : out->inputs) {
      const bool unread = (slot.a != nullptr && IsUnreadKind(slot.a->kind)) ||
                          (slot.b != nullptr && IsUnreadKind(slot.b->kind));
      out->unread_inputs += unread ? 1 : 0;
    }
  }
  if (judge_ != nullptr)
    out->tolerance = judge_->Describe(ta.Str(a.op), ta.Str(a.module), PhaseName(a.phase));
  return OpOutcome::kDiverges;
}

void StepPair::Settle(NumericDivergence* n) const {
  const std::vector<OpRecord>& ops_a = a_.step.ops;
  const std::vector<OpRecord>& ops_b = b_.step.ops;
  const std::vector<Digest128> cause = Cause(*n);
  std::optional<size_t> pa = ParentIndex(ops_a, n->a.index);
  std::optional<size_t> pb = ParentIndex(ops_b, n->b.index);
  NumericDivergence chosen = *n;
  while (!cause.empty() && pa && pb && a_.trace.Str(ops_a[*pa].op) == b_.trace.Str(ops_b[*pb].op) &&
         alignment_.Paired(*pa, *pb)) {
    NumericDivergence up;
    const bool up_diverges = CompareOp(Match(*pa, *pb), &up) == OpOutcome::kDiverges;
    if (!CarriesCause(ops_a[*pa], up, up_diverges, *n, cause)) break;
    if (up_diverges && up.verdict == n->verdict) chosen = std::move(up);
    pa = ParentIndex(ops_a, *pa);
    pb = ParentIndex(ops_b, *pb);
  }
  *n = std::move(chosen);
  for (std::optional<size_t> up = ParentIndex(ops_a, n->a.index); up;
       up = ParentIndex(ops_a, *up)) {
    n->enclosing.push_back(OpLocation{a_.step.step, *up, &ops_a[*up]});
  }
}

bool StepPair::InsideCleanTopLevelOp(KeyMatch ops) const {
  const std::vector<OpRecord>& ops_a = a_.step.ops;
  const std::vector<OpRecord>& ops_b = b_.step.ops;
  if (ops_a[ops.a].depth == 0 || ops_b[ops.b].depth == 0) return false;
  const size_t top_a = OutermostIndex(ops_a, ops.a);
  const size_t top_b = OutermostIndex(ops_b, ops.b);
  if (top_a == ops.a || top_b == ops.b || ops_a[top_a].depth != 0 || ops_b[top_b].depth != 0 ||
      a_.trace.Str(ops_a[top_a].op) != b_.trace.Str(ops_b[top_b].op) ||
      !alignment_.Paired(top_a, top_b) || !HasResult(ops_a[top_a])) {
    return false;
  }
  NumericDivergence unused;
  return CompareOp(Match(top_a, top_b), &unused) != OpOutcome::kDiverges;
}

bool StepPair::BlockInsideCleanOps(const OpBlock& block,
                                   std::unordered_map<size_t, bool>* clean) const {
  const size_t begin[2] = {block.index_a, block.index_b};
  const size_t count[2] = {block.count_a, block.count_b};
  for (int run = 0; run < 2; ++run) {
    const std::vector<OpRecord>& ops = side(run).step.ops;
    for (size_t op_idx = begin[run]; op_idx < begin[run] + count[run]; ++op_idx) {
      size_t top = op_idx;
      for (std::optional<size_t> up = alignment_.Parent(run, top); up;
           up = alignment_.Parent(run, *up)) {
        top = *up;
      }
      const std::optional<size_t> partner = alignment_.Partner(run, top);
      if (top == op_idx || ops[top].depth != 0 || !partner || !HasResult(ops[top])) {
        return false;
      }
      const KeyMatch tops = run == 0 ? Match(top, *partner) : Match(*partner, top);
      auto [known, added] = clean->emplace(tops.a, false);
      if (added) {
        NumericDivergence unused;
        known->second = CompareOp(tops, &unused) != OpOutcome::kDiverges;
      }
      if (!known->second) return false;
    }
  }
  return true;
}

bool StepPair::InputPipelineOnly(const OpBlock& block) const {
  for (size_t op_idx = block.index_a; op_idx < block.index_a + block.count_a; ++op_idx) {
    if (a_.step.ops[op_idx].phase != Phase::kInput) return false;
  }
  for (size_t op_idx = block.index_b; op_idx < block.index_b + block.count_b; ++op_idx) {
    if (b_.step.ops[op_idx].phase != Phase::kInput) return false;
  }
  return true;
}

bool StepPair::ModelStateOnly(const OpBlock& block) const {
  if ((block.count_a == 0) == (block.count_b == 0)) return false;
  for (size_t op_idx = block.index_a; op_idx < block.index_a + block.count_a; ++op_idx) {
    if (a_.trace.Str(a_.step.ops[op_idx].op) != kStateOp) return false;
  }
  for (size_t op_idx = block.index_b; op_idx < block.index_b + block.count_b; ++op_idx) {
    if (b_.trace.Str(b_.step.ops[op_idx].op) != kStateOp) return false;
  }
  return true;
}

}  // namespace upguard
