// How `upguard record -o DIR` writes a run without ever losing one.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<RunStaging> staging, RunStaging::Begin("runs/a", false));
//   ... the command records into staging->path() (UPGUARD_RECORD_DIR) ...
//   if (wrote_a_trace) RETURN_IF_ERROR(staging->Commit());   // else: destroyed, DIR as it was
//
// The command records into a hidden staging directory inside DIR, DIR/.upguard-record-<pid>
// (inside, so that every move into DIR is a rename within one file system). Nothing in DIR is
// touched until the command has ended and left a trace; then Commit removes the earlier run's
// files and renames the new run's into DIR. When the command recorded nothing, the staging
// directory is removed, and DIR too if Begin created it: DIR is left exactly as it was.
//
// Begin refuses a DIR that holds a run (a rank<N>.ugt, or a meta.json that upguard wrote)
// unless `overwrite`, and refuses a meta.json upguard did not write whatever `overwrite` says.
// Commit removes only what upguard writes into a run directory (IsUpguardRunEntry), never the
// user's other files and folders; a captures/ or explain/ folder that holds anything else is
// left alone, and the new run's captures are moved in beside its files.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "upguard/status.h"

namespace upguard {

// "rank<N>.ugt" with N decimal digits.
bool IsRankTraceName(const std::string& name);

// Whether dir/name is something upguard writes into a run directory: rank<N>.ugt, a meta.json
// with "upguard_version", online.json, online.ranks.json, online.rank<N>.json, a captures/
// folder holding only capture files (rank<R>.step<S>.op<I>.safetensors), or an explain/
// folder holding only such entries and the re-run's stderr.txt (`diff --explain`).
bool IsUpguardRunEntry(const std::string& dir, const std::string& name);

class RunStaging {
 public:
  // Checks that `dir` may take a new run, creates it (and its parents) when missing, and makes
  // the empty staging directory. Errors name DIR and the --overwrite flag.
  static StatusOr<std::unique_ptr<RunStaging>> Begin(const std::string& dir, bool overwrite);
  // Removes the staging directory unless Commit moved it (or failed half-way: then the new run
  // stays there and Commit's error says so), and the directories Begin created if empty.
  ~RunStaging();
  RunStaging(const RunStaging&) = delete;
  RunStaging& operator=(const RunStaging&) = delete;

  // Where the command records: DIR/.upguard-record-<pid>.
  const std::string& path() const { return path_; }
  // Removes the earlier run's upguard files from DIR and moves the new run's in (meta.json
  // last, so a reader that sees it sees the traces too).
  Status Commit();

 private:
  RunStaging(std::string dir, std::string path, std::vector<std::string> created)
      : dir_(std::move(dir)), path_(std::move(path)), created_(std::move(created)) {}

  std::string dir_;
  std::string path_;
  std::vector<std::string> created_;  // directories Begin made, the deepest first
  bool keep_ = false;                 // Commit ran: the staging directory is not to be removed
};

}  // namespace upguard
