// Small formatting helpers shared by the text reports (diff and show).
#pragma once

#include <string>
#include <vector>

#include "trace/records.h"

namespace upguard {

// "float32[8, 32, 256]"; "scalar 'tanh'" for scalars; "None".
std::string DescribeArg(const ArgRecord& arg, const StringTable& strings);
// "[8, 32, 256]"
std::string ShapeText(const std::vector<int64_t>& shape);
// A number in at most 6 significant digits ("3.21", "1.2e-07").
std::string Num(double value);
// Pads or cuts `text` to exactly `width` columns (cut text ends in "…").
std::string Fit(const std::string& text, size_t width);
// "-" for an empty string.
std::string OrDash(const std::string& text);

}  // namespace upguard
