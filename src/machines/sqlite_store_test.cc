#include "machines/sqlite_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "base/file.h"
#include "machines/metrics_sink.h"

namespace upguard::machines {
namespace {

std::string TempPath(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

const std::vector<MetricValue> kMetrics = {{"cpu_utilization", "", 0.5},
                                           {"network_receive_bytes_per_second", "eth0", 2000}};

TEST(SqliteStoreTest, WrittenIsReadBack) {
  const std::string path = TempPath("round_trip.db");
  {
    StatusOr<std::unique_ptr<MetricsSink>> sink = OpenMetricsSink(path);
    ASSERT_TRUE(sink.ok()) << sink.status().message();
    for (int second = 0; second < 3; ++second) {
      std::vector<MetricValue> metrics = kMetrics;
      metrics[0].value = 0.1 * second;
      ASSERT_TRUE((*sink)->Append(1733331200.25 + second, "node-0", metrics).ok());
      ASSERT_TRUE((*sink)->Append(1733331200.5 + second, "node-1", kMetrics).ok());
    }
  }
  EXPECT_TRUE(HasSqliteMagic(path));
  StatusOr<MetricSamples> samples = ReadMetricsSqlite(path);
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  EXPECT_EQ(samples->machines, (std::vector<std::string>{"node-0", "node-1"}));
  EXPECT_EQ(samples->metrics,
            (std::vector<std::string>{"cpu_utilization", "network_receive_bytes_per_second.eth0"}));
  ASSERT_EQ(samples->samples.size(), 12u);
  double node0_cpu_sum = 0;
  for (const Sample& sample : samples->samples) {
    if (sample.machine == 0 && sample.metric == 0) node0_cpu_sum += sample.value;
    if (sample.metric == 1) {
      EXPECT_DOUBLE_EQ(sample.value, 2000);
    }
  }
  EXPECT_DOUBLE_EQ(node0_cpu_sum, 0.3);
  samples = ReadMetricsSqlite(path, 1733331201, 1733331201.5);  // the second interval
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->samples.size(), 4u);
  EXPECT_DOUBLE_EQ(samples->samples[0].time, 1733331201.25);
}

TEST(SqliteStoreTest, AppendsAcrossReopeningAndWritersSharingAFile) {
  const std::string path = TempPath("shared.sqlite");
  StatusOr<std::unique_ptr<SqliteWriter>> a = SqliteWriter::Open(path);
  StatusOr<std::unique_ptr<SqliteWriter>> b = SqliteWriter::Open(path);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().message() << b.status().message();
  ASSERT_TRUE((*a)->Append(10, "node-0", kMetrics).ok());
  ASSERT_TRUE((*b)->Append(10, "node-1", kMetrics).ok());
  StatusOr<MetricSamples> live = ReadMetricsSqlite(path);  // while both hold it open
  ASSERT_TRUE(live.ok()) << live.status().message();
  EXPECT_EQ(live->samples.size(), 4u);
  a->reset();
  StatusOr<std::unique_ptr<SqliteWriter>> again = SqliteWriter::Open(path);
  ASSERT_TRUE(again.ok()) << again.status().message();
  ASSERT_TRUE((*again)->Append(11, "node-0", kMetrics).ok());
  ASSERT_TRUE((*b)->Append(11, "node-1", kMetrics).ok());
  StatusOr<MetricSamples> samples = ReadMetricsSqlite(path);
  ASSERT_TRUE(samples.ok());
  EXPECT_EQ(samples->samples.size(), 8u);
  EXPECT_EQ(samples->machines.size(), 2u);
  EXPECT_EQ(samples->metrics.size(), 2u);
}

TEST(SqliteStoreTest, BadFilesAreNamed) {
  const std::string csv = TempPath("not_sqlite.db");
  ASSERT_TRUE(WriteFileAtomically(csv, "time,machine,metric,value\n").ok());
  StatusOr<MetricSamples> read = ReadMetricsSqlite(csv);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(csv + ": not an SQLite file"), std::string::npos);
  StatusOr<std::unique_ptr<MetricsSink>> sink = OpenMetricsSink(csv);
  ASSERT_FALSE(sink.ok());
  EXPECT_NE(sink.status().message().find(csv), std::string::npos) << sink.status().message();

  const std::string other = TempPath("other_program.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "CREATE TABLE t (x); PRAGMA user_version = 1", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  read = ReadMetricsSqlite(other);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(other + ": an SQLite database, but not upguard's"),
            std::string::npos)
      << read.status().message();
  EXPECT_FALSE(SqliteWriter::Open(other).ok());

  const std::string newer = TempPath("newer.db");
  ASSERT_TRUE(SqliteWriter::Open(newer).ok());
  ASSERT_EQ(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 2", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  read = ReadMetricsSqlite(newer);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(newer + ": machine metrics version 2"), std::string::npos)
      << read.status().message();

  read = ReadMetricsSqlite(TempPath("missing.db"));
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("missing.db"), std::string::npos);
}

// Another program's database (and a file that is no database) is refused before anything in it
// changes: today's writer switched it to WAL first, which rewrote its header.
TEST(SqliteStoreTest, AForeignFileIsRefusedUnchanged) {
  const std::string other = TempPath("app.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(other.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const std::string text = TempPath("notes.db");
  ASSERT_TRUE(WriteFileAtomically(text, "name,phone\nada,555-0100\n").ok());
  for (const std::string& path : {other, text}) {
    StatusOr<std::string> before = ReadFileToString(path);
    ASSERT_TRUE(before.ok());
    StatusOr<std::unique_ptr<MetricsSink>> sink = OpenMetricsSink(path);
    ASSERT_FALSE(sink.ok()) << path;
    EXPECT_EQ(sink.status().message().rfind(path + ": ", 0), 0u) << sink.status().message();
    EXPECT_EQ(*ReadFileToString(path), *before) << path << " was changed";
    for (const char* beside : {"-wal", "-shm", "-journal"}) {
      EXPECT_FALSE(IsRegularFile(path + beside)) << path + beside;
    }
  }
}

TEST(SqliteStoreTest, TheSinkIsChosenByExtension) {
  const std::string csv = TempPath("sink.csv");
  {
    StatusOr<std::unique_ptr<MetricsSink>> sink = OpenMetricsSink(csv);
    ASSERT_TRUE(sink.ok()) << sink.status().message();
    ASSERT_TRUE((*sink)->Append(1733331200.5, "node-0", kMetrics).ok());
  }
  StatusOr<std::string> text = ReadFileToString(csv);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "time,machine,metric,value\n"
            "1733331200.5,node-0,cpu_utilization,0.5\n"
            "1733331200.5,node-0,network_receive_bytes_per_second.eth0,2000\n");
  StatusOr<std::unique_ptr<MetricsSink>> sink = OpenMetricsSink(TempPath("metrics.parquet"));
  ASSERT_FALSE(sink.ok());
  EXPECT_NE(sink.status().message().find(".csv"), std::string::npos);
  EXPECT_NE(sink.status().message().find(".db"), std::string::npos);
}

}  // namespace
}  // namespace upguard::machines
