// `upguard record --against REF`: after the recorded program ends, reports where it first
// diverged from the reference (the recorder wrote RUN/online.json the moment it did, captured
// the op's live tensors and stopped the program), re-runs the reference up to that op to
// capture its side, and explains the difference element by element.
#pragma once

#include <string>

#include "cli/record_runner.h"
#include "cli/rerun_consent.h"
#include "upguard/status.h"

namespace upguard {

// Prints the report; returns the exit code of `upguard record --against`: 1 when the run
// diverged, else the command's own. The reference is re-run only with `consent`.
StatusOr<int> ReportOnline(const RecordRequest& request, const RecordOutcome& outcome,
                           double wall_seconds, std::shared_ptr<RerunConsent> consent);

}  // namespace upguard
