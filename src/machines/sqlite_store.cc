#include "machines/sqlite_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstring>

namespace upguard::machines {
namespace {

// docs/formats/machine-metrics-sqlite.md §2; run inside the transaction that sets the version.
constexpr char kSchema[] = R"(
CREATE TABLE IF NOT EXISTS machines (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS metrics (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS samples (time REAL NOT NULL,
  machine INTEGER NOT NULL REFERENCES machines(id),
  metric INTEGER NOT NULL REFERENCES metrics(id), value REAL NOT NULL);
CREATE INDEX IF NOT EXISTS samples_by_time ON samples (time);
CREATE VIEW IF NOT EXISTS sample_rows AS
  SELECT s.time AS time, ma.name AS machine, me.name AS metric, s.value AS value
  FROM samples s JOIN machines ma ON ma.id = s.machine JOIN metrics me ON me.id = s.metric;
PRAGMA user_version = 1;
PRAGMA application_id = 1970294065;
)";
static_assert(kSqliteApplicationId == 1970294065 && kSqliteFormatVersion == 1,
              "kSchema spells both out");

constexpr char kSpec[] = "docs/formats/machine-metrics-sqlite.md";

struct StatementDeleter {
  void operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementDeleter>;

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};

StatusOr<int64_t> PragmaInt(sqlite3* db, const std::string& path, const char* pragma) {
  sqlite3_stmt* raw = nullptr;
  const std::string sql = std::string("PRAGMA ") + pragma;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
    return DataLoss(path + ": " + sqlite3_errmsg(db) + " (is it an SQLite file?)");
  }
  Statement statement(raw);
  if (sqlite3_step(raw) != SQLITE_ROW) {
    return DataLoss(path + ": " + sqlite3_errmsg(db) + " (is it an SQLite file?)");
  }
  return sqlite3_column_int64(raw, 0);
}

// OK for an empty database (`*empty` set) or one of this format and version.
Status CheckIdentity(sqlite3* db, const std::string& path, bool* empty) {
  ASSIGN_OR_RETURN(const int64_t application_id, PragmaInt(db, path, "application_id"));
  ASSIGN_OR_RETURN(const int64_t version, PragmaInt(db, path, "user_version"));
  ASSIGN_OR_RETURN(const int64_t schema_version, PragmaInt(db, path, "schema_version"));
  *empty = application_id == 0 && version == 0 && schema_version == 0;
  if (*empty) return Status::Ok();
  if (application_id != kSqliteApplicationId) {
    char hex[32];
    std::snprintf(hex, sizeof(hex), "0x%08llx", static_cast<unsigned long long>(application_id));
    return InvalidArgument(path +
                           ": an SQLite database, but not upguard's machine metrics "
                           "(application_id " +
                           hex + ", expected 0x75704d31; " + kSpec + ")");
  }
  if (version != kSqliteFormatVersion) {
    return InvalidArgument(path + ": machine metrics version " + std::to_string(version) +
                           "; this upguard reads version " + std::to_string(kSqliteFormatVersion) +
                           " (a newer upguard wrote it)");
  }
  return Status::Ok();
}

}  // namespace

bool HasSqliteMagic(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return false;
  char head[sizeof(kSqliteMagic)] = {};
  const size_t got = std::fread(head, 1, sizeof(head), file);
  std::fclose(file);
  return got == sizeof(head) && std::memcmp(head, kSqliteMagic, sizeof(head)) == 0;
}

StatusOr<std::unique_ptr<SqliteWriter>> SqliteWriter::Open(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && st.st_size > 0 && !HasSqliteMagic(path)) {
    return InvalidArgument(path +
                           ": exists and is not an SQLite file; the agent appends only to "
                           "its own SQLite file (" +
                           kSpec + "): give --output a new file");
  }
  sqlite3* db = nullptr;
  const int opened =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  std::unique_ptr<SqliteWriter> writer(new SqliteWriter(path, db));
  if (opened != SQLITE_OK) {
    return IoError("cannot open " + path + ": " + sqlite3_errmsg(db) +
                   " (does its folder exist and can it be written?)");
  }
  sqlite3_busy_timeout(db, 5000);  // other agents sharing the file hold the write lock briefly
  // Who wrote it is read before anything is written: another program's database is refused
  // unchanged (switching it to WAL would already rewrite its header).
  bool empty = false;
  RETURN_IF_ERROR(CheckIdentity(db, path, &empty));
  RETURN_IF_ERROR(writer->Exec("PRAGMA journal_mode=WAL"));
  RETURN_IF_ERROR(writer->Exec("PRAGMA synchronous=NORMAL"));
  RETURN_IF_ERROR(writer->Exec("BEGIN IMMEDIATE"));
  // Again under the write lock: another agent may have made the schema since.
  Status identity = CheckIdentity(db, path, &empty);
  if (identity.ok() && empty) identity = writer->Exec(kSchema);
  if (!identity.ok()) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    return identity;
  }
  RETURN_IF_ERROR(writer->Exec("COMMIT"));
  RETURN_IF_ERROR(writer->Prepare());
  return writer;
}

