// A host's summary: what its monitor sees of its local ranks (each ring as the analyzer reads it,
// and the state of each rank's process in that host's /proc), as one versioned JSON document
// (docs/formats/watch-summary.md). Monitors on several hosts share their summaries through a
// common directory (exchange.h), so that each one analyzes the whole job.
//
//   Summary mine{"node3", "node3", getpid(), RealtimeNs(), SummaryRanks(local_looks)};
//   RETURN_IF_ERROR(WriteFileAtomically(dir + "/node3.json", SummaryToJson(mine)));
//   ASSIGN_OR_RETURN(Summary theirs, ReadSummary(dir + "/node7.json"));
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "upguard/status.h"
#include "watch/analyzer.h"

namespace upguard::watch {

inline constexpr char kSummaryFormat[] = "upguard.watch-summary";
inline constexpr int kSummaryVersion = 1;
// A summary keeps a ring's newest slots, and every older one still in flight: enough for the
// analyzer's stall thresholds, its straggler window (16) and the collectives of the throughput
// window (the last 32 steps) at up to 8 collectives a step.
inline constexpr size_t kSummarySlotsKept = 256;

struct Summary {
  std::string host;      // the monitor's name for its host: the file is <host>.json
  std::string hostname;  // gethostname() of the monitor
  int monitor_pid = 0;
  uint64_t written_ns = 0;      // CLOCK_REALTIME of the writing host
  std::vector<RankLook> ranks;  // rank order; each ring's slots cut as SummaryRanks does
};

// The looks as a summary carries them: only rings read on this host (not those seen through
// another summary), their slots cut to kSummarySlotsKept (the newest ones, and every older one
// still in flight).
std::vector<RankLook> SummaryRanks(const std::vector<RankLook>& looks);

std::string SummaryToJson(const Summary& summary);
// DataLoss naming `path` and the field (`ranks[1].slots[4].op`) for a document that is not a
// version-1 summary.
StatusOr<Summary> SummaryFromJson(const std::string& text, const std::string& path);
StatusOr<Summary> ReadSummary(const std::string& path);

}  // namespace upguard::watch
