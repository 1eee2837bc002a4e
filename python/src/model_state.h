// The model's tensors by the names the model gives them (python/upguard/_state.py): parameters
// and buffers of the modules that ran, their gradients, the optimizers' state.
//
// At the end of every recorded step the parameters, buffers and optimizer state are recorded
// as the inputs of a pseudo-op `upguard::state`, each named as the model names it
// ("bn1.running_mean", "exp_avg_sq of fc.weight"). They are hashed afresh, never served from
// the digest cache: so a difference that no op's output shows (memory written behind
// PyTorch's back, a kernel writing an input it does not declare and the undeclared-write table
// misses) still surfaces at the step where it was born, and the diff says so (verdict
// "state"). A cached digest that disagrees with the bytes is such a write: the cache entry is
// dropped and the recorder says so once per tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "adapter.h"
#include "capture.h"
#include "upguard/recorder.h"

namespace upguard::torch_adapter {

inline constexpr std::string_view kStateOp = "upguard::state";
inline constexpr std::string_view kGradsOp = "upguard::grads";
inline constexpr std::string_view kLossOp = "upguard::loss";

struct NamedTensor {
  std::string name;
  TensorRole role = TensorRole::kParameter;
  at::Tensor tensor;
};

// The model's tensors now, from the source the module set (SetModelTensorSource; it takes the
// GIL); empty without one or when no module ran yet.
std::vector<NamedTensor> ReadModelTensors();

// A new owning reference to the TensorImpl at `impl` (a Python tensor's `_cdata`), which the
// caller keeps alive meanwhile.
at::Tensor ReclaimTensor(uintptr_t impl);

struct RecordedState {
  RecordedOp recorded;
  HeldInputs held;  // for the capture of a divergence from the reference (record --against)
  bool stop_after_capture = false;  // a --capture selector chose it and asks to stop
};

// Records `upguard::state` with every tensor of `tensors` but the gradients, hashed now, and
// writes its capture when a selector chooses it (`upguard diff --explain` on a state verdict
// shows which elements differ).
RecordedState RecordModelState(Recorder* recorder, const std::vector<NamedTensor>& tensors);

// In a fingerprint step: records `upguard::grads` with every gradient of `tensors`, hashed now
// (never from the digest cache: no op of the step was recorded). Nothing without gradients.
void RecordGradients(Recorder* recorder, const std::vector<NamedTensor>& tensors);

}  // namespace upguard::torch_adapter
