// Waiting for a command while watching its ranks (src/watch/monitor.h): shared by
// `upguard watch -o` and `upguard record --watch`.
//
//   ASSIGN_OR_RETURN(auto monitor, watch::Monitor::Open({dir}));
//   const int wait_status = WaitWatching(pid, *monitor, /*stop_on_alert=*/false);
#pragma once

#include <sys/types.h>

#include <vector>

#include "watch/alert.h"
#include "watch/monitor.h"

namespace upguard {

// Looks at the rings every 100 ms until `pid` ends, printing each new finding to stderr (and
// appending it to the run's alerts.jsonl). With `stop_on_alert`, the first stall, dead or
// mismatch finding sends SIGTERM to the process group `pid` leads (SIGKILL 5 s later), and
// nothing after it is reported. Returns the wait status.
int WaitWatching(pid_t pid, watch::Monitor& monitor, bool stop_on_alert);

// "upguard watch: STALL rank 1 (python): ..." per alert, on stderr.
void PrintAlerts(const std::vector<watch::Alert>& alerts);
// "upguard watch: warning: ..." for each of the monitor's new warnings, on stderr.
void PrintWarnings(watch::Monitor& monitor);

}  // namespace upguard
