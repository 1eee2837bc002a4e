#include "diff/allowed_divergence.h"

#include "diff/compare.h"

namespace upguard {

bool AllowedTracker::Remembered(const ArgComparison& slot) const {
  return (slot.a != nullptr && remembered_[0].count(slot.a->digest) > 0) ||
         (slot.b != nullptr && remembered_[1].count(slot.b->digest) > 0);
}

AllowedTracker::Kind AllowedTracker::Classify(const RankTrace& ta, const StepOps& sa,
                                              const NumericDivergence& n) const {
  bool input_differs = false;
  for (const ArgComparison& slot : n.inputs) {
    const bool tensor = (slot.a != nullptr && slot.a->kind == ArgKind::kTensor) ||
                        (slot.b != nullptr && slot.b->kind == ArgKind::kTensor);
    if (!tensor || !slot.Differs()) continue;
    const bool through_view =
        !remembered_[1].empty() && slot.b != nullptr && within_b_.count(slot.b->digest) == 0;
    if (!Remembered(slot) && !through_view) return Kind::kNone;
    input_differs = true;
  }
  if (input_differs) return Kind::kFollows;
  for (std::optional<size_t> op_idx = n.a.index; op_idx; op_idx = ParentIndex(sa.ops, *op_idx)) {
    if (judge_.Nondeterministic(ta.Str(sa.ops[*op_idx].op))) return Kind::kAllowed;
  }
  const bool encloses = step_ == sa.step && enclosing_.count(n.a.index) > 0;
  return encloses ? Kind::kFollows : Kind::kNone;
}

void AllowedTracker::NoteWithin(const NumericDivergence& n) {
  if (remembered_[1].empty()) return;  // nothing allowed yet
  for (const ArgComparison& slot : n.outputs) {
    if (!slot.equal && slot.b != nullptr) within_b_.insert(slot.b->digest);
  }
}

bool AllowedTracker::Absorb(const RankTrace& ta, const StepOps& sa, const NumericDivergence& n,
                            ToleranceSummary* summary) {
  if (step_ != sa.step) {
    step_ = sa.step;
    enclosing_.clear();
    absorbed_.clear();
  }
  if (absorbed_.count(n.a.index) > 0) return true;  // settled on before its turn
  const Kind kind = Classify(ta, sa, n);
  if (kind == Kind::kNone) return false;
  absorbed_.insert(n.a.index);
  for (const ArgComparison& slot : n.outputs) {
    if (!slot.Differs()) continue;
    if (slot.a != nullptr) remembered_[0].insert(slot.a->digest);
    if (slot.b != nullptr) remembered_[1].insert(slot.b->digest);
  }
  for (std::optional<size_t> up = ParentIndex(sa.ops, n.a.index); up;
       up = ParentIndex(sa.ops, *up)) {
    enclosing_.insert(*up);
  }
  AllowedDivergence listed{kind == Kind::kFollows, n.a, n.b, n.outputs};
  if (kind == Kind::kFollows) {
    if (summary->follows_ops++ == 0) summary->first_follows = std::move(listed);
  } else {
    ++summary->allowed_ops;
    if (summary->allowed.size() < kListed) summary->allowed.push_back(std::move(listed));
  }
  return true;
}

}  // namespace upguard
