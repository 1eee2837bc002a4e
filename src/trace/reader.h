// TraceReader: reads one rank's trace file record by record (docs/formats/trace.md).
//
//   ASSIGN_OR_RETURN(auto reader, TraceReader::Open("runs/a/rank0.ugt"));
//   TraceRecord record;
//   while (true) {
//     ASSIGN_OR_RETURN(bool more, reader->Next(&record));
//     if (!more) break;
//     if (record.type == RecordType::kOp) ... record.op ...
//   }
//   if (reader->damage()) std::cerr << reader->damage()->message;  // file, offset, reason
//
// Open fails (with the path and a hint) when the file is missing, is not an upguard trace, or
// has a version this reader does not read. Damage after the header (a truncated record, a bad
// CRC, an undefined string id) does not fail Next: it ends the stream, and damage() says at
// which byte offset and why, so everything before it stays usable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trace/records.h"
#include "upguard/status.h"

namespace upguard {

// Record type codes on disk. Serialized: fixed values, never renumber.
enum class RecordType : uint8_t {
  kRunMeta = 1,  // JSON text: run metadata; exactly once, first
  kString = 2,   // defines one interned string
  kOp = 3,
  kStepEnd = 4,
  kEnd = 5,         // clean end of the trace; absent when the process died
  kCollective = 6,  // completes the Op record of a collective (trace.md §5.6)
  kStopped = 7,     // in place of End: the recording stopped early (trace.md §5.7)
};

struct TraceRecord {
  RecordType type = RecordType::kOp;
  uint64_t offset = 0;          // byte offset of the record's frame in the file
  OpRecord op;                  // when type == kOp
  StepEndRecord step_end;       // when type == kStepEnd
  CollectiveRecord collective;  // when type == kCollective; the caller attaches it to its op
};

struct TraceDamage {
  uint64_t offset = 0;  // where the first unreadable byte range starts
  std::string message;  // "<path>: <reason> at byte <offset>; <hint>"
};

class TraceReader {
 public:
  static StatusOr<std::unique_ptr<TraceReader>> Open(const std::string& path);
  ~TraceReader();

  // Next Op, StepEnd or Collective record (String, RunMeta and End records are consumed
  // internally). A Collective record comes after its op, which the caller has already been given:
  // AttachCollective attaches it. Returns false at the end of the readable records.
  StatusOr<bool> Next(TraceRecord* record);

  const std::string& path() const;
  uint16_t version() const;
  const std::string& meta_json() const;
  const StringTable& strings() const;
  // True once the End record was read: the writer closed the file cleanly.
  bool complete() const;
  // Set once the Stopped record was read (trace.md §5.7): the recording stopped early.
  const std::optional<StoppedRecord>& stopped() const;
  // Set once a damaged or truncated record stopped the stream.
  const std::optional<TraceDamage>& damage() const;
  uint64_t file_size() const;

 private:
  class Impl;
  explicit TraceReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Lowest and highest trace format versions this reader reads.
inline constexpr uint16_t kTraceVersionMin = 1;
inline constexpr uint16_t kTraceVersionMax = 6;

}  // namespace upguard
