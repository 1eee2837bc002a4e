#include "divergence.h"

#include <cstdio>
#include <string>

namespace upguard::torch_adapter {

void OnDivergence(Session& session, const RecordedOp& recorded, const OpEvent& event,
                  const HeldInputs& held, const ArgBatch& outputs,
                  const std::vector<Digest128>& output_digests) {
  const std::string capture =
      WriteDivergenceCapture(recorded, event, held, outputs, output_digests);
  std::fprintf(stderr, "upguard: diverged from the reference at step %u #%llu (%.*s)%s%s\n",
               recorded.step, static_cast<unsigned long long>(recorded.index),
               static_cast<int>(event.op.size()), event.op.data(),
               capture.empty() ? "" : "; captured to ", capture.c_str());
  if (session.continue_after_divergence()) return;
  if (session.distributed()) {  // record on to the step's end, where every rank stops
    Session* active = Session::Active();
    session.distributed()->notice(active != nullptr ? active->recorder()->divergence_json() : "{}");
    return;
  }
  Session::CloseAndExit("(--continue records on)", kExitDivergedOnline);
}

void StopAfterCapture() {
  std::fprintf(stderr, "upguard: %s\n", CaptureSummary().c_str());
  Session::CloseAndExit("as --capture ... stop asks", kExitAfterCapture);
}

}  // namespace upguard::torch_adapter
