#include "machines/csv_sink.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "base/file.h"
#include "machines/metrics_csv.h"

namespace upguard::machines {
namespace {

std::string TempPath(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
  std::remove(path.c_str());
  return path;
}

std::string Contents(const std::string& path) {
  StatusOr<std::string> text = ReadFileToString(path);
  return text.ok() ? *text : "(unreadable: " + text.status().message() + ")";
}

const std::vector<MetricValue> kMetrics = {{"cpu_utilization", "", 0.5},
                                           {"gpu_power_watts", "gpu0", NAN},  // a gap
                                           {"network_receive_bytes_per_second", "eth0", 2000}};

constexpr char kTwoLines[] =
    "time,machine,metric,value\n"
    "1733331200.5,node-0,cpu_utilization,0.5\n"
    "1733331200.5,node-0,network_receive_bytes_per_second.eth0,2000\n";

TEST(CsvWriterTest, CreatesTheFileAndAppendsWholeLinesToItsOwn) {
  const std::string path = TempPath("own.csv");
  {
    StatusOr<std::unique_ptr<CsvWriter>> csv = CsvWriter::Open(path, nullptr);
    ASSERT_TRUE(csv.ok()) << csv.status().message();
    ASSERT_TRUE((*csv)->Append(1733331200.5, "node-0", kMetrics).ok());
  }
  EXPECT_EQ(Contents(path), kTwoLines);  // the gap is a missing line, not "nan"
  std::string notice;
  StatusOr<std::unique_ptr<CsvWriter>> again = CsvWriter::Open(path, &notice);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(notice, "");
  ASSERT_TRUE((*again)->Append(1733331201.5, "node-0", kMetrics).ok());
  StatusOr<MetricSamples> samples = ReadMetricsCsv(path);
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  EXPECT_EQ(samples->samples.size(), 4u);
}

// A file the agent would not have written is refused, naming it, and left as it was.
TEST(CsvWriterTest, RefusesFilesItDidNotWriteAndChangesNothing) {
  const struct {
    std::string text;
    std::string message;
  } cases[] = {
      {"name,phone\nada,555-0100\n",
       ": exists and is not a metrics CSV (its first line is \"name,phone\""},
      {"time,machine,metric,value\r\n1,a,m,1\r\n", ": exists and is not a metrics CSV"},
      {"time,machine,metric,value\n2024-12-04T17:33:20Z,a,m,1\n",
       ":2: \"2024-12-04T17:33:20Z,a,m,1\": the agent writes times in seconds"},
      {"\n", ": exists and is not a metrics CSV (its first line is \"\""},
  };
  const std::string path = TempPath("foreign.csv");
  for (const auto& foreign : cases) {
    ASSERT_TRUE(WriteFileAtomically(path, foreign.text).ok());
    StatusOr<std::unique_ptr<CsvWriter>> csv = CsvWriter::Open(path, nullptr);
    ASSERT_FALSE(csv.ok()) << foreign.text;
    EXPECT_NE(csv.status().message().find(path + foreign.message), std::string::npos)
        << csv.status().message();
    EXPECT_EQ(Contents(path), foreign.text);
  }
  // A tail without a line end longer than any line the agent writes is not its tear: kept.
  const std::string blob = std::string(kTwoLines) + std::string(5000, 'x');
  ASSERT_TRUE(WriteFileAtomically(path, blob).ok());
  const Status long_tail = CsvWriter::Open(path, nullptr).status();
  EXPECT_NE(long_tail.message().find(path + ": ends in 5000 bytes without a line end"),
            std::string::npos)
      << long_tail.message();
  EXPECT_EQ(Contents(path), blob);
  const Status folder = CsvWriter::Open(::testing::TempDir(), nullptr).status();
  EXPECT_NE(folder.message().find(::testing::TempDir()), std::string::npos) << folder.message();
  EXPECT_FALSE(CsvWriter::Open("/nonexistent/m.csv", nullptr).ok());
}

// kill -9 mid-line leaves a line without its end: reopening removes that line only, and says so.
TEST(CsvWriterTest, ATornLastLineCostsThatLineOnly) {
  const std::string path = TempPath("torn.csv");
  ASSERT_TRUE(WriteFileAtomically(path, std::string(kTwoLines) + "1733331201.5,node-0,cpu_").ok());
  std::string notice;
  StatusOr<std::unique_ptr<CsvWriter>> csv = CsvWriter::Open(path, &notice);
  ASSERT_TRUE(csv.ok()) << csv.status().message();
  EXPECT_EQ(notice, path +
                        ": removed a torn last line \"1733331201.5,node-0,cpu_\" (an agent "
                        "killed while writing it)");
  EXPECT_EQ(Contents(path), kTwoLines);
  ASSERT_TRUE((*csv)->Append(1733331202.5, "node-0", kMetrics).ok());
  StatusOr<MetricSamples> samples = ReadMetricsCsv(path);
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  EXPECT_EQ(samples->samples.size(), 4u);
  EXPECT_TRUE(samples->warnings.empty());

  ASSERT_TRUE(WriteFileAtomically(path, "time,mach").ok());  // killed writing the header
  notice.clear();
  csv = CsvWriter::Open(path, &notice);
  ASSERT_TRUE(csv.ok()) << csv.status().message();
  EXPECT_NE(notice.find("removed a torn header"), std::string::npos) << notice;
  EXPECT_EQ(Contents(path), "time,machine,metric,value\n");
}

TEST(CsvWriterTest, OneWriterAFile) {
  const std::string path = TempPath("shared.csv");
  StatusOr<std::unique_ptr<CsvWriter>> first = CsvWriter::Open(path, nullptr);
  ASSERT_TRUE(first.ok());
  StatusOr<std::unique_ptr<CsvWriter>> second = CsvWriter::Open(path, nullptr);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(path + ": another process appends to it"),
            std::string::npos)
      << second.status().message();
  first->reset();
  EXPECT_TRUE(CsvWriter::Open(path, nullptr).ok());
}

// The reader's side: a torn last line is skipped with a warning naming it; the file reads.
TEST(CsvWriterTest, TheReaderSkipsATornLastLineOnly) {
  StatusOr<MetricSamples> samples =
      ParseMetricsCsv(std::string(kTwoLines) + "1733331201.5,node-0,cpu_", "m.csv");
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  EXPECT_EQ(samples->samples.size(), 2u);
  ASSERT_EQ(samples->warnings.size(), 1u);
  EXPECT_EQ(samples->warnings[0].rfind("m.csv:4: skipped a torn last line (expected 4 fields", 0),
            0u)
      << samples->warnings[0];
  // With its line end the same line is a malformed line, an error as before; and a whole last
  // line without an end still counts (§1).
  EXPECT_FALSE(
      ParseMetricsCsv(std::string(kTwoLines) + "1733331201.5,node-0,cpu_\n", "m.csv").ok());
  samples =
      ParseMetricsCsv(std::string(kTwoLines) + "1733331201.5,node-0,cpu_utilization,1", "m.csv");
  ASSERT_TRUE(samples.ok());
  EXPECT_EQ(samples->samples.size(), 3u);
  EXPECT_TRUE(samples->warnings.empty());
}

}  // namespace
}  // namespace upguard::machines
