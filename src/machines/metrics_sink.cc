#include "machines/metrics_sink.h"

#include "machines/csv_sink.h"
#include "machines/sqlite_store.h"

namespace upguard::machines {
namespace {

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

StatusOr<std::unique_ptr<MetricsSink>> OpenMetricsSink(const std::string& path,
                                                       std::string* notice) {
  if (EndsWith(path, ".csv")) {
    ASSIGN_OR_RETURN(std::unique_ptr<CsvWriter> writer, CsvWriter::Open(path, notice));
    return std::unique_ptr<MetricsSink>(std::move(writer));
  }
  if (EndsWith(path, ".db") || EndsWith(path, ".sqlite") || EndsWith(path, ".sqlite3")) {
    ASSIGN_OR_RETURN(std::unique_ptr<SqliteWriter> writer, SqliteWriter::Open(path));
    return std::unique_ptr<MetricsSink>(std::move(writer));
  }
  return InvalidArgument("--output \"" + path +
                         "\": name a .csv file (the metrics CSV) or a .db / .sqlite file "
                         "(SQLite, docs/formats/machine-metrics-sqlite.md)");
}

}  // namespace upguard::machines
