// TraceWriter: appends framed records to one rank's trace file (docs/formats/trace.md).
//
//   ASSIGN_OR_RETURN(auto writer, TraceWriter::Create("runs/a/rank0.ugt", meta_json));
//   OpRecord op;
//   op.op = writer->Intern("aten::gelu");
//   ...
//   RETURN_IF_ERROR(writer->WriteOp(op));   // assigns op.seq, folds it into the step digest
//   RETURN_IF_ERROR(writer->WriteCollective(seq_of_a_collective_op, info));  // optional
//   RETURN_IF_ERROR(writer->EndStep(0));    // StepEnd record: op count + rolling digest
//   RETURN_IF_ERROR(writer->Close());       // End record, flush
//   // or, when the recording stopped early (trace.md §5.7):
//   writer->Close(&stopped);                // Stopped record instead of End
//
// Intern() writes a String record the first time a string is seen, so every id used by a
// later record is defined before it. Not thread-safe: the recorder serializes calls.
#pragma once

#include <memory>
#include <string>
#include <vector>
#include <string_view>

#include "base/file.h"
#include "trace/records.h"
#include "upguard/status.h"

namespace upguard {

class TraceWriter {
 public:
  // Creates (truncates) `path` and writes the file header and the RunMeta record. With
  // `max_bytes` > 0 the file never grows past it: a record that would leave less room than the
  // Stopped record needs is refused (FailedPrecondition, failure_reason() kMaxBytes), and the
  // trace is then closed with a Stopped record in that room (trace.md §5.7).
  static StatusOr<std::unique_ptr<TraceWriter>> Create(const std::string& path,
                                                       std::string_view meta_json,
                                                       uint64_t max_bytes = 0);
  ~TraceWriter();

  StringId Intern(std::string_view s);
  // Writes `op` with seq = number of ops written before it (the argument's seq is ignored).
  Status WriteOp(const OpRecord& op);
  // Writes the Collective record (trace.md §5.6) of the op written with seq `op_seq`, which must
  // be an op of the current step (since the last EndStep and of the latest op's step number)
  // without one yet; else InvalidArgument and nothing is written. Its outputs enter the step
  // digest at EndStep.
  Status WriteCollective(uint64_t op_seq, const CollectiveInfo& info);
  // Writes a StepEnd for `step` covering the ops (and Collective records) written since the
  // previous EndStep; `flags` are StepEndRecord::flags (kStepFingerprint).
  Status EndStep(uint32_t step, uint64_t flags = 0);
  // For tests of readers and of the diff's invariants only: a StepEnd whose digest is
  // `digest` instead of the one computed (text form `stepend N digest=@name`).
  Status EndStepWithDigest(uint32_t step, const Digest128& digest, uint64_t flags = 0);
  // Hands buffered records to the OS.
  Status Flush();
  // Writes the End record and closes; with `stopped`, the Stopped record instead (the recording
  // stopped early, trace.md §5.7). After a failed write nothing but the Stopped record is
  // written (nothing without `stopped`), and a write the system refused first cut the file
  // back to its last whole record. Idempotent; returns the first error.
  Status Close(const StoppedRecord* stopped = nullptr);
  // Why this writer failed, as a Stopped record says it: the system's refusal (disk full, file
  // too large) or the budget; kError when it has not failed or failed otherwise.
  StopReason failure_reason() const;

  uint64_t ops_written() const { return ops_written_; }
  // The unread tensors of every step ended so far (the StepEnd tallies, §5.4) summed.
  std::vector<UnreadCount> UnreadTotal() const;

 private:
  Status EndStepWith(uint32_t step, const Digest128* digest, uint64_t flags);

 public:
  uint64_t bytes_written() const;

 private:
  class Impl;
  explicit TraceWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  uint64_t ops_written_ = 0;
};

}  // namespace upguard
