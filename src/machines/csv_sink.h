// The agent's metrics CSV (docs/formats/machine-metrics-csv.md §6, "The agent's file"): created
// with its header, or appended to when it already is a metrics CSV as the agent writes one
// (the header exactly, times in seconds); any other file is refused before a byte of it
// changes. One agent a file (an exclusive flock while open). Each Append is one write of whole
// lines; a write that fails is cut back, and a line torn by a kill (no line end) is removed when
// the file is opened again, so a crash costs the line it tore, not the file.
//
//   std::string notice;  // what opening repaired, for the caller to print
//   ASSIGN_OR_RETURN(std::unique_ptr<CsvWriter> csv, CsvWriter::Open("node-0.csv", &notice));
//   RETURN_IF_ERROR(csv->Append(WallClockSeconds(), "node-0", metrics));
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "machines/metrics_sink.h"
#include "upguard/status.h"

namespace upguard::machines {

class CsvWriter : public MetricsSink {
 public:
  // Errors name the path and say what to pass instead. `notice` (may be null) is set when a
  // torn last line was removed.
  static StatusOr<std::unique_ptr<CsvWriter>> Open(const std::string& path, std::string* notice);
  ~CsvWriter() override;
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  Status Append(double time, const std::string& machine,
                const std::vector<MetricValue>& metrics) override;

 private:
  CsvWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  Status Adopt(std::string* notice);  // checks an existing file, removes a torn tail
  Status Write(const std::string& text);

  std::string path_;
  int fd_;
  uint64_t size_ = 0;  // bytes of whole lines: where a failed write is cut back to
};

}  // namespace upguard::machines
