// Runs a command with recording armed and waits for it (shared by `record` and `demo`).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "upguard/status.h"

namespace upguard {

struct RecordRequest {
  std::string run_dir;  // the run directory (-o DIR)
  // Replace the run run_dir holds (only the files upguard wrote there); without it such a
  // run_dir is refused (rundir/run_staging.h).
  bool overwrite = false;
  // The job this recording is one host of (`--job`): the recorders of one job on several hosts
  // write their ranks into one run_dir together; "" = this recording alone.
  std::string job;
  std::vector<std::string> command;
  std::string steps;  // "" = all
  // Fingerprint the steps outside `steps` (every step without it) instead of skipping them
  // (`record --fingerprint`, docs/long-runs.md).
  bool fingerprint = false;
  int max_depth = -1;
  std::string ops;  // comma-separated globs
  bool stats = true;
  int hash_threads = 0;    // the recorder's hash pool (RecorderOptions::hash_threads); 0 = none
  uint64_t max_bytes = 0;  // the traces' byte budget (RecorderOptions::max_bytes); 0 = none
  std::string capture;     // a capture selector (docs/cli.md); "" = none
  std::string against;     // a reference run directory for online comparison; "" = none
  bool continue_after_divergence = false;
  // End the command after the last step of `steps` (diff --zoom's re-runs), and start it from
  // the resume point snapshot at this path ("" = from the start; without `.rank<N>.pt`,
  // python/upguard/_resume.py).
  bool stop_after_steps = false;
  std::string resume_from;
  // Also watch the ranks for hangs and stragglers (`record --watch`, docs/watch.md): rings and
  // alerts.jsonl go into the run with the traces, findings to stderr as they are seen.
  bool watch = false;
  // With watch, several hosts: share summaries with the other hosts' monitors through this
  // directory ("" = none), this host's under watch_host_name ("" = the hostname).
  std::string watch_exchange;
  std::string watch_host_name;
  // On a terminal, keep its last row for a progress line while the command runs
  // (cli/record_progress.h).
  bool progress = false;
  bool quiet = false;       // send the command's stdout to /dev/null
  std::string stderr_path;  // "" = inherit; else the command's stderr goes to this file
                            // (opened by the child: its directory must exist)
  // For re-running a recorded command (diff --explain): its working directory ("" = ours) and
  // environment variables to set in it.
  std::string cwd;
  std::vector<std::pair<std::string, std::string>> env;
};

struct RecordOutcome {
  int exit_code = 0;    // the command's (128 + signal if it was killed)
  std::string summary;  // what was written, for people
  uint64_t trace_bytes = 0;
  // A trace was written and the new run moved into run_dir; when false, run_dir is as it was.
  bool recorded = false;
};

// Records into a staging directory and moves the run into request.run_dir once the command
// ended having written a trace (rundir/run_staging.h). Fails when run_dir holds a run and
// `overwrite` is not set, when the command cannot be started, or when it exited 0 but recorded
// nothing.
StatusOr<RecordOutcome> RunRecorded(const RecordRequest& request);

}  // namespace upguard
