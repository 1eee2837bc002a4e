#include "cli/record_runner.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>

#include "base/file.h"
#include "base/text.h"
#include "cli/adapter_select.h"
#include "cli/paths.h"
#include "cli/record_progress.h"
#include "cli/watch_loop.h"
#include "rundir/entries.h"
#include "rundir/run_staging.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;

void SetChildEnvironment(const RecordRequest& request, const std::string& abs_dir,
                         const std::string& package, const std::string& progress_dir) {
  std::string python_path = package + "/upguard/_bootstrap:" + package;
  if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && old[0] != '\0') {
    python_path += std::string(":") + old;
  }
  setenv("PYTHONPATH", python_path.c_str(), 1);
  setenv("UPGUARD_RECORD_DIR", abs_dir.c_str(), 1);
  setenv("UPGUARD_RECORD_STEPS", request.steps.c_str(), 1);
  setenv("UPGUARD_RECORD_FINGERPRINT", request.fingerprint ? "1" : "0", 1);
  setenv("UPGUARD_RECORD_MAX_DEPTH",
         request.max_depth < 0 ? "" : std::to_string(request.max_depth).c_str(), 1);
  setenv("UPGUARD_RECORD_OPS", request.ops.c_str(), 1);
  setenv("UPGUARD_RECORD_STATS", request.stats ? "1" : "0", 1);
  setenv("UPGUARD_RECORD_HASH_THREADS", std::to_string(request.hash_threads).c_str(), 1);
  setenv("UPGUARD_RECORD_CAPTURE", request.capture.c_str(), 1);
  const std::string against =
      request.against.empty() ? "" : fs::absolute(request.against).lexically_normal().string();
  setenv("UPGUARD_RECORD_AGAINST", against.c_str(), 1);
  setenv("UPGUARD_RECORD_CONTINUE", request.continue_after_divergence ? "1" : "0", 1);
  setenv("UPGUARD_RECORD_STOP_AFTER_STEPS", request.stop_after_steps ? "1" : "0", 1);
  setenv("UPGUARD_RECORD_RESUME_FROM", request.resume_from.c_str(), 1);
  setenv("UPGUARD_RECORD_PROGRESS", progress_dir.c_str(), 1);
  setenv("UPGUARD_RECORD_MAX_BYTES",
         request.max_bytes == 0 ? "" : std::to_string(request.max_bytes).c_str(), 1);
  if (request.watch) {
    setenv("UPGUARD_WATCH_DIR", abs_dir.c_str(), 1);
  } else {
    unsetenv("UPGUARD_WATCH_DIR");
  }
  // Set by a recording process for the processes it starts (_autostart.py): not this one's.
  unsetenv("UPGUARD_RECORDING_PID");
  for (const auto& [name, value] : request.env) setenv(name.c_str(), value.c_str(), 1);
}

}  // namespace

