// The CSV form of machine metrics (docs/formats/machine-metrics-csv.md): `time,machine,metric,
// value`, one sample a line, any order and spacing.
//
//   ASSIGN_OR_RETURN(MetricSamples samples, ReadMetricsCsv("export.csv"));
#pragma once

#include <string>
#include <string_view>

#include "machines/samples.h"
#include "upguard/status.h"

namespace upguard::machines {

inline constexpr std::string_view kMetricsCsvHeader = "time,machine,metric,value";

// Parses `text`; errors name `source` (a path) and the line, and say what to fix.
StatusOr<MetricSamples> ParseMetricsCsv(std::string_view text, std::string_view source);

StatusOr<MetricSamples> ReadMetricsCsv(const std::string& path);

// 1-128 characters of A-Z a-z 0-9 . _ : - (a machine name, §2).
bool ValidMachineName(std::string_view name);

// Parses "1733331200", "1733331200.25" or "2024-12-04T17:33:20[.25]Z" (UTC) as seconds since
// the Unix epoch; false for anything else.
bool ParseTime(std::string_view text, double* seconds, TimeForm* form);

}  // namespace upguard::machines
