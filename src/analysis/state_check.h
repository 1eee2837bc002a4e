// The model-state check: the recorder ends each step with the pseudo-op `upguard::state`,
// whose inputs are every parameter, buffer and optimizer-state tensor of the model, hashed
// afresh and named as the model names them (python/src/model_state.h). When the first
// numerical divergence of a rank is that op — a tensor of the model differs at the step's end
// although no recorded op's output showed it — the rank's verdict is kState: the difference
// was written where upguard sees no write (memory written outside PyTorch, a kernel writing
// an input its schema does not declare), and the diff names the tensors.
//
//   ApplyStateCheck(a, &result);  // after DiffRuns; ApplySetupChecks calls it
#pragma once

#include "diff/diff.h"

namespace upguard {

// True when `divergence` is a propagated difference at upguard::state.
bool IsStateDivergence(const NumericDivergence& divergence, const RankTrace& trace);

// Each rank whose first numerical divergence is at upguard::state gets verdict kState, its
// `state_differs` (the differing tensors' names, in the op's order) and its `setup` text
// ("model state differs at the end of step 2: bn1.running_var (1 of 12 tensors)"); so does the
// result, when that rank decides it.
void ApplyStateCheck(const Run& a, DiffResult* result);

}  // namespace upguard
