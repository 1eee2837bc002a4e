// The interception probe: what torch itself charges for the way upguard sees every op, apart
// from anything upguard does. It installs RecordFunction callbacks registered exactly as the
// recorder's (op_callbacks.cc: every FUNCTION-scope op with its inputs and outputs boxed, and
// the BACKWARD_FUNCTION scopes) whose bodies only count the ops. For bench/op_cost.py's
// breakdown of the host time an op, never for training.
//
//   _C.probe_interception(True); steps(5); ops = _C.probe_interception(False)
#pragma once

#include <cstdint>

namespace upguard::torch_adapter {

void StartInterceptionProbe();
// Removes the callbacks; returns the FUNCTION-scope ops they saw since the start.
uint64_t StopInterceptionProbe();

}  // namespace upguard::torch_adapter
