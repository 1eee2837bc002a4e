#include "machines/grid.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace upguard::machines {
namespace {

// The median spacing of consecutive distinct sample times within each series.
double MedianSpacing(const MetricSamples& samples) {
  const size_t series = samples.machines.size() * samples.metrics.size();
  std::vector<std::vector<double>> times(series);
  for (const Sample& s : samples.samples) {
    times[s.metric * samples.machines.size() + s.machine].push_back(s.time);
  }
  std::vector<double> gaps;
  for (std::vector<double>& t : times) {
    std::sort(t.begin(), t.end());
    for (size_t idx = 1; idx < t.size(); ++idx) {
      if (t[idx] > t[idx - 1]) gaps.push_back(t[idx] - t[idx - 1]);
    }
  }
  if (gaps.empty()) return 1;
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  return gaps[gaps.size() / 2];
}

// The spacing rounded to two significant digits: scrapes jitter (0.997 s, 301 s), and a grid a
// hair off the sampling interval drifts across a long series.
double Nice(double spacing) {
  const double scale = std::pow(10.0, std::floor(std::log10(spacing)) - 1);
  return std::round(spacing / scale) * scale;
}

}  // namespace

StatusOr<Grid> MakeGrid(const MetricSamples& samples, double step) {
  if (samples.samples.empty()) return InvalidArgument("no metric samples to compare");
  if (step < 0 || !std::isfinite(step)) return InvalidArgument("the grid step must be positive");
  Grid grid;
  grid.machines = samples.machines;
  grid.metrics = samples.metrics;
  grid.time_form = samples.time_form;
  grid.step = step > 0 ? step : Nice(MedianSpacing(samples));
  double first = std::numeric_limits<double>::infinity();
  double last = -first;
  for (const Sample& s : samples.samples) {
    first = std::min(first, s.time);
    last = std::max(last, s.time);
  }
  // On the step's own multiples, so points fall where the samples were meant to be.
  grid.start = std::round(first / grid.step) * grid.step;
  const double points = std::floor((last - grid.start) / grid.step + 0.5) + 1;
  const double total = points * static_cast<double>(grid.machines.size() * grid.metrics.size());
  if (total > static_cast<double>(kMaxGridValues)) {
    return InvalidArgument("the samples span " + FormatTime(last - first, TimeForm::kSeconds) +
                           " s at a step of " + FormatTime(grid.step, TimeForm::kSeconds) +
                           " s: too many points; pass a larger --step or a shorter time range");
  }
  grid.length = static_cast<size_t>(points);
  const size_t series = grid.machines.size() * grid.metrics.size();
  std::vector<double> sum(series * grid.length, 0.0);
  std::vector<uint32_t> count(series * grid.length, 0);
  for (const Sample& s : samples.samples) {
    const double offset = std::max(0.0, std::floor((s.time - grid.start) / grid.step + 0.5));
    const auto point = static_cast<size_t>(offset);
    const size_t at = (s.metric * grid.machines.size() + s.machine) * grid.length +
                      std::min(point, grid.length - 1);
    sum[at] += s.value;
    ++count[at];
  }
  grid.values.assign(series * grid.length, std::numeric_limits<double>::quiet_NaN());
  for (size_t series_idx = 0; series_idx < series; ++series_idx) {
    double held = std::numeric_limits<double>::quiet_NaN();
    size_t since = kHoldPoints + 1;  // points since the last sample
    for (size_t point = 0; point < grid.length; ++point) {
      const size_t at = series_idx * grid.length + point;
      if (count[at] > 0) {
        held = sum[at] / count[at];
        since = 0;
      } else {
        ++since;
      }
      if (since <= kHoldPoints) grid.values[at] = held;
    }
  }
  return grid;
}

}  // namespace upguard::machines
