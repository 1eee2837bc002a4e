// Renders `diff --explain`'s element-level comparison (analysis/explain.h), as text under the diff
// report and as the "explain" object of the diff JSON (docs/cli.md).
//
//   std::cout << RenderExplainText(explained);
//   json["explain"] = ExplainToJson(explained);
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/explain.h"

namespace upguard {

std::string RenderExplainText(const ExplainedDivergence& explained);
nlohmann::json ExplainToJson(const ExplainedDivergence& explained);

}  // namespace upguard
