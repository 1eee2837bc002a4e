#include "cli/diff_html_writer.h"

#include <fstream>
#include <vector>

#include "analysis/spread.h"
#include "base/html.h"
#include "report/conclusion_report.h"
#include "report/diff_html.h"
#include "report/spread_json.h"

namespace upguard {
namespace {

// Line `call_site` ("examples/gpt.py:96") of its file under `cwd`, trimmed; empty if unread.
std::string SourceLine(const std::string& cwd, const std::string& call_site) {
  const size_t colon = call_site.rfind(':');
  if (colon == std::string::npos || colon + 1 >= call_site.size()) return "";
  const std::string file = call_site.substr(0, colon);
  long line = 0;
  try {
    line = std::stol(call_site.substr(colon + 1));
  } catch (...) {
    return "";
  }
  std::ifstream in(file.rfind('/', 0) == 0 || cwd.empty() ? file : cwd + "/" + file);
  std::string text;
  for (long number = 1; number <= line && std::getline(in, text); ++number) {
    if (number == line) {
      const size_t begin = text.find_first_not_of(" \t");
      return begin == std::string::npos ? "" : text.substr(begin);
    }
  }
  return "";
}

}  // namespace

StatusOr<nlohmann::json> DiffPageModel(const Conclusion& conclusion, const Run& a, const Run& b) {
  nlohmann::json model = ConclusionToJson(conclusion, a, b);
  std::vector<RankSpread> spreads;
  for (const RankDiff& rank : conclusion.result.ranks) {
    ASSIGN_OR_RETURN(RankSpread spread, ComputeSpread(a, b, rank, DiffOptions{}.align));
    spreads.push_back(std::move(spread));
  }
  AddSpreadJson(spreads, &model);
  const std::string cwd = a.Meta().value("cwd", std::string());
  for (nlohmann::json& rank : model["ranks"]) {
    for (const char* key : {"divergence", "latent"}) {
      if (!rank.contains(key) || !rank[key].is_object()) continue;
      const std::string line = SourceLine(cwd, rank[key].value("call_site", std::string()));
      if (!line.empty()) rank[key]["source"] = line;
    }
  }
  return model;
}

Status WriteDiffHtml(const nlohmann::json& model, const std::string& path) {
  return html::WriteFile(path, RenderDiffHtml(model), "diff");
}

}  // namespace upguard
