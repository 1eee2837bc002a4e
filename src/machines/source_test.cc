#include "machines/source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "base/file.h"
#include "machines/sqlite_store.h"

namespace upguard::machines {
namespace {

std::string TempPath(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_src_" + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

// node-0 in a CSV and node-1 in an SQLite file, cpu_utilization at 100, 101, 102.
struct TwoFiles {
  std::string csv = TempPath("node0.csv");
  std::string db = TempPath("node1.db");
  TwoFiles() {
    EXPECT_TRUE(WriteFileAtomically(csv,
                                    "time,machine,metric,value\n100,node-0,cpu_utilization,0.1\n"
                                    "101,node-0,cpu_utilization,0.2\n"
                                    "102,node-0,cpu_utilization,0.3\n")
                    .ok());
    StatusOr<std::unique_ptr<SqliteWriter>> writer = SqliteWriter::Open(db);
    EXPECT_TRUE(writer.ok());
    for (int second = 100; second <= 102; ++second) {
      EXPECT_TRUE((*writer)->Append(second, "node-1", {{"cpu_utilization", "", 0.5}}).ok());
    }
  }
};

TEST(SourceTest, TellsSqliteFromCsvByItsHeaderNotItsName) {
  TwoFiles files;
  const std::string renamed = TempPath("node1.csv");  // an SQLite file named .csv
  ASSERT_EQ(std::rename(files.db.c_str(), renamed.c_str()), 0);
  StatusOr<MetricSamples> samples = LoadSamples(renamed, SourceOptions());
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  EXPECT_EQ(samples->machines, std::vector<std::string>{"node-1"});
  EXPECT_EQ(samples->samples.size(), 3u);
  samples = LoadSamples(files.csv, SourceOptions());
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  EXPECT_EQ(samples->machines, std::vector<std::string>{"node-0"});
}

TEST(SourceTest, MergesSourcesSeparatedByCommasAndCutsTheRange) {
  TwoFiles files;
  SourceOptions options;
  StatusOr<MetricSamples> samples = LoadSamples(files.csv + "," + files.db, options);
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  EXPECT_EQ(samples->machines, (std::vector<std::string>{"node-0", "node-1"}));
  EXPECT_EQ(samples->metrics, std::vector<std::string>{"cpu_utilization"});
  EXPECT_EQ(samples->samples.size(), 6u);
  options.start = "101";
  options.end = "1970-01-01T00:01:41Z";  // 101
  samples = LoadSamples(files.csv + "," + files.db, options);
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  ASSERT_EQ(samples->samples.size(), 2u);
  EXPECT_DOUBLE_EQ(samples->samples[0].value, 0.2);
  EXPECT_DOUBLE_EQ(samples->samples[1].value, 0.5);
  options.start = "200";
  options.end = "";
  samples = LoadSamples(files.csv, options);
  ASSERT_FALSE(samples.ok());
  EXPECT_NE(samples.status().message().find(files.csv + ": no samples between --start and --end"),
            std::string::npos)
      << samples.status().message();
}

TEST(SourceTest, ErrorsNameTheOptionOrTheSource) {
  SourceOptions options;
  options.start = "yesterday";
  StatusOr<MetricSamples> samples = LoadSamples(TwoFiles().csv, options);
  ASSERT_FALSE(samples.ok());
  EXPECT_EQ(samples.status().message().rfind("--start time \"yesterday\"", 0), 0u)
      << samples.status().message();
  options.start = "-1m";
  options.end = "-2m";
  EXPECT_NE(LoadSamples("http://127.0.0.1:1", options).status().message().find("after --end"),
            std::string::npos);
  options = SourceOptions();
  samples = LoadSamples("http://127.0.0.1:1", options);
  ASSERT_FALSE(samples.ok());
  EXPECT_NE(samples.status().message().find("http://127.0.0.1:1"), std::string::npos);
  const std::string missing = TempPath("missing.csv");
  samples = LoadSamples(missing, options);
  ASSERT_FALSE(samples.ok());
  EXPECT_NE(samples.status().message().find(missing), std::string::npos);
  EXPECT_FALSE(LoadSamples("", options).ok());
}

TEST(SourceTest, SamplesBetweenDropsMachinesLeftWithout) {
  MetricSamples samples;
  samples.samples.push_back({1, samples.MachineIndex("a"), samples.MetricIndex("m"), 1});
  samples.samples.push_back({5, samples.MachineIndex("b"), samples.MetricIndex("m"), 2});
  const MetricSamples kept = SamplesBetween(samples, 2, 10);
  EXPECT_EQ(kept.machines, std::vector<std::string>{"b"});
  ASSERT_EQ(kept.samples.size(), 1u);
  EXPECT_EQ(kept.samples[0].machine, 0u);
}

}  // namespace
}  // namespace upguard::machines
