#include "analysis/state_check.h"

#include <string>

namespace upguard {

bool IsStateDivergence(const NumericDivergence& divergence, const RankTrace& trace) {
  return divergence.verdict == Verdict::kPropagated && divergence.a.op != nullptr &&
         trace.Str(divergence.a.op->op) == kStateOp;
}

void ApplyStateCheck(const Run& a, DiffResult* result) {
  bool first_numeric = true;  // the result's verdict follows the first rank that decides it
  for (RankDiff& rank : result->ranks) {
    if (!rank.numeric || rank.rank >= static_cast<int>(a.ranks.size())) continue;
    if (rank.verdict == Verdict::kPropagated &&
        IsStateDivergence(*rank.numeric, a.ranks[rank.rank])) {
      rank.verdict = Verdict::kState;
      rank.state_differs.clear();
      for (const ArgComparison& slot : rank.numeric->inputs) {
        if (slot.Differs()) rank.state_differs.push_back(slot.name);
      }
      std::string names;
      for (size_t idx = 0; idx < rank.state_differs.size() && idx < 4; ++idx) {
        names += (idx > 0 ? ", " : "") + rank.state_differs[idx];
      }
      if (rank.state_differs.size() > 4) {
        names += " and " + std::to_string(rank.state_differs.size() - 4) + " more";
      }
      rank.setup = "model state differs at the end of step " +
                   std::to_string(rank.numeric->a.step) + ": " + names + " (" +
                   std::to_string(rank.state_differs.size()) + " of " +
                   std::to_string(rank.numeric->inputs.size()) + " tensors)";
      if (first_numeric && result->verdict == Verdict::kPropagated) result->verdict = rank.verdict;
    }
    first_numeric = false;
  }
}

}  // namespace upguard
