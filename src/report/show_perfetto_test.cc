#include "report/show_perfetto.h"

#include <gtest/gtest.h>

namespace upguard {
namespace {

using nlohmann::json;

json Op(size_t index, const std::string& name, int depth) {
  return {{"index", index},
          {"op", name},
          {"phase", "forward"},
          {"depth", depth},
          {"module", "fc"},
          {"call_site", "m.py:3"},
          {"outputs", json::array({{{"name", "result0"}, {"digest", "0123456789abcdef"}}})}};
}

// aten::linear encloses aten::t and aten::addmm, listed before it (completion order).
TEST(ShowPerfetto, NestedOpsBecomeNestedSlices) {
  json show = {
      {"rank", 1},
      {"steps",
       json::array({{{"step", 2},
                     {"ops", json::array({Op(0, "aten::t", 1), Op(1, "aten::addmm", 1),
                                          Op(2, "aten::linear", 0), Op(3, "aten::relu", 0)})}}})}};
  const json trace = ShowJsonToPerfetto(show, "runs/a");
  std::vector<json> slices;
  for (const json& event : trace["traceEvents"]) {
    if (event["ph"] == "X") slices.push_back(event);
  }
  ASSERT_EQ(slices.size(), 4u);
  EXPECT_EQ(slices[2]["name"], "aten::linear");
  EXPECT_EQ(slices[2]["ts"], 0);   // from its first nested op
  EXPECT_EQ(slices[2]["dur"], 3);  // through itself
  EXPECT_EQ(slices[1]["ts"], 1);
  EXPECT_EQ(slices[1]["dur"], 1);
  EXPECT_EQ(slices[3]["ts"], 3);
  EXPECT_EQ(slices[3]["tid"], 2);  // the step's track
  EXPECT_EQ(slices[3]["pid"], 1);  // the rank
  EXPECT_EQ(slices[3]["args"]["outputs"][0], "result0 01234567");
  EXPECT_EQ(trace["traceEvents"][0]["args"]["name"], "runs/a (rank 1)");
}

}  // namespace
}  // namespace upguard
