// What `upguard machines detect` prints: per detection the machine, since when, which metrics,
// and the peers' distribution beside it (text), or the JSON of docs/cli.md ("upguard machines").
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "machines/detector.h"
#include "machines/grid.h"

namespace upguard::machines {

struct ReportContext {
  std::string method;  // "raw distance", "Mahalanobis", "Minder"
  size_t window = 0;
  size_t continuity = 0;
};

std::string RenderDetectionsText(const Grid& grid, const DetectResult& result,
                                 const ReportContext& context);

// {"detections": [{"machine", "start", "end", "alert", "metrics", "score", "peers"}], ...}
// with times as the input wrote them (numbers for seconds, strings for ISO 8601).
nlohmann::json DetectionsToJson(const Grid& grid, const DetectResult& result,
                                const ReportContext& context);

}  // namespace upguard::machines
