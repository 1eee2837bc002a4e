// `upguard nan RUN`: the first op that made a NaN or Inf, from one run's statistics.
#include <cstdio>

#include "analysis/nan_origin.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "report/nan_report.h"

namespace upguard {

const char kNanUsage[] = R"(usage: upguard nan RUN [--rank R] [--json]

Reads the statistics recorded with every floating tensor (finite, NaN, +Inf and -Inf counts)
and names the first op that made a NaN or Inf: its step, phase, module path, call site (and
autograd node), the output that holds them, how many elements, and the statistics of every
input. Or, when the first NaN/Inf is already in an op's input and no recorded op made it, that
input (data, parameters loaded from disk, an op outside the recorded steps). No reference run.

A NaN/Inf that an op was given as a scalar argument (masked_fill(mask, -inf)) is a deliberate
fill, not a finding. A damaged or truncated trace is scanned as far as it is readable.

options:
  --rank R   only rank R (default: every rank, each reported)
  --json     print JSON (schema upguard.nan/1, see docs/cli.md)

exit codes: 0 no NaN/Inf made, 1 found, 2 error (a run recorded with --no-stats).

example:
  upguard record -o runs/nan -- python3 examples/gpt_train.py --plant log-zero
  upguard nan runs/nan
)";

StatusOr<int> RunNanCommand(int argc, char** argv) {
  Flags flags("nan", {{"rank", 0, true}, {"json", 0, false}});
  RETURN_IF_ERROR(flags.Parse(argc, argv, 2));
  if (flags.positionals().size() != 1) {
    return InvalidArgument("expects one run directory: upguard nan RUN");
  }
  std::optional<int> rank;
  if (flags.Has("rank")) {
    ASSIGN_OR_RETURN(int64_t value, flags.GetInt("rank", 0));
    rank = static_cast<int>(value);
  }
  LoadOptions load;
  load.allow_damaged = true;  // the readable prefix is scanned; the report says where it ends
  ASSIGN_OR_RETURN(Run run, LoadRun(flags.positionals()[0], load));
  ASSIGN_OR_RETURN(NanScan scan, ScanRunForNan(run, rank));
  if (flags.Has("json")) {
    std::printf("%s\n", NanToJson(scan, run).dump(2).c_str());
  } else {
    std::printf("%s", RenderNanText(scan, run).c_str());
  }
  return scan.found ? kExitDiverged : kExitOk;
}

}  // namespace upguard
