// The globally first divergence of a multi-rank run: each rank's first divergence (DiffRuns),
// ordered causally through the collectives that carried differences between ranks.
//
//   ASSIGN_OR_RETURN(DiffResult result, DiffRuns(a, b, options));
//   ASSIGN_OR_RETURN(GlobalOrder order, OrderRanks(a, b, result));
//   if (order.origins.size() == 1) ... order.roles[order.origins[0]] ...
//
// A rank's first divergence is
//   - a **receiver**'s when it is a collective whose own inputs matched on this rank while some
//     other member of its group fed it different inputs: the difference arrived from there;
//   - the **collective**'s own when every member's inputs matched and its outputs differ: the
//     collective computed differently (a reduction order, a transport fault);
//   - an **origin**'s otherwise: its inputs matched and no collective had delivered different
//     data to it before (that collective would have been its first divergence).
// A receiver's senders may themselves be receivers of an earlier collective; following them
// ends at the origins. Ranks are matched across the runs by rank; collectives across ranks by
// their group name and their number in the group (CollectiveInfo::seq), which the recorder
// counts per group in call order, the order c10d requires every member to call them in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diff/diff.h"
#include "run/run_loader.h"
#include "upguard/status.h"

namespace upguard {

// Serialized in --json as strings; values fixed.
enum class RankRole : uint8_t {
  kIdentical = 0,
  kOrigin = 1,
  kReceiver = 2,
  kCollective = 3,  // its first divergence is a collective that computed differently
  kUnknown = 4,     // a collective whose members' records are missing (a trace ends early)
  kUnverified = 5,  // nothing compared differs, but some of its tensors were not read
};
std::string_view RankRoleName(RankRole role);  // "identical", "origin", ...

// One collective, as the ranks of its group saw it.
struct CollectiveHop {
  std::string op;     // "c10d::allreduce_"
  std::string group;  // "0"
  std::vector<int32_t> ranks;
  uint64_t seq = 0;
  uint32_t step = 0;
  std::string phase;           // on the receiving rank
  std::vector<int> senders;    // members whose inputs to it differed between the runs
  std::vector<int> receivers;  // members whose first divergence it is
  std::vector<int> missing;    // members whose traces do not hold it
  std::string Name() const;    // "c10d::allreduce_ #5 in group 0 [0,1,2]"
};

struct RankOrder {
  int rank = 0;
  RankRole role = RankRole::kIdentical;
  std::optional<size_t> hop;  // kReceiver, kCollective, kUnknown: index into GlobalOrder::hops
};

struct GlobalOrder {
  std::vector<RankOrder> ranks;     // by rank
  std::vector<int> origins;         // ranks whose role is kOrigin, first by step, then by rank
  std::vector<CollectiveHop> hops;  // the collectives that carried or made a difference
  // The rank whose divergence the run's verdict should name: the first origin, else the first
  // rank whose collective computed differently, else the first divergent rank.
  std::optional<int> first;
  // Every rank's trace ends early in one run and not the other: "rank 1's trace in runs/b ends
  // at step 2 (the process died); compared the common prefix".
  std::vector<std::string> notes;
};

// "rank 1" or "ranks 0, 2".
std::string RanksText(const std::vector<int>& ranks);

// Needs the ranks' first divergences (`result`). Reads only the steps holding them, from the
// ranks' traces. Single-rank runs get a one-entry order.
StatusOr<GlobalOrder> OrderRanks(const Run& a, const Run& b, const DiffResult& result);

}  // namespace upguard
