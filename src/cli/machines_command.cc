// `upguard machines detect`: the machine whose metrics part from its peers (docs/machines.md).
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/command.h"
#include "cli/flags.h"
#include "machines/detector.h"
#include "machines/metrics_csv.h"
#include "machines/report.h"

namespace upguard {

const char kMachinesUsage[] = R"(usage: upguard machines detect --input METRICS.csv [options]

Names the machine whose metrics part from its peers' for long enough (after ByteDance's
Minder): per window of samples, each machine's window of each metric is normalised to the
metric's range and compared with every other machine's; the machine far from all of them is
flagged, and flagged in several windows in a row it is a detection. In data-parallel training
healthy machines behave alike, so the odd one out is the suspect.

METRICS.csv is `time,machine,metric,value` (docs/formats/machine-metrics-csv.md): any monitoring
export turned into four columns; samples in any order, at any spacing (1 s or 5 min).

options:
  --input FILE       the metrics (CSV)
  --method M         raw (default: distances of the normalised windows) or mahalanobis
                     (each machine's distance from the machines' mean, a baseline)
  --window N         points per window (default 8)
  --continuity K     windows in a row before a detection (default 4; 1 turns the check off)
  --step SECONDS     the time grid's step (default: the median spacing of the samples)
  --json             print JSON (schema upguard.machines/1, docs/cli.md)

exit codes: 0 no machine parts from its peers, 1 one or more detections, 2 error.

example:
  upguard machines detect --input metrics.csv
)";

namespace {

StatusOr<int> RunDetect(int argc, char** argv) {
  Flags flags("machines detect", {{"input", 0, true},
                                  {"method", 0, true},
                                  {"window", 0, true},
                                  {"continuity", 0, true},
                                  {"step", 0, true},
                                  {"json", 0, false}});
  RETURN_IF_ERROR(flags.Parse(argc, argv, 3));
  if (!flags.Has("input")) return InvalidArgument("--input METRICS.csv is required");
  if (!flags.positionals().empty()) {
    return InvalidArgument("unexpected argument \"" + flags.positionals()[0] +
                           "\"; the metrics go in --input");
  }
  machines::DetectOptions options;
  machines::ReportContext context;
  const std::string method = flags.Get("method", "raw");
  if (method == "raw") {
    context.method = "raw distance";
  } else if (method == "mahalanobis") {
    options.distance = machines::Distance::kMahalanobis;
    context.method = "Mahalanobis";
  } else {
    return InvalidArgument("--method \"" + method + "\": use raw or mahalanobis");
  }
  ASSIGN_OR_RETURN(const int64_t window, flags.GetInt("window", 8));
  ASSIGN_OR_RETURN(const int64_t continuity, flags.GetInt("continuity", 4));
  if (window < 2 || window > 4096) return InvalidArgument("--window must be 2..4096 points");
  if (continuity < 1) return InvalidArgument("--continuity must be at least 1");
  options.window = static_cast<size_t>(window);
  options.continuity = static_cast<size_t>(continuity);
  double step = 0;
  if (flags.Has("step")) {
    const std::string text = flags.Get("step");
    char* end = nullptr;
    step = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(step > 0)) {
      return InvalidArgument("--step \"" + text + "\": a positive number of seconds");
    }
  }
  ASSIGN_OR_RETURN(machines::MetricSamples samples, machines::ReadMetricsCsv(flags.Get("input")));
  ASSIGN_OR_RETURN(machines::Grid grid, machines::MakeGrid(samples, step));
  const machines::DetectResult result =
      machines::Detect(grid, machines::RangesOf(grid), nullptr, options);
  context.window = options.window;
  context.continuity = options.continuity;
  if (flags.Has("json")) {
    std::printf("%s\n", machines::DetectionsToJson(grid, result, context).dump(2).c_str());
  } else {
    std::printf("%s", machines::RenderDetectionsText(grid, result, context).c_str());
  }
  return result.detections.empty() ? kExitOk : kExitDiverged;
}

}  // namespace

StatusOr<int> RunMachinesCommand(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[2], "detect") != 0) {
    return InvalidArgument(argc < 3 ? std::string("expects a verb: upguard machines detect ...")
                                    : "unknown verb \"" + std::string(argv[2]) +
                                          "\"; try: upguard machines detect --input FILE");
  }
  return RunDetect(argc, argv);
}

}  // namespace upguard
