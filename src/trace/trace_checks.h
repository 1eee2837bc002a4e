// The checks every trace reader applies (docs/formats/trace.md §6), shared by the sequential
// TraceReader and the memory-mapped TraceIndex so both accept the same files and word their
// damage messages the same way.
//
//   RETURN_IF_ERROR(CheckFileHeader(path, first_bytes, n));     // magic, version, flags
//   RecordError error;
//   if (!CheckFrameLength(length, &error) || !CheckFrameCrc(frame, length, &error)) ...
//   TraceDamage damage = MakeTraceDamage(path, offset, error, records_before, ops_before);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>

#include "trace/crc32c.h"
#include "trace/format.h"
#include "trace/reader.h"
#include "trace/record_codec.h"
#include "upguard/status.h"

namespace upguard {

// The opening checks on the first `size` bytes of a file (size may be under 16): empty file,
// bad magic, truncated header, unsupported version or flags. Ok when the header is readable.
Status CheckFileHeader(const std::string& path, const char* bytes, size_t size);

// "truncated record": the file ends inside a frame.
RecordError TruncatedRecord();
// Sets `error` for a CRC mismatch and returns false.
bool BadCrc(uint32_t stored, uint32_t computed, RecordError* error);
// A payload length over kMaxPayloadBytes.
bool CheckFrameLength(uint32_t length, RecordError* error);
// The CRC of a complete frame (header, `length` payload bytes, CRC) at `frame`.
inline bool CheckFrameCrc(const char* frame, uint32_t length, RecordError* error) {
  const uint32_t stored = LoadLe32(frame + kFrameHeaderBytes + length);
  const uint32_t computed = Crc32c(frame, kFrameHeaderBytes + length);
  return stored == computed || BadCrc(stored, computed, error);
}
// The first record must be RunMeta holding a JSON object. `type` is 0 when the file ends after
// the header.
bool CheckRunMeta(uint8_t type, std::string_view payload, bool file_ended, RecordError* error);

// A String record: its id must be the next one and its text new. Adds it to `strings`.
bool ConsumeString(std::string_view payload, StringTable* strings, RecordError* error);
// An End record: its op count must be the number of Op records before it.
bool ConsumeEnd(std::string_view payload, uint64_t ops_before, RecordError* error);
// A second RunMeta record.
RecordError UnexpectedRunMeta();
// Bytes after the End record (or after `last`, the Stopped record).
RecordError DataAfterEnd(std::string_view last = "End");
// An Op whose seq is not the number of ops before it.
RecordError WrongSeq(uint64_t seq, uint64_t expected);

// Where a Collective record may stand (§5.6): it names an earlier Op record of the current step
// (a run of ops ended by a StepEnd and by a change of step number), at most once. Kept alike by
// the writer, TraceReader and TraceIndex, fed every Op and StepEnd record in file order.
//
//   placement.OnOp(op.seq, op.step);  ...  placement.OnStepEnd();
//   if (!placement.Place(op_seq, &error)) ... damage (reader) or refusal (writer) ...
class CollectivePlacement {
 public:
  void OnOp(uint64_t seq, uint32_t step) {
    if (!open_ || step != step_) {
      open_ = true;
      step_ = step;
      first_seq_ = seq;
      if (!placed_.empty()) placed_.clear();
    }
    end_seq_ = seq + 1;
  }
  void OnStepEnd() { open_ = false; }
  // Whether a Collective record for op `op_seq` may come now; if so, remembers it.
  bool Place(uint64_t op_seq, RecordError* error);

 private:
  bool open_ = false;
  uint32_t step_ = 0;
  uint64_t first_seq_ = 0;
  uint64_t end_seq_ = 0;                 // one past the latest op's seq
  std::unordered_set<uint64_t> placed_;  // ops of the current step with a Collective record
};

// "<path>: <reason> at byte <offset> (<detail>) — the <R> records before it (<K> ops) are
// readable".
TraceDamage MakeTraceDamage(const std::string& path, uint64_t offset, const RecordError& error,
                            uint64_t records_before, uint64_t ops_before);

}  // namespace upguard
