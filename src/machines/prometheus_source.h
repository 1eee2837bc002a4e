// Reads the agents' metrics back from a Prometheus server through its HTTP API
// (GET /api/v1/query_range): every series named upguard_<metric> (exposition.h), with the
// machine in the label `machine_label` ("machine" as the agent sets it; "instance" for series
// made by recording rules from node_exporter, docs/machines.md), as the same MetricSamples the
// CSV reader returns.
//
// Prometheus answers at most 11,000 points per series a query, so a long range at a fine step
// is read in pieces (SplitRange), each ending one step before the next begins.
//
//   PrometheusQuery query{.start = now - 900, .end = now, .step = 1};
//   ASSIGN_OR_RETURN(MetricSamples samples, ReadPrometheus("http://127.0.0.1:9090", query));
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "machines/samples.h"
#include "upguard/status.h"

namespace upguard::machines {

inline constexpr size_t kMaxPointsPerQuery = 11000;  // Prometheus' limit per series
inline constexpr char kUpguardSeriesSelector[] = "{__name__=~\"upguard_.+\"}";

struct PrometheusQuery {
  double start = 0;  // seconds since the Unix epoch
  double end = 0;
  double step = 1;  // seconds between points, > 0
  std::string machine_label = "machine";
  double timeout = 60;  // seconds per HTTP request
};

// [start, end] in pieces of at most `max_points` points of `step`, the next piece starting one
// step after the previous one's end (no point read twice).
std::vector<std::pair<double, double>> SplitRange(double start, double end, double step,
                                                  size_t max_points = kMaxPointsPerQuery);

// Adds the samples of one query_range reply's JSON to `out`; `where` (the request's URL) names
// it in errors. A series whose name is not upguard_* or that lacks `machine_label` is skipped and
// counted in `*skipped` (may be null).
Status AppendQueryRange(std::string_view json, const std::string& machine_label,
                        const std::string& where, MetricSamples* out, size_t* skipped);

// The whole query: errors name the URL and say what to check (a refused connection, an HTTP
// error, Prometheus' own "status":"error", or no upguard series in the range).
StatusOr<MetricSamples> ReadPrometheus(const std::string& url, const PrometheusQuery& query);

}  // namespace upguard::machines
