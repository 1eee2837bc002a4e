// Where a Recorder writes, and how its run gets into the run directory (RecorderOptions::
// run_dir): the recorder stages like `upguard record -o DIR` does.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<RunPlace> place, RunPlace::Open(options));
//   ... the trace, meta.json, captures, online.json go into place->dir() ...
//   RETURN_IF_ERROR(place->Close());   // the last rank of the job to close moves the run in
//
// Two cases. run_dir is a staging directory `upguard record` made (the command's
// UPGUARD_RECORD_DIR, locked by it): the recorder writes into it as it is and only adds its
// member file, so that the staging directory's liveness counts it; the CLI moves the run in.
// Otherwise run_dir is the user's: RunStaging::Begin checks it (a run or a foreign meta.json
// there is refused without overwrite), takes or joins its lock (the ranks of one job name the
// same job: RecorderOptions::job, else the launcher's environment), and the recorder writes
// into run_dir/.upguard-record-<pid>; Close finishes it (rundir/run_staging.h).
#pragma once

#include <memory>
#include <string>

#include "rundir/process_identity.h"
#include "rundir/run_staging.h"
#include "upguard/recorder.h"
#include "upguard/status.h"

namespace upguard {

class RunPlace {
 public:
  static StatusOr<std::unique_ptr<RunPlace>> Open(const RecorderOptions& options);
  // Without Close (a failed Open of the recorder): the staging goes if nothing was written.
  ~RunPlace() = default;

  // Where to write now; after Close, where the run is (run_dir once moved in).
  const std::string& dir() const { return dir_; }
  // The trace and meta.json are closed: this rank is done. The last rank of the job moves the
  // run into run_dir; a rank that finds a rank's trace missing with nobody left to write it
  // says where the run stays.
  Status Close();

 private:
  RunPlace(std::string run_dir, std::string dir, int rank)
      : run_dir_(std::move(run_dir)), dir_(std::move(dir)), rank_(rank) {}

  const std::string run_dir_;
  std::string dir_;
  const int rank_;
  std::unique_ptr<RunStaging> staging_;  // run_dir is the user's
  bool member_ = false;                  // run_dir is upguard record's staging directory
  ProcessIdentity me_;
};

}  // namespace upguard
