#include "rundir/run_staging.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "base/file.h"
#include "rundir/entries.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;

// How often Begin re-reads a lock that changed under it, and how long Finish waits for the
// commit token another member holds (it holds it for a directory listing, or for the moves).
constexpr int kLockAttempts = 50;
constexpr auto kRetryPause = std::chrono::milliseconds(20);
constexpr auto kTokenWait = std::chrono::seconds(60);

fs::file_status StatusOf(const std::string& path) {
  std::error_code error;
  return fs::symlink_status(path, error);  // a link is never taken for what it points to
}

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The directories that MakeDirectories(dir) would create, the deepest first.
std::vector<std::string> MissingDirectories(const std::string& dir) {
  std::vector<std::string> missing;
  fs::path path = fs::absolute(dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();  // "runs/a/"
  std::error_code error;
  while (!path.empty() && !fs::exists(path, error) && path != path.parent_path()) {
    missing.push_back(path.string());
    path = path.parent_path();
  }
  return missing;
}

// Renames every entry of `from` into `to`, merging a folder that is in both (captures/ left in
// DIR because it held the user's files). Recording's bookkeeping (member files, the commit
// token) stays behind.
Status MoveEntries(const std::string& from, const std::string& to,
                   const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (IsBookkeepingName(name)) continue;
    const std::string source = from + "/" + name, target = to + "/" + name;
    const fs::file_status source_status = StatusOf(source), target_status = StatusOf(target);
    std::error_code error;
    if (fs::is_directory(source_status) && fs::is_directory(target_status)) {
      ASSIGN_OR_RETURN(std::vector<std::string> inner, ListDirectory(source));
      RETURN_IF_ERROR(MoveEntries(source, target, inner));
      fs::remove(source, error);
    } else if (fs::exists(target_status) &&
               fs::is_directory(source_status) != fs::is_directory(target_status)) {
      return IoError("cannot move " + source + " to " + target +
                     ": something of another kind is in the way");
    } else {
      fs::rename(source, target, error);
    }
    if (error) return IoError("cannot move " + source + " to " + target + ": " + error.message());
  }
  return Status::Ok();
}

// The staging directories in `dir` other than `except`, by name.
std::vector<std::string> OtherStagings(const std::string& dir, const std::string& except) {
  std::vector<std::string> found;
  StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  if (!names.ok()) return found;
  for (const std::string& name : *names) {
    if (IsStagingName(name) && name != except && fs::is_directory(StatusOf(dir + "/" + name))) {
      found.push_back(name);
    }
  }
  return found;
}

bool NoLiveMember(const std::string& staging) {
  StatusOr<std::vector<Member>> members = ListMembers(staging);
  return members.ok() && LiveMembers(*members).empty();
}

std::string Listed(const std::vector<std::string>& names, size_t most) {
  std::string text;
  for (size_t idx = 0; idx < names.size() && idx < most; ++idx) {
    text += (idx == 0 ? "" : ", ") + names[idx];
  }
  if (names.size() > most) text += ", ...";
  return text;
}

}  // namespace

std::vector<std::string> RankTraceNames(const std::string& dir) {
  std::vector<std::string> ranks;
  StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  if (!names.ok()) return ranks;
  for (const std::string& name : *names) {
    if (IsRankTraceName(name) && fs::is_regular_file(StatusOf(dir + "/" + name))) {
      ranks.push_back(name);
    }
  }
  return ranks;
}

bool IsLockedStagingDirectory(const std::string& path) {
  const fs::path normal = fs::absolute(path).lexically_normal();
  const fs::path staging = normal.filename().empty() ? normal.parent_path() : normal;
  if (!IsStagingName(staging.filename().string()) || !IsDirectory(staging.string())) return false;
  StatusOr<std::optional<RunLockInfo>> lock = ReadRunLock(staging.parent_path().string());
  return lock.ok() && lock->has_value() && (*lock)->staging == staging.filename().string();
}

RunStaging::RunStaging(std::string dir, StagingOptions options, std::vector<std::string> created)
    : dir_(std::move(dir)),
      options_(std::move(options)),
      created_(std::move(created)),
      me_(ThisProcess()) {}

