// Writes a diff's HTML page (report/diff_html.h) for `upguard diff --html` and `upguard demo`:
// the conclusion's JSON model, each rank's spread (analysis/spread.h) and the source line of
// each divergence's call site (read from run A's working directory, when the file is there).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/conclude.h"
#include "upguard/status.h"

namespace upguard {

// The JSON model of the page: ConclusionToJson plus ranks[i].spread and divergence.source.
StatusOr<nlohmann::json> DiffPageModel(const Conclusion& conclusion, const Run& a, const Run& b);

// Renders the page of `model` into `path`.
Status WriteDiffHtml(const nlohmann::json& model, const std::string& path);

}  // namespace upguard
