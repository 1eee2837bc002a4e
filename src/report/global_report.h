// Renders the cross-rank order of a multi-rank diff (analysis/global_order.h): the origin rank and
// its op, the collectives the difference travelled through, and each rank's role.
//
//   std::cout << RenderGlobalOrderText(order, result, a, b);
//   json["across_ranks"] = GlobalOrderToJson(order, result, a, b);
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/global_order.h"
#include "diff/diff.h"

namespace upguard {

std::string RenderGlobalOrderText(const GlobalOrder& order, const DiffResult& result, const Run& a,
                                  const Run& b);
nlohmann::json GlobalOrderToJson(const GlobalOrder& order, const DiffResult& result, const Run& a,
                                 const Run& b);

}  // namespace upguard
