#include "cli/online_runner.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "cli/command.h"
#include "cli/explain_runner.h"
#include "diff/diff.h"
#include "diff/setup_check.h"
#include "recorder/capture_selector.h"
#include "report/format_util.h"

namespace upguard {

StatusOr<int> ReportOnline(const RecordRequest& request, const RecordOutcome& outcome,
                           double wall_seconds) {
  const std::string online_path = request.run_dir + "/online.json";
  if (!std::filesystem::exists(online_path)) {
    std::printf("upguard record: no divergence from %s in the recorded steps (%.1f s)\n",
                request.against.c_str(), wall_seconds);
    return outcome.exit_code;
  }
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(online_path));
  const nlohmann::json online = nlohmann::json::parse(text, nullptr, false);
  if (!online.is_object()) return DataLoss(online_path + ": not a JSON object");
  const std::string kind = online.value("kind", "");
  std::printf(
      "upguard record: diverged from %s at step %d #%d: %s (%s, module %s, %s), %s: %s\n"
      "  found %.1f s after recording started, %.1f s after the command was launched%s\n",
      request.against.c_str(), online.value("step", 0), online.value("index", 0),
      online.value("op", std::string()).c_str(), online.value("phase", std::string()).c_str(),
      OrDash(online.value("module", std::string())).c_str(),
      OrDash(online.value("call_site", std::string())).c_str(), kind.c_str(),
      online.value("detail", std::string()).c_str(), online.value("seconds_since_start", 0.0),
      wall_seconds,
      request.continue_after_divergence ? "; the run went on (--continue)"
                                        : "; the run was stopped there");
  if (kind != "culprit" && kind != "propagated") return kExitDiverged;

  // The full picture from the two traces, then the reference's side of the op.
  LoadOptions load;
  load.index_on_demand = true;
  load.allow_damaged = true;
  ASSIGN_OR_RETURN(Run reference, LoadRun(request.against, load));
  ASSIGN_OR_RETURN(Run candidate, LoadRun(request.run_dir, load));
  ASSIGN_OR_RETURN(DiffResult result, DiffRuns(reference, candidate, DiffOptions{}));
  ApplySetupChecks(reference, candidate, &result);
  std::printf("  the full report: upguard diff %s %s\n", request.against.c_str(),
              request.run_dir.c_str());
  for (const RankDiff& rank : result.ranks) {
    if (!rank.setup.empty()) {  // random state or data: nothing computed differently to show
      std::printf("  setup: %s\n", rank.setup.c_str());
      break;
    }
    if (!rank.numeric) continue;
    const std::string live =
        CapturePath(request.run_dir, rank.rank, rank.numeric->b.step, rank.numeric->b.index);
    std::fflush(stdout);
    ASSIGN_OR_RETURN(
        ExplainedDivergence explained,
        ExplainDivergence(reference, candidate, rank, std::filesystem::exists(live) ? live : ""));
    std::printf("%s", RenderExplainText(explained).c_str());
    break;
  }
  return kExitDiverged;
}

}  // namespace upguard
