// `upguard show`: a run's recorded ops as a readable table, or as JSON (schema in docs/cli.md).
//
//   ASSIGN_OR_RETURN(std::string text, RenderShowText(run, ShowOptions{.step = 2}));
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "run/run_loader.h"

namespace upguard {

struct ShowOptions {
  std::optional<uint32_t> step;  // only this step; default: every step
  int rank = 0;
  size_t max_depth = SIZE_MAX;  // hide ops nested deeper
};

// Decode the shown steps; fail only on damage found in an op payload (RankTrace::CheckAllOps
// first finds it before anything is rendered).
StatusOr<std::string> RenderShowText(const Run& run, const ShowOptions& options);
StatusOr<nlohmann::json> ShowToJson(const Run& run, const ShowOptions& options);

}  // namespace upguard
