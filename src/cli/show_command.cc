// `upguard show RUN`: the recorded ops of a run as a table (or JSON).
#include <cstdio>

#include "cli/command.h"
#include "cli/flags.h"
#include "report/show_report.h"

namespace upguard {

const char kShowUsage[] = R"(usage: upguard show RUN [--step N] [--rank R] [--max-depth D] [--json]

Lists the ops recorded in a run directory: index in the step, phase, nesting depth, module
path, op name, input and output shapes, and short output digests.

options:
  --step N        only step N
  --rank R        the rank to show (default 0)
  --max-depth D   hide ops nested deeper than D
  --json          print JSON (schema upguard.show/1, see docs/cli.md)
  --allow-damaged show the readable part of a damaged trace

example:
  upguard show runs/a --step 2 --max-depth 0
)";

StatusOr<int> RunShowCommand(int argc, char** argv) {
  Flags flags("show", {{"step", 0, true},
                       {"rank", 0, true},
                       {"max-depth", 0, true},
                       {"json", 0, false},
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
