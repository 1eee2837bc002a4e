// The write probe: measures which ops write an input their schema does not mark as written.
// A global RecordFunction callback of its own (independent of recording) copies every tensor
// input at op entry and compares its bytes at exit; an input that changed while its schema
// argument carries no `(a!)` is a finding. Slow (a copy of every input of every op): for the
// test that keeps undeclared_writes.h honest, never for training.
//
//   _C.probe_writes(True); run_layers(); findings = _C.probe_writes(False)
#pragma once

#include <string>
#include <tuple>
#include <vector>

namespace upguard::torch_adapter {

// (op, argument name, in the table already) per finding, sorted, each once.
using WriteFinding = std::tuple<std::string, std::string, bool>;

void StartWriteProbe();
// Stops the probe and returns what it found since StartWriteProbe.
std::vector<WriteFinding> StopWriteProbe();

}  // namespace upguard::torch_adapter
