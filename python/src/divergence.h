// What a recorded op can make the program do: stop at its first divergence from the --against
// reference (after capturing the op's tensors), or stop once a `--capture ...,stop` selector
// has captured what it asked for.
#pragma once

#include <vector>

#include "capture.h"
#include "ivalue_args.h"
#include "session.h"
#include "upguard/recorder.h"

namespace upguard::torch_adapter {

// The first divergence from the --against reference: its live tensors are captured at once,
// then the program stops (exit code kExitDivergedOnline) unless told to continue. With several
// ranks online it tells the others instead and records on to the end of the step, where every
// rank stops (steps.h EndStep). A pseudo-op passes no held tensors or outputs: the message and
// the stop only.
void OnDivergence(Session& session, const RecordedOp& recorded, const OpEvent& event,
                  const HeldInputs& held, const ArgBatch& outputs,
                  const std::vector<Digest128>& output_digests);

// The capture selector said `stop`: closes the trace and ends the process (kExitAfterCapture).
[[noreturn]] void StopAfterCapture();

}  // namespace upguard::torch_adapter
