// `upguard watch`: names the rank that hangs or lags, and why, while the training runs
// (src/watch/; docs/watch.md).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "base/html.h"
#include "cli/adapter_select.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "cli/watch_loop.h"
#include "watch/monitor.h"
#include "watch/report.h"
#include "watch/report_html.h"

namespace upguard {

const char kWatchUsage[] = R"(usage: upguard watch -o DIR [options] -- COMMAND...
       upguard watch --attach DIR [options]
       upguard watch --analyze DIR [--json] [--html FILE]

Runs COMMAND (a training, e.g. `python3 -m torch.distributed.run ... train.py`) with every
rank writing its collectives, last op, step and heartbeat to DIR/watch/rank<R>.ring, and
watches them every 100 ms beside it. Findings go to stderr as they are seen and, one JSON object
per line, to DIR/alerts.jsonl; the training is never stopped unless --stop-on-alert says so.
When the command ends, the report (text, or --json) goes to stdout.

triggers: stall (a collective in flight far longer than its recent durations), straggler (one
rank last to enter, again and again), throughput (steps slower by a factor), dead (a rank's
process gone or stopped), mismatch (another op, dtype or size at the same sequence number).
Each names the ranks and the root cause (docs/watch.md).

options:
  -o, --out DIR         the run directory (created; rings in DIR/watch/)
  --overwrite           replace the watch of an earlier run in DIR (its rings and alerts only)
  --attach DIR          watch ranks started some other way (UPGUARD_WATCH_DIR=DIR in their
                        environment); stops at Ctrl-C or when every rank has ended
  --analyze DIR         post mortem: one look at the rings the ranks left, at their last beat
  --stall-floor S       no collective is stalled before S seconds (default 2)
  --exchange XDIR       several hosts: share what this monitor sees with the other hosts'
                        monitors through XDIR (a directory they all reach, e.g. on NFS), and
                        analyze their ranks too; this host's summary is XDIR/<hostname>.json
  --host-name NAME      this host's summary is XDIR/NAME.json (monitors that share a hostname,
                        as network namespaces do, need a name each)
  --stop-on-alert       stop the command (SIGTERM to its process group) after the first stall,
                        dead or mismatch finding
  --json                the report as JSON (schema upguard.watch/1, docs/cli.md)
  --html FILE           also write the report as one self-contained page: each finding, and a
                        timeline per rank of its recent collectives, the finding's in red

exit codes: the command's own exit code (watch -o); --attach and --analyze: 0 no findings,
1 findings, 2 error.

example:
  upguard watch -o runs/w -- /usr/bin/python3 -m torch.distributed.run --nproc_per_node=2 \
      examples/gpt_ddp.py --steps 50
)";

namespace {

namespace fs = std::filesystem;

constexpr auto kInterval = std::chrono::milliseconds(100);

// Clears an earlier watch's files from `dir`, or refuses to mix with them.
Status PrepareDir(const std::string& dir, bool overwrite) {
  std::error_code error;
  fs::create_directories(fs::path(dir) / "watch", error);
  if (error) return IoError("cannot create " + dir + "/watch: " + error.message());
  std::vector<fs::path> earlier;
  for (const auto& entry : fs::directory_iterator(fs::path(dir) / "watch", error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("rank", 0) == 0 && name.find(".ring") != std::string::npos) {
      earlier.push_back(entry.path());
    }
  }
  if (fs::exists(fs::path(dir) / "alerts.jsonl")) earlier.push_back(fs::path(dir) / "alerts.jsonl");
  if (earlier.empty()) return Status::Ok();
  if (!overwrite) {
    return FailedPrecondition(dir + " holds the watch of an earlier run (" +
                              earlier.front().string() +
                              "); give another -o DIR, or --overwrite to replace its rings and "
                              "alerts (nothing else in DIR is touched)");
  }
  for (const fs::path& path : earlier) fs::remove(path, error);
  return Status::Ok();
}

// Live, the findings as they were reported; post mortem, those of the one look. With `html`,
// the page too (a page that cannot be written is said on stderr: the report still prints).
void PrintReport(const watch::Monitor& monitor, const std::string& dir, bool json,
                 const std::string& html = "") {
  const auto& findings = monitor.reported();
  if (!html.empty()) {
    const Status written =
        html::WriteFile(html,
                        watch::RenderWatchHtml(watch::WatchToJson(dir, findings, monitor.ranks(),
                                                                  monitor.last_look_ns())),
                        "watch");
    std::fprintf(stderr, "upguard watch: %s\n",
                 written.ok() ? ("wrote " + html).c_str() : written.message().c_str());
  }
  if (json) {
    std::printf(
        "%s\n",
        watch::WatchToJson(dir, findings, monitor.ranks(), monitor.last_look_ns()).dump(2).c_str());
  } else {
    std::printf("%s",
                watch::RenderWatchText(findings, monitor.ranks(), monitor.last_look_ns()).c_str());
  }
}

// Starts `command` in a process group of its own with the watch armed; returns its pid.
StatusOr<pid_t> Launch(const std::vector<std::string>& command, const std::string& dir) {
  ASSIGN_OR_RETURN(const std::string package, SelectAdapter(command, ""));
  const std::string abs_dir = fs::absolute(dir).lexically_normal().string();
  std::vector<char*> argv;
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) return IoError(std::string("pipe: ") + strerror(errno));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) return IoError(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    close(exec_pipe[0]);
    setpgid(0, 0);
    std::string python_path = package + "/upguard/_bootstrap:" + package;
    if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && old[0] != '\0') {
      python_path += std::string(":") + old;
    }
    setenv("PYTHONPATH", python_path.c_str(), 1);
    setenv("UPGUARD_WATCH_DIR", abs_dir.c_str(), 1);
    unsetenv("UPGUARD_RECORD_DIR");
    unsetenv("UPGUARD_RECORDING_PID");
    execvp(argv[0], argv.data());
    int error = errno;
    (void)!write(exec_pipe[1], &error, sizeof(error));
    _exit(127);
  }
  close(exec_pipe[1]);
  int exec_error = 0;
  const bool failed = read(exec_pipe[0], &exec_error, sizeof(exec_error)) == sizeof(exec_error);
  close(exec_pipe[0]);
  if (failed) {
    waitpid(pid, nullptr, 0);
    return InvalidArgument("cannot run '" + command[0] + "': " + strerror(exec_error) +
                           "; give the interpreter and script, e.g. -- /usr/bin/python3 train.py");
  }
  return pid;
}

