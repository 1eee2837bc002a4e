// `upguard show RUN`: the recorded ops of a run as a table (or JSON).
#include <cstdio>
#include <fstream>

#include "cli/command.h"
#include "cli/flags.h"
#include "report/show_perfetto.h"
#include "report/show_report.h"

namespace upguard {

const char kShowUsage[] = R"(usage: upguard show RUN [--step N] [--rank R] [--max-depth D] [--json]
                    [--perfetto FILE]

Lists the ops recorded in a run directory: index in the step, phase, nesting depth, module
path, op name, input and output shapes, and short output digests.

options:
  --step N        only step N
  --rank R        the rank to show (default 0)
  --max-depth D   hide ops nested deeper than D
  --json          print JSON (schema upguard.show/1, see docs/cli.md)
  --perfetto FILE write the shown ops as Chrome trace-event JSON for the Perfetto UI
                  (ui.perfetto.dev) or chrome://tracing: a track per step, each op a slice
                  nested in the ops enclosing it; the time axis is the op's position
  --allow-damaged show the readable part of a damaged trace

example:
  upguard show runs/a --step 2 --max-depth 0
  upguard show runs/a --step 2 --perfetto a.json; upguard show runs/b --step 2 --perfetto b.json
)";

StatusOr<int> RunShowCommand(int argc, char** argv) {
  Flags flags("show", {{"step", 0, true},
                       {"rank", 0, true},
                       {"max-depth", 0, true},
                       {"json", 0, false},
                       {"perfetto", 0, true},
                       {"allow-damaged", 0, false}});
  RETURN_IF_ERROR(flags.Parse(argc, argv, 2));
  if (flags.positionals().size() != 1) {
    return InvalidArgument("expects one run directory: upguard show RUN");
  }
  ShowOptions options;
  ASSIGN_OR_RETURN(int64_t step, flags.GetInt("step", -1));
  if (step >= 0) options.step = static_cast<uint32_t>(step);
  ASSIGN_OR_RETURN(int64_t rank, flags.GetInt("rank", 0));
  options.rank = static_cast<int>(rank);
  ASSIGN_OR_RETURN(int64_t max_depth, flags.GetInt("max-depth", -1));
  if (max_depth >= 0) options.max_depth = static_cast<size_t>(max_depth);
  LoadOptions load;
  load.allow_damaged = flags.Has("allow-damaged");
  ASSIGN_OR_RETURN(Run run, LoadRun(flags.positionals()[0], load));
  if (options.rank < 0 || static_cast<size_t>(options.rank) >= run.ranks.size()) {
    return InvalidArgument("--rank " + std::to_string(options.rank) + ": " + run.dir + " has " +
                           std::to_string(run.ranks.size()) + " rank(s)");
  }
  // Damage hiding in an op payload changes the counts the report starts with: find it first.
  RETURN_IF_ERROR(run.ranks[static_cast<size_t>(options.rank)].CheckAllOps());
  if (flags.Has("perfetto")) {
    if (flags.Get("perfetto").empty()) return InvalidArgument("--perfetto needs a file name");
    ASSIGN_OR_RETURN(nlohmann::json json, ShowToJson(run, options));
    const std::string path = flags.Get("perfetto");
    std::ofstream out(path, std::ios::trunc);
    out << ShowJsonToPerfetto(json, run.dir).dump() << "\n";
    if (!out) return IoError(path + ": cannot write the Perfetto trace (is the directory there?)");
    std::fprintf(stderr, "upguard show: wrote %s (open it in ui.perfetto.dev)\n", path.c_str());
    return kExitOk;
  }
  if (flags.Has("json")) {
    ASSIGN_OR_RETURN(nlohmann::json json, ShowToJson(run, options));
    std::printf("%s\n", json.dump(2).c_str());
  } else {
    ASSIGN_OR_RETURN(std::string text, RenderShowText(run, options));
    std::printf("%s", text.c_str());
  }
  return kExitOk;
}

}  // namespace upguard
