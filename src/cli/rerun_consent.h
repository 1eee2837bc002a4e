// Consent before upguard runs a command recorded in a run directory (`diff --explain`,
// `diff --zoom`, `record --against`). A run directory is data, often someone else's: the
// argv, cwd and env in its meta.json are whatever was written there, so re-running them runs
// their code as you.
//
// A recorded command runs without asking only when the run is known to be yours (WhyNotOwn):
// recorded by your user id on this host, from a working directory that still resolves to the
// real path recorded, and its metadata file yours and not writable by every user. Otherwise
// upguard prints the exact command, working directory and environment it would run and
// refuses (StatusCode::kUntrusted, exit code 4), unless the run was named with
// `--trust-run DIR` or the user answers yes on a terminal (stdin and stderr both TTYs).
//
//   ASSIGN_OR_RETURN(auto consent, RerunConsent::Make(flags.GetAll("trust-run")));
//   ASSIGN_OR_RETURN(RecordRequest request, RerunRequest(run, "A", "to capture tensors",
//                                                        out_dir, consent.get()));
//
// What this is not: a signature. meta.json is a file, and whoever writes it can write your
// user id and host name into it; the check keeps other users' directories and runs from
// elsewhere from running unasked, and the environment a re-run applies is limited to the
// numerics variables the recorder writes (cli/rerun_request.h) whatever meta.json holds.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cli/record_runner.h"
#include "run/run_loader.h"
#include "upguard/status.h"

namespace upguard {

// Who and where this process runs.
struct Whereabouts {
  int64_t uid = -1;
  std::string user;  // the login name, "" if the system has none
  std::string host;

  static Whereabouts Here();
};

// Why `run`'s recorded command is not known to be the command of `here`'s user on `here`'s
// host, as one clause or several joined by "; "; "" when it is.
std::string WhyNotOwn(const Run& run, const Whereabouts& here);

// The command line as a POSIX shell reads it back: each word quoted when it needs it, control
// characters written as $'\xNN' so that a crafted word cannot redraw the terminal.
std::string ShellQuoted(const std::vector<std::string>& words);

class RerunConsent {
 public:
  // `trusted`: the --trust-run directories (each must exist). `may_ask`: ask on a terminal
  // when stdin and stderr are both TTYs (false: refuse at once).
  static StatusOr<std::shared_ptr<RerunConsent>> Make(const std::vector<std::string>& trusted,
                                                      bool may_ask = true);

  // Ok when `request`, the re-run of `run` (`side`: "A", "B", "the reference"; `purpose`: "to
  // capture tensors"), may run; `dropped_env` are the names of meta.json's env that the re-run
  // leaves out. A run allowed once (by the flag or an answer) is not asked about again.
  Status Allow(const Run& run, const RecordRequest& request,
               const std::vector<std::string>& dropped_env, const std::string& side,
               const std::string& purpose);

 private:
  RerunConsent(std::vector<std::string> trusted, bool may_ask, Whereabouts here)
      : trusted_(std::move(trusted)), may_ask_(may_ask), here_(std::move(here)) {}

  std::vector<std::string> trusted_;  // real paths of the run directories allowed
  bool may_ask_;
  Whereabouts here_;
};

}  // namespace upguard
