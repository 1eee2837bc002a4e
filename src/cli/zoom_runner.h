// `diff --zoom`: from two fingerprint runs (record --fingerprint, docs/long-runs.md) to the first
// divergent op. The fingerprints name the first divergent step k; both recorded commands are
// re-run (cli/rerun_request.h) recording steps k-1..k in full and stopping after step k. A run
// whose script calls upguard.resume_point left snapshots in RUN/resume/: its re-run starts at
// the latest one at or before step k-1 instead of step 0 (python/upguard/_resume.py).
//
// Consent: both recorded commands are put to the RerunConsent before either runs
// (cli/rerun_consent.h), and a snapshot loads with torch.load(weights_only=True).
//
// Trust: a re-run is used only when it reproduced its recorded run on the zoomed steps (their
// batches and model state after each step, ReRunDeparts). A resumed re-run that did not is run
// again from step 0, saying why; one from step 0 that did not is an error.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/conclude.h"
#include "cli/rerun_consent.h"
#include "upguard/status.h"

namespace upguard {

struct ZoomedRun {
  std::string dir;           // RUN/zoom: the re-run's run directory
  int64_t resumed_at = -1;   // the snapshot's step it started from; -1: from step 0
  std::string resumed_from;  // that snapshot (without .rank<N>.pt); "" from step 0
  double seconds = 0;        // the re-run's wall time (both tries when it was re-run)
  std::string retried;       // why a resumed re-run was run again from step 0; "" if not
};

struct Zoom {
  uint32_t step = 0;        // the first divergent step of the fingerprints
  uint32_t first = 0;       // the first step re-recorded in full (step - 1, or 0)
  int rank = 0;             // the rank whose fingerprint names it
  std::string fingerprint;  // what of the step differs (RankDiff::setup)
  ZoomedRun a, b;
};

// Re-runs both sides around the first fingerprint step `fingerprints` found; nullopt when no
// rank's first divergence lies in a fingerprint step (nothing to zoom into).
StatusOr<std::optional<Zoom>> ZoomIn(const Run& a, const Run& b, const Conclusion& fingerprints,
                                     RerunConsent& consent);

// The lines printed before the zoomed report (text) and its "zoom" object (JSON).
std::string ZoomText(const Zoom& zoom);
nlohmann::json ZoomJson(const Zoom& zoom);

}  // namespace upguard
