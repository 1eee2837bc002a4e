// Runs a command with recording armed and waits for it (shared by `record` and `demo`).
#pragma once

#include <string>
#include <vector>

#include "upguard/status.h"

namespace upguard {

struct RecordRequest {
  std::string run_dir;
  std::vector<std::string> command;
  std::string steps;  // "" = all
  int max_depth = -1;
  std::string ops;  // comma-separated globs
  bool stats = true;
  bool quiet = false;  // send the command's stdout to /dev/null
};

struct RecordOutcome {
  int exit_code = 0;    // the command's (128 + signal if it was killed)
  std::string summary;  // what was written, for people
  uint64_t trace_bytes = 0;
};

// Fails when the command cannot be started, or when it exited 0 but recorded nothing.
StatusOr<RecordOutcome> RunRecorded(const RecordRequest& request);

}  // namespace upguard
