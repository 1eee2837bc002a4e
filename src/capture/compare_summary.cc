// SummarizeComparison: one sentence per comparison, exact enough to pin in tests.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "base/text.h"
#include "capture/element_compare.h"

namespace upguard {
namespace {

std::string Format(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

std::string Count(int64_t count, const std::string& one, const std::string& many) {
  return GroupedThousands(static_cast<uint64_t>(count)) + " " + (count == 1 ? one : many);
}

// About two significant digits, never an exponent: "0.0061", "3.1", "67", "99" (not "1e+02"
// for 99.6: "100" only when every element differs), "<0.0001".
std::string Percent(int64_t part, int64_t whole) {
  if (part == whole) return "100";
  const double percent = 100.0 * static_cast<double>(part) / static_cast<double>(whole);
  if (percent >= 10) return Format("%.0f", std::min(99.0, std::round(percent)));
  if (percent >= 0.0001) return Format("%.2g", percent);
  return "<0.0001";
}

std::string Value(DType dtype, double value) {
  switch (dtype) {
    case DType::kFloat32:
      return Format("%.9g", value);
    case DType::kFloat64:
      return Format("%.17g", value);
    case DType::kFloat16:
    case DType::kBFloat16:
      return Format("%.5g", value);
    default:
      return Format("%.0f", value);
  }
}

std::string BucketLabel(uint64_t max_ulp, const std::string& unit) {
  return (max_ulp <= 2 ? "" : "<=") + GroupedThousands(max_ulp) + unit;
}

// At most kMaxGroups groups of the histogram, for one sentence: with more buckets, runs of
// adjacent ones are merged (counts summed, labelled by the run's largest distance).
constexpr size_t kMaxGroups = 5;

struct BucketGroup {
  UlpBucket bucket;     // the run's largest distance, its summed count
  bool merged = false;  // more than one bucket: its label is always "<=N"
};

std::vector<BucketGroup> Grouped(const std::vector<UlpBucket>& buckets) {
  std::vector<BucketGroup> groups;
  const size_t count = std::min(buckets.size(), kMaxGroups);
  for (size_t group_idx = 0; group_idx < count; ++group_idx) {
    const size_t begin = buckets.size() * group_idx / count;
    const size_t end = buckets.size() * (group_idx + 1) / count;
    BucketGroup group{UlpBucket{buckets[end - 1].max_ulp, 0}, end - begin > 1};
    for (size_t idx = begin; idx < end; ++idx) group.bucket.count += buckets[idx].count;
    groups.push_back(group);
  }
  return groups;
}

// "all by 1 ULP", "11 by up to 37 ULP (1 ULP: 9, 2 ULP: 1, <=64 ULP: 1)".
// `histogram`: with the bucket counts in parentheses.
std::string Distances(const ElementComparison& c, int64_t measured, bool histogram) {
  const std::string unit = DTypeIsFloating(c.dtype) ? " ULP" : "";
  const std::string some = measured == c.differing ? "" : GroupedThousands(measured) + " ";
  if (c.max_ulp == 1) return (some.empty() ? "all " : some) + "by 1" + unit;
  std::string out = some + "by up to " + GroupedThousands(c.max_ulp) + unit;
  if (!histogram) return out;
  out += " (";
  for (const BucketGroup& group : Grouped(c.ulp_histogram)) {
    if (out.back() != '(') out += ", ";
    out += (group.merged && group.bucket.max_ulp <= 2 ? "<=" : "") +
           BucketLabel(group.bucket.max_ulp, unit) + ": " + GroupedThousands(group.bucket.count);
  }
  return out + ")";
}

}  // namespace

namespace {

// The sentence's first clause: how many elements differ and by how many ULP.
std::string DifferingClause(const ElementComparison& c, bool histogram) {
  std::string out = GroupedThousands(c.differing) + " of " + Count(c.numel, "element", "elements") +
                    " differ (" + Percent(c.differing, c.numel) + "%)";
  int64_t measured = 0;
  for (const UlpBucket& bucket : c.ulp_histogram) measured += bucket.count;
  if (measured > 0) out += ", " + Distances(c, measured, histogram);
  return out;
}

}  // namespace

std::string SummarizeComparisonBrief(const ElementComparison& c) {
  if (!c.comparable) return "not comparable: " + c.why_not;
  if (c.differing == 0)
    return "identical: all " + Count(c.numel, "element", "elements") + " bitwise equal";
  return DifferingClause(c, /*histogram=*/false);
}

std::string SummarizeComparison(const ElementComparison& c) {
  if (c.differing == 0 || !c.comparable) return SummarizeComparisonBrief(c);
  std::string out = DifferingClause(c, /*histogram=*/true);
  if (c.nan_mismatch > 0) {
    out += ", " + Count(c.nan_mismatch, "NaN mismatch", "NaN mismatches");
    if (c.nan_payload > 0) out += " (" + GroupedThousands(c.nan_payload) + " only in the payload)";
  }
  if (c.signed_zero > 0) {
    out += ", " + Count(c.signed_zero, "signed zero", "signed zeros") + " (+0 vs -0)";
  }
  if (c.inf_mismatch > 0) {
    out += ", " + Count(c.inf_mismatch, "infinity mismatch", "infinity mismatches");
  }
  if (c.max_abs_error > 0) {
    out += "; max abs error " + Format("%.2g", c.max_abs_error) + ", max rel error " +
           Format("%.2g", c.max_rel_error);
  }
  return out + "; first at " + BracketList(c.first_index) + ": " + Value(c.dtype, c.first_a) +
         " vs " + Value(c.dtype, c.first_b);
}

}  // namespace upguard
