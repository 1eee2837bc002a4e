// upguard-machines-fit: `upguard machines fit` (docs/machines.md, "Fitting a model"); run
// through `upguard`, which execs it (machines_fit_exec.h). Thin: flags in, a model out.
#include <cstdio>
#include <string>

#include "cli/command.h"
#include "cli/flags.h"
#include "machines/fault_labels.h"
#include "machines/grid.h"
#include "machines/source.h"
#include "machines_fit/fit_model.h"

namespace upguard {
namespace {

const char kUsage[] = R"(usage: upguard machines fit --input SOURCE -o MODEL [options]

Learns Minder's model from healthy history: per metric the healthy range and an LSTM-VAE
denoiser (hidden 4, latent 8) trained with libtorch on every healthy window; with --labels, the
order the detector tries metrics in, from a decision tree over the labelled windows. Labelled
points are left out of the denoisers' training. Format: docs/formats/machine-model.md.

options:
  --input SOURCE      metrics: a CSV, the agent's SQLite file, or a Prometheus URL
  -o, --output MODEL  the model to write (JSON)
  --labels FILE       machine,start,end[,kind] rows: machines faulty in those time ranges
  --window N          points per window (default 8)
  --step SECONDS      the time grid's step (default: the samples' median spacing)
  --start T, --end T  the time range (Unix seconds, RFC 3339, or -15m / now)
  --machine-label L   the Prometheus label naming the machine (default machine)
  --train-steps N     optimizer steps per denoiser (default 800)
  --seed N            the training's random seed (default 0)

exit codes: 0 the model was written, 2 error.
example:
  upguard machines fit --input healthy.csv -o model.json
  upguard machines detect --model model.json --input metrics.csv
)";

StatusOr<int> Run(int argc, char** argv) {
  Flags flags("machines fit", {{"input", 0, true},
                               {"output", 'o', true},
                               {"labels", 0, true},
                               {"window", 0, true},
                               {"step", 0, true},
                               {"start", 0, true},
                               {"end", 0, true},
                               {"machine-label", 0, true},
                               {"train-steps", 0, true},
                               {"seed", 0, true},
                               {"help", 'h', false}});
  RETURN_IF_ERROR(flags.Parse(argc, argv, 1));
  if (flags.Has("help")) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (!flags.Has("input") || !flags.Has("output")) {
    return InvalidArgument("--input SOURCE and -o MODEL are required (upguard machines fit -h)");
  }
  machines::FitOptions options;
  ASSIGN_OR_RETURN(const int64_t window, flags.GetInt("window", 8));
  ASSIGN_OR_RETURN(const int64_t steps, flags.GetInt("train-steps", 800));
  ASSIGN_OR_RETURN(const int64_t seed, flags.GetInt("seed", 0));
  if (window < 2 || window > 256) return InvalidArgument("--window must be 2..256 points");
  if (steps < 1) return InvalidArgument("--train-steps must be at least 1");
  options.window = static_cast<size_t>(window);
  options.train.steps = static_cast<size_t>(steps);
  options.train.seed = static_cast<uint64_t>(seed);
  double step = 0;
  if (flags.Has("step")) {
    step = std::atof(flags.Get("step").c_str());
    if (!(step > 0)) return InvalidArgument("--step must be a positive number of seconds");
  }
  machines::SourceOptions source;
  source.start = flags.Get("start");
  source.end = flags.Get("end");
  source.step = step;
  source.machine_label = flags.Get("machine-label", "machine");
  ASSIGN_OR_RETURN(const machines::MetricSamples samples,
                   machines::LoadSamples(flags.Get("input"), source));
  for (const std::string& warning : samples.warnings) {
    std::fprintf(stderr, "upguard machines fit: %s\n", warning.c_str());
  }
  ASSIGN_OR_RETURN(const machines::Grid grid, machines::MakeGrid(samples, step));
  std::vector<machines::FaultLabel> labels;
  if (flags.Has("labels")) {
    ASSIGN_OR_RETURN(labels, machines::ReadFaultLabels(flags.Get("labels")));
  }
  std::printf("fitting %zu metrics of %zu machines, %zu points of %g s\n", grid.metrics.size(),
              grid.machines.size(), grid.length, grid.step);
  std::string log;
  ASSIGN_OR_RETURN(const machines::MachineModel model,
                   machines::FitMachineModel(grid, labels, options, &log));
  RETURN_IF_ERROR(machines::WriteMachineModel(model, flags.Get("output")));
  std::printf("%swrote %s (%.1f s)\n", log.c_str(), flags.Get("output").c_str(), model.fit_seconds);
  return kExitOk;
}

}  // namespace
}  // namespace upguard

int main(int argc, char** argv) {
  const upguard::StatusOr<int> code = upguard::Run(argc, argv);
  if (!code.ok()) {
    std::fprintf(stderr, "upguard machines fit: %s\n", code.status().message().c_str());
    return upguard::kExitError;
  }
  return *code;
}
