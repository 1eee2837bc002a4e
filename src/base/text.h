// Small text helpers shared by every layer's messages and reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace upguard {

// "[8, 32, 256]": a shape or a multi-dimensional index, as messages and reports write it.
inline std::string BracketList(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t value_idx = 0; value_idx < values.size(); ++value_idx) {
    if (value_idx > 0) text += ", ";
    text += std::to_string(values[value_idx]);
  }
  return text + "]";
}

}  // namespace upguard
