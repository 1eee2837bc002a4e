// Where `upguard machines agent --output FILE` appends its samples: the metrics CSV
// (docs/formats/machine-metrics-csv.md) for FILE.csv, the SQLite file
// (docs/formats/machine-metrics-sqlite.md) for FILE.db / .sqlite / .sqlite3, chosen by extension.
// Each Append is one sample interval, handed to the OS (CSV: written; SQLite: committed) when it
// returns, so a crash of the agent loses at most the interval being written.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<MetricsSink> sink, OpenMetricsSink("/var/tmp/node-0.db"));
//   RETURN_IF_ERROR(sink->Append(WallClockSeconds(), "node-0", metrics));
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "machines/host_counters.h"
#include "upguard/status.h"

namespace upguard::machines {

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  // Every metric of `machine` at `time` (seconds since the Unix epoch).
  virtual Status Append(double time, const std::string& machine,
                        const std::vector<MetricValue>& metrics) = 0;
};

// Errors: an extension that is neither (say which are), a file that cannot be opened, or one
// the agent would not have written (another program's SQLite file, a CSV with another header or
// times not in seconds, anything else): refused before a byte of it changes. `notice` (may be
// null) is set to what opening repaired (a torn last line removed), for the caller to print.
StatusOr<std::unique_ptr<MetricsSink>> OpenMetricsSink(const std::string& path,
                                                       std::string* notice = nullptr);

}  // namespace upguard::machines