StatusOr<RecordOutcome> RunRecorded(const RecordRequest& request) {
  // The adapter built for the command's torch, or the error that says how to build it, before
  // anything runs or is written.
  ASSIGN_OR_RETURN(const std::string package, SelectAdapter(request.command, request.cwd));
  StagingOptions staging_options;
  staging_options.overwrite = request.overwrite;
  staging_options.job = request.job;
  ASSIGN_OR_RETURN(std::unique_ptr<RunStaging> staging,
                   RunStaging::Begin(request.run_dir, staging_options));
  // The command and every process it starts (torchrun's workers) record into the staging
  // directory; nothing that meta.json holds names it (argv, cwd and against are the command's).
  const std::string abs_dir = fs::absolute(staging->path()).lexically_normal().string();
  std::vector<char*> child_argv;
  for (const std::string& arg : request.command)
    child_argv.push_back(const_cast<char*>(arg.c_str()));
  child_argv.push_back(nullptr);

  // The ranks' progress records: for the progress line, and at the end for the ranks whose
  // recording stopped early (a full disk, --max-bytes).
  std::unique_ptr<RecordProgress> progress = RecordProgress::Begin(request.progress);
  const std::string progress_dir = progress ? progress->dir() : "";
  std::function<void()> each_poll;
  if (progress) each_poll = [&progress] { progress->Poll(); };

  // The child reports a failed exec through this close-on-exec pipe.
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) return IoError(std::string("pipe: ") + strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return IoError(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    close(exec_pipe[0]);
    SetChildEnvironment(request, abs_dir, package, progress_dir);
    if (!request.cwd.empty() && chdir(request.cwd.c_str()) != 0) {
      int error = errno;
      (void)!write(exec_pipe[1], &error, sizeof(error));
      _exit(127);
    }
    if (request.quiet) {
      int null_fd = open("/dev/null", O_WRONLY);
      if (null_fd >= 0) dup2(null_fd, STDOUT_FILENO);
    }
    if (!request.stderr_path.empty()) {
      int err_fd = open(request.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
    }
    execvp(child_argv[0], child_argv.data());
    int error = errno;
    (void)!write(exec_pipe[1], &error, sizeof(error));
    _exit(127);
  }
  close(exec_pipe[1]);
  int exec_error = 0;
  const bool exec_failed =
      read(exec_pipe[0], &exec_error, sizeof(exec_error)) == sizeof(exec_error);
  close(exec_pipe[0]);

  int wait_status = 0;
  if (request.watch && !exec_failed) {
    watch::MonitorOptions watching;
    watching.dir = abs_dir;
    watching.exchange_dir = request.watch_exchange;
    watching.host_name = request.watch_host_name;
    ASSIGN_OR_RETURN(std::unique_ptr<watch::Monitor> monitor, watch::Monitor::Open(watching));
    wait_status = WaitWatching(pid, *monitor, /*stop_on_alert=*/false, each_poll);
  } else {
    wait_status = WaitForCommand(pid, each_poll);
  }
  if (progress) progress->EndDrawing();  // the terminal's row given back before more is said
  if (exec_failed) {
    return InvalidArgument("cannot run '" + request.command[0] + "': " + strerror(exec_error) +
                           "; give the interpreter and script, e.g. -- /usr/bin/python3 train.py");
  }

  RecordOutcome outcome;
  outcome.exit_code = WIFEXITED(wait_status)     ? WEXITSTATUS(wait_status)
                      : WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status)
                                                 : 1;
  ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(staging->path()));
  std::string files;
  for (const std::string& name : names) {
    if (!IsRankTraceName(name)) continue;
    std::error_code error;
    uint64_t size = fs::file_size(fs::path(staging->path()) / name, error);
    outcome.trace_bytes += error ? 0 : size;
    files += " " + name + " (" + HumanBytes(error ? 0 : size) + ")";
  }
  if (files.empty()) {  // `staging` goes: run_dir stays as it was
    std::string why = "recorded nothing, so " + request.run_dir +
                      " was left as it was: the command never imported torch under upguard. "
                      "Run a Python program with the interpreter that has torch (" +
                      PythonInterpreter() + ")";
    if (outcome.exit_code == 0) return FailedPrecondition(why);
    outcome.summary = "upguard record: " + why + "\n";
    return outcome;
  }
  ASSIGN_OR_RETURN(const FinishOutcome finished, staging->Finish());
  if (finished.result != FinishOutcome::Result::kCommitted) {
    // One host of a job: the last recorder of the job moves the run in.
    const bool left = finished.result == FinishOutcome::Result::kLeftToOthers;
    outcome.summary = "upguard record: wrote" + files + " into " + staging->path() + "; " +
                      (left ? "the run moves into " + request.run_dir +
                                  " when the job's other recorders end (" + finished.detail + ")"
                            : "no recorder of the job is left and " + finished.detail +
                                  " is missing: `upguard recover " + request.run_dir +
                                  "` moves what there is into place") +
                      "\n";
    return outcome;
  }
  outcome.recorded = true;
  const std::string stopped = progress ? StoppedRanksNote(progress->Read()) : "";
  outcome.summary =
      "upguard record: wrote " + request.run_dir + ":" + files +
      (stopped.empty() ? "" : ", " + stopped) +
      (outcome.exit_code == 0 ? ""
                              : "; the command exited with " + std::to_string(outcome.exit_code)) +
      "\n";
  return outcome;
}

}  // namespace upguard