SqliteWriter::~SqliteWriter() {
  for (sqlite3_stmt* statement :
       {insert_machine_, select_machine_, insert_metric_, select_metric_, insert_sample_}) {
    sqlite3_finalize(statement);
  }
  sqlite3_close_v2(db_);
}

Status SqliteWriter::Error(const std::string& doing) const {
  return IoError(path_ + ": " + doing + ": " + sqlite3_errmsg(db_) +
                 (sqlite3_errcode(db_) == SQLITE_BUSY ? " (another writer holds the file)" : ""));
}

Status SqliteWriter::Exec(const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) == SQLITE_OK) return Status::Ok();
  const std::string text = message != nullptr ? message : "unknown error";
  sqlite3_free(message);
  return IoError(path_ + ": " + text + " (running \"" + std::string(sql).substr(0, 40) + "\")");
}

Status SqliteWriter::Prepare() {
  const std::pair<const char*, sqlite3_stmt**> statements[] = {
      {"INSERT OR IGNORE INTO machines (name) VALUES (?1)", &insert_machine_},
      {"SELECT id FROM machines WHERE name = ?1", &select_machine_},
      {"INSERT OR IGNORE INTO metrics (name) VALUES (?1)", &insert_metric_},
      {"SELECT id FROM metrics WHERE name = ?1", &select_metric_},
      {"INSERT INTO samples (time, machine, metric, value) VALUES (?1, ?2, ?3, ?4)",
       &insert_sample_},
  };
  for (const auto& [sql, statement] : statements) {
    if (sqlite3_prepare_v2(db_, sql, -1, statement, nullptr) != SQLITE_OK) {
      return Error("preparing the inserts");
    }
  }
  return Status::Ok();
}

StatusOr<int64_t> SqliteWriter::IdOf(sqlite3_stmt* insert, sqlite3_stmt* select,
                                     const std::string& name,
                                     std::unordered_map<std::string, int64_t>* cache) {
  const auto cached = cache->find(name);
  if (cached != cache->end()) return cached->second;
  for (sqlite3_stmt* statement : {insert, select}) {
    sqlite3_reset(statement);
    sqlite3_bind_text(statement, 1, name.c_str(), static_cast<int>(name.size()), SQLITE_STATIC);
  }
  if (sqlite3_step(insert) != SQLITE_DONE) return Error("adding \"" + name + "\"");
  if (sqlite3_step(select) != SQLITE_ROW) return Error("finding \"" + name + "\"");
  const int64_t id = sqlite3_column_int64(select, 0);
  sqlite3_reset(insert);
  sqlite3_reset(select);
  (*cache)[name] = id;
  return id;
}

