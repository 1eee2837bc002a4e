#include "machines/agent.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "machines/exposition.h"
#include "machines/http_server.h"
#include "machines/metrics_sink.h"

namespace upguard::machines {
namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

Status RunAgent(const AgentOptions& options, const std::atomic<bool>& stop,
                const AgentEvents& events) {
  if (!(options.interval > 0)) return InvalidArgument("--interval must be positive");
  MetricsServer server;
  if (!options.listen.empty()) {
    RETURN_IF_ERROR(server.Start(options.listen));
    if (events.listening != nullptr) events.listening(server.address());
  }
  std::unique_ptr<MetricsSink> output;  // the CSV or the SQLite file, by extension
  if (!options.output.empty()) {
    std::string notice;
    ASSIGN_OR_RETURN(output, OpenMetricsSink(options.output, &notice));
    if (!notice.empty() && events.notice != nullptr) events.notice(notice);
  }
  const double started = SteadySeconds();
  ASSIGN_OR_RETURN(HostCounters before, ReadHostCounters(options.source, started));
  for (MetricSource* source : options.sources) source->Sample(started);
  double next = started + options.interval;
  while (!stop) {
    const double now = SteadySeconds();
    if (options.duration > 0 && now - started >= options.duration) break;
    if (now < next) {
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(next - now, 0.05)));
      continue;
    }
    next += options.interval;
    if (next < now) next = now + options.interval;  // fell behind (a stopped machine): skip
    ASSIGN_OR_RETURN(HostCounters after, ReadHostCounters(options.source, now));
    std::vector<MetricValue> metrics = HostMetrics(before, after);
    for (MetricSource* source : options.sources) {
      std::vector<MetricValue> more = source->Sample(now);
      metrics.insert(metrics.end(), more.begin(), more.end());
    }
    before = std::move(after);
    server.Publish(RenderExposition(options.machine, metrics));
    if (output) RETURN_IF_ERROR(output->Append(WallSeconds(), options.machine, metrics));
  }
  return Status::Ok();
}

}  // namespace upguard::machines
