// The model's tensors, read at every recorded step's end (model_state.h) with Python's C API.
//
// upguard._state plans the walk (ModelTensors.plan(): the outermost modules, every module's
// parameters and buffers by name and attribute, the optimizers) and plans it again only when
// the model's module tree changed: a module gone, added or replaced anywhere, a parameter or
// buffer added or removed, a new outermost module or optimizer. Every step this file checks
// that, then reads each attribute, each parameter's gradient and each optimizer's state anew,
// so a tensor replaced under the same attribute, a new gradient or new optimizer state is
// always the one read. Done in Python the same reading cost about 0.2 ms of a 30 ms training
// step (a cold interpreter after the step's kernels); here it costs a fraction of that.
#pragma once

#include "adapter.h"

namespace upguard::torch_adapter {

// Hands every tensor of the model to `sink`, in upguard._state's order (ModelTensors.named()):
// per module its parameters (each followed by its gradient) and buffers, a tensor shared
// between modules once under its first name; then per optimizer the parameters outside those
// modules (with their gradients) and the state of each parameter. The GIL must be held.
// Throws (std::runtime_error, pybind11::error_already_set) when the model cannot be read.
void WalkModelTensors(const ModelTensorSink& sink);

}  // namespace upguard::torch_adapter
