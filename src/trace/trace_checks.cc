#include "trace/trace_checks.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "trace/crc32c.h"
#include "trace/format.h"

namespace upguard {
namespace {

std::string Hex32(uint32_t value) {
  char buf[11];
  std::snprintf(buf, sizeof(buf), "0x%08x", value);
  return buf;
}

}  // namespace

Status CheckFileHeader(const std::string& path, const char* bytes, size_t size) {
  if (size == 0) {
    return DataLoss(path +
                    ": empty file (0 bytes): not a trace, or the recording process died "
                    "before writing it");
  }
  if (std::memcmp(bytes, kTraceMagic, std::min(size, sizeof(kTraceMagic))) != 0) {
    return InvalidArgument(path +
                           ": not an upguard trace (bad magic at byte 0); pass a run "
                           "directory written by 'upguard record'");
  }
  if (size < kFileHeaderBytes) {
    return DataLoss(path + ": truncated header (" + std::to_string(size) +
                    " of 16 bytes): the recording process died while creating the file");
  }
  const FileHeader header = DecodeFileHeader(bytes);
  if (header.version < kTraceVersionMin || header.version > kTraceVersionMax) {
    return InvalidArgument(path + ": trace format version " + std::to_string(header.version) +
                           " is not supported (this upguard reads versions " +
                           std::to_string(kTraceVersionMin) + " to " +
                           std::to_string(kTraceVersionMax) + "); " +
                           (header.version > kTraceVersionMax ? "upgrade upguard to read it"
                                                              : "re-record it with this upguard"));
  }
  if (header.flags != 0) {
    return InvalidArgument(path + ": unsupported header flags " + Hex32(header.flags) +
                           " at byte 10 (written by a newer upguard?)");
  }
  return Status::Ok();
}

RecordError TruncatedRecord() {
  return RecordError{"truncated record",
                     "the file ends inside a record; the recording process was probably killed "
                     "or is still writing"};
}

bool CheckFrameLength(uint32_t length, RecordError* error) {
  if (length <= kMaxPayloadBytes) return true;
  *error = RecordError{"bad record length " + std::to_string(length), "over the 64 MiB limit"};
  return false;
}

bool BadCrc(uint32_t stored, uint32_t computed, RecordError* error) {
  *error = RecordError{"bad CRC", "stored " + Hex32(stored) + ", computed " + Hex32(computed) +
                                      "; the record is damaged"};
  return false;
}

bool CheckRunMeta(uint8_t type, std::string_view payload, bool file_ended, RecordError* error) {
  if (file_ended || type != static_cast<uint8_t>(RecordType::kRunMeta)) {
    *error = RecordError{"missing RunMeta record",
                         file_ended ? "the file ends after the header"
                                    : "the first record is " + RecordTypeName(type)};
    return false;
  }
  if (!nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false).is_object()) {
    *error = RecordError{"malformed RunMeta record", "not a JSON object"};
    return false;
  }
  return true;
}

bool ConsumeString(std::string_view payload, StringTable* strings, RecordError* error) {
  StringId id;
  std::string_view text;
  if (!DecodeString(payload, &id, &text, error)) return false;
  if (id != strings->size()) {
    *error =
        RecordError{"malformed String record", "defines id " + std::to_string(id) + ", expected " +
                                                   std::to_string(strings->size())};
    return false;
  }
  bool added = false;
  const StringId existing = strings->Intern(text, &added);
  if (!added) {
    *error =
        RecordError{"malformed String record", "repeats string id " + std::to_string(existing)};
    return false;
  }
  return true;
}

bool ConsumeEnd(std::string_view payload, uint64_t ops_before, RecordError* error) {
  uint64_t op_count;
  if (!DecodeEnd(payload, &op_count, error)) return false;
  if (op_count == ops_before) return true;
  *error =
      RecordError{"malformed End record", "it counts " + std::to_string(op_count) +
                                              " ops, the file holds " + std::to_string(ops_before)};
  return false;
}

RecordError UnexpectedRunMeta() {
  return RecordError{"unexpected RunMeta record", "only the first record may be RunMeta"};
}

RecordError DataAfterEnd(std::string_view last) {
  return RecordError{"unexpected data after the " + std::string(last) + " record", ""};
}

RecordError WrongSeq(uint64_t seq, uint64_t expected) {
  return RecordError{"malformed Op record",
                     "seq " + std::to_string(seq) + ", expected " + std::to_string(expected)};
}

bool CollectivePlacement::Place(uint64_t op_seq, RecordError* error) {
  std::string detail;
  if (!open_) {
    detail =
        "op_seq " + std::to_string(op_seq) + " is not an op of the current step (no step is open)";
  } else if (op_seq < first_seq_ || op_seq >= end_seq_) {
    detail = "op_seq " + std::to_string(op_seq) + " is not an op of the current step (seqs " +
             std::to_string(first_seq_) + " to " + std::to_string(end_seq_ - 1) + ")";
  } else if (!placed_.insert(op_seq).second) {
    detail = "a second Collective record for op " + std::to_string(op_seq);
  } else {
    return true;
  }
  *error = RecordError{"malformed Collective record", std::move(detail)};
  return false;
}

TraceDamage MakeTraceDamage(const std::string& path, uint64_t offset, const RecordError& error,
                            uint64_t records_before, uint64_t ops_before) {
  return TraceDamage{offset, path + ": " + error.reason + " at byte " + std::to_string(offset) +
                                 (error.detail.empty() ? "" : " (" + error.detail + ")") +
                                 " — the " + std::to_string(records_before) +
                                 " records before it (" + std::to_string(ops_before) +
                                 " ops) are readable"};
}

}  // namespace upguard
