#include <charconv>
#include <string>

#include "upguard/recorder.h"

namespace upguard {
namespace {

bool ParseInt(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  auto [ptr, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return error == std::errc() && ptr == text.data() + text.size() && *out >= 0;
}

}  // namespace

bool IsFingerprintOp(std::string_view op) {
  return op == "upguard::rng_state" || op == "upguard::batch" || op == "upguard::loss" ||
         op == "upguard::grads" || op == "upguard::state";
}

StatusOr<StepRange> ParseStepRange(std::string_view text) {
  const std::string hint = "steps '" + std::string(text) +
                           "': expected N, A:B (steps A..B-1), A: or :B with non-negative integers";
  StepRange range;
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    if (!ParseInt(text, &range.first)) return InvalidArgument(hint);
    range.last = range.first + 1;
    return range;
  }
  std::string_view first = text.substr(0, colon);
  std::string_view last = text.substr(colon + 1);
  if (!first.empty() && !ParseInt(first, &range.first)) return InvalidArgument(hint);
  if (!last.empty() && !ParseInt(last, &range.last)) return InvalidArgument(hint);
  if (range.last >= 0 && range.last <= range.first) {
    return InvalidArgument(hint + " (the range is empty)");
  }
  return range;
}

}  // namespace upguard
