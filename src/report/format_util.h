// Small formatting helpers shared by the text reports (diff and show).
#pragma once

#include <string>
#include <vector>

#include "base/text.h"
#include "trace/records.h"

namespace upguard {

// "float32[8, 32, 256]"; "scalar 'tanh'" for scalars; "None".
std::string DescribeArg(const ArgRecord& arg, const StringTable& strings);
// A number in at most 6 significant digits ("3.21", "1.2e-07").
std::string Num(double value);
// Pads or cuts `text` to exactly `width` columns (cut text ends in "…").
std::string Fit(const std::string& text, size_t width);
// "-" for an empty string.
std::string OrDash(const std::string& text);

}  // namespace upguard
