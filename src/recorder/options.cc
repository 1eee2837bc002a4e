#include <cctype>
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

StatusOr<uint64_t> ParseByteSize(std::string_view text, std::string_view what) {
  const std::string hint = std::string(what) + " '" + std::string(text) +
                           "': expected a byte count, digits with an optional K, M, G or T "
                           "(powers of 1024), e.g. 500000, 100K, 10M, 1G";
  int shift = 0;  // K, M, G, T: 10, 20, 30, 40
  std::string_view digits = text;
  constexpr std::string_view kSuffixes = "KMGT";
  const size_t suffix = digits.empty() ? std::string_view::npos
                                       : kSuffixes.find(static_cast<char>(std::toupper(
                                             static_cast<unsigned char>(digits.back()))));
  if (suffix != std::string_view::npos) {
    shift = 10 * static_cast<int>(suffix + 1);
    digits.remove_suffix(1);
  }
  int64_t count = 0;
  if (!ParseInt(digits, &count)) return InvalidArgument(hint);
  const uint64_t value = static_cast<uint64_t>(count);
  if (shift > 0 && value > (UINT64_MAX >> shift)) return InvalidArgument(hint + " (too large)");
  return value << shift;
}

}  // namespace upguard
