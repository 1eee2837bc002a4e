#include "watch/report_html.h"

#include <gtest/gtest.h>

#include <string>

namespace upguard::watch {
namespace {

using Json = nlohmann::ordered_json;

size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

Json Slot(uint64_t seq, double issued, Json completed) {
  return {{"op", "allreduce"}, {"group", "0"},           {"seq", seq},
          {"issued", issued},  {"completed", completed}, {"call_site", "train.py:9"}};
}

// Rank 1 hangs in Python: rank 0 waits in seq 18, which rank 1 never issued.
TEST(WatchHtml, TheStalledCollectiveAndTheRankThatNeverArrived) {
  Json report = {
      {"schema", "upguard.watch/1"},
      {"dir", "runs/w"},
      {"time", "2026-12-05T04:54:30.321Z"},
      {"findings",
       Json::array({{{"time", "2026-12-05T04:54:30.321Z"},
                     {"trigger", "stall"},
                     {"ranks", {1}},
                     {"cause", "python"},
                     {"collective", "allreduce float32[105472] in group 0, seq 18 (gpt.py:145)"},
                     {"detail", "rank 0 waits 3.6 s in it; rank 1 never issued it"},
                     {"stack", {"gpt_ddp.py:156 in <module>", "gpt_ddp.py:140 in main"}}}})},
      {"ranks",
       Json::array({{{"rank", 0},
                     {"host", "h"},
                     {"pid", 10},
                     {"process", "running"},
                     {"step", 12},
                     {"last_op", "aten::add_"},
                     {"collectives", 18},
                     {"recent", Json::array({Slot(16, 5.0, 4.9), Slot(17, 4.2, 4.1),
                                             Slot(18, 3.6, nullptr)})}},
                    {{"rank", 1},
                     {"host", "h"},
                     {"pid", 11},
                     {"process", "running"},
                     {"step", 12},
                     {"last_op", "aten::copy_"},
                     {"collectives", 17},
                     {"recent", Json::array({Slot(16, 5.0, 4.9), Slot(17, 4.2, 4.1)})}}})}};
  const std::string page = RenderWatchHtml(report);
  EXPECT_NE(page.find("<h1>upguard watch: 1 finding</h1>"), std::string::npos);
  EXPECT_NE(page.find("data-trigger=\"stall\""), std::string::npos);
  EXPECT_NE(page.find("gpt_ddp.py:140 in main"), std::string::npos);
  EXPECT_EQ(Count(page, "<rect class=\"collective"), 5u);
  EXPECT_EQ(Count(page, "<rect class=\"collective in-flight stalled\""), 1u);  // rank 0's seq 18
  EXPECT_EQ(Count(page, "class=\"named\""), 1u);                               // rank 1's label
  EXPECT_NE(page.find("rank 1</span> never issued collective 18 of group 0."), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
}

TEST(WatchHtml, NoFindings) {
  Json report = {{"schema", "upguard.watch/1"},
                 {"dir", "d"},
                 {"time", "t"},
                 {"findings", Json::array()},
                 {"ranks", Json::array()}};
  const std::string page = RenderWatchHtml(report);
  EXPECT_NE(page.find("No rank hangs or lags."), std::string::npos);
}

}  // namespace
}  // namespace upguard::watch
