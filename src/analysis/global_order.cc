#include "analysis/global_order.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

namespace upguard {
namespace {

// A collective op of one rank's trace, with the decoded step that holds it.
struct FoundOp {
  std::shared_ptr<const StepOps> step;
  const OpRecord* op = nullptr;
};

std::string GroupOf(const RankTrace& trace, const OpRecord& op) {
  return trace.Str(op.collective->group);
}

bool IsCollective(const OpLocation& location) {
  return location.op != nullptr && location.op->collective != nullptr;
}

// The op of `trace` that is collective number `seq` of `group`: looked for in step `step`
// first (members call their collectives in the same step), then in every step.
StatusOr<FoundOp> FindCollective(const RankTrace& trace, const std::string& group, uint64_t seq,
                                 uint32_t step) {
  auto search = [&](size_t step_idx) -> StatusOr<FoundOp> {
    ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> ops, trace.Ops(step_idx));
    for (const OpRecord& op : ops->ops) {
      if (op.collective != nullptr && op.collective->seq == seq && GroupOf(trace, op) == group) {
        return FoundOp{ops, &op};
      }
    }
    return FoundOp{};
  };
  ASSIGN_OR_RETURN(std::optional<size_t> hinted, trace.FindStep(step));
  if (hinted) {
    ASSIGN_OR_RETURN(FoundOp found, search(*hinted));
    if (found.op != nullptr) return found;
  }
  RETURN_IF_ERROR(trace.IndexAll());
  for (size_t idx = 0; idx < trace.steps().size(); ++idx) {
    if (hinted && idx == *hinted) continue;
    ASSIGN_OR_RETURN(FoundOp found, search(idx));
    if (found.op != nullptr) return found;
  }
  return FoundOp{};
}

// Whether the op's tensor inputs (as they entered the collective) differ between the runs.
bool InputsDiffer(const OpRecord& a, const OpRecord& b) {
  if (a.inputs.size() != b.inputs.size()) return true;
  for (size_t idx = 0; idx < a.inputs.size(); ++idx) {
    const ArgRecord& x = a.inputs[idx];
    const ArgRecord& y = b.inputs[idx];
    if (x.kind != y.kind) return true;
    if (x.kind == ArgKind::kTensor && !(x.digest == y.digest)) return true;
  }
  return false;
}

// Where a rank's first divergence is, for ordering origins.
uint32_t FirstStep(const RankDiff& diff) {
  if (diff.latent) return diff.latent->a.step;
  if (diff.unattributed_step) return *diff.unattributed_step;
  // A structural verdict's numerical divergence comes after the block that caused it.
  if (diff.verdict == Verdict::kStructural && diff.structural) return diff.structural->step;
  if (diff.numeric) return diff.numeric->a.step;
  if (diff.structural) return diff.structural->step;
  return diff.first_step.value_or(0);
}

// The collective a rank's first divergence sits at: the divergent op itself, or the op that
// produced its differing input (a collective whose completion was not recorded).
const OpLocation* CollectiveAt(const RankDiff& diff) {
  if (!diff.numeric || diff.latent) return nullptr;
  const NumericDivergence& n = *diff.numeric;
  if (n.verdict == Verdict::kCulprit && IsCollective(n.a)) return &n.a;
  if (n.verdict == Verdict::kPropagated && n.producer_a.found &&
      IsCollective(n.producer_a.location)) {
    return &n.producer_a.location;
  }
  return nullptr;
}

std::optional<uint32_t> LastStep(const RankTrace& trace) {
  if (trace.steps().empty()) return std::nullopt;
  return trace.steps().back().step;
}

void NoteEarlyEnds(const Run& a, const Run& b, GlobalOrder* order) {
  for (size_t rank = 0; rank < a.ranks.size() && rank < b.ranks.size(); ++rank) {
    const RankTrace& ta = a.ranks[rank];
    const RankTrace& tb = b.ranks[rank];
    const std::optional<uint32_t> la = LastStep(ta);
    const std::optional<uint32_t> lb = LastStep(tb);
    if (la == lb && ta.complete() == tb.complete()) continue;
    // The one whose last step is earlier; at the same step, the one the process left open.
    const bool a_short = la != lb ? la < lb : (!ta.complete() && tb.complete());
    const RankTrace& shorter = a_short ? ta : tb;
    const std::string& dir = a_short ? a.dir : b.dir;
    const std::optional<uint32_t> last = a_short ? la : lb;
    const std::optional<uint32_t> other = a_short ? lb : la;
    std::string note = "rank " + std::to_string(rank) + "'s trace in " + dir + " ends early";
    note += last ? " (last step " + std::to_string(*last) + ", " : " (no step, ";
    note += "the other run's reaches step " + (other ? std::to_string(*other) : "-") + ")";
    note += shorter.stopped()    ? ": " + StoppedNote(*shorter.stopped())
            : shorter.complete() ? ""
                                 : ": the process died or was killed while recording";
    note += "; the diff compared the steps both runs recorded";
    order->notes.push_back(std::move(note));
  }
}

// Where in a fingerprint step a rank's first divergence lies (0 random state .. 4 model state);
// 5 outside fingerprint steps.
int FingerprintStage(const RankDiff& diff) {
  if (!diff.fingerprint) return 5;
  static const char* const kStages[] = {"random state", "batch", "loss", "gradients",
                                        "model state"};
  for (int stage = 0; stage < 5; ++stage) {
    if (diff.fingerprint->first == kStages[stage]) return stage;
  }
  return 5;
}

}  // namespace