StatusOr<std::unique_ptr<RunStaging>> RunStaging::Begin(const std::string& dir,
                                                        const StagingOptions& options) {
  std::error_code error;
  const fs::file_status status = fs::status(dir, error);  // DIR may be a link to a directory
  if (fs::exists(status) && !fs::is_directory(status)) {
    return InvalidArgument(dir +
                           " is not a directory; give the directory to record the run into, "
                           "e.g. runs/a");
  }
  std::unique_ptr<RunStaging> staging(new RunStaging(
      dir, options, fs::exists(status) ? std::vector<std::string>() : MissingDirectories(dir)));
  RETURN_IF_ERROR(MakeDirectories(dir));
  RETURN_IF_ERROR(staging->Enter());
  return staging;
}

StatusOr<std::unique_ptr<RunStaging>> RunStaging::Adopt(const std::string& dir,
                                                        const std::string& name,
                                                        const StagingOptions& options, bool force) {
  const std::string path = dir + "/" + name;
  if (!IsStagingName(name) || !fs::is_directory(StatusOf(path)) || RankTraceNames(path).empty()) {
    return NotFound(path + " is not an interrupted recording (a " + kStagingPrefix +
                    "<pid> directory holding a rank<N>.ugt)");
  }
  ASSIGN_OR_RETURN(std::vector<Member> members, ListMembers(path));
  std::vector<Member> live = LiveMembers(members);
  const bool remote_only = std::all_of(
      live.begin(), live.end(), [](const Member& member) { return !OnThisHost(member.process); });
  if (!live.empty() && (!remote_only || !force)) {
    std::string why = path + " is still being written by " + DescribeMembers(live);
    if (remote_only) {
      why +=
          ", which this host cannot check: run this on that host, or pass --force if it "
          "no longer runs";
    }
    return FailedPrecondition(why);
  }
  std::unique_ptr<RunStaging> staging(new RunStaging(dir, options, {}));
  ASSIGN_OR_RETURN(std::optional<RunLockInfo> lock, ReadRunLock(dir));
  if (lock && lock->staging != name) {
    ASSIGN_OR_RETURN(bool stale, staging->LockIsStale(*lock));
    if (!stale) return staging->Busy(*lock);
  }
  if (lock) {
    ASSIGN_OR_RETURN(bool broken, BreakRunLock(dir, *lock));
    if (!broken) return FailedPrecondition(dir + " was locked by another recording meanwhile");
  }
  staging->lock_ = RunLockInfo{staging->me_, "", name, Now()};
  ASSIGN_OR_RETURN(bool taken, CreateRunLock(dir, staging->lock_));
  if (!taken) return FailedPrecondition(dir + " was locked by another recording meanwhile");
  staging->state_ = State::kAdopted;
  staging->path_ = path;
  for (const Member& member : members) unlink(member.file.c_str());  // dead, or --force
  RETURN_IF_ERROR(AddMember(path, staging->me_, options.what));
  RETURN_IF_ERROR(staging->PrepareAsLeader());
  return staging;
}

Status RunStaging::MakeOwnStaging() {
  // DIR/.upguard-record-<pid>; a name left by a dead recorder with this pid (here, or on
  // another host) is an interrupted run, never reused: the next free suffix is taken.
  const std::string base = dir_ + "/" + kStagingPrefix + std::to_string(me_.pid);
  for (int suffix = 1; suffix < 1000; ++suffix) {
    const std::string path = suffix == 1 ? base : base + "-" + std::to_string(suffix);
    if (mkdir(path.c_str(), 0755) == 0) {
      if (Status added = AddMember(path, me_, options_.what); !added.ok()) {
        rmdir(path.c_str());
        return added;
      }
      path_ = path;
      return Status::Ok();
    }
    if (errno != EEXIST) {
      return IoError("cannot create the staging directory " + path + ": " + std::strerror(errno));
    }
  }
  return IoError("cannot create a staging directory in " + dir_ + ": " + base +
                 "-1..999 all exist; remove the ones no recording uses");
}

