// A recording rank's progress for `upguard record`'s progress line: one 64-byte record the
// recorder rewrites at each step boundary, the command polls (docs/formats/record-progress.md).
//
//   ProgressWriter writer = ProgressWriter::Open("/tmp/upguard-progress-x/rank0.progress");
//   writer.Write(progress);                      // recorder: start, each step, close
//   StatusOr<RankProgress> p = ReadProgress(path);  // command: each poll
#pragma once

#include <cstdint>
#include <string>

#include "trace/records.h"
#include "upguard/status.h"

namespace upguard {

struct RankProgress {
  int32_t rank = 0;
  int64_t step = 0;  // the step now running; once `stopped`, the step the recording stopped at
  uint64_t steps_recorded = 0;
  uint64_t steps_fingerprinted = 0;
  uint64_t ops = 0;
  uint64_t trace_bytes = 0;
  bool closed = false;  // the rank's trace is closed
  // The recording stopped early (the training went on), for `stop_reason`: its trace holds the
  // steps before `step` and ends with a Stopped record (trace.md §5.7).
  bool stopped = false;
  StopReason stop_reason = StopReason::kError;
};

inline constexpr size_t kProgressRecordSize = 64;

// The record's bytes, and back; Decode fails on a wrong magic, version or checksum (a record
// read while it was rewritten).
std::string EncodeProgress(const RankProgress& progress);
StatusOr<RankProgress> DecodeProgress(const std::string& bytes);

// Writes the record at offset 0 of its file. Never fails the training: a file that could not be
// created makes every Write a no-op. Move-only; closes its file.
class ProgressWriter {
 public:
  ProgressWriter() = default;
  static ProgressWriter Open(const std::string& path);  // "" = writes nothing
  ProgressWriter(ProgressWriter&& other) noexcept;
  ProgressWriter& operator=(ProgressWriter&& other) noexcept;
  ~ProgressWriter();

  void Write(const RankProgress& progress) const;

 private:
  int fd_ = -1;
};

// The record in `path`: NotFound while the file does not exist yet, DataLoss on a bad record.
StatusOr<RankProgress> ReadProgress(const std::string& path);

}  // namespace upguard
