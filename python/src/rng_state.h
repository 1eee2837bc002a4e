// The random state random ops consume, recorded so the diff can tell "the runs were seeded
// differently" from "an op computed differently" (docs/architecture.md, setup checks).
//
// A random op (one whose schema takes a `Generator?`: bernoulli_, normal_, randperm, ...)
// gets its generator argument recorded as the generator's state (uint8: the mt19937 seed,
// position and 624 state words, and the cached normal samples, field by field) instead of "None":
// two runs whose dropout masks differ because their generators were seeded differently then differ
// at that input, and the diff says so. At each step start the default CPU generator's state is
// recorded as the input of a pseudo-op `upguard::rng_state`, so a seed change shows at the step
// where it happened even before the first random op runs.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>

#include "ivalue_args.h"
#include "op_info.h"

namespace upguard::torch_adapter {

// For a random op: replaces its generator argument in `batch` with the generator's state (kept
// alive in batch->owned). The op's own generator if one was passed, else the default CPU
// generator; ops on other devices are left as they are (their generators are not read here).
void AppendGeneratorState(const OpInfo& info, c10::ArrayRef<const c10::IValue> inputs,
                          ArgBatch* batch);

// A copy of the default CPU generator's state.
at::Tensor DefaultCpuGeneratorState();

// The arg of a generator state tensor (borrowed: `state` must outlive it).
Arg GeneratorStateArg(std::string_view name, const at::Tensor& state);

}  // namespace upguard::torch_adapter
