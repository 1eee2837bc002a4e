#include "machines/fit_data.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "machines/decision_tree.h"
#include "machines/peer_score.h"

namespace upguard::machines {
namespace {

// The window of `machine` ending at `end`, normalised; false when a point is missing.
bool WindowAt(const Grid& grid, size_t metric, size_t machine, size_t end, size_t window,
              const MetricRange& range, float* out) {
  const double* series = grid.Series(metric, machine) + end + 1 - window;
  for (size_t idx = 0; idx < window; ++idx) {
    if (!std::isfinite(series[idx])) return false;
    out[idx] = static_cast<float>((series[idx] - range.lo) / (range.hi - range.lo));
  }
  return true;
}

bool Masked(const FaultMask& mask, size_t machine, size_t end, size_t window) {
  for (size_t point = end + 1 - window; point <= end; ++point) {
    if (mask[machine][point]) return true;
  }
  return false;
}

constexpr size_t kPriorityRows = 40000;  // rows the tree is fit on at most

}  // namespace

FaultMask MaskFaults(const Grid& grid, const std::vector<FaultLabel>& labels) {
  FaultMask mask(grid.machines.size(), std::vector<bool>(grid.length, false));
  for (size_t machine = 0; machine < grid.machines.size(); ++machine) {
    for (size_t point = 0; point < grid.length; ++point) {
      const double t = grid.TimeAt(point);
      mask[machine][point] = LabelledFaulty(labels, grid.machines[machine], t, t);
    }
  }
  return mask;
}

MetricRange HealthyRange(const Grid& grid, size_t metric, const FaultMask& mask) {
  std::vector<double> values;
  for (size_t machine = 0; machine < grid.machines.size(); ++machine) {
    const double* series = grid.Series(metric, machine);
    for (size_t point = 0; point < grid.length; ++point) {
      if (!mask[machine][point] && std::isfinite(series[point])) values.push_back(series[point]);
    }
  }
  return RangeOfValues(values);
}

std::vector<float> HealthyWindows(const Grid& grid, size_t metric, const FaultMask& mask,
                                  const MetricRange& range, size_t window, size_t max_windows) {
  std::vector<float> out;
  if (grid.length < window) return out;
  std::vector<float> row(window);
  for (size_t machine = 0; machine < grid.machines.size(); ++machine) {
    for (size_t end = window - 1; end < grid.length; ++end) {
      if (Masked(mask, machine, end, window)) continue;
      if (WindowAt(grid, metric, machine, end, window, range, row.data())) {
        out.insert(out.end(), row.begin(), row.end());
      }
    }
  }
  const size_t count = out.size() / window;
  if (count <= max_windows) return out;
  std::vector<float> thinned;
  thinned.reserve(max_windows * window);
  for (size_t idx = 0; idx < max_windows; ++idx) {
    const size_t from = idx * count / max_windows;
    thinned.insert(thinned.end(), out.begin() + static_cast<std::ptrdiff_t>(from * window),
                   out.begin() + static_cast<std::ptrdiff_t>((from + 1) * window));
  }
  return thinned;
}

double HealthyScoreLimit(const Grid& grid, size_t metric, const FaultMask& mask,
                         const Denoiser& denoiser, size_t window) {
  const size_t machines = grid.machines.size();
  const MetricRange range{denoiser.lo, denoiser.hi};
  std::vector<double> tops;
  std::vector<float> windows(machines * window);
  std::vector<float> embedded(machines * denoiser.latent);
  for (size_t end = window - 1; end < grid.length; ++end) {
    size_t n = 0;
    for (size_t machine = 0; machine < machines; ++machine) {
      if (Masked(mask, machine, end, window)) continue;
      if (WindowAt(grid, metric, machine, end, window, range, windows.data() + n * window)) ++n;
    }
    if (n < 3) continue;
    denoiser.EmbedBatch(windows.data(), n, window, embedded.data());
    const std::vector<double> scores = PeerDistances(embedded.data(), n, denoiser.latent);
    tops.push_back(*std::max_element(scores.begin(), scores.end()));
  }
  if (tops.empty()) return 0;
  std::sort(tops.begin(), tops.end());
  const auto at = static_cast<size_t>(kScoreLimitQuantile * static_cast<double>(tops.size() - 1));
  return kScoreLimitMargin * tops[at];
}

LearnedPriority LearnPriority(const Grid& grid, const std::vector<MetricRange>& ranges,
                              const MachineModel& model, const FaultMask& mask, size_t window) {
  LearnedPriority out;
  const size_t metrics = grid.metrics.size();
  const size_t machines = grid.machines.size();
  out.order.resize(metrics);
  std::iota(out.order.begin(), out.order.end(), 0);
  out.importance.assign(metrics, 0.0);
  if (grid.length < window || machines < 3) return out;
  const size_t ends = grid.length - window + 1;
  const size_t stride = std::max<size_t>(1, ends * machines / kPriorityRows);
  std::vector<double> features;
  std::vector<uint8_t> labels;
  std::vector<float> windows, embedded;
  std::vector<size_t> owners;
  for (size_t end = window - 1; end < grid.length; end += stride) {
    const size_t base = labels.size();
    features.resize((base + machines) * metrics, 0.0);
    for (size_t machine = 0; machine < machines; ++machine) {
      labels.push_back(mask[machine][end] ? 1 : 0);
    }
    for (size_t metric = 0; metric < metrics; ++metric) {
      const Denoiser* d = model.Find(grid.metrics[metric]);
      const MetricRange range = d ? MetricRange{d->lo, d->hi} : ranges[metric];
      windows.resize(machines * window);
      owners.clear();
      for (size_t machine = 0; machine < machines; ++machine) {
        if (WindowAt(grid, metric, machine, end, window, range,
                     windows.data() + owners.size() * window)) {
          owners.push_back(machine);
        }
      }
      const float* rows = windows.data();
      size_t dims = window;
      if (d != nullptr) {
        embedded.resize(owners.size() * d->latent);
        d->EmbedBatch(windows.data(), owners.size(), window, embedded.data());
        rows = embedded.data();
        dims = d->latent;
      }
      const std::vector<double> z = PeerZScores(rows, owners.size(), dims);
      for (size_t idx = 0; idx < owners.size(); ++idx) {
        features[(base + owners[idx]) * metrics + metric] = z[idx];
      }
    }
  }
  out.rows = labels.size();
  out.faulty_rows = static_cast<size_t>(std::count(labels.begin(), labels.end(), 1));
  if (out.faulty_rows == 0) return out;
  const TreeSummary tree = FitTree(features, labels, metrics, TreeOptions{});
  out.importance = tree.importance;
  // The mean z-score on faulty rows orders the metrics the tree never split on.
  std::vector<double> faulty_z(metrics, 0.0);
  for (size_t row = 0; row < labels.size(); ++row) {
    if (labels[row] == 0) continue;
    for (size_t metric = 0; metric < metrics; ++metric) {
      faulty_z[metric] += features[row * metrics + metric];
    }
  }
  std::stable_sort(out.order.begin(), out.order.end(), [&](size_t a, size_t b) {
    const int da = tree.first_depth[a] < 0 ? 1 << 20 : tree.first_depth[a];
    const int db = tree.first_depth[b] < 0 ? 1 << 20 : tree.first_depth[b];
    if (da != db) return da < db;
    if (tree.importance[a] != tree.importance[b]) return tree.importance[a] > tree.importance[b];
    return faulty_z[a] > faulty_z[b];
  });
  out.learned = true;
  return out;
}

}  // namespace upguard::machines
