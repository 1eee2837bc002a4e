// The user's call site of the running operator: "file:line" of the innermost Python frame that
// is not inside torch or upguard. Uses only the Python C API (no torch headers).
#pragma once

#include <string>
#include <vector>

namespace upguard::torch_adapter {

void ConfigureCallSites(std::vector<std::string> skip_prefixes, std::string cwd);
// "" when the calling thread runs no Python code. Takes the GIL briefly if needed.
std::string CurrentCallSite();

}  // namespace upguard::torch_adapter
