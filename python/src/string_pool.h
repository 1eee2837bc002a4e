// Strings that live until the process exits, one copy each: module paths, call sites and
// autograd node names. Views of them stay valid and keep their address, which lets the
// recorder's intern cache find them by pointer. Thread-safe; grows with the number of
// distinct strings (modules, call sites), not with the number of ops.
#pragma once

#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

namespace upguard::torch_adapter {

// A string already pooled is found by its view, without making a std::string of it (called
// for every autograd node a backward runs and every named tensor at a step's end).
inline std::string_view Pooled(std::string_view s) {
  if (s.empty()) return {};
  static std::mutex mu;
  static auto* copies = new std::deque<std::string>();  // never freed; a deque never moves them
  static auto* index = new std::unordered_set<std::string_view>();  // views of `copies`
  std::lock_guard<std::mutex> lock(mu);
  auto found = index->find(s);
  if (found != index->end()) return *found;
  return *index->insert(copies->emplace_back(s)).first;
}

}  // namespace upguard::torch_adapter
