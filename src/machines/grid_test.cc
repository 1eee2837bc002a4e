#include "machines/grid.h"

#include <gtest/gtest.h>

#include <cmath>

#include "machines/metrics_csv.h"

namespace upguard::machines {
namespace {

MetricSamples Parse(const std::string& body) {
  StatusOr<MetricSamples> samples = ParseMetricsCsv("time,machine,metric,value\n" + body, "t.csv");
  EXPECT_TRUE(samples.ok()) << samples.status().message();
  return samples.ok() ? *samples : MetricSamples{};
}

TEST(GridTest, StepIsTheMedianSpacingAndPointsHoldThenGap) {
  // a: every second, jittered; b: at 0, 1, then silent from 2 on.
  MetricSamples samples = Parse(
      "100.0,a,m,1\n101.1,a,m,2\n101.9,a,m,3\n103.0,a,m,4\n104.0,a,m,5\n105.0,a,m,6\n"
      "106.0,a,m,7\n100.0,b,m,10\n101.0,b,m,11\n");
  StatusOr<Grid> grid = MakeGrid(samples);
  ASSERT_TRUE(grid.ok()) << grid.status().message();
  EXPECT_DOUBLE_EQ(grid->step, 1.0);
  EXPECT_DOUBLE_EQ(grid->start, 100.0);
  ASSERT_EQ(grid->length, 7u);
  EXPECT_DOUBLE_EQ(grid->At(0, 0, 1), 2);
  EXPECT_DOUBLE_EQ(grid->At(0, 0, 2), 3);  // 101.9 rounds to point 2
  // b holds its last value for kHoldPoints points, then is a gap.
  EXPECT_DOUBLE_EQ(grid->At(0, 1, 1), 11);
  EXPECT_DOUBLE_EQ(grid->At(0, 1, 2), 11);
  EXPECT_DOUBLE_EQ(grid->At(0, 1, 3), 11);
  EXPECT_TRUE(std::isnan(grid->At(0, 1, 4)));
}

TEST(GridTest, FiveMinuteExportsKeepTheirResolution) {
  std::string body;
  for (int point = 0; point < 12; ++point) {
    for (const char* machine : {"x", "y", "z"}) {
      body += std::to_string(1733331200 + 300 * point) + "," + machine + ",cpu," +
              std::to_string(point) + "\n";
    }
  }
  StatusOr<Grid> grid = MakeGrid(Parse(body));
  ASSERT_TRUE(grid.ok());
  EXPECT_DOUBLE_EQ(grid->step, 300.0);
  EXPECT_EQ(grid->length, 12u);
  EXPECT_DOUBLE_EQ(grid->At(0, 2, 11), 11);
}

TEST(GridTest, SamplesInOnePointAreAveragedAndAStepCanBeGiven) {
  StatusOr<Grid> grid = MakeGrid(Parse("0,a,m,1\n1,a,m,3\n2,a,m,5\n3,a,m,7\n"), 2.0);
  ASSERT_TRUE(grid.ok());
  ASSERT_EQ(grid->length, 3u);
  EXPECT_DOUBLE_EQ(grid->At(0, 0, 0), 1);  // 0 -> point 0; 1 rounds half up to point 1
  EXPECT_DOUBLE_EQ(grid->At(0, 0, 1), 4);  // 1 and 2
  EXPECT_DOUBLE_EQ(grid->At(0, 0, 2), 7);
}

TEST(GridTest, TooManyPointsSaysWhatToPass) {
  StatusOr<Grid> grid = MakeGrid(Parse("0,a,m,1\n1e9,a,m,1\n"), 0.5);
  ASSERT_FALSE(grid.ok());
  EXPECT_NE(grid.status().message().find("--step"), std::string::npos);
  EXPECT_FALSE(MakeGrid(MetricSamples{}).ok());
}

}  // namespace
}  // namespace upguard::machines
