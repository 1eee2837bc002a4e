// What the callbacks (op_callbacks.cc) keep per thread: the nesting depth of operators, the
// forward module stack (pushed by the Python nn.Module hooks), the running autograd nodes and
// the optimizer scope; they decide the phase, module path and call site of each op.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "call_site.h"
#include "list_labels.h"
#include "origins.h"
#include "string_pool.h"

namespace upguard::torch_adapter {

// Strings held here are views into the string pool (string_pool.h).
struct Node {
  std::string_view name;
  Origin origin;
  uint32_t saved_depth = 0;
};

struct ThreadState {
  uint32_t depth = 0;
  // The adapter itself runs ATen code or Python on this thread (digesting, reading the model's
  // tensors or a generator's state): the ops seen meanwhile are the adapter's, never recorded.
  // Whoever sets it clears it before returning, on an exception too (Guarded, op_callbacks.cc).
  bool busy = false;
  int optimizer = 0;
  bool names_refreshed = false;  // the tensor names were read again inside Optimizer.step
  ListOrder list_order;          // the parameters of the optimizer's lists (list_labels.h)
  int zero_grad = 0;
  std::vector<ModuleCall> modules;
  std::vector<Node> nodes;
  // The running top-level (depth 0, not backward) op: its call site and which module calls
  // still run (a forward that raised leaves its module here until the next module hook), read
  // from Python on first use; and the autograd sequence number when it started.
  std::string_view call_site;
  bool python_known = false;
  bool input_pipeline = false;  // read with the call site (call_site.h)
  uint64_t first_node = 0;

  void ReadPython() {
    if (python_known) return;
    const PythonContext context = ReadPythonContext(modules);
    call_site = context.call_site;
    input_pipeline = context.input_pipeline;
    modules.resize(context.running_modules);
    python_known = true;
  }
  // Pops the module call whose frame is `frame`, with any call above it (whose forward
  // raised); nothing when it is not on the stack (popped already).
  void PopModuleCall(const void* frame) {
    for (size_t idx = modules.size(); idx > 0; --idx) {
      if (modules[idx - 1].frame != frame) continue;
      modules.resize(idx - 1);
      return;
    }
  }
  std::string_view CallSite() {
    ReadPython();
    return call_site;
  }
  std::string_view Module() {
    ReadPython();
    return modules.empty() ? std::string_view() : modules.back().path;
  }
  // A module's forward runs again inside the innermost running autograd node: activation
  // checkpointing recomputes what the node needs (non-reentrant: while unpacking a saved
  // tensor; reentrant: in CheckpointFunction's backward). Its ops are phase recompute. The
  // behaviour, not torch.utils.checkpoint's internals, decides it. Without ReadPython, a call
  // whose forward raised (the non-reentrant recompute stops early by raising) may still count.
  bool Recomputing() const {
    return !nodes.empty() && !modules.empty() && modules.back().node_level == nodes.size();
  }
  // As a node ends: module calls begun inside it have ended too (or raised).
  void DropModuleCallsAbove(size_t node_level) {
    while (!modules.empty() && modules.back().node_level > node_level) modules.pop_back();
  }
};

inline ThreadState& Tls() {
  thread_local ThreadState state;
  return state;
}

}  // namespace upguard::torch_adapter
