// Metrics in Prometheus' text exposition format (version 0.0.4), as the agent serves them on
// /metrics and the detector reads them back from Prometheus' query API:
//
//   # TYPE upguard_cpu_utilization gauge
//   upguard_cpu_utilization{machine="node-0"} 0.52
//   upguard_network_receive_bytes_per_second{machine="node-0",interface="eth0"} 2000
//
// The series name is "upguard_" + the metric's name; a per-interface metric's interface is the
// `interface` label. MetricFromSeries() maps a series back to the CSV's metric name.
#pragma once

#include <string>
#include <vector>

#include "machines/host_counters.h"

namespace upguard::machines {

inline constexpr char kSeriesPrefix[] = "upguard_";

std::string RenderExposition(const std::string& machine, const std::vector<MetricValue>& metrics);

// "upguard_network_receive_bytes_per_second" and interface "eth0" ->
// "network_receive_bytes_per_second.eth0"; "" for a series that is not upguard's.
std::string MetricFromSeries(const std::string& series, const std::string& interface);

}  // namespace upguard::machines
