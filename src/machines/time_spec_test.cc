#include "machines/time_spec.h"

#include <gtest/gtest.h>

namespace upguard::machines {
namespace {

constexpr double kNow = 1733333600;  // 2024-12-04T17:33:20Z

double Parsed(const char* text) {
  StatusOr<double> seconds = ParseTimeSpec(text, kNow);
  EXPECT_TRUE(seconds.ok()) << text << ": " << seconds.status().message();
  return seconds.ok() ? *seconds : -1;
}

TEST(SourceTimeSpecTest, ReadsEpochSecondsAndRfc3339) {
  EXPECT_DOUBLE_EQ(Parsed("1733333600"), kNow);
  EXPECT_DOUBLE_EQ(Parsed("1733333600.25"), kNow + 0.25);
  EXPECT_DOUBLE_EQ(Parsed("2024-12-04T17:33:20Z"), kNow);
  EXPECT_DOUBLE_EQ(Parsed("2024-12-04t17:33:20.5z"), kNow + 0.5);
  EXPECT_DOUBLE_EQ(Parsed("2024-12-04 17:33:20Z"), kNow);
  EXPECT_DOUBLE_EQ(Parsed("2024-12-04T18:33:20+01:00"), kNow);
  EXPECT_DOUBLE_EQ(Parsed("2024-12-04T12:03:20.5-05:30"), kNow + 0.5);
}

TEST(SourceTimeSpecTest, ReadsNowAndTimesBeforeIt) {
  EXPECT_DOUBLE_EQ(Parsed("now"), kNow);
  EXPECT_DOUBLE_EQ(Parsed("-15m"), kNow - 900);
  EXPECT_DOUBLE_EQ(Parsed("now-15m"), kNow - 900);
  EXPECT_DOUBLE_EQ(Parsed("-30s"), kNow - 30);
  EXPECT_DOUBLE_EQ(Parsed("-1.5h"), kNow - 5400);
  EXPECT_DOUBLE_EQ(Parsed("-2d"), kNow - 2 * 86400);
  EXPECT_DOUBLE_EQ(Parsed("-1w"), kNow - 7 * 86400);
}

TEST(SourceTimeSpecTest, RejectsOtherTextsListingTheForms) {
  for (const char* bad :
       {"", "yesterday", "-15", "-15y", "15m", "+15m", "now+1h", "2024-12-04T17:33:20",
        "2024-12-04T17:33:20+1:00", "2024-13-04T17:33:20Z", "nan", "inf"}) {
    StatusOr<double> seconds = ParseTimeSpec(bad, kNow);
    ASSERT_FALSE(seconds.ok()) << bad;
    EXPECT_NE(seconds.status().message().find("RFC 3339"), std::string::npos);
  }
}

}  // namespace
}  // namespace upguard::machines
