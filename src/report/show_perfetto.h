// `upguard show RUN --perfetto FILE`: a run's recorded ops as Chrome trace-event JSON, which the
// Perfetto UI (ui.perfetto.dev, or chrome://tracing) opens: one track per step, each op a slice
// nested in the ops that enclose it, named by op, with its module, phase, call site and output
// digests as arguments. Open two runs' files side by side to read their op sequences against
// each other. Drawn from the `upguard show --json` model.
//
//   ASSIGN_OR_RETURN(nlohmann::json show, ShowToJson(run, options));
//   std::string text = ShowJsonToPerfetto(show, "runs/a").dump();
//
// A trace holds no times: the time axis is the op's position in its step (1 us an op), so a
// slice's width is the number of ops it encloses.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace upguard {

nlohmann::json ShowJsonToPerfetto(const nlohmann::json& show, const std::string& run_name);

}  // namespace upguard
