#include "report/diff_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/html.h"
#include "base/svg_plot.h"
#include "report/diff_html_parts.h"

namespace upguard {
namespace {

using html::Escape;
using html::Number;
using nlohmann::json;
using namespace diff_html;  // NOLINT: the page's own pieces

// The CSS class of a verdict: red for a numeric culprit, amber for the rest that diverged.
std::string Tone(const std::string& verdict) {
  if (verdict == "identical") return "ok";
  if (verdict == "culprit" || verdict == "propagated") return "bad";
  return "warn";
}

std::string Fact(const std::string& name, const std::string& value_html) {
  return "<dt>" + Escape(name) + "</dt><dd>" + value_html + "</dd>";
}

std::string SideText(const json& side) {
  if (!side.is_object()) return "<span class=\"muted\">absent</span>";
  const std::string kind = Str(side, "kind");
  if (kind == "scalar") return "<code>" + Escape(Str(side, "text")) + "</code>";
  if (kind == "none") return "<span class=\"muted\">None</span>";
  std::string text = Escape(Str(side, "dtype"));
  if (side.contains("shape")) {
    text += "[";
    for (size_t dim = 0; dim < side["shape"].size(); ++dim) {
      text += (dim ? ", " : "") + std::to_string(side["shape"][dim].get<int64_t>());
    }
    text += "]";
  }
  if (Has(side, "label"))
    text += " <span class=\"muted\">" + Escape(Str(side, "label")) + "</span>";
  return text;
}

std::string Magnitude(const json& slot) {
  if (!slot["a"].is_object() || !slot["b"].is_object()) return "";
  const json& a = slot["a"];
  const json& b = slot["b"];
  if (!Has(a, "stats") || !Has(b, "stats")) return "";
  const double la = a["stats"].value("l2", 0.0), lb = b["stats"].value("l2", 0.0);
  std::string text = "L2 " + Number(la) + " vs " + Number(lb);
  if (la != 0) text += " (" + Number(100 * (lb - la) / la, 3) + "%)";
  return Escape(text);
}

std::string SlotsTable(const json& slots, const char* caption) {
  if (!slots.is_array() || slots.empty()) return "";
  std::string out = "<table class=\"slots\"><caption class=\"muted\">" + Escape(caption) +
                    "</caption><tr><th>name</th><th>A</th><th>B</th><th>equal</th>"
                    "<th>magnitude</th></tr>\n";
  for (const json& slot : slots) {
    const bool equal = slot.value("equal", true);
    out += "<tr class=\"slot\"><td><code>" + Escape(Str(slot, "name")) + "</code></td><td>" +
           SideText(slot["a"]) + "</td><td>" + SideText(slot["b"]) + "</td><td class=\"" +
           (equal ? "same\">identical" : "differs\">DIFFERS") + "</td><td>" +
           (equal ? "" : Magnitude(slot)) + "</td></tr>\n";
  }
  return out + "</table>\n";
}

// The tensors the diff could not compare (`not_compared`, docs/cli.md), one line a reason.
std::string NotComparedFact(const json& rank) {
  if (!Has(rank, "not_compared") || rank["not_compared"].value("ops", 0) == 0) return "";
  std::string lines;
  for (const json& reason : rank["not_compared"]["reasons"]) {
    lines += (lines.empty() ? "" : "<br>") +
             Escape(std::to_string(reason.value("ops", 0)) + " ops (" +
                    std::to_string(reason.value("tensors", 0)) + " tensors) " + Str(reason, "why"));
  }
  return Fact("not compared", "<span class=\"differs\">" + lines + "</span>");
}

std::string VerdictCard(const json& model, const json& rank) {
  const std::string verdict = Str(model, "verdict");
  const json& d = Has(rank, "divergence") ? rank["divergence"]
                                          : (Has(rank, "latent") ? rank["latent"] : json());
  std::string out = "<section class=\"card " + Tone(verdict) + "\" id=\"verdict\">\n";
  out += "<span class=\"badge " + Tone(verdict) + "\">" + Escape(verdict) + "</span>";
  if (d.is_object()) {
    out += "<strong class=\"op\">" + Escape(Str(d, "op")) + "</strong> at step " +
           std::to_string(d.value("step", 0)) + ", " + Escape(Str(d, "phase"));
  } else if (verdict == "identical") {
    out += "the runs are identical in every step compared";
  } else if (verdict == "unverified") {
    out +=
        "no compared op differs, but some tensors were not read: the runs are not known to "
        "be identical";
  }
  out += "\n<dl class=\"facts\">";
  if (d.is_object()) {
    const std::string module = Str(d, "module");
    out += Fact("module",
                "<code class=\"module\">" + Escape(module.empty() ? "-" : module) + "</code>");
    std::string site = "<code>" + Escape(Str(d, "call_site")) + "</code>";
    if (Has(d, "source"))
      site += "<br><code class=\"source\">" + Escape(Str(d, "source")) + "</code>";
    out += Fact("call site", site);
    out += Fact("rank", std::to_string(rank.value("rank", 0)));
    out += Fact("op index", std::to_string(d.value("index", 0)) + " in A, " +
                                std::to_string(d.value("index_b", 0)) + " in B");
    if (!Str(d, "autograd_node").empty()) {
      out += Fact("autograd node", "<code>" + Escape(Str(d, "autograd_node")) + "</code>");
    }
    if (Has(d, "enclosing") && !d["enclosing"].empty()) {
      std::string list;
      for (const json& op : d["enclosing"])
        list += (list.empty() ? "" : " &larr; ") + Escape(op.get<std::string>());
      out += Fact("inside", list);
    }
  }
  if (!Str(rank, "setup").empty()) out += Fact("set up differently", Escape(Str(rank, "setup")));
  out += NotComparedFact(rank);
  out += Fact("steps compared", std::to_string(rank.value("steps_compared", 0)) + " (" +
                                    std::to_string(rank.value("steps_identical", 0)) +
                                    " identical by step digest)");
  out += "</dl>\n";
  if (d.is_object()) {
    out += SlotsTable(d["inputs"], "inputs") + SlotsTable(d["outputs"], "outputs");
  }
  return out + "</section>\n";
}

// How the divergence spread through its step: every op against the size of its difference.
std::string SpreadPlot(const json& spread) {
  const json& ops = spread["ops"];
  double top = 1e-6;
  for (const json& op : ops) top = std::max(top, op.value("relative", 0.0));
  top = std::pow(10.0, std::ceil(std::log10(top * 2)));
  svg::Plot plot(880, 260,
                 {0, std::max(1.0, double(ops.size()) - 1), false, "op index in the step (run A)"},
                 {kFloor, top, true, "relative L2 difference"});
  const size_t divergent = spread.value("divergent_index", size_t{0});
  size_t differing = 0;
  for (const json& op : ops) {
    const size_t index = op.value("index", size_t{0});
    const bool paired = op.value("paired", true), differs = op.value("differs", false);
    double y = kFloor;
    std::string cls = "op same", color = kQuiet;
    if (!paired) {
      cls = "op unpaired", color = kWarn, y = top;
    } else if (differs) {
      ++differing;
      cls = "op differs", color = kAccent;
      y = op.value("measured", false) ? std::max(kFloor * 10, op.value("relative", 0.0)) : top;
    }
    if (index == divergent) cls += " culprit", color = kBad;
    const size_t named = op.value("named", index);
    const std::string title =
        "#" + std::to_string(index) + " " + Str(op, "op") + " " + Str(op, "module") +
        (named != index ? ", inside #" + std::to_string(named) : "") +
        (differs ? " (rel. difference " + Number(op.value("relative", 0.0), 3) + ")" : "");
    plot.Point(double(index), y, cls, color, index == divergent ? 4.5 : 1.8, title);
  }
  plot.Marker(double(divergent), "divergence", kBad, true, "first divergence");
  std::string out = "<p class=\"key\"><span style=\"color:" + std::string(kQuiet) +
                    "\">&#9679; identical</span><span style=\"color:" + kAccent +
                    "\">&#9679; differs</span><span style=\"color:" + kWarn +
                    "\">&#9679; only in A</span><span style=\"color:" + kBad +
                    "\">&#9679; the divergence</span></p>\n";
  out +=
      plot.Svg("how the divergence spread through step " + std::to_string(spread.value("step", 0)));
  out += "<p class=\"muted\">" + std::to_string(ops.size()) + " ops in step " +
         std::to_string(spread.value("step", 0)) + " of run A, " + std::to_string(differing) +
         " with outputs that differ; " + std::to_string(spread.value("only_b", size_t{0})) +
         " ops of run B without counterpart. The size is |L2(A) &minus; L2(B)| / L2(A) of the "
         "op's outputs, from the recorded statistics: a lower bound of the relative difference; "
         "an op whose digests differ with equal norms is drawn at the top.</p>\n";
  return out;
}

// A relative difference |b - a| / |a| (1 when a is 0 and b is not).
double Relative(double a, double b) {
  if (a == b) return 0;
  return a != 0 ? std::abs(b - a) / std::abs(a) : 1.0;
}

// Across the steps: the loss's and the model state's relative difference per step (log scale,
// identical steps on the floor), then a table: the first op that differs and the losses.
std::string StepsPlot(const json& spread) {
  const json& steps = spread["steps"];
  if (!steps.is_array() || steps.empty()) return "";
  const double first = steps.front().value("step", 0.0), last = steps.back().value("step", 0.0);
  double top = 1e-6;
  for (const json& step : steps) {
    if (Has(step, "state_relative")) top = std::max(top, step["state_relative"].get<double>());
    if (Has(step, "loss_a") && Has(step, "loss_b")) {
      top = std::max(top, Relative(step["loss_a"].get<double>(), step["loss_b"].get<double>()));
    }
  }
  top = std::pow(10.0, std::ceil(std::log10(top * 2)));
  svg::Plot plot(880, 220, {first, std::max(last, first + 1), false, "step"},
                 {kFloor, top, true, "relative difference"});
  std::vector<std::pair<double, double>> state;
  for (const json& step : steps) {
    const double at = step.value("step", 0.0);
    if (Has(step, "state_relative")) {
      state.push_back({at, std::max(kFloor, step["state_relative"].get<double>())});
    }
  }
  plot.Line(state, "step-state", kAccent);
  for (const json& step : steps) {
    const double at = step.value("step", 0.0);
    if (!step.value("identical", false)) plot.Span(at - 0.02, at + 0.02, "step-differs", "#fde2e2");
    if (Has(step, "loss_a") && Has(step, "loss_b")) {
      const double a = step["loss_a"].get<double>(), b = step["loss_b"].get<double>();
      plot.Point(
          at, std::max(kFloor, Relative(a, b)), "step-loss", kBad, 3,
          "step " + std::to_string(int(at)) + ": loss " + Number(a, 9) + " vs " + Number(b, 9));
    }
  }
  if (spread.value("found", false)) {
    plot.Marker(spread.value("step", 0.0), "divergent-step", kBad, true, "first divergence");
  }
  std::string out = "<p class=\"key\"><span style=\"color:" + std::string(kBad) +
                    "\">&#9679; the loss</span><span style=\"color:" + kAccent +
                    "\">&#9473; the model's tensors at the step's end (largest)</span>"
                    "<span style=\"color:#e8a0a0\">&#9632; a step that differs</span></p>\n" +
                    plot.Svg("the difference across steps") +
                    "<table class=\"steps\"><tr><th>step</th><th>ops</th><th>first op that "
                    "differs</th><th>loss A</th><th>loss B</th></tr>\n";
  constexpr size_t kRows = 40;
  for (size_t row = 0; row < steps.size() && row < kRows; ++row) {
    const json& step = steps[row];
    out += "<tr class=\"step\"><td class=\"num\">" + std::to_string(step.value("step", 0)) +
           "</td><td class=\"num\">" + std::to_string(step.value("ops", 0)) + "</td><td>";
    if (step.value("identical", false)) {
      out += "<span class=\"same\">identical (step digest)</span>";
    } else if (Has(step, "first_differing")) {
      out += "<span class=\"differs\">#" + std::to_string(step["first_differing"].get<size_t>()) +
             "</span>";
    } else {
      out += "<span class=\"muted\">no op differs (the step's structure does)</span>";
    }
    for (const char* key : {"loss_a", "loss_b"}) {
      out += "</td><td class=\"num\">" +
             (Has(step, key) ? Number(step[key].get<double>(), 9) : std::string("-"));
    }
    out += "</td></tr>\n";
  }
  out += "</table>\n";
  if (steps.size() > kRows) {
    out += "<p class=\"muted\">" + std::to_string(steps.size() - kRows) +
           " more steps in the plot.</p>\n";
  }
  return out;
}

// The module tree of the divergent step: per module, ops, ops that differ, where first, the
// largest difference. Diverged branches are open.
struct Node {
  std::string name;
  size_t ops = 0, differing = 0;
  std::optional<size_t> first;
  double largest = 0;
  std::map<std::string, std::unique_ptr<Node>> children;
};

std::string RenderNode(const Node& node, const std::string& path) {
  std::string out;
  for (const auto& [name, child] : node.children) {
    const std::string full = path.empty() ? name : path + "." + name;
    const bool diverged = child->differing > 0;
    std::string label = "<code>" + Escape(name) + "</code> <span class=\"muted\">" +
                        std::to_string(child->ops) + " ops</span>";
    if (diverged) {
      label += " <span class=\"differs\">" + std::to_string(child->differing) + " differ, first #" +
               std::to_string(*child->first) + ", largest " + Number(child->largest, 3) + "</span>";
    } else {
      label += " <span class=\"same\">identical</span>";
    }
    out += "<li class=\"module" + std::string(diverged ? " diverged" : "") + "\" data-module=\"" +
           Escape(full) + "\">";
    if (child->children.empty()) {
      out += label;
    } else {
      out += "<details" + std::string(diverged ? " open" : "") + "><summary>" + label +
             "</summary><ul class=\"tree\">" + RenderNode(*child, full) + "</ul></details>";
    }
    out += "</li>\n";
  }
  return out;
}

std::string ModuleTree(const json& spread) {
  Node root;
  for (const json& op : spread["ops"]) {
    std::string module = Str(op, "module");
    if (module.empty()) module = "(outside modules)";
    Node* node = &root;
    size_t begin = 0;
    while (true) {
      const size_t dot = module.find('.', begin);
      const std::string part =
          module.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
      std::unique_ptr<Node>& child = node->children[part];
      if (!child) child = std::make_unique<Node>(), child->name = part;
      node = child.get();
      ++node->ops;
      if (op.value("differs", false) || !op.value("paired", true)) {
        ++node->differing;
        // Numbered as the verdict card and the step table number it (spread.h, named).
        if (!node->first) node->first = op.value("named", op.value("index", size_t{0}));
        node->largest = std::max(node->largest, op.value("relative", 0.0));
      }
      if (dot == std::string::npos) break;
      begin = dot + 1;
    }
  }
  return "<ul class=\"tree\" id=\"modules\">\n" + RenderNode(root, "") + "</ul>\n";
}

std::string SetupAndStructure(const json& model, const json& rank) {
  std::string items;
  for (const json& note : model.value("notes", json::array()))
    items += "<li>" + Escape(note.get<std::string>()) + "</li>";
  for (const json& note : rank.value("notes", json::array()))
    items += "<li>" + Escape(note.get<std::string>()) + "</li>";
  if (Has(model, "environment")) {
    for (const json& env : model["environment"])
      items += "<li>environment: " + Escape(env.get<std::string>()) + "</li>";
  }
  if (!Str(rank, "setup").empty())
    items += "<li>set up differently: " + Escape(Str(rank, "setup")) + "</li>";
  std::string out = items.empty() ? "<p class=\"muted\">No setup difference found (random "
                                    "state, data, environment, model state).</p>\n"
                                  : "<ul class=\"setup\">" + items + "</ul>\n";
  if (Has(rank, "structural_summary")) {
    const json& summary = rank["structural_summary"];
    out += "<h3>Structural differences</h3>\n<p>" +
           std::to_string(summary.value("only_a_count", 0)) + " ops only in A, " +
           std::to_string(summary.value("only_b_count", 0)) + " only in B, in " +
           std::to_string(summary.value("blocks", 0)) +
           " places.</p>\n<table class=\"structural\">"
           "<tr><th>module</th><th>op</th><th>only in A</th><th>only in B</th></tr>\n";
    for (const json& group : summary.value("groups", json::array())) {
      out += "<tr><td><code>" + Escape(Str(group, "module")) + "</code></td><td><code>" +
             Escape(Str(group, "op")) + "</code></td><td class=\"num\">" +
             std::to_string(group.value("only_a", 0)) + "</td><td class=\"num\">" +
             std::to_string(group.value("only_b", 0)) + "</td></tr>\n";
    }
    out += "</table>\n";
  }
  return out;
}

// Several ranks: the origin, the path through the collectives, and ranks x steps.
std::string AcrossRanks(const json& model) {
  const json& across = model["across_ranks"];
  std::string out =
      "<h2>Across ranks</h2>\n<table class=\"ranks\"><tr><th>rank</th><th>role"
      "</th><th>verdict</th><th>first divergence</th></tr>\n";
  for (const json& rank : across.value("ranks", json::array())) {
    const std::string role = Str(rank, "role");
    std::string first;
    if (Has(rank, "first")) {
      const json& at = rank["first"];
      std::string op = Str(at, "op");
      if (Has(at, "op_b")) {  // a structural origin: run A's op there -> run B's
        const std::string op_b = Str(at, "op_b");
        op = (op.empty() ? "(none)" : op) + " -> " + (op_b.empty() ? "(none)" : op_b);
      }
      first = "step " + std::to_string(at.value("step", 0)) + " #" +
              std::to_string(at.value("index", 0)) + " " + Escape(op);
    }
    out += "<tr class=\"rank " + Escape(role) + "\"><td class=\"num\">" +
           std::to_string(rank.value("rank", 0)) + "</td><td" +
           (role == "origin" ? " class=\"differs\"" : "") + ">" + Escape(role) + "</td><td>" +
           Escape(Str(rank, "verdict")) + "</td><td>" + first + "</td></tr>\n";
  }
  out += "</table>\n";
  if (Has(across, "collectives") && !across["collectives"].empty()) {
    out += "<h3>Through the collectives</h3>\n<ul>";
    for (const json& c : across["collectives"]) {
      std::string senders, receivers;
      for (const json& r : c.value("senders", json::array()))
        senders += (senders.empty() ? "" : ", ") + std::to_string(r.get<int>());
      for (const json& r : c.value("receivers", json::array()))
        receivers += (receivers.empty() ? "" : ", ") + std::to_string(r.get<int>());
      out += "<li><code>" + Escape(Str(c, "name")) + "</code> (step " +
             std::to_string(c.value("step", 0)) + "): from rank " + senders + " to rank " +
             receivers + "</li>";
    }
    out += "</ul>\n";
  }
  // ranks x steps: identical, differing, not compared.
  std::vector<std::pair<int, const json*>> grids;
  uint32_t first = UINT32_MAX, last = 0;
  for (const json& rank : model["ranks"]) {
    if (!Has(rank, "spread")) continue;
    grids.push_back({rank.value("rank", 0), &rank["spread"]["steps"]});
    for (const json& step : rank["spread"]["steps"]) {
      first = std::min(first, step.value("step", 0u));
      last = std::max(last, step.value("step", 0u));
    }
  }
  if (grids.empty() || first > last) return out;
  const double rows = double(grids.size());
  svg::Plot plot(880, 60 + 22 * rows, {double(first), double(last) + 1, false, "step"},
                 {0, rows, false, "rank"});
  for (size_t row = 0; row < grids.size(); ++row) {
    for (const json& step : *grids[row].second) {
      const double at = step.value("step", 0u);
      const bool identical = step.value("identical", false);
      plot.Cell(at + 0.05, at + 0.95, rows - double(row) - 0.9, rows - double(row) - 0.1,
                identical ? "cell identical" : "cell differs", identical ? kOk : kBad,
                "rank " + std::to_string(grids[row].first) + ", step " + std::to_string(int(at)) +
                    (identical ? ": identical" : ": differs"));
    }
  }
  out += "<h3>Ranks &times; steps</h3>\n" + plot.Svg("ranks by steps") +
         "<p class=\"muted\">Rows from the top: " + std::to_string(grids.size()) +
         " ranks in rank order; green identical, red differs.</p>\n";
  return out;
}

}  // namespace

std::string RenderDiffHtml(const json& model) {
  const std::string verdict = Str(model, "verdict");
  std::string body = "<h1>upguard diff: " + Escape(verdict) +
                     "</h1>\n<p class=\"muted\">A: <code>" + Escape(Str(model, "run_a")) +
                     "</code><br>B: <code>" + Escape(Str(model, "run_b")) + "</code></p>\n";
  // The rank the verdict is about: the origin across ranks, else the first that diverged.
  const json ranks = model.value("ranks", json::array());
  json focus = ranks.empty() ? json::object() : ranks[0];
  int first_rank = -1;
  if (Has(model, "across_ranks") && Has(model["across_ranks"], "first_rank")) {
    first_rank = model["across_ranks"]["first_rank"].get<int>();
  }
  for (const json& rank : ranks) {
    if (first_rank >= 0 ? rank.value("rank", -1) == first_rank
                        : Str(rank, "verdict") != "identical") {
      focus = rank;
      break;
    }
  }
  body += VerdictCard(model, focus);
  if (Has(focus, "spread") && focus["spread"].value("found", false)) {
    body += "<h2>How it spread</h2>\n" + SpreadPlot(focus["spread"]) +
            "<h3>Across the steps compared</h3>\n" + StepsPlot(focus["spread"]) +
            "<h2>Modules in step " + std::to_string(focus["spread"].value("step", 0)) + "</h2>\n" +
            ModuleTree(focus["spread"]);
  } else if (Has(focus, "spread")) {
    body += "<h2>Steps compared</h2>\n" + StepsPlot(focus["spread"]);
  }
  if (Has(model, "explain")) body += "<h2>Elements</h2>\n" + ElementView(model["explain"]);
  body += "<h2>Setup and structure</h2>\n" + SetupAndStructure(model, focus);
  if (Has(model, "across_ranks")) body += AcrossRanks(model);
  body +=
      "<p class=\"muted\">Generated by <code>upguard diff --html</code> from the model "
      "<code>--json</code> prints (schema upguard.diff/1).</p>\n";
  return html::Page("upguard diff: " + verdict, body);
}

}  // namespace upguard
