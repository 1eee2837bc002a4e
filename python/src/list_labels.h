// Names for the elements of an optimizer's tensor lists that are not the model's tensors.
//
// Foreach and fused optimizers (AdamW(foreach=True), _fused_adamw_) pass one list per role:
// element i of every list in one call belongs to the same parameter. The lists of the model's
// tensors are named element by element (tensor_names.h: "blocks.0.fc.weight",
// "exp_avg_sq of blocks.0.fc.weight", "step of ..."); the temporaries computed from them
// (`torch._foreach_sqrt(exp_avg_sqs)`, bias corrections) are not. Inside Optimizer.step, each
// list whose elements are all named sets the order of parameters; an unnamed element i of a
// later list of the same length is labelled "for <parameter i>". So an eps planted into AdamW
// with foreach=True names `aten::_foreach_add_` and, element by element, the parameters.
#pragma once

#include <string_view>
#include <vector>

#include "ivalue_args.h"

namespace upguard::torch_adapter {

// The parameters, in the order of the last fully named list (pooled strings).
using ListOrder = std::vector<std::string_view>;

// The parameter a model tensor's name belongs to: "exp_avg_sq of w" -> "w", "w.grad" -> "w".
std::string_view ParameterOf(std::string_view label);

// Learns the order from `batch`'s fully named lists, then labels the unnamed tensor elements
// of its lists whose length matches. Call after LabelArgs, for ops inside Optimizer.step.
void LabelListElements(ArgBatch* batch, ListOrder* order);

}  // namespace upguard::torch_adapter
