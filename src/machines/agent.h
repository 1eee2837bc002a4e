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

// What the agent tells whoever runs it, who prints it; each may be null.
struct AgentEvents {
  // The endpoint is up, at this address as bound ("127.0.0.1:9400"; port 0 in `listen` picks a
  // free one).
  void (*listening)(const std::string& address) = nullptr;
  void (*notice)(const std::string& text) = nullptr;  // what opening `output` repaired
};

// Runs until `duration` passed or `stop` is set; returns within a sample's work of `stop`
// (the endpoint's clients, however slow, never hold it).
Status RunAgent(const AgentOptions& options, const std::atomic<bool>& stop,
                const AgentEvents& events = {});

}  // namespace upguard::machines
