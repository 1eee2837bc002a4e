// How a run is recorded into DIR without ever losing one: `upguard record -o DIR`, and the C++
// Recorder and Python `upguard.record(DIR)` called on a directory of their own.
//
//   StagingOptions options;                       // overwrite, job, world_size, ...
//   ASSIGN_OR_RETURN(std::unique_ptr<RunStaging> staging, RunStaging::Begin("runs/a", options));
//   ... record into staging->path() (DIR/.upguard-record-<pid>) ...
//   ASSIGN_OR_RETURN(FinishOutcome done, staging->Finish());  // the last one out moves it in
//
// The run is recorded into a hidden staging directory inside DIR (inside, so that every move
// into DIR is a rename within one file system), and nothing in DIR is touched until the
// recording is complete; then the earlier run's files are replaced by the new run's.
//
// One writer per run directory: Begin takes DIR/.upguard-lock (rundir/run_lock.h) naming the
// staging directory. A second recording into DIR is refused, the message naming the first
// (pid, host, since when), unless both name the same job (StagingOptions::job): the ranks of
// one job, on one host or several, then share one staging directory, each process adding a
// member file (rundir/members.h) before it writes and removing it when done. The last member
// to finish moves the run in (the commit token .upguard-commit makes that one process; with
// world_size, only once every rank's trace is there). A lock whose members all died on this
// host (kill -9, the OOM killer) is stale and taken over; the run its staging directory holds
// stays there, an interrupted recording: Begin refuses DIR while it is there unless
// `overwrite` (the new run then replaces it too, once complete), and `upguard recover DIR`
// (Adopt + Finish) moves it into place.
//
// Begin refuses a DIR that holds a run (a rank<N>.ugt, or a meta.json that upguard wrote)
// unless `overwrite`, and a meta.json upguard did not write whatever `overwrite` says. The move
// removes only what upguard writes into a run directory (IsUpguardRunEntry), never the user's
// other files and folders.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rundir/members.h"
#include "rundir/process_identity.h"
#include "rundir/run_lock.h"
#include "upguard/status.h"

namespace upguard {

struct StagingOptions {
  // Replace the run DIR holds (and interrupted recordings in it) once the new one is complete.
  bool overwrite = false;
  // The processes that record one run together name one job (rundir/job.h); "" = this one
  // alone.
  std::string job;
  // The run is moved in only once rank0.ugt .. rank<world_size-1>.ugt are all there; 0 = as
  // soon as the last member finished.
  int world_size = 0;
  std::string what = "upguard record";  // this process, in member files and messages
  // How the caller's user asks to overwrite, for the refusal: "--overwrite", "overwrite=True".
  std::string overwrite_option = "--overwrite";
};

struct FinishOutcome {
  enum class Result {
    kCommitted,     // the run is in DIR (moved by this process or by another member)
    kLeftToOthers,  // other members still write: the last of them moves it in
    kIncomplete,    // no member is left, but a rank's trace is missing: it stays hidden
  };
  Result result = Result::kCommitted;
  std::string detail;  // the members still writing, or the missing traces
};

class RunStaging {
 public:
  // Checks that `dir` may take a new run, creates it (and its parents) when missing, takes or
  // joins its lock and makes the staging directory. Errors name DIR and options.overwrite_option.
  static StatusOr<std::unique_ptr<RunStaging>> Begin(const std::string& dir,
                                                     const StagingOptions& options);
  // Takes over the interrupted recording in DIR/`name` to move it into place (upguard
  // recover): refused while a process that wrote it may still run on this host, or runs on
  // another (unless `force`), and while DIR holds a run (unless options.overwrite).
  static StatusOr<std::unique_ptr<RunStaging>> Adopt(const std::string& dir,
                                                     const std::string& name,
                                                     const StagingOptions& options, bool force);
  // Without Finish: leaves the staging directory; when no member is left and it holds no trace,
  // removes it, the lock and the directories Begin created (if empty): DIR as it was.
  ~RunStaging();
  RunStaging(const RunStaging&) = delete;
  RunStaging& operator=(const RunStaging&) = delete;

  // Where this process records: DIR/.upguard-record-<pid> (the job's, when it joined one).
  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }

  // This process is done writing. The last member moves the run in: every new entry but
  // meta.json replaces its namesake, then the earlier run's other upguard files (and, with
  // overwrite, interrupted recordings) are removed, then meta.json moves in, DIR is synced and
  // the lock released. A failure half-way leaves the new run in path() and says so.
  StatusOr<FinishOutcome> Finish();

 private:
  RunStaging(std::string dir, StagingOptions options, std::vector<std::string> created);

  Status Enter();
  Status MakeOwnStaging();
  // The job's staging directory `joined` (named by `lock`): true once its leader checked DIR
  // and marked it ready, false when it went away meanwhile (the leader failed: retry).
  StatusOr<bool> Join(const RunLockInfo& lock);
  Status PrepareAsLeader();
  StatusOr<bool> LockIsStale(const RunLockInfo& lock) const;
  Status Busy(const RunLockInfo& lock) const;
  Status Commit();
  void ReleaseLock();

  // What the destructor has to undo.
  enum class State {
    kOutside,    // no staging directory entered (yet): nothing
    kPreparing,  // took the lock, checks DIR: nobody wrote yet, lock and directory go
    kRecording,  // a member of a ready staging directory: leave it (the last one cleans up)
    kAdopted,    // recover took over a dead recording's directory: the lock goes, it stays
    kFinished,   // Finish ran
  };

  const std::string dir_;
  const StagingOptions options_;
  const std::vector<std::string> created_;  // directories Begin made, the deepest first
  const ProcessIdentity me_;
  State state_ = State::kOutside;
  std::string path_;                      // the staging directory, once entered
  RunLockInfo lock_;                      // the lock this process took or joined
  std::vector<std::string> interrupted_;  // staging directories of dead recordings in DIR
};

// Whether `path` is a staging directory that a recording made and still holds the lock for:
// DIR/.upguard-record-<...> named by DIR/.upguard-lock. What `upguard record` gives its
// command to record into (UPGUARD_RECORD_DIR): a Recorder writes straight into it.
bool IsLockedStagingDirectory(const std::string& path);

// The rank<N>.ugt names in `dir`, sorted.
std::vector<std::string> RankTraceNames(const std::string& dir);

}  // namespace upguard
