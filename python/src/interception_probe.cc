#include "interception_probe.h"

#include <ATen/record_function.h>

#include <atomic>
#include <mutex>
#include <vector>

namespace upguard::torch_adapter {
namespace {

std::atomic<uint64_t> g_ops{0};
std::mutex g_mu;
std::vector<at::CallbackHandle> g_handles;

std::unique_ptr<at::ObserverContext> CountOp(const at::RecordFunction&) {
  g_ops.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

std::unique_ptr<at::ObserverContext> EnterScope(const at::RecordFunction&) { return nullptr; }

void Exit(const at::RecordFunction&, at::ObserverContext*) {}

}  // namespace

void StartInterceptionProbe() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_handles.empty()) return;
  g_ops.store(0);
  g_handles.push_back(at::addGlobalCallback(at::RecordFunctionCallback(CountOp, Exit)
                                                .needsInputs(true)
                                                .needsOutputs(true)
                                                .scopes({at::RecordScope::FUNCTION})));
  g_handles.push_back(at::addGlobalCallback(
      at::RecordFunctionCallback(EnterScope, Exit).scopes({at::RecordScope::BACKWARD_FUNCTION})));
}

uint64_t StopInterceptionProbe() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (at::CallbackHandle handle : g_handles) at::removeCallback(handle);
  g_handles.clear();
  return g_ops.load();
}

}  // namespace upguard::torch_adapter
