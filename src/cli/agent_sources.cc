#include "cli/agent_sources.h"

#include <cstdio>
#include <set>

#include "cli/watch_training_source.h"
#include "machines/nvml_counters.h"

namespace upguard {

std::vector<machines::MetricSource*> AgentSources::Pointers() const {
  std::vector<machines::MetricSource*> out;
  for (const auto& source : owned) out.push_back(source.get());
  return out;
}

StatusOr<AgentSources> MakeAgentSources(const std::string& watch_dir, const std::string& ranks) {
  AgentSources out;
  if (!ranks.empty() && watch_dir.empty()) {
    return InvalidArgument("--ranks chooses among the watch's rings: give --watch-dir DIR too");
  }
  if (!watch_dir.empty()) {
    std::set<int> chosen;
    if (!ranks.empty()) {
      ASSIGN_OR_RETURN(chosen, ParseRankList(ranks));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<WatchTrainingSource> training,
                     WatchTrainingSource::Create(watch_dir, std::move(chosen)));
    out.owned.push_back(std::move(training));
  }
  StatusOr<std::unique_ptr<machines::NvmlCounters>> gpus =
      machines::NvmlCounters::Open(machines::NvmlLibrary());
  if (gpus.ok()) {
    std::fprintf(stderr, "upguard machines agent: %zu GPU(s) through NVML\n", (*gpus)->gpu_count());
    out.owned.push_back(std::move(*gpus));
  } else {
    std::fprintf(stderr, "upguard machines agent: no GPU metrics: %s\n",
                 gpus.status().message().c_str());
  }
  return out;
}

}  // namespace upguard
