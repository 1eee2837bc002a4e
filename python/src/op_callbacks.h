// The ATen RecordFunction callbacks that feed every operator to the active session's Recorder
// (session.h).
//
// Two kinds: one for operators (FUNCTION scope, with inputs and outputs) and one for scopes that
// set context (BACKWARD_FUNCTION: an autograd node is running; USER_SCOPE "Optimizer.step#..." /
// "Optimizer.zero_grad#...": the optimizer is; "<backend>:<collective>": collectives.h).
//
// Per thread (thread_state.h) we keep the nesting depth of operators, the forward module stack
// (pushed by the Python nn.Module hooks), the running autograd nodes and the optimizer scope;
// they decide the phase, module path and call site of each op. Inputs are digested at entry
// (before in-place ops change them), outputs at exit. Backward ops get the module and call site
// of the forward op that created their autograd node (origins.h). Outside the recorded steps
// only the bookkeeping runs; call sites (a GIL acquire and a frame walk) are computed only when
// needed. The end of the outermost Optimizer.step ends the step (steps.h), until the program
// calls upguard.step().
//
// Nothing here may disturb the training: all work is read-only, every callback catches all
// exceptions, and the first failure turns recording off (Session::Disable). ThreadState::busy is
// set while the adapter itself runs ATen code or Python (digesting, reading the model's tensors
// or a generator's state): ops seen then are the adapter's, never recorded, and a callback that
// finds it set does nothing but its bookkeeping.
#pragma once

#include <ATen/record_function.h>

#include <vector>

namespace upguard::torch_adapter {

// Installs the callbacks (Session::Start); at::removeCallback takes them off again.
std::vector<at::CallbackHandle> InstallCallbacks();

}  // namespace upguard::torch_adapter
