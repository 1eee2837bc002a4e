// Minder's detection over a Grid (docs/machines.md): windows of `window` points slide one point
// at a time; in each, the metrics are tried in priority order, each machine's window of the
// metric normalised to the metric's range and (for Minder: a model with a denoiser for the
// metric) turned into its embedding; a metric whose peer score (peer_score.h) names a machine
// flags it for that window when it stays apart with its farthest sample left out (a one-sample
// blip is no flag; detector.cc, IsFlag). With a priority learned from labels the first metric
// that flags takes the window (Minder's order); without, the strongest flag does (the farthest
// in units of its least departure: an arbitrary order would let a metric that barely flags one
// machine hide another's clear fault, measured). A detection is
// the same machine flagged in `continuity` windows in a row (Minder's continuity check; 1 turns
// it off): it starts at the first of them, is raised at the last of them, and lasts while that
// machine stays flagged.
//
//   DetectOptions options;  // the raw distance; options.model = &model for Minder
//   DetectResult result = Detect(grid, RangesOf(grid), options);
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "machines/grid.h"
#include "machines/machine_model.h"
#include "machines/peer_score.h"

namespace upguard::machines {

struct MetricRange {
  double lo = 0;
  double hi = 1;
};

// The range a metric's `values` are normalised to: their 1st to 99th percentile, at least
// kRangeFloor of the larger magnitude of the two wide (a metric that hardly moves, memory at
// 253-256 MB, would make a constant 0.5 % offset between machines half its range), and a flat
// metric 1 wide, so it never flags. Empty `values`: [0, 1]. Reorders `values`.
inline constexpr double kRangeFloor = 0.2;
MetricRange RangeOfValues(std::vector<double>& values);

// The least departure from its peers, in the metric's own units, that can be a machine's fault
// whatever the metric's range: a byte rate (a name with `_bytes_per_second`, labels after it
// allowed) 1 MiB/s, else 0. A machine whose disk barely writes, 4-12 KB a second in whole pages,
// wrote 1-2 pages a second more than its peers for 8 s: 5 % of that level, a flag (measured,
// CI); a fault moves a byte rate by megabytes (disk_fill 600 MB/s against 4 KB/s).
inline constexpr double kLeastBytesPerSecond = 1 << 20;
double LeastMeaningfulDeparture(const std::string& metric);

// Per metric of `grid`: RangeOfValues of its finite values over every machine and point.
std::vector<MetricRange> RangesOf(const Grid& grid);

struct DetectOptions {
  size_t window = 8;
  size_t continuity = 4;
  Distance distance = Distance::kEuclidean;
  PeerRule rule;
  std::vector<size_t> metric_order;  // priority; empty: the grid's order
  bool priority_learned = false;     // metric_order from labels: the first metric that flags wins
  // Minder: a metric with a denoiser here is normalised to the denoiser's range and compared
  // by embeddings, the candidate's score at least the denoiser's `score_limit` (the farthest
  // healthy machines got in the fit), and its samples still at least `rule.min_distance` from
  // the peers' median (RMS over the window: what the denoiser calls far must be far enough to
  // flag raw); other metrics as without a model. Null: the raw distance everywhere.
  const MachineModel* model = nullptr;
  size_t threads = 0;  // 0: the machine's cores, up to 8 (windows are scored independently)
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

DetectResult Detect(const Grid& grid, const std::vector<MetricRange>& ranges,
                    const DetectOptions& options);

// The grid's metrics in `model`'s priority: names the grid lacks skipped, the grid's metrics the
// priority lacks after the others, in the grid's order.
std::vector<size_t> PriorityOrder(const Grid& grid, const MachineModel& model);

// The metrics of `grid` that `model` has a denoiser for (empty without a model).
std::vector<bool> DenoisedMetrics(const Grid& grid, const MachineModel* model);

}  // namespace upguard::machines
