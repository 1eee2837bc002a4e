// `upguard recover DIR`: moves an interrupted recording (DIR/.upguard-record-<pid>, left when
// `upguard record` was killed with its training) into DIR, marked interrupted in meta.json.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "run/run_loader.h"
#include "rundir/hidden_runs.h"
#include "rundir/run_staging.h"

namespace upguard {

const char kRecoverUsage[] = R"(usage: upguard recover DIR [--from NAME] [--force] [--overwrite]

Moves the recording that was left hidden in DIR/.upguard-record-<pid> when its recorder was
killed (kill -9, the OOM killer, a scheduler's time limit) into DIR, so that `upguard diff`
and `upguard show` read it. Its meta.json gets "interrupted": true; each trace ends where its
rank stopped, and the diff compares the steps it holds. Refused while a process that wrote it
still runs on this host.

options:
  --from NAME    the recording to recover when DIR holds several (.upguard-record-<pid>)
  --force        recover one whose writer ran on another host, which this host cannot check
                 (say so only when it no longer runs)
  --overwrite    replace the run DIR holds (only the files upguard wrote there)

exit code: 0 recovered; 2 if DIR holds no interrupted recording, it is still being written,
or DIR holds a run and --overwrite was not given.

example:
  upguard recover runs/a && upguard diff runs/ref runs/a
)";

namespace {

// The run's meta.json, marked interrupted: the one rank 0 wrote as recording began, or, when
// it never got that far, the first trace's own metadata.
Status MarkInterrupted(const std::string& staging) {
  const std::string path = staging + "/meta.json";
  nlohmann::json meta;
  if (IsRegularFile(path)) {
    ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
    meta = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  }
  if (!meta.is_object()) {
    const std::vector<std::string> traces = RankTraceNames(staging);
    LoadOptions load;
    load.index_on_demand = true;  // the header only
    ASSIGN_OR_RETURN(RankTrace trace, LoadRankTrace(staging + "/" + traces.front(), load));
    meta = trace.meta.is_object() ? trace.meta : nlohmann::json::object();
    meta.erase("rank");
    meta.erase("pid");
    meta["upguard_version"] = meta.value("upguard_version", "unknown");
  }
  meta["complete"] = false;
  meta["interrupted"] = true;
  return WriteFileAtomically(path, meta.dump(2) + "\n");
}

}  // namespace

StatusOr<int> RunRecoverCommand(int argc, char** argv) {
  Flags flags("recover", {{"from", 0, true}, {"force", 0, false}, {"overwrite", 0, false}});
  RETURN_IF_ERROR(flags.Parse(argc, argv, 2));
  if (flags.positionals().size() != 1) {
    return InvalidArgument("expects one run directory: upguard recover DIR");
  }
  const std::string dir = flags.positionals()[0];
  if (!IsDirectory(dir)) return NotFound(dir + ": no such directory");
  ASSIGN_OR_RETURN(std::vector<HiddenRecording> hidden, FindHiddenRecordings(dir));
  std::string name = flags.Get("from");
  if (name.empty()) {
    if (hidden.empty()) {
      return NotFound(dir +
                      " holds no interrupted recording (no .upguard-record-<pid> "
                      "directory with a rank<N>.ugt in it)");
    }
    if (hidden.size() > 1) {
      std::string names;
      for (const HiddenRecording& recording : hidden) names += " " + recording.name;
      return InvalidArgument(dir + " holds several recordings not in place:" + names +
                             "; name the one to recover with --from NAME");
    }
    name = hidden.front().name;
  }
  StagingOptions options;
  options.overwrite = flags.Has("overwrite");
  options.what = "upguard recover";
  ASSIGN_OR_RETURN(std::unique_ptr<RunStaging> staging,
                   RunStaging::Adopt(dir, name, options, flags.Has("force")));
  const std::vector<std::string> traces = RankTraceNames(staging->path());
  RETURN_IF_ERROR(MarkInterrupted(staging->path()));
  ASSIGN_OR_RETURN(FinishOutcome finished, staging->Finish());
  (void)finished;  // no other member: Adopt removed the dead ones'
  std::string listed;
  for (const std::string& trace : traces) listed += " " + trace;
  std::fprintf(stderr,
               "upguard recover: moved %s/%s into %s:%s (interrupted: each trace ends where its "
               "rank stopped)\n",
               dir.c_str(), name.c_str(), dir.c_str(), listed.c_str());
  return kExitOk;
}

}  // namespace upguard
