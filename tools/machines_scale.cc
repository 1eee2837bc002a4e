// upguard_machines_scale: one detection pass over 1,000 machines x 7 metrics x 15 minutes of
// 1 s samples with one planted faulty machine (issue 16's scale target: <= 1 s), for Minder
// (a model fit here on a small healthy cluster) and the two baselines. Prints a Markdown table;
// exit 1 when a method misses the planted machine or names another.
//
//   upguard_machines_scale [--machines 1000] [--metrics 7] [--points 900] [--repeat 3]
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "machines/detector.h"
#include "machines_fit/fit_model.h"

namespace upguard::machines {
namespace {

// Metric k of every machine: a level, a wave all machines share, noise; the planted machine's
// metric 1 drops by 0.3 of its level's scale from `fault_at` on.
Grid Cluster(size_t machines, size_t metrics, size_t length, int faulty, size_t fault_at,
             uint64_t seed) {
  Grid grid;
  grid.start = 1700000000;
  grid.length = length;
  for (size_t k = 0; k < metrics; ++k) grid.metrics.push_back("metric_" + std::to_string(k));
  for (size_t m = 0; m < machines; ++m) grid.machines.push_back("node-" + std::to_string(m));
  grid.values.resize(metrics * machines * length);
  uint64_t state = seed;
  auto noise = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / double(1ULL << 52) - 1.0;
  };
  for (size_t k = 0; k < metrics; ++k) {
    const double level = 10.0 * static_cast<double>(k + 1);
    for (size_t m = 0; m < machines; ++m) {
      double* series = grid.values.data() + (k * machines + m) * length;
      for (size_t p = 0; p < length; ++p) {
        const double wave =
            0.1 * std::sin(static_cast<double>(p) / (15.0 + static_cast<double>(k)));
        const bool fault = k == 1 && static_cast<int>(m) == faulty && p >= fault_at;
        series[p] = level * (1 + wave + 0.03 * noise() - (fault ? 0.3 : 0.0));
      }
    }
  }
  return grid;
}

size_t Flag(int argc, char** argv, const char* name, size_t fallback) {
  for (int idx = 1; idx + 1 < argc; ++idx) {
    if (std::strcmp(argv[idx], name) == 0) return std::strtoull(argv[idx + 1], nullptr, 10);
  }
  return fallback;
}

int Main(int argc, char** argv) {
  const size_t machines = Flag(argc, argv, "--machines", 1000);
  const size_t metrics = Flag(argc, argv, "--metrics", 7);
  const size_t points = Flag(argc, argv, "--points", 900);
  const size_t repeat = Flag(argc, argv, "--repeat", 3);
  const int faulty = static_cast<int>(machines * 5 / 8);
  const size_t fault_at = points * 2 / 3;
  FitOptions fit;
  fit.train.steps = 300;
  StatusOr<MachineModel> model =
      FitMachineModel(Cluster(16, metrics, 600, -1, 0, 11), {}, fit, nullptr);
  if (!model.ok()) {
    std::fprintf(stderr, "fit: %s\n", model.status().message().c_str());
    return 2;
  }
  const Grid grid = Cluster(machines, metrics, points, faulty, fault_at, 12);
  const std::vector<MetricRange> ranges = RangesOf(grid);
  std::printf(
      "| method | machines x metrics x points | one pass (best of %zu) | found | "
      "target <= 1 s |\n|---|---|---|---|---|\n",
      repeat);
  bool all_found = true;
  for (const char* method : {"Minder", "raw distance", "Mahalanobis"}) {
    DetectOptions options;
    if (std::strcmp(method, "Minder") == 0) {
      options.model = &*model;
      options.metric_order = PriorityOrder(grid, *model);
    }
    if (std::strcmp(method, "Mahalanobis") == 0) options.distance = Distance::kMahalanobis;
    double best = 1e9;
    DetectResult result;
    for (size_t r = 0; r < repeat; ++r) {
      const auto start = std::chrono::steady_clock::now();
      result = Detect(grid, ranges, options);
      best = std::min(
          best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    const bool found = result.detections.size() == 1 &&
                       result.detections[0].machine == static_cast<size_t>(faulty) &&
                       result.detections[0].first_point >= fault_at &&
                       result.detections[0].alert_point <= fault_at + 10;
    all_found = all_found && found;
    std::printf("| %s | %zu x %zu x %zu | %.3f s | %s (%zu detections) | %s |\n", method, machines,
                metrics, points, best, found ? "yes" : "NO", result.detections.size(),
                best <= 1.0 ? "PASS" : "MISS");
  }
  return all_found ? 0 : 1;
}

}  // namespace
}  // namespace upguard::machines

int main(int argc, char** argv) { return upguard::machines::Main(argc, argv); }