Status RunStaging::Enter() {
  for (int attempt = 0; attempt < kLockAttempts; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(kRetryPause);
    StatusOr<std::optional<RunLockInfo>> read = ReadRunLock(dir_);
    if (!read.ok()) {
      if (attempt + 1 < kLockAttempts) continue;  // being written by the O_EXCL route
      return read.status();
    }
    const std::optional<RunLockInfo>& lock = *read;
    if (!lock) {
      RETURN_IF_ERROR(MakeOwnStaging());
      lock_ = RunLockInfo{me_, options_.job, fs::path(path_).filename().string(), Now()};
      ASSIGN_OR_RETURN(bool taken, CreateRunLock(dir_, lock_));
      if (taken) {
        state_ = State::kPreparing;
        RETURN_IF_ERROR(PrepareAsLeader());
        RETURN_IF_ERROR(WriteFileAtomically(path_ + "/" + kReadyName, "\n"));
        state_ = State::kRecording;
        return Status::Ok();
      }
      RemoveMember(path_, me_);
      rmdir(path_.c_str());
      path_.clear();
      continue;
    }
    // A job's lock is joined only while a member of it runs: a later job of the same name (a
    // rerun on the same MASTER_PORT) never adds its ranks to a dead one's.
    ASSIGN_OR_RETURN(bool stale, LockIsStale(*lock));
    if (!stale && !options_.job.empty() && lock->job == options_.job) {
      ASSIGN_OR_RETURN(bool joined, Join(*lock));
      if (joined) return Status::Ok();
      continue;
    }
    if (!stale) return Busy(*lock);
    RETURN_IF_ERROR(BreakRunLock(dir_, *lock).status());
  }
  return FailedPrecondition("could not take the lock " + dir_ + "/" + kLockName +
                            ": other recordings kept taking it; try again");
}

StatusOr<bool> RunStaging::Join(const RunLockInfo& lock) {
  const std::string joined = dir_ + "/" + lock.staging;
  if (!fs::is_directory(StatusOf(joined)) || !AddMember(joined, me_, options_.what).ok()) {
    return false;  // the job's last member is moving its run in, or its leader failed
  }
  StatusOr<std::optional<RunLockInfo>> again = ReadRunLock(dir_);
  if (!again.ok() || !again->has_value() || (*again)->ToJson() != lock.ToJson()) {
    RemoveMember(joined, me_);
    return false;
  }
  // The leader checks DIR in milliseconds; it removes the directory when DIR is refused.
  const auto deadline = std::chrono::steady_clock::now() + kTokenWait;
  while (!fs::exists(StatusOf(joined + "/" + kReadyName))) {
    if (!fs::is_directory(StatusOf(joined))) return false;
    if (std::chrono::steady_clock::now() > deadline) {
      RemoveMember(joined, me_);
      return FailedPrecondition(joined + " was never made ready by " + lock.Describe() +
                                ", which took " + dir_ + "/" + kLockName);
    }
    std::this_thread::sleep_for(kRetryPause);
  }
  path_ = joined;
  lock_ = lock;
  state_ = State::kRecording;
  return true;
}

StatusOr<bool> RunStaging::LockIsStale(const RunLockInfo& lock) const {
  const std::string staging = dir_ + "/" + lock.staging;
  if (!fs::is_directory(StatusOf(staging))) return true;  // its owner makes it before the lock
  return NoLiveMember(staging);
}

Status RunStaging::Busy(const RunLockInfo& lock) const {
  std::string why = dir_ + " is being recorded into by " + lock.Describe() + " (" + dir_ + "/" +
                    kLockName + "); one recording writes into a run directory at a time: " +
                    "wait for it to end, or record into another directory";
  StatusOr<std::vector<Member>> members = ListMembers(dir_ + "/" + lock.staging);
  if (members.ok()) {
    std::vector<Member> live = LiveMembers(*members);
    const bool remote = !live.empty() && std::all_of(live.begin(), live.end(), [](const Member& m) {
      return !OnThisHost(m.process);
    });
    if (!live.empty()) why += "; writing now: " + DescribeMembers(live);
    if (remote) {
      why +=
          "; if that is no longer running (this host cannot check another's processes), "
          "remove " +
          dir_ + "/" + kLockName;
    }
  }
  return FailedPrecondition(why +
                            ". The ranks of one job, on one host or several, record into one "
                            "directory together when they name the same job (upguard record "
                            "--job ID; found by itself under torchrun, Slurm or MASTER_ADDR)");
}

