#include "machines/csv_sink.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "machines/metrics_csv.h"
#include "machines/samples.h"

namespace upguard::machines {
namespace {

constexpr char kSpec[] = "docs/formats/machine-metrics-csv.md";
// More than any line the agent writes: two names of at most 128 bytes, a time, a value.
constexpr uint64_t kLongestLine = 1024;

std::string Errno() { return std::strerror(errno); }

// `size` bytes of `fd` from `offset` (fewer at its end).
StatusOr<std::string> ReadAt(int fd, uint64_t offset, size_t size, const std::string& path) {
  std::string out(size, '\0');
  size_t got = 0;
  while (got < size) {
    const ssize_t n = pread(fd, out.data() + got, size - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(path + ": cannot read: " + Errno());
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

// Just past the last '\n' of the first `size` bytes of `fd` (0 without one).
StatusOr<uint64_t> EndOfLastLine(int fd, uint64_t size, const std::string& path) {
  constexpr uint64_t kChunk = 4096;
  for (uint64_t end = size; end > 0;) {
    const uint64_t start = end > kChunk ? end - kChunk : 0;
    ASSIGN_OR_RETURN(const std::string chunk, ReadAt(fd, start, end - start, path));
    const size_t newline = chunk.rfind('\n');
    if (newline != std::string::npos) return start + newline + 1;
    end = start;
  }
  return 0;
}

std::string Quoted(const std::string& text) {
  std::string shown = text.substr(0, 60);
  std::replace_if(
      shown.begin(), shown.end(), [](char c) { return c < ' '; }, '?');
  return "\"" + shown + (text.size() > 60 ? "...\"" : "\"");
}

}  // namespace

StatusOr<std::unique_ptr<CsvWriter>> CsvWriter::Open(const std::string& path, std::string* notice) {
  // O_EXCL tells a file this call made from one that was there: only the latter is checked.
  int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  const bool existed = fd < 0 && errno == EEXIST;
  if (existed) fd = open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
  if (fd < 0) {
    return IoError("cannot " + std::string(existed ? "open " : "create ") + path + ": " + Errno() +
                   " (does its folder exist and can it be written?)");
  }
  std::unique_ptr<CsvWriter> writer(new CsvWriter(path, fd));
  // Another error than EWOULDBLOCK is a file system without locks: it goes on unlocked.
  if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    return FailedPrecondition(path +
                              ": another process appends to it (an agent with the same "
                              "--output?); give each agent a file of its own");
  }
  RETURN_IF_ERROR(existed ? writer->Adopt(notice)
                          : writer->Write(std::string(kMetricsCsvHeader) + "\n"));
  return writer;
}

Status CsvWriter::Adopt(std::string* notice) {
  struct stat st {};
  if (fstat(fd_, &st) != 0) return IoError(path_ + ": cannot stat: " + Errno());
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgument(path_ + ": not a regular file; --output names the CSV file to write");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const std::string header = std::string(kMetricsCsvHeader) + "\n";
  ASSIGN_OR_RETURN(const std::string head, ReadAt(fd_, 0, 1024, path_));
  if (size < header.size() && header.compare(0, head.size(), head) == 0) {
    // Empty, or its header torn: nothing to keep.
    if (ftruncate(fd_, 0) != 0) return IoError(path_ + ": cannot truncate: " + Errno());
    if (size > 0 && notice != nullptr) {
      *notice = path_ + ": removed a torn header (" + std::to_string(size) + " bytes)";
    }
    return Write(header);
  }
  if (head.compare(0, header.size(), header) != 0) {
    return InvalidArgument(path_ + ": exists and is not a metrics CSV (its first line is " +
                           Quoted(head.substr(0, head.find('\n'))) + ", not \"" +
                           std::string(kMetricsCsvHeader) + "\"; " + kSpec +
                           "); the agent appends only to a metrics CSV: give --output a new file");
  }
  const size_t first_end = head.find('\n', header.size());
  if (first_end != std::string::npos) {  // its first sample, whole
    const std::string first = head.substr(header.size(), first_end - header.size());
    double seconds = 0;
    TimeForm form = TimeForm::kSeconds;
    if (!ParseTime(first.substr(0, first.find(',')), &seconds, &form) ||
        form != TimeForm::kSeconds) {
      return InvalidArgument(path_ + ":2: " + Quoted(first) +
                             ": the agent writes times in seconds since the epoch and one file "
                             "holds one form (" +
                             kSpec + "); give --output a new file");
    }
  }
  ASSIGN_OR_RETURN(size_, EndOfLastLine(fd_, size, path_));
  if (size_ == size) return Status::Ok();
  // A line without its end: an agent killed while writing. Only that line is lost. Anything
  // longer than a line could be is no tear of the agent's, and is not cut.
  if (size - size_ > kLongestLine) {
    return InvalidArgument(path_ + ": ends in " + std::to_string(size - size_) +
                           " bytes without a line end, more than a line the agent writes; give "
                           "--output a new file");
  }
  ASSIGN_OR_RETURN(const std::string torn, ReadAt(fd_, size_, size - size_, path_));
  if (ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    return IoError(path_ + ": cannot remove its torn last line: " + Errno());
  }
  if (notice != nullptr) {
    *notice = path_ + ": removed a torn last line " + Quoted(torn) +
              " (an agent killed while writing it)";
  }
  return Status::Ok();
}

CsvWriter::~CsvWriter() { close(fd_); }

Status CsvWriter::Write(const std::string& text) {
  size_t put = 0;
  while (put < text.size()) {
    const ssize_t n = write(fd_, text.data() + put, text.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string message =
          path_ + ": cannot write: " + (n < 0 ? Errno() : "wrote nothing") + " (disk full?)";
      // Cut back what this write added, so that the file ends in a whole line.
      if (put > 0 && ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
        message += "; its last line is torn (removed when the agent opens the file again)";
      }
      return IoError(message);
    }
    put += static_cast<size_t>(n);
  }
  size_ += text.size();
  return Status::Ok();
}

Status CsvWriter::Append(double time, const std::string& machine,
                         const std::vector<MetricValue>& metrics) {
  const std::string stamp = FormatTime(time, TimeForm::kSeconds);
  std::string text;
  char value[32];
  for (const MetricValue& metric : metrics) {
    if (!std::isfinite(metric.value)) continue;  // a gap is a missing line (§2), not "nan"
    std::snprintf(value, sizeof(value), "%.17g", metric.value);
    text += stamp + "," + machine + "," + metric.CsvName() + "," + value + "\n";
  }
  return Write(text);
}

}  // namespace upguard::machines
