#include <gtest/gtest.h>

#include "base/glob.h"
#include "upguard/recorder.h"

namespace upguard {
namespace {

TEST(StepRangeTest, ParsesEveryForm) {
  StepRange range = *ParseStepRange("2:5");
  EXPECT_EQ(range.first, 2);
  EXPECT_EQ(range.last, 5);
  EXPECT_TRUE(range.Contains(2));
  EXPECT_TRUE(range.Contains(4));
  EXPECT_FALSE(range.Contains(5));
  EXPECT_FALSE(range.Contains(1));

  range = *ParseStepRange("3");
  EXPECT_TRUE(range.Contains(3));
  EXPECT_FALSE(range.Contains(4));

  range = *ParseStepRange("7:");
  EXPECT_TRUE(range.Contains(1000000));
  EXPECT_FALSE(range.Contains(6));

  range = *ParseStepRange(":2");
  EXPECT_TRUE(range.Contains(0));
  EXPECT_FALSE(range.Contains(2));
}

TEST(StepRangeTest, RejectsBadTextAndNamesIt) {
  for (const char* bad : {"", "a", "1:b", "-1", "5:5", "6:2", "1:2:3"}) {
    StatusOr<StepRange> range = ParseStepRange(bad);
    ASSERT_FALSE(range.ok()) << bad;
    EXPECT_NE(range.status().message().find(std::string("'") + bad + "'"), std::string::npos);
  }
}

TEST(ByteSizeTest, ParsesDigitsAndBinarySuffixes) {
  EXPECT_EQ(*ParseByteSize("500000", "--max-bytes"), 500000u);
  EXPECT_EQ(*ParseByteSize("100K", "--max-bytes"), 100u << 10);
  EXPECT_EQ(*ParseByteSize("10m", "--max-bytes"), 10u << 20);
  EXPECT_EQ(*ParseByteSize("1G", "--max-bytes"), uint64_t{1} << 30);
  EXPECT_EQ(*ParseByteSize("2T", "--max-bytes"), uint64_t{2} << 40);
  for (const char* bad : {"", "K", "10MB", "-1", "1.5G", " 1", "99999999999999T"}) {
    const Status status = ParseByteSize(bad, "--max-bytes").status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(status.message().rfind("--max-bytes '" + std::string(bad) + "'", 0), 0u)
        << status.message();
  }
}

TEST(GlobTest, MatchesStarAndQuestionMark) {
  EXPECT_TRUE(GlobMatch("aten::*", "aten::gelu"));
  EXPECT_TRUE(GlobMatch("*gelu*", "aten::gelu_backward"));
  EXPECT_TRUE(GlobMatch("aten::add?", "aten::add_"));
  EXPECT_FALSE(GlobMatch("aten::add?", "aten::add"));
  EXPECT_FALSE(GlobMatch("aten::mm", "aten::mm_"));
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("a*b*c", "aXXbYYbc"));
  EXPECT_FALSE(GlobMatch("a*b*c", "aXXbYYb"));
}

}  // namespace
}  // namespace upguard