std::string_view RankRoleName(RankRole role) {
  switch (role) {
    case RankRole::kIdentical:
      return "identical";
    case RankRole::kOrigin:
      return "origin";
    case RankRole::kReceiver:
      return "receiver";
    case RankRole::kCollective:
      return "collective";
    case RankRole::kUnknown:
      return "unknown";
    case RankRole::kUnverified:
      return "unverified";
  }
  return "unknown";
}

std::string RanksText(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t idx = 0; idx < ranks.size(); ++idx) {
    text += (idx == 0 ? "" : ", ") + std::to_string(ranks[idx]);
  }
  return text;
}

std::string CollectiveHop::Name() const {
  std::string name = op + " #" + std::to_string(seq) + " in group " + group + " [";
  for (size_t idx = 0; idx < ranks.size(); ++idx) {
    name += (idx == 0 ? "" : ",") + std::to_string(ranks[idx]);
  }
  return name + "]";
}

StatusOr<GlobalOrder> OrderRanks(const Run& a, const Run& b, const DiffResult& result) {
  GlobalOrder order;
  std::map<std::pair<std::string, uint64_t>, size_t> hop_of;  // (group, seq) -> hops index
  for (const RankDiff& diff : result.ranks) {
    RankOrder rank{diff.rank, RankRole::kIdentical, std::nullopt};
    if (!Diverged(diff.verdict)) {  // nothing to order: identical, or not known to differ
      if (diff.verdict == Verdict::kUnverified) rank.role = RankRole::kUnverified;
      order.ranks.push_back(rank);
      continue;
    }
    rank.role = RankRole::kOrigin;
    const OpLocation* at = CollectiveAt(diff);
    if (at != nullptr && static_cast<size_t>(diff.rank) < a.ranks.size()) {
      const RankTrace& trace = a.ranks[diff.rank];
      const CollectiveInfo& info = *at->op->collective;
      const std::string group = GroupOf(trace, *at->op);
      auto [it, added] = hop_of.try_emplace({group, info.seq}, order.hops.size());
      if (added) {
        CollectiveHop hop;
        hop.op = trace.Str(at->op->op);
        hop.group = group;
        hop.ranks = info.ranks;
        hop.seq = info.seq;
        hop.step = at->step;
        hop.phase = std::string(PhaseName(at->op->phase));
        for (int32_t member : info.ranks) {
          if (member == diff.rank) continue;
          if (member < 0 || static_cast<size_t>(member) >= a.ranks.size() ||
              static_cast<size_t>(member) >= b.ranks.size()) {
            hop.missing.push_back(member);
            continue;
          }
          ASSIGN_OR_RETURN(FoundOp fa, FindCollective(a.ranks[member], group, info.seq, at->step));
          ASSIGN_OR_RETURN(FoundOp fb, FindCollective(b.ranks[member], group, info.seq, at->step));
          if (fa.op == nullptr || fb.op == nullptr) {
            hop.missing.push_back(member);
          } else if (InputsDiffer(*fa.op, *fb.op)) {
            hop.senders.push_back(member);
          }
        }
        order.hops.push_back(std::move(hop));
      }
      CollectiveHop& hop = order.hops[it->second];
      hop.receivers.push_back(diff.rank);
      rank.hop = it->second;
      rank.role = !hop.senders.empty()   ? RankRole::kReceiver
                  : !hop.missing.empty() ? RankRole::kUnknown
                                         : RankRole::kCollective;
    }
    order.ranks.push_back(rank);
  }
  // Origins by step; within a step, a fingerprint's by what of it differs first (fingerprint
  // steps hold no collective to follow: a rank whose batch differs comes before one whose
  // gradients do, which gradient synchronization may have handed the difference).
  std::vector<std::tuple<uint32_t, int, int>> origins;
  bool fingerprints = false;
  for (const RankOrder& rank : order.ranks) {
    if (rank.role == RankRole::kOrigin) {
      const RankDiff& diff = result.ranks[rank.rank];
      fingerprints |= diff.fingerprint.has_value();
      origins.emplace_back(FirstStep(diff), FingerprintStage(diff), rank.rank);
    }
  }
  std::sort(origins.begin(), origins.end());
  for (const auto& [step, stage, rank] : origins) order.origins.push_back(rank);
  if (fingerprints && origins.size() > 1) {
    order.notes.push_back(
        "the ranks diverged in fingerprint steps, which hold no collectives to follow: they are "
        "ordered by step, then by what of the step differs first (random state, batch, loss, "
        "gradients, model state); a rank whose gradients differ first may have received the "
        "difference through gradient synchronization");
  }
  if (!order.origins.empty()) {
    order.first = order.origins.front();
  } else {
    for (const RankOrder& rank : order.ranks) {
      if (rank.role == RankRole::kCollective) {
        order.first = rank.rank;
        break;
      }
    }
  }
  if (!order.first) {
    for (const RankOrder& rank : order.ranks) {
      if (rank.role != RankRole::kIdentical && rank.role != RankRole::kUnverified) {
        order.first = rank.rank;
        break;
      }
    }
  }
  NoteEarlyEnds(a, b, &order);
  return order;
}

}  // namespace upguard
