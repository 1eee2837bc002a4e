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

#include <memory>
#include <vector>

#include "op_info.h"

namespace upguard::torch_adapter {

// Installs the callbacks (Session::FollowOps); at::removeCallback takes them off again: every
// op's (recorded, or its depth, writes, allocations and collectives followed), the autograd
// nodes' and the scopes' (Optimizer.step, a backend's collective scopes). All are off in a
// fingerprint step: with torch 1.13 any global callback makes every op build its
// RecordFunction (measured on the demo GPT: 0.26 ms a step for a node callback that does
// nothing, 0.33 ms for a scope callback). There, upguard._optimizer tells of each optimizer
// step's end (OptimizerStepDone).
std::vector<at::CallbackHandle> InstallOpCallbacks();

// One call of an op: its name (alive for the whole recording: an operator's, or pooled), what
// its arguments are, and their values.
struct OpCall {
  const char* name;
  const OpInfo& info;
  c10::ArrayRef<const c10::IValue> inputs;
  // Where the op comes from when the Python frames running it do not say (a generated kernel:
  // the source line of the code Inductor compiled into it); empty: from the frames.
  std::string_view call_site = {};
};

// Ops no RecordFunction announces, recorded like an ATen op by whoever runs them: a compiled
// region of torch.compile and the kernels Inductor generated for it (announced_ops.h). Enter at
// the call (digests the inputs; ops run meanwhile nest inside it), exit after it with its
// results; both on the calling thread, properly nested with the ops around them.
std::unique_ptr<at::ObserverContext> EnterAnnouncedOp(const OpCall& call);
void ExitAnnouncedOp(const OpCall& call, std::unique_ptr<at::ObserverContext> ctx,
                     const std::vector<c10::IValue>& results);

// While torch.compile traces a frame or compiles a graph (dynamo's compile callbacks, from any
// thread), the ops that run are its tracing on fake tensors, not the training's: none is
// recorded. A counter: compiles may nest (a lazy backward compile inside a running step).
void SetCompiling(bool compiling);
bool Compiling();

}  // namespace upguard::torch_adapter
