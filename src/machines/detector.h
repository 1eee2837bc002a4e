// Minder's detection over a Grid (docs/machines.md): windows of `window` points slide one point
// at a time; in each, the metrics are tried in priority order, each machine's window of the
// metric normalised to the metric's range and (for Minder) denoised into an embedding, and the
// first metric whose peer score (peer_score.h) names a machine flags it for that window. A
// detection is the same machine flagged in `continuity` windows in a row (Minder's continuity
// check; 1 turns it off): it starts at the first of them, is raised at the last of them, and
// lasts while that machine stays flagged.
//
//   DetectOptions options;  // Minder's defaults
//   DetectResult result = Detect(grid, RangesOf(grid), nullptr, options);
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "machines/grid.h"
#include "machines/peer_score.h"

namespace upguard::machines {

struct MetricRange {
  double lo = 0;
  double hi = 1;
};

// Per metric of `grid`: the 1st to the 99th percentile of its finite values over every machine
// and point (a flat metric gets a range of 1, so it never flags).
std::vector<MetricRange> RangesOf(const Grid& grid);

// Turns one machine's normalised window of one metric into the vector machines are compared by
// (Minder: the denoiser's embedding). Null: the normalised window itself (the raw baseline).
using Embedder = std::function<std::vector<double>(size_t metric, const std::vector<double>&)>;

struct DetectOptions {
  size_t window = 8;
  size_t continuity = 4;
  Distance distance = Distance::kEuclidean;
  PeerRule rule;
  std::vector<size_t> metric_order;  // priority; empty: the grid's order
};

struct WindowFlag {
  size_t end_point = 0;  // the window's last point
  size_t machine = 0;
  size_t metric = 0;
  double z = 0;
};

struct Detection {
  size_t machine = 0;
  size_t first_point = 0;  // the first flagged window's last point
  size_t alert_point = 0;  // where the continuity check was met
  size_t last_point = 0;
  std::vector<size_t> metrics;  // every metric that flagged it, in order of first flag
  double score = 0;             // the largest z-score it had
};

struct DetectResult {
  std::vector<WindowFlag> flags;  // every flagged window, in order
  std::vector<Detection> detections;
};

DetectResult Detect(const Grid& grid, const std::vector<MetricRange>& ranges, const Embedder& embed,
                    const DetectOptions& options);

}  // namespace upguard::machines
