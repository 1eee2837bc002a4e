// One way in for every source of machine metrics, chosen by what SOURCE is
// (`upguard machines detect --input SOURCE`):
//   http://HOST:PORT[/PREFIX]   a Prometheus server (prometheus_source.h)
//   a file starting "SQLite format 3\0"   the agent's SQLite file (sqlite_store.h)
//   any other file              the metrics CSV (metrics_csv.h)
// and several of them separated by commas ("node-0.db,node-1.db"), merged.
//
//   SourceOptions options;  // Prometheus: the last 15 minutes; files: everything
//   options.start = "-1h";
//   ASSIGN_OR_RETURN(MetricSamples samples, LoadSamples("http://127.0.0.1:9090", options));
#pragma once

#include <string>

#include "machines/samples.h"
#include "upguard/status.h"

namespace upguard::machines {

inline constexpr double kDefaultPrometheusRange = 15 * 60;  // seconds before --end

struct SourceOptions {
  std::string start;  // time_spec.h text; "": Prometheus: kDefaultPrometheusRange before end;
                      // files: from the first sample
  std::string end;    // "": now (Prometheus), to the last sample (files)
  double step = 0;    // Prometheus' query step in seconds; 0: 1 s, or the whole seconds that
                      // read the range in one query of kMaxPointsPerQuery points when longer
  std::string machine_label = "machine";  // the Prometheus label naming the machine
  double now = 0;  // what "now" is, seconds since the epoch; 0: the wall clock
};

// Errors name the source (the file, the URL) and say what to fix.
StatusOr<MetricSamples> LoadSamples(const std::string& spec, const SourceOptions& options);

// The samples of `samples` with start <= time <= end, machines and metrics without any left out.
MetricSamples SamplesBetween(const MetricSamples& samples, double start, double end);

}  // namespace upguard::machines
