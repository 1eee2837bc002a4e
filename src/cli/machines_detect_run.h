// One detection of `upguard machines detect`, and `--watch`, which repeats it every few seconds
// over the last minutes of a live source (a Prometheus server, or the agents' files) and prints
// each detection once, when it is raised.
#pragma once

#include <atomic>
#include <string>

#include "machines/detector.h"
#include "machines/grid.h"
#include "machines/machine_model.h"
#include "machines/report.h"
#include "machines/source.h"
#include "upguard/status.h"

namespace upguard {

struct DetectPlan {
  std::string input;
  machines::SourceOptions source;
  double step = 0;                  // the grid's step, 0: the samples' median spacing
  machines::DetectOptions options;  // options.model points at `model` for Minder
  machines::MachineModel model;
  machines::ReportContext context;
  bool json = false;
  std::string html;  // a report to write, "" none
};

struct DetectOutcome {
  machines::Grid grid;
  machines::DetectResult result;
};

// Loads the source, builds the grid and detects (the model's priority when there is a model).
StatusOr<DetectOutcome> DetectOnce(const DetectPlan& plan);

// Every `every` seconds until `stop` (or `duration` seconds, 0: no limit): detects over the last
// `range` seconds ending now and prints the detections not printed before (text lines, or one
// JSON object a line with --json). Returns kExitDiverged when it printed any, else kExitOk.
StatusOr<int> WatchDetections(DetectPlan plan, double every, double range, double duration,
                              const std::atomic<bool>& stop);

}  // namespace upguard
