#include "recorder/run_place.h"

#include <cstdio>

#include "rundir/job.h"
#include "rundir/members.h"

namespace upguard {

StatusOr<std::unique_ptr<RunPlace>> RunPlace::Open(const RecorderOptions& options) {
  const std::string what = "rank " + std::to_string(options.rank);
  if (IsLockedStagingDirectory(options.run_dir)) {
    std::unique_ptr<RunPlace> place(new RunPlace(options.run_dir, options.run_dir, options.rank));
    place->me_ = ThisProcess();
    RETURN_IF_ERROR(AddMember(options.run_dir, place->me_, what));
    place->member_ = true;
    return place;
  }
  StagingOptions staging;
  staging.overwrite = options.overwrite;
  staging.job = options.job.empty() ? JobFromEnvironment(options.world_size) : options.job;
  staging.world_size = options.world_size;
  staging.what = what;
  staging.overwrite_option = options.overwrite_option;
  ASSIGN_OR_RETURN(std::unique_ptr<RunStaging> begun, RunStaging::Begin(options.run_dir, staging));
  std::unique_ptr<RunPlace> place(new RunPlace(options.run_dir, begun->path(), options.rank));
  place->staging_ = std::move(begun);
  return place;
}

Status RunPlace::Close() {
  if (member_) {
    RemoveMember(dir_, me_);
    member_ = false;
    return Status::Ok();
  }
  if (staging_ == nullptr) return Status::Ok();
  StatusOr<FinishOutcome> finished = staging_->Finish();
  staging_.reset();
  RETURN_IF_ERROR(finished.status());
  if (finished->result == FinishOutcome::Result::kCommitted) {
    dir_ = run_dir_;
  } else if (finished->result == FinishOutcome::Result::kIncomplete) {
    std::fprintf(stderr,
                 "upguard: rank %d's trace stays in %s: %s of the job is missing and no rank "
                 "is left to write it; `upguard recover %s` moves what there is into place\n",
                 rank_, dir_.c_str(), finished->detail.c_str(), run_dir_.c_str());
  }
  return Status::Ok();
}

}  // namespace upguard
