// `diff --explain`: re-runs each side's recorded command with a capture at the first divergent
// op, then compares the captured tensors element by element (analysis/explain.h).
//
// What a re-run needs is in the run metadata: argv, working directory, the numerics-relevant
// environment and the recording options (max depth and op filters decide which ops get an
// index). Only the divergent step is recorded, and the program is stopped as soon as the op is
// captured (`--capture step=S,position=P,stop`: the op's position among the step's ops outside
// the input pipeline, which a DataLoader's workers do not shift; an input op by its index), so
// a re-run costs the training up to that op.
// Captures go to RUN/explain/captures/ (RUN/explain is itself a run directory).
#pragma once

#include <string>

#include "analysis/conclude.h"
#include "cli/rerun_consent.h"
#include "diff/diff.h"
#include "report/explain_report.h"
#include "upguard/status.h"

namespace upguard {

// Fails with a message that says what to do when a side cannot be re-run or does not reach
// the op (a program that is not deterministic from run to run, or a run recorded elsewhere).
// `b_capture`: B's capture of the op when it already exists (record --against captured it
// live); then only A is re-run. Every side to re-run is put to `consent` before either runs
// (StatusCode::kUntrusted when it refuses).
StatusOr<ExplainedDivergence> ExplainDivergence(const Run& a, const Run& b,
                                                const RankDiff& rank_diff,
                                                const std::string& b_capture,
                                                RerunConsent& consent);

// ExplainDivergence as ConcludeDiff's explain step (analysis/conclude.h). With `live_run`
// (record --against: the run that captured its divergent op while it ran), B's capture is
// taken from that run's captures/ when it holds the op; otherwise B is re-run too.
Explainer ReRunExplainer(std::shared_ptr<RerunConsent> consent, const std::string& live_run = "");

}  // namespace upguard
