// What `upguard machines agent` samples beside the host's counters: the GPUs through NVML when
// the library loads and finds one (else one line on stderr and no GPU metrics), and with
// --watch-dir the training's step time and collective wait from the watch rings.
//
//   ASSIGN_OR_RETURN(AgentSources sources, MakeAgentSources(watch_dir, ranks));
//   options.sources = sources.Pointers();   // `sources` outlives the agent's run
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "machines/metric_source.h"
#include "upguard/status.h"

namespace upguard {

struct AgentSources {
  std::vector<std::unique_ptr<machines::MetricSource>> owned;
  std::vector<machines::MetricSource*> Pointers() const;
};

// `watch_dir` empty: no training metrics; `ranks` ("0,1,4-7") only with a watch_dir, empty:
// every rank whose ring is there. InvalidArgument for a bad --ranks or --watch-dir.
StatusOr<AgentSources> MakeAgentSources(const std::string& watch_dir, const std::string& ranks);

}  // namespace upguard
