// The agent's embedded file: machine metrics in SQLite (docs/formats/machine-metrics-sqlite.md).
// SqliteWriter appends one sample interval per transaction in WAL mode, so a reader may open the
// file while the agent writes and a crash loses at most the interval being written; several
// agents may share one file. ReadMetricsSqlite returns the same MetricSamples the CSV reader
// does.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<SqliteWriter> writer, SqliteWriter::Open("node-0.db"));
//   RETURN_IF_ERROR(writer->Append(WallClockSeconds(), "node-0", metrics));
//   ...
//   ASSIGN_OR_RETURN(MetricSamples samples, ReadMetricsSqlite("node-0.db"));
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "machines/metrics_sink.h"
#include "machines/samples.h"
#include "upguard/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace upguard::machines {

inline constexpr int kSqliteFormatVersion = 1;               // PRAGMA user_version
inline constexpr int32_t kSqliteApplicationId = 0x75704d31;  // "upM1", PRAGMA application_id
inline constexpr char kSqliteMagic[16] = "SQLite format 3";  // + its '\0': the first 16 bytes

// Whether the file at `path` starts with SQLite's 16-byte header string (false when unreadable).
bool HasSqliteMagic(const std::string& path);

class SqliteWriter : public MetricsSink {
 public:
  // Creates the file and its schema, or opens one this format wrote. Any other file (not
  // SQLite, another program's SQLite file, a newer version) is an error naming the path, before
  // anything in it is changed.
  static StatusOr<std::unique_ptr<SqliteWriter>> Open(const std::string& path);
  ~SqliteWriter() override;
  SqliteWriter(const SqliteWriter&) = delete;
  SqliteWriter& operator=(const SqliteWriter&) = delete;

  // One transaction: every metric of `machine` at `time`.
  Status Append(double time, const std::string& machine,
                const std::vector<MetricValue>& metrics) override;

 private:
  SqliteWriter(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  Status Prepare();
  Status Exec(const char* sql);
  StatusOr<int64_t> IdOf(sqlite3_stmt* insert, sqlite3_stmt* select, const std::string& name,
                         std::unordered_map<std::string, int64_t>* cache);
  Status AppendInTransaction(double time, const std::string& machine,
                             const std::vector<MetricValue>& metrics);
  Status Error(const std::string& doing) const;  // the database's message, naming the file

  std::string path_;
  sqlite3* db_;
  sqlite3_stmt* insert_machine_ = nullptr;
  sqlite3_stmt* select_machine_ = nullptr;
  sqlite3_stmt* insert_metric_ = nullptr;
  sqlite3_stmt* select_metric_ = nullptr;
  sqlite3_stmt* insert_sample_ = nullptr;
  std::unordered_map<std::string, int64_t> machine_ids_;  // committed ids only
  std::unordered_map<std::string, int64_t> metric_ids_;
};

// The samples with start <= time <= end. Errors name the path: not an SQLite file, an SQLite
// file of another program, a newer version, a NULL or non-finite value.
StatusOr<MetricSamples> ReadMetricsSqlite(const std::string& path,
                                          double start = -std::numeric_limits<double>::infinity(),
                                          double end = std::numeric_limits<double>::infinity());

}  // namespace upguard::machines
