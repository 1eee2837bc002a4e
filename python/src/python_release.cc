#include "python_release.h"

#include <Python.h>

#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

namespace upguard::torch_adapter {
namespace {

struct Deferred {
  std::mutex mu;
  std::vector<std::function<void()>> releases;  // guarded by mu
  std::atomic<size_t> count{0};
};

// Never destroyed: what is still kept at exit is not let go after the interpreter is gone.
Deferred& Kept() {
  static Deferred* kept = new Deferred();
  return *kept;
}

}  // namespace

bool OnPythonThread() { return Py_IsInitialized() && PyGILState_GetThisThreadState() != nullptr; }

void ReleaseOnPythonThread(std::function<void()> release) {
  if (OnPythonThread()) {
    release();
    return;
  }
  Deferred& kept = Kept();
  std::lock_guard<std::mutex> lock(kept.mu);
  kept.releases.push_back(std::move(release));
  kept.count.store(kept.releases.size(), std::memory_order_release);
}

void ReleaseDeferred() {
  Deferred& kept = Kept();
  if (kept.count.load(std::memory_order_acquire) == 0 || !OnPythonThread()) return;
  std::vector<std::function<void()>> releases;
  {
    std::lock_guard<std::mutex> lock(kept.mu);
    releases.swap(kept.releases);
    kept.count.store(0, std::memory_order_release);
  }
  for (std::function<void()>& release : releases) release();
}

}  // namespace upguard::torch_adapter
