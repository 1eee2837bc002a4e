#include "recorder/capture_selector.h"

#include <gtest/gtest.h>

namespace upguard {
namespace {

TEST(CaptureSelectorTest, ParsesEveryTermAndPrintsItBack) {
  StatusOr<CaptureSelector> sel =
      ParseCaptureSelector("step=2,index=1234,op=aten::g*,module=blocks.1.*,phase=forward,stop");
  ASSERT_TRUE(sel.ok()) << sel.status().ToString();
  EXPECT_EQ(*sel->step, 2);
  EXPECT_EQ(sel->indices, std::vector<uint64_t>{1234u});
  EXPECT_EQ(sel->op, "aten::g*");
  EXPECT_EQ(sel->module, "blocks.1.*");
  EXPECT_EQ(*sel->phase, Phase::kForward);
  EXPECT_EQ(sel->limit, 1u);  // an index selects one op unless told otherwise
  EXPECT_TRUE(sel->stop);
  EXPECT_EQ(sel->ToString(),
            "step=2,index=1234,op=aten::g*,module=blocks.1.*,phase=forward,limit=1,stop");
  StatusOr<CaptureSelector> again = ParseCaptureSelector(sel->ToString());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ToString(), sel->ToString());

  StatusOr<CaptureSelector> by_name = ParseCaptureSelector("op=aten::gelu");
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ(by_name->limit, 16u);
  EXPECT_FALSE(by_name->step.has_value());
}

// upguard calibrate captures one op of each identity that varies: several indices, one limit
// each.
TEST(CaptureSelectorTest, SeveralIndices) {
  StatusOr<CaptureSelector> sel = ParseCaptureSelector("step=0,index=977|12|40|12");
  ASSERT_TRUE(sel.ok()) << sel.status().ToString();
  EXPECT_EQ(sel->indices, (std::vector<uint64_t>{12, 40, 977}));
  EXPECT_EQ(sel->limit, 3u);
  EXPECT_EQ(sel->ToString(), "step=0,index=12|40|977,limit=3");
  EXPECT_TRUE(sel->Matches(0, 40, 0, "aten::mm", "", Phase::kForward));
  EXPECT_FALSE(sel->Matches(0, 41, 0, "aten::mm", "", Phase::kForward));
  EXPECT_TRUE(sel->IndexIn(30, 10));
  EXPECT_FALSE(sel->IndexIn(41, 100));
  EXPECT_FALSE(sel->IndexIn(13, 26));
  EXPECT_FALSE(ParseCaptureSelector("index=1||2").ok());
}

// diff --explain: the op by its position among the step's ops outside the input pipeline,
// which input ops never match (their position is the next compared op's).
TEST(CaptureSelectorTest, PositionSelectsAnOpOutsideTheInputPipeline) {
  StatusOr<CaptureSelector> sel = ParseCaptureSelector("step=2,position=1180,stop");
  ASSERT_TRUE(sel.ok()) << sel.status().ToString();
  EXPECT_EQ(sel->positions, std::vector<uint64_t>{1180u});
  EXPECT_TRUE(sel->indices.empty());
  EXPECT_EQ(sel->limit, 1u);
  EXPECT_EQ(sel->ToString(), "step=2,position=1180,limit=1,stop");
  EXPECT_TRUE(sel->Matches(2, 1195, 1180, "aten::gelu", "", Phase::kForward));
  EXPECT_TRUE(sel->Matches(2, 1203, 1180, "aten::gelu", "", Phase::kForward));
  EXPECT_FALSE(sel->Matches(2, 1195, 1180, "aten::stack", "", Phase::kInput));
  EXPECT_FALSE(sel->Matches(2, 1195, 1181, "aten::gelu", "", Phase::kForward));
  EXPECT_FALSE(sel->Matches(3, 1195, 1180, "aten::gelu", "", Phase::kForward));
  EXPECT_TRUE(sel->PositionIn(1170, 10));
  EXPECT_FALSE(sel->PositionIn(1181, 100));
  EXPECT_TRUE(sel->IndexIn(5, 0));  // no index term
  StatusOr<CaptureSelector> ranked = ParseCaptureSelector("step=2,rank=1,position=9,stop");
  ASSERT_TRUE(ranked.ok()) << ranked.status().ToString();
  EXPECT_EQ(*ranked->rank, 1);
  EXPECT_EQ(ranked->ToString(), "step=2,rank=1,position=9,limit=1,stop");
  EXPECT_FALSE(ParseCaptureSelector("rank=-1").ok());
  StatusOr<CaptureSelector> both = ParseCaptureSelector("index=4|9,position=3");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->limit, 1u);
  EXPECT_FALSE(both->Matches(0, 4, 2, "x", "", Phase::kForward));
  EXPECT_TRUE(both->Matches(0, 9, 3, "x", "", Phase::kForward));
  EXPECT_FALSE(ParseCaptureSelector("position=x").ok());
}

TEST(CaptureSelectorTest, MatchesEveryTermAndMayMatchIgnoresTheIndex) {
  StatusOr<CaptureSelector> sel = ParseCaptureSelector("step=2,index=7,op=aten::gelu,module=b.*");
  ASSERT_TRUE(sel.ok());
  EXPECT_TRUE(sel->Matches(2, 7, 3, "aten::gelu", "b.mlp", Phase::kForward));
  EXPECT_FALSE(sel->Matches(2, 8, 3, "aten::gelu", "b.mlp", Phase::kForward));
  EXPECT_TRUE(sel->MayMatch(2, "aten::gelu", "b.mlp", Phase::kForward));
  EXPECT_FALSE(sel->MayMatch(3, "aten::gelu", "b.mlp", Phase::kForward));
  EXPECT_FALSE(sel->MayMatch(2, "aten::gelu_", "b.mlp", Phase::kForward));
  EXPECT_FALSE(sel->MayMatch(2, "aten::gelu", "a.mlp", Phase::kForward));
  StatusOr<CaptureSelector> backward = ParseCaptureSelector("phase=backward");
  ASSERT_TRUE(backward.ok());
  EXPECT_FALSE(backward->MayMatch(0, "x", "", Phase::kForward));
  EXPECT_TRUE(backward->MayMatch(0, "x", "", Phase::kBackward));
}

TEST(CaptureSelectorTest, CapturePathNamesRankStepAndIndex) {
  EXPECT_EQ(CapturePath("runs/a", 3, 2, 731), "runs/a/captures/rank3.step2.op731.safetensors");
}

TEST(CaptureSelectorTest, ErrorsQuoteTheTermAndListTheKeys) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {
           Case{"", "--capture: empty selector; terms are step=N"},
           Case{"step=x", "--capture 'step=x': term 'step=x' needs a non-negative integer"},
           Case{"step=-1", "term 'step=-1' needs a non-negative integer"},
           Case{"index=3,limit=0", "term 'limit=0' must be at least 1"},
           Case{"phase=fwd", "term 'phase=fwd' names no phase"},
           Case{"layer=3", "term 'layer=3' has an unknown key; terms are step=N, rank=N, index=N"},
           Case{"step=2,", "term '' is not KEY=VALUE"},
           Case{"op=", "term 'op=' is not KEY=VALUE"},
       }) {
    StatusOr<CaptureSelector> sel = ParseCaptureSelector(c.text);
    ASSERT_FALSE(sel.ok()) << c.text;
    EXPECT_NE(sel.status().message().find(c.message), std::string::npos) << sel.status().message();
  }
}

}  // namespace
}  // namespace upguard
