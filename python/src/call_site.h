// The user's call site of the running operator: "file:line" of the innermost Python frame that
// is not inside torch or upguard. Uses only the Python C API (no torch headers).
#pragma once

#include <string>
#include <vector>

namespace upguard::torch_adapter {

void ConfigureCallSites(std::vector<std::string> skip_prefixes, std::string cwd);
// "" when the calling thread runs no Python code. Takes the GIL briefly if needed.
// `input_pipeline` (optional): set to whether the op runs for the input pipeline, that is
// whether a frame on the way to the call site is torch.utils.data's (a DataLoader collating,
// unpickling a worker's batch, pinning memory) or the call site itself is in Python's
// multiprocessing (a worker's shared-memory tensor rebuilt on arrival).
std::string CurrentCallSite(bool* input_pipeline = nullptr);

}  // namespace upguard::torch_adapter
