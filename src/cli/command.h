// The subcommands of the `upguard` CLI. Each one parses its own flags and returns the process
// exit code, or a Status that main() prints and turns into exit code 2. They do not throw; an
// exception that escapes one anyway is a bug, which main() reports as an internal error (exit 2).
//
// Exit codes (docs/cli.md): 0 ok / identical, 1 the runs diverged, 2 error (bad input, I/O),
// 3 unverified (nothing compared differs, but some tensors were not read), 4 refused to re-run
// a recorded command without consent (StatusCode::kUntrusted, cli/rerun_consent.h). `record`
// returns the recorded command's own exit code.
#pragma once

#include "upguard/status.h"

namespace upguard {

inline constexpr int kExitOk = 0;
inline constexpr int kExitDiverged = 1;
inline constexpr int kExitError = 2;
inline constexpr int kExitUnverified = 3;
inline constexpr int kExitUntrusted = 4;

// argv[0] is "upguard", argv[1] the subcommand; flags start at argv[2].
using CommandFn = StatusOr<int> (*)(int argc, char** argv);

struct CommandInfo {
  const char* name;
  const char* summary;
  const char* usage;
  CommandFn run;
};

StatusOr<int> RunRecordCommand(int argc, char** argv);
StatusOr<int> RunDiffCommand(int argc, char** argv);
StatusOr<int> RunShowCommand(int argc, char** argv);
StatusOr<int> RunNanCommand(int argc, char** argv);
StatusOr<int> RunDemoCommand(int argc, char** argv);
StatusOr<int> RunWatchCommand(int argc, char** argv);
StatusOr<int> RunCalibrateCommand(int argc, char** argv);
StatusOr<int> RunMachinesCommand(int argc, char** argv);
StatusOr<int> RunRecoverCommand(int argc, char** argv);

extern const char kRecordUsage[];
extern const char kDiffUsage[];
extern const char kShowUsage[];
extern const char kNanUsage[];
extern const char kDemoUsage[];
extern const char kWatchUsage[];
extern const char kCalibrateUsage[];
extern const char kMachinesUsage[];
extern const char kRecoverUsage[];

// True if argv holds -h or --help before any `--`.
bool WantsHelp(int argc, char** argv);

}  // namespace upguard
