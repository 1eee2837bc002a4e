// The re-run of a recorded command, from its run metadata (meta.json): argv (the launcher's,
// torchrun's, for several ranks), working directory,
// the numerics-relevant environment and the recording options that decide which ops get an
// index (max depth, op filters, stats). `diff --explain` adds a capture, `diff --zoom` a step
// window and a resume point.
#pragma once

#include <string>

#include "cli/record_runner.h"
#include "run/run_loader.h"
#include "upguard/status.h"

namespace upguard {

// `side` ("A", "B") and `purpose` ("to capture tensors") name the run in errors. The request
// writes into `out_dir`, quiet; steps, capture and the rest are the caller's.
StatusOr<RecordRequest> RerunRequest(const Run& run, const char* side, const char* purpose,
                                     const std::string& out_dir);

}  // namespace upguard
