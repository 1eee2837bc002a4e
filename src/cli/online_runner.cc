#include "cli/online_runner.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "analysis/conclude.h"
#include "base/file.h"
#include "cli/command.h"
#include "cli/explain_runner.h"
#include "report/explain_report.h"
#include "report/format_util.h"
#include "run/run_loader.h"
#include "trace/unread_tally.h"

namespace upguard {

namespace {

std::string DescribeOnline(const nlohmann::json& online) {
  return "step " + std::to_string(online.value("step", 0)) + " #" +
         std::to_string(online.value("index", 0)) + ": " + online.value("op", std::string()) +
         " (" + online.value("phase", std::string()) + ", module " +
         OrDash(online.value("module", std::string())) + ", " +
         OrDash(online.value("call_site", std::string())) + "), " +
         online.value("kind", std::string());
}

// Several ranks (upguard/_online.py): every divergence in the order the ranks noticed them.
// The first is the origin: a rank that only received a difference through a collective
// noticed it after the rank it came from. Returns the origin's rank.
StatusOr<int> ReportRanks(const RecordRequest& request, const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  const nlohmann::json report = nlohmann::json::parse(text, nullptr, false);
  if (!report.is_object() || !report.contains("divergences") || !report["divergences"].is_array() ||
      report["divergences"].empty()) {
    return DataLoss(path +
                    ": not a report of divergences (a JSON object with a non-empty "
                    "\"divergences\" array); was the run's directory changed?");
  }
  const nlohmann::json& divergences = report["divergences"];
  const int origin = divergences[0].value("rank", 0);
  std::printf(
      "upguard record: rank %d diverged first from %s; all %d ranks stopped together at the "
      "end of step %d\n",
      origin, request.against.c_str(), report.value("world_size", 0), report.value("step", 0));
  for (size_t idx = 0; idx < divergences.size(); ++idx) {
    const nlohmann::json& d = divergences[idx];
    std::printf("  %zu. rank %d at %s%s\n", idx + 1, d.value("rank", 0), DescribeOnline(d).c_str(),
                idx == 0 ? " <- the origin" : " (after the origin: received it)");
  }
  return origin;
}

// The ops of the run just recorded whose tensors were not read (their StepEnd tallies): the
// online comparison could not compare them either. 0 when the run cannot be read.
uint64_t HiddenOpsIn(const std::string& run_dir) {
  LoadOptions load;
  load.index_on_demand = true;
  StatusOr<Run> run = LoadRun(run_dir, load);
  if (!run.ok()) return 0;
  UnreadTally tally;
  for (const RankTrace& rank : run->ranks) {
    if (!rank.IndexAll().ok()) continue;
    for (const StepInfo& step : rank.steps()) {
      if (step.end) tally.Merge(step.end->unread);
    }
  }
  return HiddenTotal(tally.counts()).ops;
}

}  // namespace

StatusOr<int> ReportOnline(const RecordRequest& request, const RecordOutcome& outcome,
                           double wall_seconds, std::shared_ptr<RerunConsent> consent) {
  const std::string ranks_path = request.run_dir + "/online.ranks.json";
  int origin = 0;
  const bool ranks = std::filesystem::exists(ranks_path);
  if (ranks) {
    ASSIGN_OR_RETURN(origin, ReportRanks(request, ranks_path));
  }
  const std::string online_path =
      request.run_dir +
      (origin == 0 ? "/online.json" : "/online.rank" + std::to_string(origin) + ".json");
  if (!std::filesystem::exists(online_path)) {
    std::printf("upguard record: no divergence from %s in the recorded steps (%.1f s)\n",
                request.against.c_str(), wall_seconds);
    if (const uint64_t hidden = HiddenOpsIn(request.run_dir); hidden > 0) {
      std::printf("  but %s op(s) had tensors upguard did not read (said above): those were not "
                  "compared, so the runs are not known to match (upguard diff says unverified)\n",
                  GroupedThousands(hidden).c_str());
    }
    return outcome.exit_code;
  }
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(online_path));
  const nlohmann::json online = nlohmann::json::parse(text, nullptr, false);
  if (!online.is_object()) return DataLoss(online_path + ": not a JSON object");
  const std::string kind = online.value("kind", "");
  std::printf(
      "upguard record: %sdiverged from %s at %s: %s\n"
      "  found %.1f s after recording started, %.1f s after the command was launched%s\n",
      ranks ? ("rank " + std::to_string(origin) + " ").c_str() : "", request.against.c_str(),
      DescribeOnline(online).c_str(), online.value("detail", std::string()).c_str(),
      online.value("seconds_since_start", 0.0), wall_seconds,
      request.continue_after_divergence ? "; the run went on (--continue)"
                                        : "; the run was stopped there");
  if (kind != "culprit" && kind != "propagated") return kExitDiverged;

  // The full picture from the two traces, then the reference's side of the op.
  LoadOptions load;
  load.index_on_demand = true;
  load.allow_damaged = true;
  ASSIGN_OR_RETURN(Run reference, LoadRun(request.against, load));
  ASSIGN_OR_RETURN(Run candidate, LoadRun(request.run_dir, load));
  std::printf("  the full report: upguard diff %s %s\n", request.against.c_str(),
              request.run_dir.c_str());
  ConcludeOptions options;
  ASSIGN_OR_RETURN(Conclusion conclusion, ConcludeDiff(reference, candidate, options));
  for (const RankDiff& rank : conclusion.result.ranks) {
    if (rank.rank != origin || rank.setup.empty()) continue;
    // Random state or data: nothing computed differently to show.
    std::printf("  setup: %s\n", rank.setup.c_str());
    return kExitDiverged;
  }
  // The reference re-run up to the op; the candidate's side is the live capture.
  options.explain = ReRunExplainer(std::move(consent), request.run_dir);
  RETURN_IF_ERROR(ExplainConclusion(reference, candidate, options, &conclusion));
  if (conclusion.explained) std::printf("%s", RenderExplainText(*conclusion.explained).c_str());
  return kExitDiverged;
}

}  // namespace upguard
