// Every (machine, metric) series of a MetricSamples on one time grid, so machines can be
// compared point by point whatever their sampling: an agent's 1 s samples, a 5-minute export.
//
// The step is the median spacing of consecutive samples within a series (or the caller's). A
// grid point takes the mean of the samples that round to it; a point without one holds the
// series' previous value for up to `kHoldPoints` points (a late scrape), then is NaN (a gap).
//
//   ASSIGN_OR_RETURN(Grid grid, MakeGrid(samples));
//   double v = grid.At(metric_idx, machine_idx, point_idx);  // NaN in a gap
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "machines/samples.h"
#include "upguard/status.h"

namespace upguard::machines {

inline constexpr size_t kHoldPoints = 2;
inline constexpr size_t kMaxGridValues = size_t{1} << 28;  // 2 GiB of doubles

struct Grid {
  double start = 0;  // the time of point 0
  double step = 1;   // seconds between points
  size_t length = 0;
  std::vector<std::string> machines;
  std::vector<std::string> metrics;
  TimeForm time_form = TimeForm::kSeconds;
  std::vector<double> values;  // [metric][machine][point]

  double TimeAt(size_t point) const { return start + step * static_cast<double>(point); }
  double At(size_t metric, size_t machine, size_t point) const {
    return values[(metric * machines.size() + machine) * length + point];
  }
  const double* Series(size_t metric, size_t machine) const {
    return values.data() + (metric * machines.size() + machine) * length;
  }
};

// `step` 0: the median spacing. Errors: no samples, or a grid too large (a step far smaller than
// the time span: say which and suggest --step).
StatusOr<Grid> MakeGrid(const MetricSamples& samples, double step = 0);

}  // namespace upguard::machines
