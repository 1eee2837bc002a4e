// A rank's spread (analysis/spread.h) in the diff's JSON model: ranks[i].spread (docs/cli.md).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "analysis/spread.h"

namespace upguard {

nlohmann::json SpreadToJson(const RankSpread& spread);

// Sets model["ranks"][i]["spread"] for each spread whose rank is listed there.
void AddSpreadJson(const std::vector<RankSpread>& spreads, nlohmann::json* model);

}  // namespace upguard
