// Per-machine metric samples, as every source of `upguard machines` hands them to the detector:
// the CSV (docs/formats/machine-metrics-csv.md), the agent's file and a Prometheus server.
//
//   ASSIGN_OR_RETURN(MetricSamples samples, ReadMetricsCsv("metrics.csv"));
//   for (const Sample& s : samples.samples) ... samples.machines[s.machine] ...
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace upguard::machines {

struct Sample {
  double time = 0;       // seconds since the Unix epoch
  uint32_t machine = 0;  // index into MetricSamples::machines
  uint32_t metric = 0;   // index into MetricSamples::metrics
  double value = 0;
};

enum class TimeForm : uint8_t { kSeconds = 0, kIso8601 = 1 };

struct MetricSamples {
  std::vector<std::string> machines;  // in order of first appearance
  std::vector<std::string> metrics;   // in order of first appearance
  std::vector<Sample> samples;        // in the source's order
  TimeForm time_form = TimeForm::kSeconds;
  // What the reader skipped and the user should hear of ("m.csv:62: skipped a torn last line").
  std::vector<std::string> warnings;

  // The index of `name`, added when new.
  uint32_t MachineIndex(std::string_view name) { return Intern(name, &machines, &machine_index_); }
  uint32_t MetricIndex(std::string_view name) { return Intern(name, &metrics, &metric_index_); }

 private:
  static uint32_t Intern(std::string_view name, std::vector<std::string>* names,
                         std::unordered_map<std::string, uint32_t>* index);
  std::unordered_map<std::string, uint32_t> machine_index_;
  std::unordered_map<std::string, uint32_t> metric_index_;
};

// A time as the source wrote it: "1733331200.5" or "2024-12-04T17:33:20.5Z".
std::string FormatTime(double seconds, TimeForm form);

}  // namespace upguard::machines
