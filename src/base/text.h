// Small text helpers shared by every layer's messages and reports.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
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

// printf's "%.17g" of `value` ("0.10000000000000001", "1e-07", "-nan"): a binary64 that reads
// back exactly, the text every recorded scalar has had. By std::to_chars, which promises
// printf's text for a precision and takes a fifth of its time (a recorded op formats its
// scalar arguments on the training's thread).
inline std::string ExactDouble(double value) {
  char text[32];
  const std::to_chars_result end =
      std::to_chars(text, text + sizeof(text), value, std::chars_format::general, 17);
  return std::string(text, end.ptr);
}

// "1,234,567": an integer with its thousands grouped.
inline std::string GroupedThousands(uint64_t value) {
  const std::string digits = std::to_string(value);
  std::string out;
  for (size_t idx = 0; idx < digits.size(); ++idx) {
    if (idx > 0 && (digits.size() - idx) % 3 == 0) out += ',';
    out += digits[idx];
  }
  return out;
}

// "3.7 MiB", "652 KiB", "1.2 GiB": a size for people.
inline std::string HumanBytes(uint64_t bytes) {
  char text[32];
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(text, sizeof(text), "%.1f GiB", double(bytes) / 1073741824.0);
  } else if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(text, sizeof(text), "%.1f MiB", double(bytes) / 1048576.0);
  } else {
    std::snprintf(text, sizeof(text), "%.1f KiB", double(bytes) / 1024.0);
  }
  return text;
}

}  // namespace upguard
