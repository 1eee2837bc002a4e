#include "cli/machines_detect_run.h"

#include <chrono>
#include <cstdio>
#include <set>
#include <thread>
#include <utility>

#include "cli/command.h"

namespace upguard {

StatusOr<DetectOutcome> DetectOnce(const DetectPlan& plan) {
  DetectOutcome out;
  ASSIGN_OR_RETURN(const machines::MetricSamples samples,
                   machines::LoadSamples(plan.input, plan.source));
  for (const std::string& warning : samples.warnings) {
    std::fprintf(stderr, "upguard machines detect: %s\n", warning.c_str());
  }
  ASSIGN_OR_RETURN(out.grid, machines::MakeGrid(samples, plan.step));
  machines::DetectOptions options = plan.options;
  if (options.model) {
    options.metric_order = machines::PriorityOrder(out.grid, *options.model);
    options.priority_learned = options.model->priority_source == "labels";
  }
  out.result = machines::Detect(out.grid, machines::RangesOf(out.grid), options);
  return out;
}

StatusOr<int> WatchDetections(DetectPlan plan, double every, double range, double duration,
                              const std::atomic<bool>& stop) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  if (plan.options.model) plan.options.model = &plan.model;  // the copy's own model
  plan.source.start = "-" + std::to_string(static_cast<long long>(range)) + "s";
  plan.source.end = "now";
  std::set<std::pair<std::string, double>> printed;  // (machine, start) of each detection
  bool any = false;
  std::fprintf(stderr, "upguard machines detect: watching %s every %g s (the last %g s)\n",
               plan.input.c_str(), every, range);
  while (!stop) {
    StatusOr<DetectOutcome> outcome = DetectOnce(plan);
    if (!outcome.ok()) {  // a source that is down for a moment: say so, try again
      std::fprintf(stderr, "upguard machines detect: %s\n", outcome.status().message().c_str());
    } else {
      const machines::Grid& grid = outcome->grid;
      for (const machines::Detection& found : outcome->result.detections) {
        const auto key =
            std::make_pair(grid.machines[found.machine], grid.TimeAt(found.first_point));
        if (!printed.insert(key).second) continue;
        any = true;
        machines::DetectResult one;
        one.detections.push_back(found);
        if (plan.json) {
          std::printf("%s\n", machines::DetectionsToJson(grid, one, plan.context).dump().c_str());
        } else {
          std::printf("%s", machines::RenderDetectionsText(grid, one, plan.context).c_str());
        }
        std::fflush(stdout);
      }
    }
    const auto next = Clock::now() + std::chrono::duration<double>(every);
    while (!stop && Clock::now() < next) {
      if (duration > 0 &&
          std::chrono::duration<double>(Clock::now() - started).count() >= duration) {
        return any ? kExitDiverged : kExitOk;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return any ? kExitDiverged : kExitOk;
}

}  // namespace upguard
