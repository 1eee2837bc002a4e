#include "machines/metrics_sink.h"

#include <cstdio>

#include "machines/metrics_csv.h"
#include "machines/samples.h"
#include "machines/sqlite_store.h"

namespace upguard::machines {
namespace {

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Appends to a metrics CSV, writing the header when the file is new; flushed every interval.
class CsvSink : public MetricsSink {
 public:
  explicit CsvSink(std::FILE* file) : file_(file) {}
  ~CsvSink() override { std::fclose(file_); }
  CsvSink(const CsvSink&) = delete;
  CsvSink& operator=(const CsvSink&) = delete;

  Status Append(double time, const std::string& machine,
                const std::vector<MetricValue>& metrics) override {
    const std::string stamp = FormatTime(time, TimeForm::kSeconds);
    for (const MetricValue& metric : metrics) {
      std::fprintf(file_, "%s,%s,%s,%.17g\n", stamp.c_str(), machine.c_str(),
                   metric.CsvName().c_str(), metric.value);
    }
    if (std::fflush(file_) != 0) return IoError("cannot write the metrics CSV (disk full?)");
    return Status::Ok();
  }

 private:
  std::FILE* file_;
};

StatusOr<std::unique_ptr<MetricsSink>> OpenCsv(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr) return IoError("cannot append to " + path + " (does its folder exist?)");
  auto sink = std::make_unique<CsvSink>(file);
  std::fseek(file, 0, SEEK_END);
  if (std::ftell(file) == 0) {
    std::fprintf(file, "%s\n", std::string(kMetricsCsvHeader).c_str());
    std::fflush(file);
  }
  return std::unique_ptr<MetricsSink>(std::move(sink));
}

}  // namespace

StatusOr<std::unique_ptr<MetricsSink>> OpenMetricsSink(const std::string& path) {
  if (EndsWith(path, ".csv")) return OpenCsv(path);
  if (EndsWith(path, ".db") || EndsWith(path, ".sqlite") || EndsWith(path, ".sqlite3")) {
    ASSIGN_OR_RETURN(std::unique_ptr<SqliteWriter> writer, SqliteWriter::Open(path));
    return std::unique_ptr<MetricsSink>(std::move(writer));
  }
  return InvalidArgument("--output \"" + path +
                         "\": name a .csv file (the metrics CSV) or a .db / .sqlite file "
                         "(SQLite, docs/formats/machine-metrics-sqlite.md)");
}

}  // namespace upguard::machines
