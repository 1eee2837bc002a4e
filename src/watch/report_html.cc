#include "watch/report_html.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "base/html.h"
#include "base/svg_plot.h"

namespace upguard::watch {
namespace {

using html::Escape;
using html::Number;
using Json = nlohmann::ordered_json;

std::string Str(const Json& object, const char* key) {
  return object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : "";
}

// "allreduce float32[1024] in group 0, seq 18 (train.py:9)" -> group "0", seq 18.
bool GroupAndSeq(const std::string& collective, std::string* group, uint64_t* seq) {
  const size_t in = collective.find(" in group ");
  const size_t at = collective.find(", seq ", in == std::string::npos ? 0 : in);
  if (in == std::string::npos || at == std::string::npos) return false;
  *group = collective.substr(in + 10, at - in - 10);
  unsigned long long number = 0;
  if (std::sscanf(collective.c_str() + at + 6, "%llu", &number) != 1) return false;
  *seq = number;
  return true;
}

std::string FindingCard(const Json& finding) {
  const std::string trigger = Str(finding, "trigger");
  std::string ranks;
  for (const Json& rank : finding.value("ranks", Json::array())) {
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank.get<int>());
  }
  std::string out = "<section class=\"card bad finding\" data-trigger=\"" + Escape(trigger) +
                    "\"><span class=\"badge bad\">" + Escape(trigger) + "</span><strong>rank " +
                    Escape(ranks) + "</strong> (" + Escape(Str(finding, "cause")) + ")\n" +
                    "<dl class=\"facts\"><dt>when</dt><dd>" + Escape(Str(finding, "time")) +
                    "</dd>";
  if (!Str(finding, "collective").empty()) {
    out += "<dt>collective</dt><dd><code>" + Escape(Str(finding, "collective")) + "</code></dd>";
  }
  out += "<dt>detail</dt><dd>" + Escape(Str(finding, "detail")) + "</dd>";
  if (finding.contains("stack")) {
    std::string stack;
    for (const Json& frame : finding["stack"]) stack += Escape(frame.get<std::string>()) + "\n";
    out += "<dt>Python stack</dt><dd><pre class=\"mono stack\">" + stack + "</pre></dd>";
  }
  return out + "</dl></section>\n";
}

std::string Timeline(const Json& report) {
  const Json& ranks = report["ranks"];
  std::string group;
  uint64_t seq = 0;
  bool marked = false;
  std::set<int> named;
  if (!report["findings"].empty()) {
    const Json& first = report["findings"][0];
    marked = GroupAndSeq(Str(first, "collective"), &group, &seq);
    for (const Json& rank : first.value("ranks", Json::array())) named.insert(rank.get<int>());
  }
  double span = 1;
  for (const Json& rank : ranks) {
    for (const Json& slot : rank.value("recent", Json::array())) {
      span = std::max(span, slot.value("issued", 0.0));
    }
  }
  const double rows = double(std::max<size_t>(ranks.size(), 1));
  svg::Plot plot(880, 70 + 28 * rows, {-span * 1.05, 0, false, "seconds before the look"},
                 {0, rows, false, ""});
  std::vector<std::pair<double, std::string>> labels;
  std::vector<std::string> classes;
  for (size_t row = 0; row < ranks.size(); ++row) {
    const Json& rank = ranks[row];
    const int number = rank.value("rank", 0);
    const double top = rows - double(row) - 0.15, bottom = rows - double(row) - 0.85;
    labels.push_back({(top + bottom) / 2, "rank " + std::to_string(number)});
    classes.push_back(named.count(number) ? "named" : "");
    for (const Json& slot : rank.value("recent", Json::array())) {
      const bool done = !slot["completed"].is_null();
      const double from = -slot.value("issued", 0.0);
      const double to = done ? -slot["completed"].get<double>() : 0.0;
      const bool stalled =
          marked && Str(slot, "group") == group && slot.value("seq", uint64_t{0}) == seq;
      const std::string cls =
          std::string("collective") + (done ? "" : " in-flight") + (stalled ? " stalled" : "");
      const char* color = stalled ? "#c62828" : (done ? "#7f93ad" : "#b26a00");
      plot.Cell(from, std::max(to, from + span * 0.002), bottom, top, cls, color,
                Str(slot, "op") + " in group " + Str(slot, "group") + ", seq " +
                    std::to_string(slot.value("seq", uint64_t{0})) +
                    (done ? ", " + Number(from - to, 3) + " s"
                          : ", in flight " + Number(-from, 3) + " s") +
                    (Str(slot, "call_site").empty() ? "" : " (" + Str(slot, "call_site") + ")"));
    }
  }
  plot.YLabels(std::move(labels), std::move(classes));
  std::string out =
      "<p class=\"key\"><span style=\"color:#7f93ad\">&#9632; completed</span>"
      "<span style=\"color:#b26a00\">&#9632; in flight</span>"
      "<span style=\"color:#c62828\">&#9632; the finding's collective</span>"
      "<span style=\"color:#c62828;font-weight:600\">rank N: the rank it names</span></p>\n";
  out += plot.Svg("recent collectives per rank");
  if (marked) {
    std::vector<int> missing;
    for (const Json& rank : ranks) {
      bool has = false;
      for (const Json& slot : rank.value("recent", Json::array())) {
        has = has || (Str(slot, "group") == group && slot.value("seq", uint64_t{0}) == seq);
      }
      if (!has) missing.push_back(rank.value("rank", 0));
    }
    if (!missing.empty()) {
      std::string list;
      for (int rank : missing) list += (list.empty() ? "" : ", ") + std::to_string(rank);
      out += "<p class=\"missing\"><span class=\"differs\">rank " + list +
             "</span> never issued collective " + std::to_string(seq) + " of group " +
             Escape(group) + ".</p>\n";
    }
  }
  return out;
}

std::string RanksTable(const Json& report) {
  std::string out =
      "<table class=\"ranks\"><tr><th>rank</th><th>host</th><th>pid</th><th>"
      "process</th><th>step</th><th>last op</th><th>collectives</th></tr>\n";
  for (const Json& rank : report["ranks"]) {
    out += "<tr><td class=\"num\">" + std::to_string(rank.value("rank", 0)) + "</td><td>" +
           Escape(Str(rank, "host")) + "</td><td class=\"num\">" +
           std::to_string(rank.value("pid", 0)) + "</td><td>" + Escape(Str(rank, "process")) +
           "</td><td class=\"num\">" + std::to_string(rank.value("step", int64_t{0})) +
           "</td><td><code>" + Escape(Str(rank, "last_op")) + "</code></td><td class=\"num\">" +
           std::to_string(rank.value("collectives", uint64_t{0})) + "</td></tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace

std::string RenderWatchHtml(const Json& report) {
  const size_t findings = report.value("findings", Json::array()).size();
  std::string body =
      "<h1>upguard watch: " +
      (findings == 0 ? std::string("no findings")
                     : std::to_string(findings) + (findings == 1 ? " finding" : " findings")) +
      "</h1>\n<p class=\"muted\">" + Escape(Str(report, "dir")) + " at " +
      Escape(Str(report, "time")) + "</p>\n";
  if (findings == 0) body += "<section class=\"card ok\">No rank hangs or lags.</section>\n";
  for (const Json& finding : report["findings"]) body += FindingCard(finding);
  body +=
      "<h2>Recent collectives</h2>\n" + Timeline(report) + "<h2>Ranks</h2>\n" + RanksTable(report);
  return html::Page("upguard watch", body);
}

}  // namespace upguard::watch
