#include "machines/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace upguard::machines {
namespace {

nlohmann::json TimeJson(const Grid& grid, size_t point) {
  const double time = grid.TimeAt(point);
  if (grid.time_form == TimeForm::kIso8601) return FormatTime(time, TimeForm::kIso8601);
  return time;
}

// The median of a metric over the detection's points, for the machine and for each peer.
struct Band {
  double machine = NAN;
  double low = NAN;     // the peers' 10th percentile
  double median = NAN;  // the peers' median
  double high = NAN;    // the peers' 90th percentile
};

double Median(std::vector<double> values) {
  values.erase(
      std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }),
      values.end());
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double Quantile(std::vector<double> sorted, double fraction) {
  if (sorted.empty()) return NAN;
  return sorted[static_cast<size_t>(fraction * static_cast<double>(sorted.size() - 1) + 0.5)];
}

Band BandOf(const Grid& grid, const Detection& found, size_t metric) {
  Band band;
  std::vector<double> peers;
  for (size_t machine = 0; machine < grid.machines.size(); ++machine) {
    const double* series = grid.Series(metric, machine);
    const double median =
        Median(std::vector<double>(series + found.first_point, series + found.last_point + 1));
    if (machine == found.machine) {
      band.machine = median;
    } else if (std::isfinite(median)) {
      peers.push_back(median);
    }
  }
  std::sort(peers.begin(), peers.end());
  band.low = Quantile(peers, 0.1);
  band.median = Quantile(peers, 0.5);
  band.high = Quantile(peers, 0.9);
  return band;
}

std::string TimeText(const Grid& grid, size_t point) {
  return FormatTime(grid.TimeAt(point), grid.time_form);
}

}  // namespace

std::string RenderDetectionsText(const Grid& grid, const DetectResult& result,
                                 const ReportContext& context) {
  std::string out;
  char line[512];
  if (result.detections.empty()) {
    std::snprintf(line, sizeof(line),
                  "upguard machines: no machine parts from its peers (%zu machines, %zu metrics, "
                  "%zu points of %g s; %zu single windows flagged, none for %zu in a row)\n",
                  grid.machines.size(), grid.metrics.size(), grid.length, grid.step,
                  result.flags.size(), context.continuity);
    return line;
  }
  for (const Detection& found : result.detections) {
    std::snprintf(line, sizeof(line),
                  "upguard machines: %s parts from its %zu peers from %s to %s (alerted at %s, "
                  "%g s after the first flagged window)\n",
                  grid.machines[found.machine].c_str(), grid.machines.size() - 1,
                  TimeText(grid, found.first_point).c_str(),
                  TimeText(grid, found.last_point).c_str(),
                  TimeText(grid, found.alert_point).c_str(),
                  grid.step * static_cast<double>(found.alert_point - found.first_point));
    out += line;
    for (size_t metric : found.metrics) {
      const Band band = BandOf(grid, found, metric);
      std::snprintf(line, sizeof(line),
                    "  %-40s %s: %.6g   peers: median %.6g, 10-90%% %.6g .. %.6g\n",
                    grid.metrics[metric].c_str(), grid.machines[found.machine].c_str(),
                    band.machine, band.median, band.low, band.high);
      out += line;
    }
    std::snprintf(line, sizeof(line), "  score: z %.2f among %zu machines\n", found.score,
                  grid.machines.size());
    out += line;
  }
  std::snprintf(line, sizeof(line),
                "method: %s, windows of %zu points (%g s), continuity %zu windows in a row\n",
                context.method.c_str(), context.window, grid.step, context.continuity);
  return out + line;
}

nlohmann::json DetectionsToJson(const Grid& grid, const DetectResult& result,
                                const ReportContext& context) {
  nlohmann::json detections = nlohmann::json::array();
  for (const Detection& found : result.detections) {
    nlohmann::json metrics = nlohmann::json::array();
    nlohmann::json peers = nlohmann::json::object();
    for (size_t metric : found.metrics) {
      metrics.push_back(grid.metrics[metric]);
      const Band band = BandOf(grid, found, metric);
      peers[grid.metrics[metric]] = {{"machine", band.machine},
                                     {"peers_p10", band.low},
                                     {"peers_median", band.median},
                                     {"peers_p90", band.high}};
    }
    detections.push_back({{"machine", grid.machines[found.machine]},
                          {"start", TimeJson(grid, found.first_point)},
                          {"end", TimeJson(grid, found.last_point)},
                          {"alert", TimeJson(grid, found.alert_point)},
                          {"metrics", metrics},
                          {"score", found.score},
                          {"peers", peers}});
  }
  return {{"schema", "upguard.machines/1"}, {"method", context.method},
          {"window", context.window},       {"continuity", context.continuity},
          {"step_seconds", grid.step},      {"machines", grid.machines.size()},
          {"detections", detections}};
}

}  // namespace upguard::machines