// Refuses a DIR whose run would be replaced without overwrite, or whose meta.json is not
// upguard's (the new run's would replace it). Notes the interrupted recordings in DIR (other
// staging directories holding a trace, nobody writing them) and removes the empty ones.
Status RunStaging::PrepareAsLeader() {
  const std::string own = fs::path(path_).filename().string();
  std::vector<std::string> interrupted;
  for (const std::string& name : OtherStagings(dir_, own)) {
    const std::string path = dir_ + "/" + name;
    if (!NoLiveMember(path)) continue;  // a recording about to find the lock taken
    if (RankTraceNames(path).empty()) {
      std::error_code error;
      fs::remove_all(path, error);  // a recording that died before it wrote a trace
      continue;
    }
    interrupted.push_back(name);
  }
  const std::string meta = dir_ + "/meta.json";
  const bool has_meta = fs::exists(StatusOf(meta));
  const bool upguard_meta = has_meta && IsUpguardMeta(meta);
  if (has_meta && !upguard_meta) {
    return FailedPrecondition(meta +
                              " was not written by upguard (it has no \"upguard_version\"), and "
                              "the new run's meta.json would replace it: record into another "
                              "directory, or move the file away");
  }
  std::vector<std::string> run_files = RankTraceNames(dir_);
  for (const std::string& name : run_files) {
    if (!IsUpguardTrace(dir_ + "/" + name)) {
      return FailedPrecondition(dir_ + "/" + name +
                                " was not written by upguard (it is not an upguard trace), and "
                                "the new run's would replace it: record into another "
                                "directory, or move the file away");
    }
  }
  if (upguard_meta) run_files.push_back("meta.json");
  if (!run_files.empty() && !options_.overwrite) {
    return FailedPrecondition(dir_ + " already holds a run (" + Listed(run_files, 3) +
                              "); upguard does not replace it: pass " + options_.overwrite_option +
                              " to replace it (only the files upguard wrote there are removed, "
                              "once the new run is complete), or record into another directory");
  }
  if (!interrupted.empty() && !options_.overwrite) {
    const std::string first = dir_ + "/" + interrupted.front();
    return FailedPrecondition(dir_ + " holds an interrupted recording in " + first + " (" +
                              Listed(RankTraceNames(first), 3) +
                              "; its recorder no longer runs): `upguard recover " + dir_ +
                              "` moves it into place; or pass " + options_.overwrite_option +
                              " to replace it with the new run once that is complete");
  }
  interrupted_ = interrupted;
  return Status::Ok();
}

StatusOr<FinishOutcome> RunStaging::Finish() {
  if (state_ != State::kRecording && state_ != State::kAdopted) {
    return Internal("RunStaging::Finish without a staging directory to finish");
  }
  state_ = State::kFinished;
  RemoveMember(path_, me_);
  const std::string token = path_ + "/" + kCommitToken;
  const auto deadline = std::chrono::steady_clock::now() + kTokenWait;
  while (true) {
    if (!fs::is_directory(StatusOf(path_))) return FinishOutcome{};  // another member moved it
    StatusOr<bool> taken = CreateFileExclusively(token, me_.ToJson().dump() + "\n");
    if (!taken.ok() && !fs::is_directory(StatusOf(path_))) return FinishOutcome{};
    if (!taken.ok()) return taken.status();
    if (*taken) break;
    StatusOr<std::string> holder_text = ReadFileToString(token);
    std::optional<ProcessIdentity> holder = ProcessIdentity::FromJson(nlohmann::json::parse(
        holder_text.ok() ? *holder_text : "", nullptr, /*allow_exceptions=*/false));
    if (holder && !MayBeAlive(*holder)) unlink(token.c_str());  // its holder was killed
    if (std::chrono::steady_clock::now() > deadline) {
      return IoError(token + " stayed taken for a minute" +
                     (holder ? " by " + holder->Describe() : std::string()) +
                     "; the run stays in " + path_ + ": `upguard recover " + dir_ +
                     "` moves it into place");
    }
    std::this_thread::sleep_for(kRetryPause);
  }
  FinishOutcome outcome;
  ASSIGN_OR_RETURN(std::vector<Member> members, ListMembers(path_));
  std::vector<Member> live = LiveMembers(members);
  std::vector<std::string> missing;
  for (int rank = 0; rank < options_.world_size; ++rank) {
    const std::string name = "rank" + std::to_string(rank) + ".ugt";
    if (!fs::is_regular_file(StatusOf(path_ + "/" + name))) missing.push_back(name);
  }
  if (!live.empty() || !missing.empty()) {
    unlink(token.c_str());
    outcome.result =
        live.empty() ? FinishOutcome::Result::kIncomplete : FinishOutcome::Result::kLeftToOthers;
    outcome.detail = live.empty() ? Listed(missing, 4) : DescribeMembers(live);
    return outcome;
  }
  RETURN_IF_ERROR(Commit());
  return outcome;
}

