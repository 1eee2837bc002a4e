// The names of the model's tensors, for the ops that read and write them: an op argument that
// is a parameter, buffer, gradient or optimizer-state tensor is labelled with its name in the
// model ("blocks.0.attn.qkv.weight", "blocks.0.attn.qkv.weight.grad", "exp_avg_sq of
// blocks.0.attn.qkv.weight"; Arg::label), so a verdict in the optimizer names what the user
// knows instead of an anonymous float32[64, 64].
//
// The table is the model's tensors (model_state.h) as last read: at the first call of each
// new outermost module, when Optimizer.step begins, once more inside it when an op reads a
// tensor the table lacks (state an optimizer creates in its first step), and at each step's
// end. A tensor matches an entry when it views the same storage at the same offset with the
// same dtype and element count (so `weight.t()` is still `weight`). An entry holds its storage
// by a weak reference: the storage's address cannot be reused by another tensor while the
// entry lives, so a freed gradient's memory is never named after it.
#pragma once

#include <ATen/core/Tensor.h>

#include <string_view>
#include <vector>

#include "ivalue_args.h"
#include "model_state.h"

namespace upguard::torch_adapter {

// Replaces the table with `tensors`.
void ResetTensorNames(const std::vector<NamedTensor>& tensors);
void ClearTensorNames();

// Labels the tensor args of `batch` that are tensors of the model. Returns how many tensor
// args of kind kTensor stayed unnamed.
size_t LabelArgs(ArgBatch* batch);

}  // namespace upguard::torch_adapter
