// What the callbacks (op_callbacks.cc) keep per thread: the nesting depth of operators, the
// forward module stack (pushed by the Python nn.Module hooks), the running autograd nodes and
// the optimizer scope; they decide the phase, module path and call site of each op.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "call_site.h"
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
  bool busy = false;
  int optimizer = 0;
  int zero_grad = 0;
  std::vector<std::string_view> modules;
  std::vector<Node> nodes;
  // The running top-level (depth 0, not backward) op: its call site, computed on first use,
  // and the autograd sequence number when it started.
  std::string_view call_site;
  bool call_site_known = false;
  bool input_pipeline = false;  // found with the call site (call_site.h)
  uint64_t first_node = 0;

  std::string_view CallSite() {
    if (!call_site_known) {
      call_site = Pooled(CurrentCallSite(&input_pipeline));
      call_site_known = true;
    }
    return call_site;
  }
  std::string_view Module() const { return modules.empty() ? std::string_view() : modules.back(); }
};

inline ThreadState& Tls() {
  thread_local ThreadState state;
  return state;
}

}  // namespace upguard::torch_adapter
