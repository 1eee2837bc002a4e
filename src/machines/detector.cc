#include "machines/detector.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace upguard::machines {
namespace {

double Percentile(std::vector<double>& values, double fraction) {
  const auto at = static_cast<size_t>(fraction * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + at, values.end());
  return values[at];
}

// The machine flagged in the window ending at `end`, trying metrics in `order`.
bool FlagWindow(const Grid& grid, const std::vector<MetricRange>& ranges, const Embedder& embed,
                const DetectOptions& options, const std::vector<size_t>& order, size_t end,
                WindowFlag* flag) {
  const size_t first = end + 1 - options.window;
  std::vector<std::vector<double>> rows;
  std::vector<size_t> owners;
  for (size_t metric : order) {
    rows.clear();
    owners.clear();
    const MetricRange& range = ranges[metric];
    for (size_t machine = 0; machine < grid.machines.size(); ++machine) {
      const double* series = grid.Series(metric, machine);
      std::vector<double> row(options.window);
      bool complete = true;
      for (size_t idx = 0; idx < options.window && complete; ++idx) {
        const double value = series[first + idx];
        complete = std::isfinite(value);
        row[idx] = (value - range.lo) / (range.hi - range.lo);
      }
      if (!complete) continue;
      rows.push_back(embed ? embed(metric, row) : std::move(row));
      owners.push_back(machine);
    }
    const PeerScore score = ScorePeers(rows, options.distance, options.rule);
    if (score.machine < 0) continue;
    *flag = WindowFlag{end, owners[static_cast<size_t>(score.machine)], metric, score.z};
    return true;
  }
  return false;
}

// Extends a detection by one more window that flagged its machine.
void Absorb(const WindowFlag& flag, Detection* detection) {
  detection->last_point = std::max(detection->last_point, flag.end_point);
  detection->score = std::max(detection->score, flag.z);
  if (std::find(detection->metrics.begin(), detection->metrics.end(), flag.metric) ==
      detection->metrics.end()) {
    detection->metrics.push_back(flag.metric);
  }
}

}  // namespace

std::vector<MetricRange> RangesOf(const Grid& grid) {
  std::vector<MetricRange> ranges(grid.metrics.size());
  for (size_t metric = 0; metric < grid.metrics.size(); ++metric) {
    std::vector<double> values;
    for (size_t machine = 0; machine < grid.machines.size(); ++machine) {
      const double* series = grid.Series(metric, machine);
      for (size_t point = 0; point < grid.length; ++point) {
        if (std::isfinite(series[point])) values.push_back(series[point]);
      }
    }
    if (values.empty()) continue;
    MetricRange& range = ranges[metric];
    range.lo = Percentile(values, 0.01);
    range.hi = Percentile(values, 0.99);
    if (!(range.hi > range.lo)) range.hi = range.lo + 1;
  }
  return ranges;
}

DetectResult Detect(const Grid& grid, const std::vector<MetricRange>& ranges, const Embedder& embed,
                    const DetectOptions& options) {
  DetectResult result;
  if (options.window == 0 || grid.length < options.window) return result;
  std::vector<size_t> order = options.metric_order;
  if (order.empty()) {
    order.resize(grid.metrics.size());
    std::iota(order.begin(), order.end(), 0);
  }
  const size_t needed = std::max<size_t>(options.continuity, 1);
  size_t run_machine = 0;
  size_t run_length = 0;
  size_t run_first = 0;
  for (size_t end = options.window - 1; end < grid.length; ++end) {
    WindowFlag flag;
    if (!FlagWindow(grid, ranges, embed, options, order, end, &flag)) {
      run_length = 0;
      continue;
    }
    result.flags.push_back(flag);
    // An unflagged window ended the run above, so a run is always of consecutive windows.
    if (run_length > 0 && flag.machine == run_machine) {
      ++run_length;
    } else {
      run_machine = flag.machine;
      run_length = 1;
      run_first = end;
    }
    if (run_length < needed) continue;
    if (run_length == needed) {  // the check is met: the run's earlier windows count too
      Detection detection;
      detection.machine = run_machine;
      detection.first_point = run_first;
      detection.alert_point = end;
      for (size_t idx = result.flags.size() - needed; idx + 1 < result.flags.size(); ++idx) {
        Absorb(result.flags[idx], &detection);
      }
      result.detections.push_back(detection);
    }
    Absorb(flag, &result.detections.back());
  }
  return result;
}

}  // namespace upguard::machines
