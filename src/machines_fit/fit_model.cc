#include "machines_fit/fit_model.h"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "machines/fit_data.h"

namespace upguard::machines {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The RMS difference of consecutive points over the windows: the noise a denoiser leaves out.
double NoiseRmse(const std::vector<float>& windows, size_t window) {
  double sum = 0;
  size_t count = 0;
  for (size_t row = 0; row + 1 <= windows.size() / window; ++row) {
    for (size_t t = 1; t < window; ++t) {
      const double d = windows[row * window + t] - windows[row * window + t - 1];
      sum += d * d;
      ++count;
    }
  }
  return count ? std::sqrt(sum / static_cast<double>(count)) : 0;
}

}  // namespace

StatusOr<MachineModel> FitMachineModel(const Grid& grid, const std::vector<FaultLabel>& labels,
                                       const FitOptions& options, std::string* log) {
  const auto started = std::chrono::steady_clock::now();
  if (grid.machines.size() < 3) {
    return InvalidArgument("fit needs the history of at least 3 machines (it has " +
                           std::to_string(grid.machines.size()) + ")");
  }
  MachineModel model;
  model.window = options.window;
  model.hidden = options.train.hidden;
  model.latent = options.train.latent;
  model.step = grid.step;
  model.fit_machines = grid.machines.size();
  model.fit_points = grid.length;
  const FaultMask mask = MaskFaults(grid, labels);
  std::vector<MetricRange> ranges(grid.metrics.size());
  for (size_t metric = 0; metric < grid.metrics.size(); ++metric) {
    const auto metric_started = std::chrono::steady_clock::now();
    ranges[metric] = HealthyRange(grid, metric, mask);
    const std::vector<float> windows =
        HealthyWindows(grid, metric, mask, ranges[metric], options.window, options.max_windows);
    const std::string& name = grid.metrics[metric];
    StatusOr<TrainedDenoiser> trained = TrainDenoiser(windows, options.window, options.train);
    if (!trained.ok()) {
      return Status(trained.status().code(),
                    "metric \"" + name + "\": " + trained.status().message());
    }
    Denoiser d = std::move(trained->denoiser);
    d.lo = ranges[metric].lo;
    d.hi = ranges[metric].hi;
    d.reconstruction_rmse = trained->reconstruction_rmse;
    d.noise_rmse = NoiseRmse(windows, options.window);
    d.score_limit = HealthyScoreLimit(grid, metric, mask, d, options.window);
    if (log) {
      char line[256];
      std::snprintf(line, sizeof(line),
                    "  %-28s %6zu windows  reconstruction %.3f  (point-to-point noise %.3f)  "
                    "score limit %.3f  %.1f s\n",
                    name.c_str(), d.windows, d.reconstruction_rmse, d.noise_rmse, d.score_limit,
                    Seconds(metric_started));
      *log += line;
    }
    model.metrics.emplace(name, std::move(d));
  }
  const LearnedPriority priority = LearnPriority(grid, ranges, model, mask, options.window);
  for (size_t metric : priority.order) model.priority.push_back(grid.metrics[metric]);
  model.priority_source = priority.learned ? "labels" : "default";
  if (log && priority.learned) {
    *log += "  priority from " + std::to_string(priority.faulty_rows) + " faulty of " +
            std::to_string(priority.rows) + " labelled machine-windows:";
    for (const std::string& name : model.priority) *log += " " + name;
    *log += "\n";
  }
  model.fit_seconds = Seconds(started);
  return model;
}

}  // namespace upguard::machines
