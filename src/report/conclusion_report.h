// Renders what a diff concludes (analysis/conclude.h) as `upguard diff` prints it: the order
// across ranks (several ranks), the diff report, and the element-level explanation (--explain).
// The CLI prints one of these and adds nothing, so a test that calls ConcludeDiff and
// ConclusionToJson gets exactly what `upguard diff --json` prints.
//
//   ASSIGN_OR_RETURN(Conclusion conclusion, ConcludeDiff(a, b, options));
//   std::printf("%s\n", ConclusionToJson(conclusion, a, b).dump(2).c_str());
//   std::printf("%s", RenderConclusionText(conclusion, a, b).c_str());
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/conclude.h"

namespace upguard {

// The diff JSON (schema upguard.diff/1, docs/cli.md) with "across_ranks" and "explain" when
// the conclusion has them.
nlohmann::json ConclusionToJson(const Conclusion& conclusion, const Run& a, const Run& b);

// The order across ranks, then the diff report, then the explanation.
std::string RenderConclusionText(const Conclusion& conclusion, const Run& a, const Run& b);

}  // namespace upguard
