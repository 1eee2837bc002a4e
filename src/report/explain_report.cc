#include "report/explain_report.h"

#include <cstdio>

#include "report/format_util.h"

namespace upguard {
namespace {

std::string Seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", seconds);
  return text;
}

std::string Label(const TensorExplanation& tensor) {
  std::string label =
      std::string(tensor.is_input ? "input " : "output ") + std::to_string(tensor.index);
  if (!tensor.name.empty()) label += " (" + tensor.name + ")";
  return label;
}

constexpr size_t kAllTensorsUpTo = 24;

std::string Describe(const TensorExplanation& tensor, const std::string& tolerance) {
  if (!tensor.in_a || !tensor.in_b) {
    return std::string("captured in run ") + (tensor.in_a ? "A" : "B") + " only";
  }
  const ElementComparison& c = *tensor.comparison;
  std::string shape = std::string(DTypeName(c.dtype)) + BracketList(c.shape) + "  ";
  if (!c.comparable) return shape + "not comparable: " + c.why_not;
  std::string text = shape + SummarizeComparison(c);
  if (tensor.within_tolerance && !tensor.bitwise_equal) {
    text += *tensor.within_tolerance ? "; within tolerance " : "; beyond tolerance ";
    text += tolerance;
  }
  return text;
}

nlohmann::json TensorJson(const TensorExplanation& tensor) {
  nlohmann::json out = {{"index", tensor.index},
                        {"name", tensor.name},
                        {"in_a", tensor.in_a},
                        {"in_b", tensor.in_b},
                        {"bitwise_equal", tensor.bitwise_equal}};
  if (tensor.within_tolerance) out["within_tolerance"] = *tensor.within_tolerance;
  if (!tensor.comparison) return out;
  const ElementComparison& c = *tensor.comparison;
  out["dtype"] = DTypeName(c.dtype);
  out["shape"] = c.shape;
  out["comparable"] = c.comparable;
  if (!c.comparable) {
    out["why_not"] = c.why_not;
    return out;
  }
  out["numel"] = c.numel;
  out["differing"] = c.differing;
  out["nan_mismatch"] = c.nan_mismatch;
  out["signed_zero"] = c.signed_zero;
  out["max_abs_error"] = c.max_abs_error;
  out["max_rel_error"] = c.max_rel_error;
  out["max_ulp"] = c.max_ulp;
  nlohmann::json histogram = nlohmann::json::array();
  for (const UlpBucket& bucket : c.ulp_histogram) {
    histogram.push_back({{"max_ulp", bucket.max_ulp}, {"count", bucket.count}});
  }
  out["ulp_histogram"] = histogram;
  if (c.differing > 0) {
    out["first_index"] = c.first_index;
    out["first_a"] = c.first_a;
    out["first_b"] = c.first_b;
  }
  if (!c.diff_map.counts.empty()) {
    out["diff_map"] = {{"rows", c.diff_map.rows},
                       {"cols", c.diff_map.cols},
                       {"grid_rows", c.diff_map.grid_rows},
                       {"grid_cols", c.diff_map.grid_cols},
                       {"counts", c.diff_map.counts}};
  }
  out["summary"] = SummarizeComparison(c);
  return out;
}

}  // namespace

std::string RenderExplainText(const ExplainedDivergence& explained) {
  const Explanation& e = explained.explanation;
  const std::string where_a = "A: step " + std::to_string(explained.step_a) + " #" +
                              std::to_string(explained.index_a) + ", " +
                              Seconds(explained.rerun_seconds_a);
  const std::string where_b = "B: step " + std::to_string(explained.step_b) + " #" +
                              std::to_string(explained.index_b) + ", " +
                              (explained.b_captured_live ? std::string("captured live")
                                                         : Seconds(explained.rerun_seconds_b));
  std::string text = std::string("\nexplain: re-ran ") +
                     (explained.b_captured_live ? "run A" : "both runs") + " to capture " + e.op +
                     " (" + where_a + "; " + where_b + ")\n";
  text += "  A: " + e.capture_a + "\n  B: " + e.capture_b + "\n";
  // An op with many tensors (the model state, a foreach op) lists the ones that differ.
  const bool many = e.inputs.size() + e.outputs.size() > kAllTensorsUpTo;
  auto listed = [many](const TensorExplanation& tensor) {
    return !many || !tensor.bitwise_equal || !tensor.in_a || !tensor.in_b;
  };
  size_t width = 0;
  size_t not_listed = 0;
  for (const auto* side : {&e.inputs, &e.outputs}) {
    for (const TensorExplanation& tensor : *side) {
      if (listed(tensor)) width = std::max(width, Label(tensor).size());
    }
  }
  for (const auto* side : {&e.inputs, &e.outputs}) {
    for (const TensorExplanation& tensor : *side) {
      if (!listed(tensor)) {
        ++not_listed;
        continue;
      }
      text += "  " + Fit(Label(tensor), width) + "  " + Describe(tensor, e.tolerance) + "\n";
    }
  }
  if (not_listed > 0) {
    text += "  (" + std::to_string(not_listed) + " more tensors: every element bitwise equal)\n";
  }
  for (const std::string& warning : e.not_reproduced) text += "  warning: " + warning + "\n";
  text += "  => " + ExplanationHeadline(e) + "\n";
  return text;
}

nlohmann::json ExplainToJson(const ExplainedDivergence& explained) {
  const Explanation& e = explained.explanation;
  nlohmann::json inputs = nlohmann::json::array();
  nlohmann::json outputs = nlohmann::json::array();
  for (const TensorExplanation& tensor : e.inputs) inputs.push_back(TensorJson(tensor));
  for (const TensorExplanation& tensor : e.outputs) outputs.push_back(TensorJson(tensor));
  nlohmann::json out = {{"op", e.op},
                        {"a",
                         {{"step", explained.step_a},
                          {"index", explained.index_a},
                          {"capture", e.capture_a},
                          {"rerun_seconds", explained.rerun_seconds_a}}},
                        {"b",
                         {{"step", explained.step_b},
                          {"index", explained.index_b},
                          {"capture", e.capture_b},
                          {"rerun_seconds", explained.rerun_seconds_b}}},
                        {"inputs", inputs},
                        {"outputs", outputs},
                        {"not_reproduced", e.not_reproduced},
                        {"headline", ExplanationHeadline(e)}};
  if (!e.tolerance.empty()) out["tolerance"] = e.tolerance;
  return out;
}

}  // namespace upguard
