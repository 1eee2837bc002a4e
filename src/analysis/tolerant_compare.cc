#include "analysis/tolerant_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/file.h"

namespace upguard {
namespace {

// A binary floating format: `precision` significand bits (the implicit one included) and the
// least normal exponent.
struct FloatFormat {
  int precision;
  int min_exponent;
};

FloatFormat FormatOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return {24, -126};
    case DType::kFloat16:
      return {11, -14};
    case DType::kBFloat16:
      return {8, -126};
    default:
      return {53, -1022};
  }
}

// The position of finite `x` among the format's values counted from zero (negative below it):
// consecutive values have consecutive ordinals.
__int128 Ordinal(FloatFormat f, double x) {
  const double magnitude = std::fabs(x);
  __int128 ordinal = 0;
  if (magnitude != 0) {
    const int exponent = std::ilogb(magnitude);
    if (exponent < f.min_exponent) {  // subnormal: a multiple of the least subnormal
      ordinal = std::llround(std::ldexp(magnitude, f.precision - 1 - f.min_exponent));
    } else {
      const int64_t per_binade = int64_t{1} << (f.precision - 1);
      const double fraction = std::ldexp(magnitude, -exponent) - 1.0;  // in [0, 1)
      ordinal = static_cast<__int128>(exponent - f.min_exponent + 1) * per_binade +
                std::llround(std::ldexp(fraction, f.precision - 1));
    }
  }
  return std::signbit(x) ? -ordinal : ordinal;
}

// The ULP of `magnitude` in the format (that of the least normal binade below it).
double UlpAt(FloatFormat f, double magnitude) {
  const int exponent = magnitude == 0 ? f.min_exponent : std::ilogb(magnitude);
  return std::ldexp(1.0, std::max(exponent, f.min_exponent) - f.precision + 1);
}

bool CountsEqual(const TensorStats& a, const TensorStats& b) {
  return a.finite_count == b.finite_count && a.nan_count == b.nan_count &&
         a.pos_inf_count == b.pos_inf_count && a.neg_inf_count == b.neg_inf_count;
}

std::string RuleText(const TolerancePolicy::Rule& rule) {
  using Kind = TolerancePolicy::Rule::Kind;
  switch (rule.kind) {
    case Kind::kDefault:
      return "default " + rule.tolerance.ToString();
    case Kind::kOp:
      return "op " + rule.pattern + " " + rule.tolerance.ToString();
    case Kind::kModule:
      return "module " + rule.pattern + " " + rule.tolerance.ToString();
    case Kind::kNondeterministic:
      return "nondeterministic " + rule.pattern;
    case Kind::kAt:
      return "at " + rule.phase + " " + (rule.module.empty() ? "-" : rule.module) + " " +
             rule.pattern + " " + rule.tolerance.ToString();
  }
  return "";
}

}  // namespace

uint64_t UlpDistanceIn(DType dtype, double a, double b) {
  const FloatFormat f = FormatOf(dtype);
  const __int128 distance = Ordinal(f, a) - Ordinal(f, b);
  const __int128 magnitude = distance < 0 ? -distance : distance;
  return magnitude > static_cast<__int128>(UINT64_MAX) ? UINT64_MAX
                                                       : static_cast<uint64_t>(magnitude);
}

bool StatsWithin(const Tolerance& t, DType dtype, const TensorStats& a, const TensorStats& b) {
  if (t.kind == Tolerance::Kind::kBitwise || !CountsEqual(a, b)) return false;
  if (a.finite_count == 0) return true;  // nothing finite: min, max, mean, L2 are all +0
  const double scale =
      std::max({std::fabs(a.min), std::fabs(a.max), std::fabs(b.min), std::fabs(b.max)});
  const double mean_error = std::fabs(a.mean - b.mean);
  const double l2_error = std::fabs(a.l2 - b.l2);
  const double l2 = std::max(a.l2, b.l2);
  if (t.kind == Tolerance::Kind::kUlp) {
    const FloatFormat f = FormatOf(dtype);
    const double n = static_cast<double>(t.ulp);
    return UlpDistanceIn(dtype, a.min, b.min) <= t.ulp &&
           UlpDistanceIn(dtype, a.max, b.max) <= t.ulp && mean_error <= n * UlpAt(f, scale) &&
           l2_error <= n * UlpAt(f, 1.0) * l2;
  }
  const double root_k = std::sqrt(static_cast<double>(a.finite_count));
  return WithinTolerance(t, dtype, a.min, b.min, 0) && WithinTolerance(t, dtype, a.max, b.max, 0) &&
         mean_error <= t.abs + t.rel * scale && l2_error <= t.abs * root_k + t.rel * l2;
}

