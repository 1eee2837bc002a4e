// The fingerprint check: runs recorded with `upguard record --fingerprint` hold, per step, only
// the pseudo-ops upguard::rng_state, ::batch, ::loss (one per backward), ::grads and ::state
// (trace.md §5.4, StepEnd flag kStepFingerprint). The diff's walk finds the first of them that
// differs, as for any op; this check says what it means: the first divergent step, and
// everything of its fingerprint that differs (random state, batch, the loss values, which
// gradients, which parameters and optimizer state), so the user knows which step to record in
// full. A random state or batch that differs first keeps its verdict (rng, data); a loss,
// gradient or model state that does gets verdict kStep (not kState: no op of the step was
// recorded, so nothing says where the difference was written).
//
//   ApplyFingerprintCheck(a, b, &result);  // after ApplySetupChecks
#pragma once

#include "diff/diff.h"

namespace upguard {

// Fills RankDiff::fingerprint for every rank whose first numerical divergence lies in a step
// both runs recorded as a fingerprint, and turns its verdict propagated (or state) into kStep
// (and the result's, when that rank decides it); rng, data, structural and latent stay.
Status ApplyFingerprintCheck(const Run& a, const Run& b, DiffResult* result);

// Whether a re-run of a recorded run (diff --zoom's, which may resume from a snapshot)
// reproduced step `step` of it: the batch (upguard::batch) and the model state at the step's
// end (upguard::state) compared, whether each side recorded the step in full or as a
// fingerprint. "" when they agree; else what departs ("the model state differs (3 of 41
// tensors: ...)", "the re-run did not record step 150").
StatusOr<std::string> ReRunDeparts(const RankTrace& recorded, const RankTrace& rerun,
                                   uint32_t step);

}  // namespace upguard
