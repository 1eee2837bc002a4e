// `upguard machines detect|agent`: the machine whose metrics part from its peers, and the
// agent that samples a machine's metrics (docs/machines.md).
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli/agent_sources.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "cli/machines_detect_run.h"
#include "cli/machines_fit_exec.h"
#include "machines/agent.h"
#include "machines/detector.h"
#include "machines/metrics_csv.h"
#include "machines/report.h"
#include "machines/report_html.h"
#include "machines/source.h"

namespace upguard {

const char kMachinesUsage[] =
    R"(usage: upguard machines detect --input SOURCE [--model MODEL] [options]
       upguard machines fit --input SOURCE -o MODEL [--labels FILE]  (upguard machines fit -h)
       upguard machines agent [--listen [HOST:]PORT] [--output METRICS.csv|.db] [options]

Names the machine whose metrics part from its peers' for long enough (after ByteDance's
Minder): per window of samples, each machine's window of each metric is normalised to the
metric's range and compared with every other machine's; the machine far from all of them is
flagged, and flagged in several windows in a row it is a detection. In data-parallel training
healthy machines behave alike, so the odd one out is the suspect.

METRICS.csv is `time,machine,metric,value` (docs/formats/machine-metrics-csv.md): any monitoring
export turned into four columns; samples in any order, at any spacing (1 s or 5 min).