StatusOr<int> RunAndWatch(const Flags& flags, const std::string& dir,
                          watch::MonitorOptions options) {
  if (flags.rest().empty()) {
    return InvalidArgument(
        "expects the command after --: upguard watch -o DIR -- python3 train.py");
  }
  RETURN_IF_ERROR(PrepareDir(dir, flags.Has("overwrite")));
  ASSIGN_OR_RETURN(std::unique_ptr<watch::Monitor> monitor, watch::Monitor::Open(options));
  ASSIGN_OR_RETURN(const pid_t pid, Launch(flags.rest(), dir));
  const int wait_status = WaitWatching(pid, *monitor, flags.Has("stop-on-alert"));
  PrintReport(*monitor, dir, flags.Has("json"), flags.Get("html"));
  return WIFEXITED(wait_status)     ? WEXITSTATUS(wait_status)
         : WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status)
                                    : 1;
}

volatile std::sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }

StatusOr<int> Attach(const Flags& flags, const std::string& dir, watch::MonitorOptions options) {
  ASSIGN_OR_RETURN(std::unique_ptr<watch::Monitor> monitor, watch::Monitor::Open(options));
  // Ctrl-C or SIGTERM ends the watch (not the ranks: they are not ours) with the report.
  struct sigaction stop = {};
  stop.sa_handler = OnInterrupt;
  sigaction(SIGINT, &stop, nullptr);
  sigaction(SIGTERM, &stop, nullptr);
  while (!g_interrupted) {
    ASSIGN_OR_RETURN(std::vector<watch::Alert> fresh, monitor->Poll());
    PrintAlerts(fresh);
    PrintWarnings(*monitor);
    if (monitor->AllClosed()) break;
    std::this_thread::sleep_for(kInterval);
  }
  PrintReport(*monitor, dir, flags.Has("json"), flags.Get("html"));
  return monitor->reported().empty() ? kExitOk : kExitDiverged;
}

}  // namespace

StatusOr<int> RunWatchCommand(int argc, char** argv) {
  Flags flags("watch", {{"out", 'o', true},
                        {"overwrite", 0, false},
                        {"attach", 0, true},
                        {"analyze", 0, true},
                        {"stall-floor", 0, true},
                        {"stop-on-alert", 0, false},
                        {"exchange", 0, true},
                        {"host-name", 0, true},
                        {"json", 0, false},
                        {"html", 0, true}});
  RETURN_IF_ERROR(flags.Parse(argc, argv, 2));
  const int modes = int(flags.Has("out")) + int(flags.Has("attach")) + int(flags.Has("analyze"));
  if (modes != 1) {
    return InvalidArgument(
        "give exactly one of -o DIR (run and watch), --attach DIR, --analyze DIR");
  }
  if (!flags.positionals().empty()) {
    return InvalidArgument("unexpected argument '" + flags.positionals()[0] +
                           "': the command goes after --");
  }
  watch::MonitorOptions options;
  options.dir = flags.Get("out", flags.Get("attach", flags.Get("analyze")));
  if (flags.Has("stall-floor")) {
    const std::string text = flags.Get("stall-floor");
    char* end = nullptr;
    const double seconds = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || seconds <= 0) {
      return InvalidArgument("--stall-floor expects seconds above 0, not '" + text + "'");
    }
    options.analyzer.stall_floor_s = seconds;
  }
  if (flags.Has("host-name") && !flags.Has("exchange")) {
    return InvalidArgument("--host-name names this host's summary in --exchange XDIR: give both");
  }
  options.exchange_dir = flags.Get("exchange");
  options.host_name = flags.Get("host-name");
  if (flags.Has("analyze")) {
    if (flags.Has("exchange")) {
      return InvalidArgument(
          "--exchange is for a live watch; --analyze reads the rings of one host");
    }
    if (!fs::is_directory(fs::path(options.dir) / "watch")) {
      return NotFound("no watch rings in " + options.dir +
                      "/watch (was it run with upguard watch?)");
    }
    options.post_mortem = true;
    ASSIGN_OR_RETURN(std::unique_ptr<watch::Monitor> monitor, watch::Monitor::Open(options));
    RETURN_IF_ERROR(monitor->Poll().status());
    PrintReport(*monitor, options.dir, flags.Has("json"), flags.Get("html"));
    return monitor->reported().empty() ? kExitOk : kExitDiverged;
  }
  if (flags.Has("attach")) return Attach(flags, options.dir, options);
  return RunAndWatch(flags, options.dir, options);
}

}  // namespace upguard
