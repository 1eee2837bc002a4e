// Payload encoding and decoding of trace records (docs/formats/trace.md §5), shared by
// TraceWriter and TraceReader so the two cannot drift apart. Framing (length, type, CRC) is
// here too; file I/O is not.
//
//   std::string frame;
//   BeginFrame(&frame);
//   RETURN_IF_ERROR(EncodeOp(op, seq, strings, &frame));
//   FinishFrame(RecordType::kOp, &frame);          // patches the length, appends the CRC
//
//   RecordError error;
//   if (!DecodeOp(payload, strings, &op, &error)) ... error.reason, error.detail ...
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trace/reader.h"
#include "trace/records.h"
#include "upguard/status.h"

namespace upguard {

class SharedStats;

// Why a payload could not be decoded: `reason` is the short damage name ("undefined string id
// 7", "malformed op record"), `detail` says where or what ("input 2: unknown dtype 40").
struct RecordError {
  std::string reason;
  std::string detail;
};

// Clears `frame` and reserves room for the frame header; append the payload after it.
void BeginFrame(std::string* frame);
// Fills in the frame header (length, type) and appends the CRC. Precondition: the payload fits
// in kMaxPayloadBytes.
void FinishFrame(RecordType type, std::string* frame);

// Writers: append the payload to `out`. EncodeOp fails (InvalidArgument) for ids not in
// `strings`, unknown enum values, negative dims or a payload over kMaxPayloadBytes. With
// `shared` (the writer's scope, already Entered for this op), statistics an earlier argument of
// the step wrote are left out (§5.3.1); on failure the scope is Reset.
Status EncodeOp(const OpRecord& op, uint64_t seq, const StringTable& strings, std::string* out,
                SharedStats* shared = nullptr);
// A Collective record's payload (§5.6); statistics are written in full, never shared. Fails
// (InvalidArgument) as EncodeOp does, and for outputs of a collective that did not complete or a
// negative rank. The placement rules are the writer's to check (CollectivePlacement).
Status EncodeCollective(uint64_t op_seq, const CollectiveInfo& info, const StringTable& strings,
                        std::string* out);
void EncodeString(StringId id, std::string_view text, std::string* out);
void EncodeStepEnd(const StepEndRecord& step_end, std::string* out);
void EncodeEnd(uint64_t op_count, std::string* out);
// The message is cut to kMaxStopMessageBytes.
void EncodeStopped(const StoppedRecord& stopped, std::string* out);

// Readers: parse a payload. On failure return false and fill `error`; outputs are unspecified.
// DecodeOp reuses the vectors of `op` (no allocation once they have grown). It sets scalar
// digests to DigestBytes(text) (StringTable::TextDigest).
bool DecodeOp(std::string_view payload, const StringTable& strings, OpRecord* op,
              RecordError* error);
// The same for a reader that knows the whole table but decodes a record from the middle of the
// file: string ids must be below `id_limit`, the number of strings defined before the record.
bool DecodeOp(std::string_view payload, const StringTable& strings, size_t id_limit, OpRecord* op,
              RecordError* error);
// Only the first two fields of an Op payload, seq and step (what an index needs), with the
// errors DecodeOp would give for them.
bool DecodeOpPrefix(std::string_view payload, uint64_t* seq, uint32_t* step, RecordError* error);
// A Collective payload with every check of §5.6 but its placement (CollectivePlacement).
bool DecodeCollective(std::string_view payload, const StringTable& strings, size_t id_limit,
                      uint64_t* op_seq, CollectiveInfo* info, RecordError* error);
bool DecodeString(std::string_view payload, StringId* id, std::string_view* text,
                  RecordError* error);
bool DecodeStepEnd(std::string_view payload, StepEndRecord* step_end, RecordError* error);
bool DecodeEnd(std::string_view payload, uint64_t* op_count, RecordError* error);
// An unknown reason reads as StopReason::kError (trace.md §5.7).
bool DecodeStopped(std::string_view payload, StoppedRecord* stopped, RecordError* error);

// "RunMeta", "String", "Op", "StepEnd", "End", "Collective", "Stopped", or "type N" for unknown
// types.
std::string RecordTypeName(uint8_t type);

}  // namespace upguard