options:
  --input SOURCE     the metrics: http://HOST:PORT[/PREFIX] (a Prometheus server), the
                     agent's SQLite file, or the CSV; several separated by commas
  --start TIME       from (unix seconds, RFC 3339, now, -15m; default: Prometheus 15
                     minutes before --end, files their first sample)
  --end TIME         to (default: now for Prometheus, files their last sample)
  --machine-label L  the Prometheus label that names the machine (default machine;
                     instance for node_exporter's series, docs/machines.md)
  --model MODEL      Minder's model (`upguard machines fit`): each metric's denoiser turns
                     a machine's window into an embedding, and metrics are tried in the
                     model's priority
  --method M         minder (the default with --model), raw (the default without: distances
                     of the normalised windows) or mahalanobis (each machine's distance from
                     the machines' mean); raw and mahalanobis are the baselines
  --window N         points per window (default 8, or the model's)
  --continuity K     windows in a row before a detection (default 4; 1 turns the check off)
  --step SECONDS     the time grid's step (default: the median spacing of the samples),
                     and Prometheus' query step (default 1, coarser past 11,000 points)
  --json             print JSON (schema upguard.machines/1, docs/cli.md)
  --html FILE        also write an HTML report: per detection and metric, the machine's
                     series against its peers' median and 10-90% band over time
  --watch            detect again every --every seconds (default 5) over the last 15
                     minutes up to now, printing each detection once, when it is raised
                     (one JSON object a line with --json); until SIGINT or --duration SECONDS

exit codes: 0 no machine parts from its peers, 1 one or more detections, 2 error.

agent: samples this machine every --interval seconds (CPU, memory, context switches, disk and
per-interface network rates; in a cgroup v1 with --cgroup NAME, the cgroup's CPU, memory and
disk; GPUs through NVML when there are any; the training's step time and collective wait with
--watch-dir) and serves them on http://HOST:PORT/metrics for Prometheus, and/or appends them to
a metrics CSV.
  --listen [HOST:]PORT serve /metrics there: on 127.0.0.1 unless HOST says otherwise
                       (0.0.0.0: every interface); port 0 picks a free one; the address
                       it listens on is the first line it prints
  --output FILE        append the samples to FILE.csv (the CSV; the header when it is new)
                       or FILE.db (SQLite, docs/formats/machine-metrics-sqlite.md)
  --machine NAME       the name to report under (default: the host name)
  --interval SECONDS   between samples (default 1)
  --cgroup NAME        CPU, memory and disk I/O of this cgroup v1 instead of the host's
  --watch-dir DIR      the training's step time and collective wait from the watch rings in
                       DIR/watch (DIR of `upguard watch -o DIR` or UPGUARD_WATCH_DIR)
  --ranks LIST         only these ranks' rings (0,1,4-7; default: every ring in DIR)
  --duration SECONDS   stop after this long (default: at SIGINT or SIGTERM)

examples:
  upguard machines detect --input metrics.csv
  upguard machines fit --input healthy.csv -o model.json
  upguard machines detect --model model.json --input http://127.0.0.1:9090 --watch
  upguard machines detect --input http://127.0.0.1:9090 --start -1h
  upguard machines detect --input node-0.db,node-1.db,node-2.db
  upguard machines agent --listen 9400 --output /var/tmp/metrics.csv
  upguard machines agent --listen 0.0.0.0:9400 --watch-dir runs/w --ranks 0-7
)";

namespace {

// A flag's positive number of seconds, or `fallback` when absent.
StatusOr<double> PositiveSeconds(const Flags& flags, const std::string& name, double fallback) {
  if (!flags.Has(name)) return fallback;
  const std::string text = flags.Get(name);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value > 0)) {
    return InvalidArgument("--" + name + " \"" + text + "\": a positive number of seconds");
  }
  return value;
}

std::atomic<bool> g_stop{false};

void OnStopSignal(int) { g_stop = true; }

StatusOr<int> RunDetect(int argc, char** argv) {
  Flags flags("machines detect", {{"input", 0, true},
                                  {"method", 0, true},
                                  {"window", 0, true},
                                  {"continuity", 0, true},
                                  {"step", 0, true},
                                  {"start", 0, true},
                                  {"end", 0, true},
                                  {"machine-label", 0, true},
                                  {"model", 0, true},
                                  {"watch", 0, false},
                                  {"every", 0, true},
                                  {"duration", 0, true},
                                  {"html", 0, true},
                                  {"json", 0, false}});
  RETURN_IF_ERROR(flags.Parse(argc, argv, 3));
  if (!flags.Has("input")) {
    return InvalidArgument(
        "--input SOURCE is required: a metrics CSV, the agent's .db file, or "
        "http://PROMETHEUS:9090");
  }
  if (!flags.positionals().empty()) {
    return InvalidArgument("unexpected argument \"" + flags.positionals()[0] +
                           "\"; the metrics go in --input");
  }
  DetectPlan plan;
  machines::DetectOptions& options = plan.options;
  machines::ReportContext& context = plan.context;
  machines::MachineModel& model = plan.model;
  if (flags.Has("model")) {
    ASSIGN_OR_RETURN(model, machines::ReadMachineModel(flags.Get("model")));
  }
  const std::string method = flags.Get("method", flags.Has("model") ? "minder" : "raw");
  if (method == "raw") {
    context.method = "raw distance";
  } else if (method == "mahalanobis") {
    options.distance = machines::Distance::kMahalanobis;
    context.method = "Mahalanobis";
  } else if (method == "minder") {
    if (!flags.Has("model")) {
      return InvalidArgument("--method minder needs --model MODEL (upguard machines fit)");
    }
    options.model = &model;
    context.method = "Minder";
  } else {
    return InvalidArgument("--method \"" + method + "\": use minder, raw or mahalanobis");
  }
  const int64_t model_window = options.model ? static_cast<int64_t>(model.window) : 8;
  ASSIGN_OR_RETURN(const int64_t window, flags.GetInt("window", model_window));
  if (options.model && window != model_window) {
    return InvalidArgument("--window " + std::to_string(window) +
                           ": the model's denoisers were "
                           "trained on windows of " +
                           std::to_string(model_window) + " points");
  }
  ASSIGN_OR_RETURN(const int64_t continuity, flags.GetInt("continuity", 4));
  if (window < 2 || window > 4096) return InvalidArgument("--window must be 2..4096 points");
  if (continuity < 1) return InvalidArgument("--continuity must be at least 1");
  options.window = static_cast<size_t>(window);
  options.continuity = static_cast<size_t>(continuity);
  ASSIGN_OR_RETURN(const double step, PositiveSeconds(flags, "step", 0));
  plan.input = flags.Get("input");
  plan.step = step;
  plan.source.start = flags.Get("start");
  plan.source.end = flags.Get("end");
  plan.source.step = step;
  plan.source.machine_label = flags.Get("machine-label", "machine");
  plan.json = flags.Has("json");
  plan.html = flags.Get("html");
  context.window = options.window;
  context.continuity = options.continuity;
  if (!flags.Has("watch") && (flags.Has("every") || flags.Has("duration"))) {
    return InvalidArgument("--every and --duration go with --watch");
  }
  if (flags.Has("watch")) {
    if (flags.Has("start") || flags.Has("end") || !plan.html.empty()) {
      return InvalidArgument(
          "--watch scans the last 15 minutes up to now, every --every seconds: "
          "leave out --start, --end and --html");
    }
    ASSIGN_OR_RETURN(const double every, PositiveSeconds(flags, "every", 5));
    ASSIGN_OR_RETURN(const double duration, PositiveSeconds(flags, "duration", 0));
    std::signal(SIGINT, OnStopSignal);
    std::signal(SIGTERM, OnStopSignal);
    return WatchDetections(plan, every, machines::kDefaultPrometheusRange, duration, g_stop);
  }
  ASSIGN_OR_RETURN(const DetectOutcome outcome, DetectOnce(plan));
  const machines::Grid& grid = outcome.grid;
  const machines::DetectResult& result = outcome.result;
  if (options.model) {  // what the model cannot denoise is compared raw: say which
    const std::vector<bool> denoised = machines::DenoisedMetrics(grid, options.model);
    std::string raw;
    for (size_t metric = 0; metric < grid.metrics.size(); ++metric) {
      if (!denoised[metric]) raw += (raw.empty() ? "" : ", ") + grid.metrics[metric];
    }
    if (!raw.empty()) {
      std::fprintf(stderr,
                   "upguard machines detect: the model has no denoiser for %s: compared raw "
                   "(fit the model on history that has them)\n",
                   raw.c_str());
    }
  }
  if (!plan.html.empty()) {
    RETURN_IF_ERROR(machines::WriteDetectionsHtml(grid, result, context, plan.html));
  }
  if (plan.json) {
    std::printf("%s\n", machines::DetectionsToJson(grid, result, context).dump(2).c_str());
  } else {
    std::printf("%s", machines::RenderDetectionsText(grid, result, context).c_str());
  }
  return result.detections.empty() ? kExitOk : kExitDiverged;
}

void SayListening(const std::string& address) {
  const bool everywhere = address.rfind("0.0.0.0:", 0) == 0;
  std::printf("upguard machines agent: serving http://%s/metrics%s\n", address.c_str(),
              everywhere ? " (every interface)" : "");
  std::fflush(stdout);
}

void SayNotice(const std::string& text) {
  std::fprintf(stderr, "upguard machines agent: %s\n", text.c_str());
}

StatusOr<int> RunAgentVerb(int argc, char** argv) {
  Flags flags("machines agent", {{"listen", 0, true},
                                 {"output", 0, true},
                                 {"machine", 0, true},
                                 {"interval", 0, true},
                                 {"cgroup", 0, true},
                                 {"duration", 0, true},
                                 {"watch-dir", 0, true},
                                 {"ranks", 0, true}});
  RETURN_IF_ERROR(flags.Parse(argc, argv, 3));
  machines::AgentOptions options;
  options.listen = flags.Get("listen");
  options.output = flags.Get("output");
  if (options.listen.empty() && options.output.empty()) {
    return InvalidArgument("nothing to do: give --listen HOST:PORT, --output FILE, or both");
  }
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  options.machine = flags.Get("machine", host);
  if (!machines::ValidMachineName(options.machine)) {
    return InvalidArgument("--machine \"" + options.machine +
                           "\" must be 1-128 characters of A-Z a-z 0-9 . _ : -");
  }
  ASSIGN_OR_RETURN(options.interval, PositiveSeconds(flags, "interval", 1));
  ASSIGN_OR_RETURN(options.duration, PositiveSeconds(flags, "duration", 0));
  options.source.cgroup = flags.Get("cgroup");
  ASSIGN_OR_RETURN(const AgentSources sources,
                   MakeAgentSources(flags.Get("watch-dir"), flags.Get("ranks")));
  options.sources = sources.Pointers();
  std::signal(SIGINT, OnStopSignal);
  std::signal(SIGTERM, OnStopSignal);
  machines::AgentEvents events;
  events.listening = SayListening;
  events.notice = SayNotice;
  RETURN_IF_ERROR(machines::RunAgent(options, g_stop, events));
  return kExitOk;
}

}  // namespace

StatusOr<int> RunMachinesCommand(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[2], "detect") == 0) return RunDetect(argc, argv);
  if (argc >= 3 && std::strcmp(argv[2], "agent") == 0) return RunAgentVerb(argc, argv);
  if (argc >= 3 && std::strcmp(argv[2], "fit") == 0) return ExecMachinesFit(argc, argv);
  return InvalidArgument(argc < 3 ? std::string("expects a verb: upguard machines detect|fit|agent")
                                  : "unknown verb \"" + std::string(argv[2]) +
                                        "\"; try: upguard machines detect --input FILE");
}

}  // namespace upguard
