// In-memory form of the records of a trace file (docs/formats/trace.md is the normative spec).
//
// Strings (op names, module paths, call sites, argument names and scalar texts) are interned:
// records hold StringIds into the trace's StringTable. Id 0 is always the empty string.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "digest/digest.h"
#include "upguard/arg_record.h"
#include "upguard/tensor.h"

namespace upguard {

// What a collective op (c10d::allreduce_, ...) adds to its Op record: the Collective record
// (trace.md §5.6) written when the collective's work completed, or when its step ended first.
struct CollectiveInfo {
  StringId group = kEmptyString;  // the process group's name ("0", "tp"); empty if unknown
  std::vector<int32_t> ranks;     // the group's members (global ranks) in group-rank order;
                                  // empty if unknown
  uint32_t group_rank = 0;        // this rank's rank in the group
  uint32_t group_size = 0;
  uint64_t seq = 0;        // the collective's number within its group on this rank, from 0
  bool completed = false;  // the outputs below were read after the work completed
  // Ops this rank recorded between the call's return and the completion: 0 for a collective
  // that completed before the call returned (or before the next op ended).
  uint64_t ops_before_completion = 0;
  // The tensors the collective wrote (the in-place tensors, or the output lists), read after
  // completion. Empty when !completed.
  std::vector<ArgRecord> outputs;
};

struct OpRecord {
  uint64_t seq = 0;   // index of the op in the rank's trace, in completion order, from 0
  uint32_t step = 0;  // training step the op ran in
  Phase phase = Phase::kOther;
  uint32_t depth = 0;                 // 0 = called by user code; n = nested inside n recorded ops
  StringId op = kEmptyString;         // "aten::gelu"
  StringId module = kEmptyString;     // "blocks.1.mlp.act"; empty outside modules
  StringId call_site = kEmptyString;  // "model.py:87"
  StringId node = kEmptyString;       // autograd node for backward ops ("GeluBackward0")
  std::vector<ArgRecord> inputs;
  std::vector<ArgRecord> outputs;
  // Set by readers when a Collective record refers to this op (its op_seq == seq).
  std::shared_ptr<const CollectiveInfo> collective;
};

// A Collective record as TraceReader returns it, before it is attached to its op.
struct CollectiveRecord {
  uint64_t op_seq = 0;  // the seq of the collective op's Op record
  std::shared_ptr<const CollectiveInfo> info;
};

// What readers do with a Collective record (trace.md §5.6): sets op->collective and, when the
// collective completed, replaces op->outputs (aliases written at call return) by its outputs,
// which keep the labels of the op's outputs when there are as many (a Collective record has none).
void AttachCollective(std::shared_ptr<const CollectiveInfo> info, OpRecord* op);

// Written after the last op of each step: how many ops the step recorded and a rolling digest
// over their values (see trace.md), so a diff can skip identical steps without reading ops.
// The ops (and tensors) of a step whose values upguard did not read, for one reason and detail
// (trace.md §5.4; trace/unread_tally.h).
struct UnreadCount {
  UnreadReason reason = UnreadReason::kUnknown;
  std::string detail;  // "cuda:0", "nested", ""
  uint64_t ops = 0;
  uint64_t tensors = 0;
};

struct StepEndRecord {
  uint32_t step = 0;
  uint64_t op_count = 0;
  Digest128 digest;
  uint64_t flags = 0;  // kStepFingerprint; written only when not 0 or the tally follows (§5.4)
  // Version 6: the step's unread tensors, by reason and detail; empty when none (then not
  // written). Older traces have no tally (a reader tallies their decoded ops instead).
  std::vector<UnreadCount> unread;
};

// StepEndRecord::flags bit 0: a fingerprint step (`upguard record --fingerprint`): only the
// fingerprint pseudo-ops were recorded (random state, batch, loss, gradients, model state),
// not the step's ops.
inline constexpr uint64_t kStepFingerprint = 1;

// Whether a step ended by `end` (absent: a step that never ended) is a fingerprint step.
inline bool IsFingerprintStep(const std::optional<StepEndRecord>& end) {
  return end.has_value() && (end->flags & kStepFingerprint) != 0;
}

// Why a recording stopped before its program ended (the Stopped record, trace.md §5.7).
// Serialized: fixed values, never renumber; a reader reads a value it does not know as kError.
enum class StopReason : uint8_t {
  kError = 0,         // any other failure; the message says which
  kDiskFull = 1,      // ENOSPC, EDQUOT
  kFileTooLarge = 2,  // EFBIG (`ulimit -f`, the file system's limit)
  kMaxBytes = 3,      // the writer's byte budget (`record --max-bytes`)
};

// The reason as JSON and the text form write it ("disk_full") and for people ("disk full").
std::string_view StopReasonToken(StopReason reason);
std::string_view StopReasonPhrase(StopReason reason);
// The reason a token names; false for an unknown token.
bool ParseStopReasonToken(std::string_view token, StopReason* reason);
// The reason a refused write's errno gives.
StopReason StopReasonOfErrno(int error);

// The last record of a trace whose recording stopped early, in place of End.
struct StoppedRecord {
  uint32_t step = 0;  // the step running when it stopped; the steps before it are whole
  StopReason reason = StopReason::kError;
  std::string message;  // at most kMaxStopMessageBytes (the writer cuts it)
};
inline constexpr size_t kMaxStopMessageBytes = 256;

// "incomplete: recording stopped at step 37 (disk full)": what readers say of such a trace.
std::string StoppedNote(const StoppedRecord& stopped);

// The interned strings of one trace. Ids are dense, assigned in order of first use from 1.
// Each string's DigestBytes is computed once, when it is added: it is a scalar argument's value
// digest, needed for every scalar a reader decodes and a writer folds into a step digest.
class StringTable {
 public:
  StringTable();
  // The lookup keys view the strings where they are kept: a copy makes its own keys; a move
  // keeps every string where it was.
  StringTable(const StringTable& other);
  StringTable& operator=(const StringTable& other);
  StringTable(StringTable&&) = default;
  StringTable& operator=(StringTable&&) = default;

  // Returns the id of `s`, adding it if new. `added` says whether it was new.
  StringId Intern(std::string_view s, bool* added = nullptr);
  // Precondition: id < size().
  const std::string& Get(StringId id) const { return strings_[id]; }
  // The id of `s` if it is in the table.
  bool Find(std::string_view s, StringId* id) const;
  // DigestBytes(Get(id)). Precondition: id < size().
  const Digest128& TextDigest(StringId id) const { return digests_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::deque<std::string> strings_;  // a deque: a string never moves once added
  std::vector<Digest128> digests_;
  std::unordered_map<std::string_view, StringId> ids_;  // views into strings_
};

}  // namespace upguard
