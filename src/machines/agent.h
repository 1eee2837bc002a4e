// `upguard machines agent`: samples this machine's counters every `interval` seconds
// (host_counters.h), serves the latest metrics on /metrics for Prometheus (exposition.h,
// http_server.h) and appends them to a metrics CSV (docs/formats/machine-metrics-csv.md) when
// `output` is set, flushed at every sample, so a post-mortem has them even after a crash.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "machines/host_counters.h"
#include "machines/metric_source.h"
#include "upguard/status.h"

namespace upguard::machines {

struct AgentOptions {
  std::string listen;   // "HOST:PORT"; empty: no HTTP endpoint
  std::string machine;  // the name it reports under
  double interval = 1;  // seconds between samples
  HostSource source;
  std::string output;   // a .csv or .db file to append to (metrics_sink.h); empty: none
  double duration = 0;  // seconds to run; 0: until `stop`
  // Sampled with the host at every interval, their metrics after the host's (GPUs, the
  // training); owned by the caller, alive until RunAgent returns.
  std::vector<MetricSource*> sources;
};

// Runs until `duration` passed or `stop` is set. `on_listening` (may be null) is called with
// the port once the endpoint is up (port 0 in `listen` picks a free one).
Status RunAgent(const AgentOptions& options, const std::atomic<bool>& stop,
                void (*on_listening)(int port) = nullptr);

}  // namespace upguard::machines