Status RunStaging::Commit() {
  const std::string where =
      "; the new run is in " + path_ + ": `upguard recover " + dir_ + "` moves it into place";
  ASSIGN_OR_RETURN(std::vector<std::string> old_names, ListDirectory(dir_));
  std::vector<std::string> old_entries;
  for (const std::string& name : old_names) {
    if (IsUpguardRunEntry(dir_, name)) old_entries.push_back(name);
  }
  ASSIGN_OR_RETURN(std::vector<std::string> new_names, ListDirectory(path_));
  auto is_new = [&](const std::string& name) {
    return std::find(new_names.begin(), new_names.end(), name) != new_names.end();
  };
  auto remove = [&](const std::string& name) -> Status {
    std::error_code error;
    fs::remove_all(dir_ + "/" + name, error);
    if (error) {
      return IoError("cannot remove the earlier run's " + dir_ + "/" + name + ": " +
                     error.message() + where);
    }
    return Status::Ok();
  };
  // The earlier meta.json goes first: DIR never pairs the earlier run's with the new traces.
  auto has = [&](const std::string& name) {
    return std::find(old_entries.begin(), old_entries.end(), name) != old_entries.end();
  };
  if (has("meta.json")) RETURN_IF_ERROR(remove("meta.json"));
  std::vector<std::string> first;
  for (const std::string& name : new_names) {
    if (name == "meta.json") continue;
    // An earlier captures/ (explain/, watch/) of upguard's only is replaced, not merged.
    if (has(name) && fs::is_directory(StatusOf(dir_ + "/" + name))) RETURN_IF_ERROR(remove(name));
    first.push_back(name);
  }
  if (Status moved = MoveEntries(path_, dir_, first); !moved.ok()) {
    return IoError(moved.message() + where);
  }
  for (const std::string& name : old_entries) {
    if (name != "meta.json" && !is_new(name)) RETURN_IF_ERROR(remove(name));
  }
  for (const std::string& name : interrupted_) RETURN_IF_ERROR(remove(name));  // overwrite
  if (is_new("meta.json")) {
    if (Status moved = MoveEntries(path_, dir_, {"meta.json"}); !moved.ok()) {
      return IoError(moved.message() + where);
    }
  }
  RETURN_IF_ERROR(SyncDirectory(dir_));
  // The lock goes before the staging directory: a lock seen without its staging directory is
  // taken for stale, and must not be a newer recording's.
  ReleaseLock();
  std::error_code error;
  fs::remove_all(path_, error);  // the bookkeeping left: member files, the token
  return Status::Ok();
}

void RunStaging::ReleaseLock() {
  StatusOr<std::optional<RunLockInfo>> lock = ReadRunLock(dir_);
  if (lock.ok() && lock->has_value() && (*lock)->staging == lock_.staging &&
      (*lock)->owner.pid == lock_.owner.pid && (*lock)->owner.host == lock_.owner.host) {
    (void)BreakRunLock(dir_, **lock);
  }
}

RunStaging::~RunStaging() {
  std::error_code error;
  switch (state_) {
    case State::kOutside:
    case State::kFinished:
      break;
    case State::kPreparing:  // refused before anybody wrote (joiners wait for kReadyName)
      ReleaseLock();
      fs::remove_all(path_, error);
      break;
    case State::kAdopted:  // the run stays where it was found
      RemoveMember(path_, me_);
      ReleaseLock();
      break;
    case State::kRecording:
      RemoveMember(path_, me_);
      if (NoLiveMember(path_) && RankTraceNames(path_).empty()) {
        ReleaseLock();  // nothing recorded, nobody else writing: as if Begin had never run
        fs::remove_all(path_, error);
      }
      break;
  }
  for (const std::string& dir : created_) fs::remove(dir, error);  // only while empty
}

}  // namespace upguard
