// `upguard machines fit` runs `upguard-machines-fit`, the one upguard command that links
// libtorch (it trains Minder's denoisers), from beside the `upguard` executable: every other
// command starts without loading libtorch.
#pragma once

#include "upguard/status.h"

namespace upguard {

// Replaces this process with upguard-machines-fit and argv[3..]; returns only on an error (the
// binary is missing: this build has no torch).
StatusOr<int> ExecMachinesFit(int argc, char** argv);

}  // namespace upguard
