#include "machines/source.h"

#include <cmath>
#include <limits>
#include <vector>

#include "machines/metrics_csv.h"
#include "machines/prometheus_source.h"
#include "machines/sqlite_store.h"
#include "machines/time_spec.h"

namespace upguard::machines {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct Range {
  double start = -kInfinity;
  double end = kInfinity;
};

StatusOr<double> TimeOption(const std::string& name, const std::string& text, double now) {
  StatusOr<double> time = ParseTimeSpec(text, now);
  if (!time.ok()) return InvalidArgument("--" + name + " " + time.status().message());
  return time;
}

StatusOr<Range> RangeOf(const SourceOptions& options, bool prometheus) {
  const double now = options.now > 0 ? options.now : WallClockSeconds();
  Range range;
  if (prometheus) range.end = now;
  if (!options.end.empty()) {
    ASSIGN_OR_RETURN(range.end, TimeOption("end", options.end, now));
  }
  if (prometheus) range.start = range.end - kDefaultPrometheusRange;
  if (!options.start.empty()) {
    ASSIGN_OR_RETURN(range.start, TimeOption("start", options.start, now));
  }
  if (range.start > range.end) {
    return InvalidArgument(
        "--start is after --end: " + FormatTime(range.start, TimeForm::kSeconds) + " > " +
        FormatTime(range.end, TimeForm::kSeconds));
  }
  return range;
}

StatusOr<MetricSamples> LoadOne(const std::string& spec, const SourceOptions& options) {
  const bool prometheus = spec.rfind("http://", 0) == 0 || spec.rfind("https://", 0) == 0;
  ASSIGN_OR_RETURN(const Range range, RangeOf(options, prometheus));
  if (prometheus) {
    PrometheusQuery query;
    query.start = range.start;
    query.end = range.end;
    query.step = options.step;
    if (!(query.step > 0)) {
      const double one_query = (range.end - range.start) / (kMaxPointsPerQuery - 1);
      query.step = std::max(1.0, std::ceil(one_query));
    }
    query.machine_label = options.machine_label;
    return ReadPrometheus(spec, query);
  }
  MetricSamples samples;
  if (HasSqliteMagic(spec)) {
    ASSIGN_OR_RETURN(samples, ReadMetricsSqlite(spec, range.start, range.end));
  } else {
    ASSIGN_OR_RETURN(samples, ReadMetricsCsv(spec));
    if (std::isfinite(range.start) || std::isfinite(range.end)) {
      samples = SamplesBetween(samples, range.start, range.end);
    }
  }
  if (samples.samples.empty()) {
    return NotFound(spec + ": no samples" +
                    (options.start.empty() && options.end.empty()
                         ? std::string()
                         : " between --start and --end (drop them to read the whole file)"));
  }
  return samples;
}

// Appends `more` to `into`, re-indexing its machines and metrics.
void Merge(const MetricSamples& more, MetricSamples* into) {
  into->warnings.insert(into->warnings.end(), more.warnings.begin(), more.warnings.end());
  std::vector<uint32_t> machines, metrics;
  for (const std::string& name : more.machines) machines.push_back(into->MachineIndex(name));
  for (const std::string& name : more.metrics) metrics.push_back(into->MetricIndex(name));
  for (Sample sample : more.samples) {
    sample.machine = machines[sample.machine];
    sample.metric = metrics[sample.metric];
    into->samples.push_back(sample);
  }
}

}  // namespace

MetricSamples SamplesBetween(const MetricSamples& samples, double start, double end) {
  MetricSamples out;
  out.time_form = samples.time_form;
  out.warnings = samples.warnings;
  for (const Sample& sample : samples.samples) {
    if (sample.time < start || sample.time > end) continue;
    Sample kept = sample;
    kept.machine = out.MachineIndex(samples.machines[sample.machine]);
    kept.metric = out.MetricIndex(samples.metrics[sample.metric]);
    out.samples.push_back(kept);
  }
  return out;
}

StatusOr<MetricSamples> LoadSamples(const std::string& spec, const SourceOptions& options) {
  if (spec.empty()) return InvalidArgument("--input is empty: give a file or http://HOST:PORT");
  MetricSamples out;
  size_t begin = 0;
  for (size_t part_idx = 0; begin <= spec.size(); ++part_idx) {
    const size_t comma = std::min(spec.find(',', begin), spec.size());
    const std::string part = spec.substr(begin, comma - begin);
    begin = comma + 1;
    if (part.empty()) continue;
    ASSIGN_OR_RETURN(MetricSamples samples, LoadOne(part, options));
    if (part_idx == 0) out.time_form = samples.time_form;
    Merge(samples, &out);
  }
  return out;
}

}  // namespace upguard::machines
