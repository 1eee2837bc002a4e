#include "capture/tolerance.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace upguard {
namespace {

constexpr std::string_view kForms =
    "use bitwise, ulp:N, rel:X or rel:X,abs:Y (e.g. ulp:4, rel:1e-6,abs:1e-7)";

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool ParseUint(std::string_view text, uint64_t* out) {
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, *out);
  return !text.empty() && error == std::errc() && ptr == end;
}

// A finite, non-negative decimal number ("1e-6", "0.5").
bool ParseNonNegative(std::string_view text, double* out) {
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.')) {
    return false;
  }
  const std::string copy(text);  // strtod needs a terminator
  char* end = nullptr;
  *out = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size() && std::isfinite(*out);
}

// The shortest %g text that reads back as `value`.
std::string Shortest(double value) {
  char text[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

// The kRel test for one finite pair; ComparisonWithin applies the same expression.
bool PassesRel(const Tolerance& t, double abs_error, double magnitude) {
  return abs_error <= t.abs + t.rel * magnitude;
}

}  // namespace

std::string Tolerance::ToString() const {
  switch (kind) {
    case Kind::kBitwise:
      return "bitwise";
    case Kind::kUlp:
      return "ulp:" + std::to_string(ulp);
    case Kind::kRel:
      return "rel:" + Shortest(rel) + (abs != 0 ? ",abs:" + Shortest(abs) : "");
  }
  return "bitwise";
}

StatusOr<Tolerance> ParseTolerance(std::string_view text) {
  Tolerance t;
  if (text == "bitwise") return t;
  if (StartsWith(text, "ulp:")) {
    t.kind = Tolerance::Kind::kUlp;
    if (ParseUint(text.substr(4), &t.ulp)) return t;
  } else if (StartsWith(text, "rel:")) {
    t.kind = Tolerance::Kind::kRel;
    const std::string_view rest = text.substr(4);
    const size_t comma = rest.find(',');
    const std::string_view abs_part =
        comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (ParseNonNegative(rest.substr(0, comma), &t.rel) &&
        (comma == std::string_view::npos ||
         (StartsWith(abs_part, "abs:") && ParseNonNegative(abs_part.substr(4), &t.abs)))) {
      return t;
    }
  }
  return InvalidArgument("invalid tolerance \"" + std::string(text) + "\"; " + std::string(kForms));
}

bool WithinTolerance(const Tolerance& t, DType dtype, double a, double b, uint64_t ulp) {
  // `dtype` does not change the rules today: ulp already is |a - b| for integer dtypes.
  if (std::memcmp(&a, &b, sizeof(double)) == 0) return true;
  if (t.kind == Tolerance::Kind::kBitwise) return false;
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (t.kind == Tolerance::Kind::kUlp) return ulp <= t.ulp;
  if (a == b) return true;  // +0 and -0
  if (!std::isfinite(a) || !std::isfinite(b)) return false;
  return PassesRel(t, std::fabs(a - b), std::max(std::fabs(a), std::fabs(b)));
}

bool ComparisonWithin(const Tolerance& t, const ElementComparison& c) {
  if (!c.comparable) return false;
  if (c.differing == 0) return true;
  if (t.kind == Tolerance::Kind::kBitwise) return false;
  if (c.nan_mismatch > c.nan_payload) return false;  // a NaN against a number
  if (t.kind == Tolerance::Kind::kUlp) return c.max_ulp <= t.ulp;
  if (c.inf_mismatch > 0) return false;
  for (const ErrorPoint& point : c.error_frontier) {
    if (!PassesRel(t, point.abs_error, point.magnitude)) return false;
  }
  return true;
}

}  // namespace upguard
