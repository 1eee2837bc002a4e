// UnreadTally: how many ops, and tensors, of a step had values upguard did not read, by reason
// and detail ("device cuda:0: 412 ops, 1,236 tensors"). The writer tallies every op it writes
// into the StepEnd record (docs/formats/trace.md §5.4), so a diff knows what it did not compare
// without reading a step's ops; a reader of a trace written before the tally (version 5 and
// older) tallies the ops it decodes instead.
//
//   UnreadTally tally;
//   for (const OpRecord& op : ops_of_step) tally.AddOp(op, strings);
//   step_end.unread = tally.Take();     // sorted by reason, then detail; tally reset
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/records.h"

namespace upguard {

class UnreadTally {
 public:
  // Every unread argument (ArgKind::kUnread, and kOpaque of old traces) of `op`, inputs and
  // outputs; an op counts once per (reason, detail) it has.
  void AddOp(const OpRecord& op, const StringTable& strings);
  // The outputs of a Collective record (the tensors it wrote, read at its completion).
  void AddCollective(const CollectiveInfo& info, const StringTable& strings);
  // Adds another tally's counts (two steps, two ranks).
  void Merge(const std::vector<UnreadCount>& counts);
  bool empty() const { return counts_.empty(); }
  const std::vector<UnreadCount>& counts() const { return counts_; }
  std::vector<UnreadCount> Take();

 private:
  void AddArgs(const std::vector<ArgRecord>& args, const StringTable& strings, size_t first);
  UnreadCount& Entry(UnreadReason reason, const std::string& detail);
  std::vector<UnreadCount> counts_;  // few entries: a linear search
  std::vector<size_t> op_seen_;      // the entries the current op has counted in
};

// The counts whose values are nowhere in the trace (UnreadHidesValues), summed: what makes a
// diff "unverified".
struct UnreadTotal {
  uint64_t ops = 0;
  uint64_t tensors = 0;
};
UnreadTotal HiddenTotal(const std::vector<UnreadCount>& counts);

// What two runs' tallies leave uncompared: the entries that hide values (UnreadHidesValues),
// each with the larger count of the two runs, sorted by reason and detail. An op whose tensors
// went unread for two reasons counts under both.
std::vector<UnreadCount> NotCompared(const std::vector<UnreadCount>& a,
                                     const std::vector<UnreadCount>& b);

// Why such tensors were not read, for a reader: "on cuda:0: upguard reads CPU tensors only".
std::string UnreadWhy(const UnreadCount& count);
// "412 ops (1,236 tensors) on cuda:0: upguard reads CPU tensors only".
std::string UnreadLine(const UnreadCount& count);

}  // namespace upguard
