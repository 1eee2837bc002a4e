// `upguard diff --html FILE`: the diff as one self-contained page, drawn from the same JSON model
// `--json` prints (schema upguard.diff/1 with each rank's "spread", docs/cli.md): one model, two
// views.
//
//   nlohmann::json model = ConclusionToJson(conclusion, a, b);
//   AddSpreadJson(spreads, &model);                // report/spread_json.h
//   std::string page = RenderDiffHtml(model);
//
// The page: the verdict card (verdict, op, module, call site and its source line, step, phase,
// rank, each input's and output's equality and magnitude); how it spread through the first
// divergent step (every op against the size of its difference, log scale, the culprit marked)
// and across the steps compared; the module tree (per module: diverged or not, where first, the
// largest difference; collapsible); the element view when --explain captured tensors (ULP
// distance histograms); structural differences and setup checks; and for several ranks the
// origin rank, the path through the collectives and a ranks x steps grid.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace upguard {

std::string RenderDiffHtml(const nlohmann::json& model);

}  // namespace upguard
