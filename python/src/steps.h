// Step boundaries and the pseudo-ops recorded around them: `upguard::rng_state` (the default
// CPU generator's state as a step starts, rng_state.h), `upguard::batch` (the batch entering the
// model) and `upguard::state` (the model's parameters, buffers and optimizer state as the step
// ends, model_state.h).
//
// A step ends at the end of the outermost Optimizer.step, or at upguard.step() once the program
// calls it (adapter.h MarkStep). EndStep keeps this order: the step's collectives that did not
// complete are written (a Collective record precedes its step's StepEnd), the model state is
// recorded, the step is marked, the step's facts are forgotten (Session::ForgetStep, the digest
// cache's dead entries), and last, with several ranks online, the ranks agree whether one of
// them diverged, and if so all stop together.
//
// Like the callbacks, nothing here may disturb the training: reading the state runs ATen code
// or Python under ThreadState::busy, so none of it is recorded as the training's ops.
#pragma once

#include "session.h"

namespace upguard::torch_adapter {

// Records `upguard::rng_state` before the step's first recorded op (so a run that ends after its
// last optimizer.step gets no extra step). Not for step 0: recording starts at `import torch`,
// where torch seeds itself from the OS, before the program's manual_seed; step 0's random ops
// record the state they draw from.
void RecordRngState(Session& session);

// Records `upguard::state`: the model's tensors as the step ends. Reading them runs Python (with
// the GIL) but no torch op. Also ends a recording whose last step holds ops (Session::Stop).
void RecordModelStateAtStepEnd(Session& session);

// The end of a step, in the order above.
void EndStep(Session& session);

}  // namespace upguard::torch_adapter
