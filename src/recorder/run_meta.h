// What a recording says about itself (meta.json and the trace header, docs/formats/trace.md):
// the engine's facts merged with upguard's version, the rank, the host, the process and the
// recording's options.
//
//   ASSIGN_OR_RETURN(nlohmann::json meta, RecordingMeta(options));
#pragma once

#include <nlohmann/json.hpp>

#include "upguard/recorder.h"
#include "upguard/status.h"

namespace upguard {

// Fails when options.engine_meta_json is not a JSON object (the error quotes its start).
StatusOr<nlohmann::json> RecordingMeta(const RecorderOptions& options);

}  // namespace upguard
