// A source of metrics beside the host's counters that the agent samples every interval: the
// GPUs through NVML (nvml_counters.h), the training's own step time and collective wait from
// upguard's watch rings (src/cli/watch_training_source.h). Each keeps what it read last, so a
// call returns the metrics of the interval since the previous one.
//
//   std::vector<std::unique_ptr<MetricSource>> sources = ...;
//   for (auto& source : sources) source->Sample(now);          // opens the first interval
//   ... an interval later ...
//   for (auto& source : sources) append(source->Sample(now));  // that interval's metrics
#pragma once

#include <vector>

#include "machines/host_counters.h"

namespace upguard::machines {

class MetricSource {
 public:
  virtual ~MetricSource() = default;
  // The metrics of the interval that ends at `now` (seconds of CLOCK_MONOTONIC, the clock the
  // agent samples on) and began at the previous call. The first call opens the first interval
  // and may return nothing. A source that cannot read this time returns fewer metrics, never
  // an error: one broken GPU or a rank that is gone must not stop the agent.
  virtual std::vector<MetricValue> Sample(double now) = 0;
};

}  // namespace upguard::machines