Status SqliteWriter::AppendInTransaction(double time, const std::string& machine,
                                         const std::vector<MetricValue>& metrics) {
  ASSIGN_OR_RETURN(const int64_t machine_id,
                   IdOf(insert_machine_, select_machine_, machine, &machine_ids_));
  for (const MetricValue& metric : metrics) {
    if (!std::isfinite(metric.value)) continue;  // a gap is a missing row (§2)
    ASSIGN_OR_RETURN(const int64_t metric_id,
                     IdOf(insert_metric_, select_metric_, metric.CsvName(), &metric_ids_));
    sqlite3_reset(insert_sample_);
    sqlite3_bind_double(insert_sample_, 1, time);
    sqlite3_bind_int64(insert_sample_, 2, machine_id);
    sqlite3_bind_int64(insert_sample_, 3, metric_id);
    sqlite3_bind_double(insert_sample_, 4, metric.value);
    if (sqlite3_step(insert_sample_) != SQLITE_DONE) return Error("appending a sample");
  }
  sqlite3_reset(insert_sample_);
  return Exec("COMMIT");
}

Status SqliteWriter::Append(double time, const std::string& machine,
                            const std::vector<MetricValue>& metrics) {
  RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  const Status appended = AppendInTransaction(time, machine, metrics);
  if (!appended.ok()) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    machine_ids_.clear();  // ids added in the rolled-back transaction are gone
    metric_ids_.clear();
  }
  return appended;
}

StatusOr<MetricSamples> ReadMetricsSqlite(const std::string& path, double start, double end) {
  if (!HasSqliteMagic(path)) {
    return InvalidArgument(path + ": not an SQLite file (no \"SQLite format 3\" header; " + kSpec +
                           ")");
  }
  sqlite3* raw_db = nullptr;
  const int opened = sqlite3_open_v2(path.c_str(), &raw_db, SQLITE_OPEN_READONLY, nullptr);
  std::unique_ptr<sqlite3, DbCloser> db(raw_db);
  if (opened != SQLITE_OK) return IoError("cannot open " + path + ": " + sqlite3_errmsg(raw_db));
  sqlite3_busy_timeout(raw_db, 5000);
  bool empty = false;
  RETURN_IF_ERROR(CheckIdentity(raw_db, path, &empty));
  if (empty) return InvalidArgument(path + ": an empty SQLite database, no machine metrics");
  const char* sql =
      "SELECT s.time, ma.name, me.name, s.value FROM samples s JOIN machines ma ON ma.id = "
      "s.machine JOIN metrics me ON me.id = s.metric WHERE s.time >= ?1 AND s.time <= ?2";
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(raw_db, sql, -1, &raw, nullptr) != SQLITE_OK) {
    return DataLoss(path + ": " + sqlite3_errmsg(raw_db) + " (" + kSpec + ")");
  }
  Statement statement(raw);
  sqlite3_bind_double(raw, 1, std::isfinite(start) ? start : -1e300);
  sqlite3_bind_double(raw, 2, std::isfinite(end) ? end : 1e300);
  MetricSamples out;
  int stepped = SQLITE_ROW;
  while ((stepped = sqlite3_step(raw)) == SQLITE_ROW) {
    const auto text = [raw](int column) {
      const unsigned char* value = sqlite3_column_text(raw, column);
      return value == nullptr ? std::string() : reinterpret_cast<const char*>(value);
    };
    Sample sample;
    sample.time = sqlite3_column_double(raw, 0);
    sample.value = sqlite3_column_double(raw, 3);
    if (sqlite3_column_type(raw, 3) == SQLITE_NULL || !std::isfinite(sample.value)) {
      return DataLoss(path + ": the sample of " + text(1) + " " + text(2) + " at " +
                      FormatTime(sample.time, TimeForm::kSeconds) +
                      " is not a finite number (a gap is a missing row)");
    }
    sample.machine = out.MachineIndex(text(1));
    sample.metric = out.MetricIndex(text(2));
    out.samples.push_back(sample);
  }
  if (stepped != SQLITE_DONE) return DataLoss(path + ": " + sqlite3_errmsg(raw_db));
  return out;
}

}  // namespace upguard::machines
