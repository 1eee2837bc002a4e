// One finding of the watch: what triggered it, the root cause, the ranks, the collective.
// Written one JSON object per line to DIR/alerts.jsonl and as one line to stderr.
//
//   Alert alert{now, "stall", "stopped", {1}, "allreduce float32[105472] group 0 seq 12 ...", ...};
//   out << AlertJson(alert) << "\n";
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace upguard::watch {

struct Alert {
  uint64_t time_ns = 0;  // CLOCK_REALTIME when the monitor saw it
  std::string trigger;   // stall, straggler, throughput, dead, mismatch
  std::string cause;     // see docs/watch.md: not_issued, stopped, exited, dataloader, ...
  std::vector<int> ranks;
  std::string collective;          // "allreduce float32[105472] in group 0, seq 12 (train.py:145)"
  std::string detail;              // one sentence: what the ranks do
  std::vector<std::string> stack;  // the culprit's Python stack when it answered
  // Identifies the finding: a later look that finds the same thing is not a new alert.
  std::string key;
};

std::string AlertJson(const Alert& alert);
// "upguard watch: STALL rank 1 (stopped): ..." — one line, for stderr.
std::string AlertLine(const Alert& alert);
// ISO 8601 UTC with milliseconds.
std::string IsoTime(uint64_t realtime_ns);

}  // namespace upguard::watch
