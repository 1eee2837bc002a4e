// What `upguard machines fit` learns from (docs/formats/machine-model.md): the healthy windows
// each metric's denoiser trains on, the healthy range it is normalised to, and the metric
// priority a decision tree learns from labelled windows. Torch-free: the training itself is in
// src/machines_fit.
//
//   const FaultMask mask = MaskFaults(grid, labels);
//   MetricRange range = HealthyRange(grid, metric, mask);
//   std::vector<float> windows = HealthyWindows(grid, metric, mask, range, 8, 20000);
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "machines/detector.h"
#include "machines/fault_labels.h"
#include "machines/grid.h"
#include "machines/machine_model.h"

namespace upguard::machines {

// [machine][point]: the point lies in a labelled fault of that machine.
using FaultMask = std::vector<std::vector<bool>>;

FaultMask MaskFaults(const Grid& grid, const std::vector<FaultLabel>& labels);

// RangeOfValues (detector.h) of the metric's finite unmasked points.
MetricRange HealthyRange(const Grid& grid, size_t metric, const FaultMask& mask);

// Every complete window of `window` unmasked points of every machine, normalised to `range`,
// evenly thinned to at most `max_windows`; [window][point].
std::vector<float> HealthyWindows(const Grid& grid, size_t metric, const FaultMask& mask,
                                  const MetricRange& range, size_t window, size_t max_windows);

// The least score a denoised candidate needs (Denoiser::score_limit): per window of unmasked
// points, the largest of the machines' embedding scores (peer_score.h); kScoreLimitMargin times
// their kScoreLimitQuantile quantile, so noise that healthy machines show stays below it.
inline constexpr double kScoreLimitQuantile = 0.999;
inline constexpr double kScoreLimitMargin = 1.25;
double HealthyScoreLimit(const Grid& grid, size_t metric, const FaultMask& mask,
                         const Denoiser& denoiser, size_t window);

struct LearnedPriority {
  std::vector<size_t> order;       // every metric of the grid, most telling first
  std::vector<double> importance;  // per metric of the grid: the tree's impurity decrease
  size_t rows = 0, faulty_rows = 0;
  bool learned = false;  // false: no labelled window (the grid's order)
};

// Per window end and machine, each metric's peer z-score (of the model's embedding where it
// has a denoiser, else of the normalised window) as features, the mask as the label; a decision
// tree ranks the metrics (docs/formats/machine-model.md §3).
LearnedPriority LearnPriority(const Grid& grid, const std::vector<MetricRange>& ranges,
                              const MachineModel& model, const FaultMask& mask, size_t window);

}  // namespace upguard::machines
