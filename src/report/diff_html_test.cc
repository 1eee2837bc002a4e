#include "report/diff_html.h"

#include <gtest/gtest.h>

#include <string>

namespace upguard {
namespace {

using nlohmann::json;

size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

json Op(size_t index, const std::string& op, const std::string& module, bool differs,
        double relative, bool paired = true) {
  return {{"index", index},       {"op", op},          {"module", module},   {"phase", "forward"},
          {"depth", 0},           {"paired", paired},  {"differs", differs}, {"measured", true},
          {"relative", relative}, {"nonfinite", false}};
}

json Culprit() {
  json slot_in = {{"index", 0},
                  {"name", "self"},
                  {"equal", true},
                  {"compared", true},
                  {"a", {{"kind", "tensor"}, {"dtype", "float32"}, {"shape", {8, 32}}}},
                  {"b", {{"kind", "tensor"}, {"dtype", "float32"}, {"shape", {8, 32}}}}};
  json slot_out = slot_in;
  slot_out["name"] = "result0";
  slot_out["equal"] = false;
  slot_out["a"]["stats"] = {{"l2", 2.0}};
  slot_out["b"]["stats"] = {{"l2", 2.5}};
  json spread = {
      {"found", true},
      {"step", 2},
      {"divergent_index", 2},
      {"only_b", 1},
      {"ops", json::array({Op(0, "aten::mm", "blocks.0.fc", false, 0),
                           Op(1, "aten::add", "blocks.0.fc", false, 0),
                           Op(2, "aten::gelu", "blocks.1.<act>", true, 1e-3),
                           Op(3, "aten::mm", "blocks.1.proj", true, 2e-3),
                           Op(4, "aten::copy_", "", false, 0, false)})},
      {"steps",
       json::array({{{"step", 1}, {"identical", true}, {"ops", 5}, {"first_differing", nullptr}},
                    {{"step", 2}, {"identical", false}, {"ops", 5}, {"first_differing", 2}}})}};
  return {{"schema", "upguard.diff/1"},
          {"verdict", "culprit"},
          {"run_a", "runs/a"},
          {"run_b", "runs/b"},
          {"notes", json::array()},
          {"ranks", json::array({{{"rank", 0},
                                  {"verdict", "culprit"},
                                  {"steps_compared", 2},
                                  {"steps_identical", 1},
                                  {"spread", spread},
                                  {"divergence",
                                   {{"verdict", "culprit"},
                                    {"op", "aten::gelu"},
                                    {"phase", "forward"},
                                    {"step", 2},
                                    {"module", "blocks.1.<act>"},
                                    {"call_site", "model.py:9"},
                                    {"source", "h = act(x)"},
                                    {"index", 2},
                                    {"index_b", 2},
                                    {"inputs", json::array({slot_in})},
                                    {"outputs", json::array({slot_out})}}}}})}};
}

TEST(DiffHtml, CulpritPageShowsTheVerdictTheSpreadAndTheModules) {
  const std::string page = RenderDiffHtml(Culprit());
  EXPECT_NE(page.find("<span class=\"badge bad\">culprit</span><strong class=\"op\">aten::gelu"),
            std::string::npos);
  EXPECT_NE(page.find("blocks.1.&lt;act&gt;"), std::string::npos);  // escaped
  EXPECT_EQ(page.find("blocks.1.<act>"), std::string::npos);
  EXPECT_NE(page.find("<code class=\"source\">h = act(x)</code>"), std::string::npos);
  EXPECT_NE(page.find("L2 2 vs 2.5 (25%)"), std::string::npos);
  EXPECT_EQ(Count(page, "<circle class=\"op"), 5u);  // one point per op of the step
  EXPECT_EQ(Count(page, "culprit\""), 1u);
  EXPECT_EQ(Count(page, "<circle class=\"op unpaired"), 1u);
  EXPECT_NE(page.find("data-module=\"blocks.1.&lt;act&gt;\""), std::string::npos);
  EXPECT_NE(page.find("<details open><summary><code>blocks</code>"), std::string::npos);
  EXPECT_NE(page.find("1 ops of run B without counterpart"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
}

TEST(DiffHtml, IdenticalPageHasNoSpread) {
  json model = Culprit();
  model["verdict"] = "identical";
  model["ranks"][0]["verdict"] = "identical";
  model["ranks"][0].erase("divergence");
  model["ranks"][0]["spread"] = {{"found", false}, {"steps", json::array()}};
  const std::string page = RenderDiffHtml(model);
  EXPECT_NE(page.find("the runs are identical in every step compared"), std::string::npos);
  EXPECT_EQ(Count(page, "<circle"), 0u);
}

TEST(DiffHtml, SeveralRanksDrawTheOriginAndTheGrid) {
  json model = Culprit();
  json other = model["ranks"][0];
  other["rank"] = 1;
  model["ranks"].push_back(other);
  model["across_ranks"] = {
      {"first_rank", 1},
      {"origins", {1}},
      {"collectives", json::array({{{"name", "c10d::allreduce_ #7 in group 0 [0,1]"},
                                    {"step", 2},
                                    {"senders", {1}},
                                    {"receivers", {0}}}})},
      {"ranks", json::array({{{"rank", 0}, {"role", "receiver"}, {"verdict", "propagated"}},
                             {{"rank", 1}, {"role", "origin"}, {"verdict", "culprit"}}})}};
  const std::string page = RenderDiffHtml(model);
  EXPECT_NE(page.find("<tr class=\"rank origin\">"), std::string::npos);
  EXPECT_NE(page.find("from rank 1 to rank 0"), std::string::npos);
  EXPECT_EQ(Count(page, "<rect class=\"cell identical\""), 2u);  // step 1 of each rank
  EXPECT_EQ(Count(page, "<rect class=\"cell differs\""), 2u);
}

TEST(DiffHtml, AStructuralOriginShowsBothRunsOps) {
  json model = Culprit();
  model["across_ranks"] = {
      {"first_rank", 0},
      {"origins", {0}},
      {"ranks", json::array({{{"rank", 0},
                              {"role", "origin"},
                              {"verdict", "structural"},
                              {"first",
                               {{"step", 0},
                                {"index", 12},
                                {"op", "aten::relu_"},
                                {"op_b", "aten::leaky_relu"}}}}})}};
  const std::string page = RenderDiffHtml(model);
  EXPECT_NE(page.find("<td>step 0 #12 aten::relu_ -&gt; aten::leaky_relu</td>"), std::string::npos);
}

}  // namespace
}  // namespace upguard
