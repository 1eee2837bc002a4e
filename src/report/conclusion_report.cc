#include "report/conclusion_report.h"

#include "report/diff_report.h"
#include "report/explain_report.h"
#include "report/global_report.h"

namespace upguard {

nlohmann::json ConclusionToJson(const Conclusion& conclusion, const Run& a, const Run& b) {
  nlohmann::json json = DiffToJson(conclusion.result, a, b);
  if (conclusion.order) {
    json["across_ranks"] = GlobalOrderToJson(*conclusion.order, conclusion.result, a, b);
  }
  if (conclusion.explained) json["explain"] = ExplainToJson(*conclusion.explained);
  return json;
}

std::string RenderConclusionText(const Conclusion& conclusion, const Run& a, const Run& b) {
  std::string text;
  if (conclusion.order) text += RenderGlobalOrderText(*conclusion.order, conclusion.result, a, b);
  text += RenderDiffText(conclusion.result, a, b);
  if (conclusion.explained) text += RenderExplainText(*conclusion.explained);
  return text;
}

}  // namespace upguard
