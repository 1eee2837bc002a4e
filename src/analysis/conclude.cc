#include "analysis/conclude.h"

#include <memory>
#include <string>
#include <vector>

#include "analysis/fingerprint_check.h"
#include "analysis/setup_check.h"
#include "analysis/tolerant_compare.h"

namespace upguard {

namespace {

// The note a rank gets for its role in the order across ranks; empty for an origin or an
// identical rank.
std::string RoleNote(const GlobalOrder& order, const RankOrder& rank) {
  if (!rank.hop || rank.role == RankRole::kOrigin) return "";
  const CollectiveHop& hop = order.hops[*rank.hop];
  switch (rank.role) {
    case RankRole::kReceiver:
      return "this rank is a receiver: " + hop.Name() + " delivered it a difference from " +
             RanksText(hop.senders) + " (see the order across ranks above)";
    case RankRole::kCollective:
      return "the collective below computed differently: every member fed it identical "
             "inputs (see the order across ranks above)";
    default:
      return "no record of the collective below on " + RanksText(hop.missing) +
             ": whether another member fed it different inputs is unknown";
  }
}

// A propagated divergence no setup check explained, from an input no op of both runs made,
// after the runs parted structurally: structural (StructureComesFirst). The result's verdict
// follows the first rank that diverged, as the setup checks' do.
void ApplyStructureFirst(DiffResult* result) {
  bool first = true;
  for (RankDiff& rank : result->ranks) {
    if (StructureComesFirst(rank)) {
      rank.verdict = Verdict::kStructural;
      if (first && result->verdict == Verdict::kPropagated) result->verdict = rank.verdict;
    }
    first = first && !Diverged(rank.verdict);
  }
}

// Several ranks: their first divergences ordered through the collectives; the run's verdict
// is the first rank's of that order.
Status OrderAcrossRanks(const Run& a, const Run& b, Conclusion* conclusion) {
  DiffResult& result = conclusion->result;
  if (result.ranks.size() <= 1) return Status::Ok();
  ASSIGN_OR_RETURN(conclusion->order, OrderRanks(a, b, result));
  const GlobalOrder& order = *conclusion->order;
  if (order.first) result.verdict = result.ranks[*order.first].verdict;
  for (const RankOrder& rank : order.ranks) {
    std::string note = RoleNote(order, rank);
    if (!note.empty()) result.ranks[rank.rank].notes.push_back(std::move(note));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Conclusion> ConcludeDiff(const Run& a, const Run& b, const ConcludeOptions& options) {
  DiffOptions diff = options.diff;
  if (options.policy) diff.tolerance = std::make_shared<PolicyJudge>(*options.policy);
  Conclusion conclusion;
  ASSIGN_OR_RETURN(conclusion.result, DiffRuns(a, b, diff));
  ApplySetupChecks(a, b, &conclusion.result);
  RETURN_IF_ERROR(ApplyFingerprintCheck(a, b, &conclusion.result));
  ApplyStructureFirst(&conclusion.result);
  RETURN_IF_ERROR(OrderAcrossRanks(a, b, &conclusion));
  RETURN_IF_ERROR(ExplainConclusion(a, b, options, &conclusion));
  return conclusion;
}

Status ExplainConclusion(const Run& a, const Run& b, const ConcludeOptions& options,
                         Conclusion* conclusion) {
  if (!options.explain) return Status::Ok();
  const DiffResult& result = conclusion->result;
  std::vector<const RankDiff*> candidates;  // the origin first, then every rank in order
  if (conclusion->order && conclusion->order->first) {
    candidates.push_back(&result.ranks[*conclusion->order->first]);
  }
  for (const RankDiff& rank : result.ranks) candidates.push_back(&rank);
  for (const RankDiff* rank : candidates) {
    // A fingerprint step recorded no op to capture: its ops are recorded in full first.
    if (!rank->numeric || rank->fingerprint) continue;
    ASSIGN_OR_RETURN(conclusion->explained, options.explain(a, b, *rank));
    if (options.policy) {
      const RankTrace& trace = a.ranks[rank->rank];
      const OpRecord& op = *rank->numeric->a.op;
      ApplyTolerance(
          options.policy->For(trace.Str(op.op), trace.Str(op.module), PhaseName(op.phase)),
          &conclusion->explained->explanation);
    }
    break;
  }
  return Status::Ok();
}

}  // namespace upguard
