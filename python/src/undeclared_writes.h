// Ops whose kernel writes an input that the op's schema does not mark as written (no `(a!)`),
// found by measurement (write_probe.h): the probe compares every input's bytes before and after
// each op while tests/e2e/layer_zoo.py runs every torch.nn layer in train and eval mode, the
// optimizers, and the example GPT's training. test_undeclared_writes_table_matches_measurement
// (tests/e2e/test_trust.py) re-measures the set on the torch under test and fails when it differs
// from this table, so a torch that adds one is caught.
//
// Such a write does not move the tensor's version counter either (measured on torch 1.13:
// `bn.running_mean._version` is unchanged by a training-mode forward), so nothing but this
// table tells the recorder that the tensor changed: op_info.h adds these arguments to the op's
// written inputs, which are recorded as outputs after the op, dropped from the digest cache,
// and copied at entry by a capture.
#pragma once

#include <string_view>
#include <vector>

namespace upguard::torch_adapter {

struct UndeclaredWrite {
  std::string_view op;   // "aten::native_batch_norm"
  std::string_view arg;  // the schema's argument name: "running_mean"
  std::string_view why;  // what writes it, for the docs and the test's message
};

const std::vector<UndeclaredWrite>& UndeclaredWrites();

// Whether `op`'s argument `arg` is written without the schema saying so.
bool IsUndeclaredWrite(std::string_view op, std::string_view arg);

}  // namespace upguard::torch_adapter
