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

// The explanation with how it was obtained: the re-runs that captured each side.
struct ExplainedDivergence {
  Explanation explanation;
  uint32_t step_a = 0, step_b = 0;
  size_t index_a = 0, index_b = 0;
  double rerun_seconds_a = 0, rerun_seconds_b = 0;
  bool b_captured_live = false;  // record --against captured B while it ran: not re-run
};

std::string RenderExplainText(const ExplainedDivergence& explained);
nlohmann::json ExplainToJson(const ExplainedDivergence& explained);

}  // namespace upguard
