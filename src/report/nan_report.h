// `upguard nan`: where a run's first NaN or Inf came from, as text for people or as JSON
// (schema "upguard.nan/1", docs/cli.md).
//
//   ASSIGN_OR_RETURN(NanScan scan, ScanRunForNan(run, std::nullopt));
//   std::printf("%s", RenderNanText(scan, run).c_str());
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/nan_origin.h"
#include "run/run_loader.h"

namespace upguard {

// `run` is the run `scan` was made from (for strings and paths).
std::string RenderNanText(const NanScan& scan, const Run& run);
nlohmann::json NanToJson(const NanScan& scan, const Run& run);

}  // namespace upguard
