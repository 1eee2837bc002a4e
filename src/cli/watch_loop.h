// Waiting for a command while watching its ranks (src/watch/monitor.h): shared by
// `upguard watch -o` and `upguard record --watch`.
//
//   ASSIGN_OR_RETURN(auto monitor, watch::Monitor::Open({dir}));
//   const int wait_status = WaitWatching(pid, *monitor, /*stop_on_alert=*/false);
#pragma once

#include <sys/types.h>

#include <functional>
#include <vector>

#include "watch/alert.h"
#include "watch/monitor.h"

namespace upguard {

// Looks at the rings every 100 ms until `pid` ends, printing each new finding to stderr (and
// appending it to the run's alerts.jsonl). With `stop_on_alert`, the first stall, dead or
// mismatch finding sends SIGTERM to the process group `pid` leads (SIGKILL 5 s later), and
// nothing after it is reported. Returns the wait status.
// `each_poll`, when given, runs at every look (record's progress line).
int WaitWatching(pid_t pid, watch::Monitor& monitor, bool stop_on_alert,
                 const std::function<void()>& each_poll = {});

// Waits for `pid` (SIGINT and SIGTERM ignored meanwhile: Ctrl-C reaches the command through the
// terminal, which ends and reports its end), running `each_poll` every 100 ms when given.
// Returns the wait status.
int WaitForCommand(pid_t pid, const std::function<void()>& each_poll = {});

// "upguard watch: STALL rank 1 (python): ..." per alert, on stderr.
void PrintAlerts(const std::vector<watch::Alert>& alerts);
// "upguard watch: warning: ..." for each of the monitor's new warnings, on stderr.
void PrintWarnings(watch::Monitor& monitor);

}  // namespace upguard