Tolerated PolicyJudge::Judge(const ArgRecord& a, const ArgRecord& b, std::string_view op,
                             std::string_view module, std::string_view phase) const {
  const Tolerance t = policy_.For(op, module, phase);
  if (a.dtype != b.dtype || a.shape != b.shape || t.kind == Tolerance::Kind::kBitwise) {
    return Tolerated::kBeyond;
  }
  if (!a.has_stats || !b.has_stats) return Tolerated::kNoStats;
  return StatsWithin(t, a.dtype, a.stats, b.stats) ? Tolerated::kWithin : Tolerated::kBeyond;
}

std::string PolicyJudge::Describe(std::string_view op, std::string_view module,
                                  std::string_view phase) const {
  return policy_.For(op, module, phase).ToString();
}

bool PolicyJudge::Nondeterministic(std::string_view op) const {
  return policy_.Nondeterministic(op);
}

std::string PolicyJudge::Summary() const {
  constexpr size_t kShown = 6;  // a calibrated policy holds hundreds of rules
  std::string text;
  bool has_default = false;
  size_t shown = 0;
  for (const TolerancePolicy::Rule& rule : policy_.rules) {
    has_default |= rule.kind == TolerancePolicy::Rule::Kind::kDefault;
    if (shown++ < kShown) text += (text.empty() ? "" : "; ") + RuleText(rule);
  }
  if (shown > kShown) text += "; ... " + std::to_string(shown - kShown) + " more rules";
  if (!has_default) text = "default bitwise" + (text.empty() ? "" : "; " + text);
  if (!policy_.calibrated.empty()) {
    text = "the reference's own noise (calibrated: " + policy_.calibrated + "): " + text;
  }
  return text;
}

StatusOr<TolerancePolicy> PolicyFromOptions(const std::string& tolerance,
                                            const std::string& policy_path,
                                            const std::string& nondeterministic) {
  TolerancePolicy policy;
  if (!tolerance.empty()) {
    StatusOr<Tolerance> parsed = ParseTolerance(tolerance);
    if (!parsed.ok()) return InvalidArgument("--tolerance: " + parsed.status().message());
    TolerancePolicy::Rule rule;
    rule.tolerance = *parsed;
    policy.rules.push_back(rule);
  }
  if (!policy_path.empty()) {
    StatusOr<std::string> text = ReadFileToString(policy_path);
    if (!text.ok()) {
      return Status(text.status().code(), "--tolerance-policy: " + text.status().message());
    }
    ASSIGN_OR_RETURN(TolerancePolicy file, ParseTolerancePolicy(*text, policy_path));
    policy.rules.insert(policy.rules.end(), file.rules.begin(), file.rules.end());
    policy.calibrated = file.calibrated;
  }
  if (nondeterministic.empty()) return policy;
  for (size_t begin = 0; begin <= nondeterministic.size();) {
    size_t end = nondeterministic.find(',', begin);
    if (end == std::string::npos) end = nondeterministic.size();
    TolerancePolicy::Rule rule;
    rule.kind = TolerancePolicy::Rule::Kind::kNondeterministic;
    rule.pattern = nondeterministic.substr(begin, end - begin);
    if (rule.pattern.empty() || rule.pattern.find(' ') != std::string::npos) {
      return InvalidArgument("--allow-nondeterministic: bad glob \"" + rule.pattern + "\" in \"" +
                             nondeterministic +
                             "\"; give comma-separated op-name globs without spaces, e.g. "
                             "'aten::index_add_*,aten::scatter_add_'");
    }
    policy.rules.push_back(std::move(rule));
    begin = end + 1;
  }
  return policy;
}

}  // namespace upguard
