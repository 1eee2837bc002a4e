// Strings that live until the process exits, one copy each: module paths, call sites and
// autograd node names. Views of them stay valid and keep their address, which lets the
// recorder's intern cache find them by pointer. Thread-safe; grows with the number of
// distinct strings (modules, call sites), not with the number of ops.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

namespace upguard::torch_adapter {

inline std::string_view Pooled(std::string_view s) {
  if (s.empty()) return {};
  static std::mutex mu;
  static auto* pool = new std::unordered_set<std::string>();  // never freed
  std::lock_guard<std::mutex> lock(mu);
  return *pool->emplace(s).first;
}

}  // namespace upguard::torch_adapter
