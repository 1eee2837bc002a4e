#include "machines/metrics_csv.h"

#include <gtest/gtest.h>

#include <string>

namespace upguard::machines {
namespace {

TEST(MetricsCsvTest, ReadsSamplesInAnyOrderAndSpacing) {
  const std::string text =
      "time,machine,metric,value\r\n"
      "1733331201,node-1,cpu_utilization,0.97\n"
      "\n"
      "1733331200,node-0,cpu_utilization,0.52\n"
      "1733331500.5,node-0,memory_used_bytes,1e9";  // no final newline
  StatusOr<MetricSamples> samples = ParseMetricsCsv(text, "m.csv");
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  ASSERT_EQ(samples->samples.size(), 3u);
  EXPECT_EQ(samples->machines, (std::vector<std::string>{"node-1", "node-0"}));
  EXPECT_EQ(samples->metrics, (std::vector<std::string>{"cpu_utilization", "memory_used_bytes"}));
  const Sample& last = samples->samples[2];
  EXPECT_EQ(samples->machines[last.machine], "node-0");
  EXPECT_EQ(samples->metrics[last.metric], "memory_used_bytes");
  EXPECT_DOUBLE_EQ(last.time, 1733331500.5);
  EXPECT_DOUBLE_EQ(last.value, 1e9);
  EXPECT_EQ(samples->time_form, TimeForm::kSeconds);
}

TEST(MetricsCsvTest, IsoTimesReadAndWriteBack) {
  StatusOr<MetricSamples> samples = ParseMetricsCsv(
      "time,machine,metric,value\n2024-12-04T17:33:20Z,a,m,1\n2024-12-04T17:38:20.250Z,a,m,2\n",
      "m.csv");
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  EXPECT_EQ(samples->time_form, TimeForm::kIso8601);
  EXPECT_DOUBLE_EQ(samples->samples[0].time, 1733333600.0);
  EXPECT_DOUBLE_EQ(samples->samples[1].time, 1733333900.25);
  EXPECT_EQ(FormatTime(samples->samples[0].time, TimeForm::kIso8601), "2024-12-04T17:33:20Z");
  EXPECT_EQ(FormatTime(samples->samples[1].time, TimeForm::kIso8601), "2024-12-04T17:38:20.250Z");
  EXPECT_EQ(FormatTime(1733331200.5, TimeForm::kSeconds), "1733331200.5");
}

// Each bad input is an error naming the file and line and saying what to fix.
TEST(MetricsCsvTest, BadInputNamesFileLineAndFix) {
  const struct {
    std::string text;
    std::string message;
  } cases[] = {
      {"", "m.csv: empty"},
      {"t,machine,metric,value\n", "m.csv:1: the first line must be"},
      {"time,machine,metric,value\n1,a,m\n", "m.csv:2: expected 4 fields"},
      {"time,machine,metric,value\n1,a,m,2,3\n", "m.csv:2: expected 4 fields"},
      {"time,machine,metric,value\nnoon,a,m,2\n", "m.csv:2: time \"noon\""},
      {"time,machine,metric,value\n1,a b,m,2\n", "m.csv:2: machine \"a b\""},
      {"time,machine,metric,value\n1,a,m-x,2\n", "m.csv:2: metric \"m-x\""},
      {"time,machine,metric,value\n1,a,m,NaN\n", "m.csv:2: value \"NaN\" is not a finite"},
      {"time,machine,metric,value\n1,a,m,\n", "m.csv:2: value \"\""},
      {"time,machine,metric,value\n1,a,m,2\n2024-12-04T17:33:20Z,a,m,2\n",
       "m.csv:3: times mix seconds and ISO 8601"},
      {"time,machine,metric,value\n1,a,m,2\n2,a,m,2\n1,a,m,3\n",
       "m.csv:4: a second sample of a m at the same time (line 2)"},
  };
  for (const auto& bad : cases) {
    StatusOr<MetricSamples> samples = ParseMetricsCsv(bad.text, "m.csv");
    ASSERT_FALSE(samples.ok()) << bad.text;
    EXPECT_NE(samples.status().message().find(bad.message), std::string::npos)
        << samples.status().message();
  }
}

TEST(MetricsCsvTest, MissingFileIsAnError) {
  StatusOr<MetricSamples> samples = ReadMetricsCsv("/nonexistent/metrics.csv");
  ASSERT_FALSE(samples.ok());
  EXPECT_NE(samples.status().message().find("/nonexistent/metrics.csv"), std::string::npos);
}

}  // namespace
}  // namespace upguard::machines
