// The user's call site of the running operator: "file:line" of the innermost Python frame that
// is not inside torch or upguard; and which of the thread's module calls are still running.
// Uses only the Python C API (no torch headers).
//
//   PythonContext context = ReadPythonContext(modules);
//   modules.resize(context.running_modules);  // the calls whose forward raised are gone
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace upguard::torch_adapter {

void ConfigureCallSites(std::vector<std::string> skip_prefixes, std::string cwd);
// "" when the calling thread runs no Python code. Takes the GIL briefly if needed.
std::string CurrentCallSite();

// A module call on a thread's stack: its path and the Python frame of the call
// (Module._call_impl), compared by address only, never read; the Python side (_modules.py)
// keeps the frame alive while it has the entry.
struct ModuleCall {
  std::string_view path;
  const void* frame = nullptr;
  // How many autograd nodes ran on the thread when the call began: above 0, the forward runs
  // again inside backward (activation checkpointing, thread_state.h).
  size_t node_level = 0;
};

struct PythonContext {
  std::string_view call_site;  // as CurrentCallSite(), pooled (string_pool.h)
  size_t running_modules = 0;  // how many of the module calls are still running
  // The op runs for the input pipeline: a frame on the way to the call site is
  // torch.utils.data's (a DataLoader collating, unpickling a worker's batch, pinning memory),
  // or the call site itself is in Python's multiprocessing (a worker's shared-memory tensor
  // rebuilt on arrival).
  bool input_pipeline = false;
};

// `modules`: the module calls on this thread's stack, outermost first. A call is running while
// its frame is on the current call chain; a module whose forward raised, caught by the program,
// is not, nor is any call above it. One walk up the chain: normally the innermost module call
// is a frame or two above the user's call site. What a frame's file says (user code, the input
// pipeline) is found once per code object, and each "file:line" text once.
PythonContext ReadPythonContext(const std::vector<ModuleCall>& modules);

}  // namespace upguard::torch_adapter
