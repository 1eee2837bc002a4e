// `upguard diff A B`: the first op where two runs part ways, with the verdict.
#include <cstdio>
#include <optional>

#include "cli/command.h"
#include "cli/explain_runner.h"
#include "cli/flags.h"
#include "diff/diff.h"
#include "diff/setup_check.h"
#include "report/diff_report.h"

namespace upguard {

const char kDiffUsage[] = R"(usage: upguard diff RUN_A RUN_B [--json] [--allow-damaged] [--explain]

Compares two run directories written by `upguard record` and names the first operator where
they part ways: its step, phase, module path and call site, every input and output (bitwise
identical or not, with the magnitude of the difference), and the verdict:
  culprit     every tensor input identical, an output differs: this op computed differently
  propagated  an input already differed; says which earlier op produced it
  structural  the runs executed different ops here; lists the inserted / removed ops
  identical   no divergence in the recorded steps

options:
  --json            print the result as JSON (schema upguard.diff/1, see docs/cli.md)
  --allow-damaged   compare the readable part of a damaged or truncated trace
  --explain         re-run both recorded commands up to the first divergent op, capture its
                    tensors (RUN/explain/captures/) and compare them element by element: how
                    many elements differ, by how many ULP, where, and whether inputs are equal

exit codes: 0 identical, 1 diverged, 2 error.

example:
  upguard diff runs/a runs/b
)";

StatusOr<int> RunDiffCommand(int argc, char** argv) {
  Flags flags("diff", {{"json", 0, false}, {"allow-damaged", 0, false}, {"explain", 0, false}});
  RETURN_IF_ERROR(flags.Parse(argc, argv, 2));
  if (flags.positionals().size() != 2) {
    return InvalidArgument("expects two run directories: upguard diff RUN_A RUN_B");
  }
  LoadOptions load;
  load.allow_damaged = flags.Has("allow-damaged");
  load.index_on_demand = true;  // DiffRuns indexes each step as it compares it
  ASSIGN_OR_RETURN(Run a, LoadRun(flags.positionals()[0], load));
  ASSIGN_OR_RETURN(Run b, LoadRun(flags.positionals()[1], load));
  ASSIGN_OR_RETURN(DiffResult result, DiffRuns(a, b, DiffOptions{}));
  ApplySetupChecks(a, b, &result);
  std::optional<ExplainedDivergence> explained;
  if (flags.Has("explain")) {
    for (const RankDiff& rank : result.ranks) {
      if (!rank.numeric) continue;
      ASSIGN_OR_RETURN(explained, ExplainDivergence(a, b, rank));
      break;
    }
  }
  if (flags.Has("json")) {
    nlohmann::json json = DiffToJson(result, a, b);
    if (explained) json["explain"] = ExplainToJson(*explained);
    std::printf("%s\n", json.dump(2).c_str());
  } else {
    std::printf("%s", RenderDiffText(result, a, b).c_str());
    if (explained) std::printf("%s", RenderExplainText(*explained).c_str());
  }
  return result.verdict == Verdict::kIdentical ? kExitOk : kExitDiverged;
}

}  // namespace upguard
