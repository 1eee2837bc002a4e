// In-memory form of the records of a trace file (docs/formats/trace.md is the normative spec).
//
// Strings (op names, module paths, call sites, argument names and scalar texts) are interned:
// records hold StringIds into the trace's StringTable. Id 0 is always the empty string.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "digest/digest.h"
#include "upguard/tensor.h"

namespace upguard {

using StringId = uint32_t;
inline constexpr StringId kEmptyString = 0;

// Serialized: fixed values, never renumber.
enum class Phase : uint8_t {
  kOther = 0,
  kForward = 1,
  kBackward = 2,
  kOptimizer = 3,
  kInput = 4,  // the input pipeline: DataLoader work in the training process (version 3)
};
inline constexpr Phase kMaxPhase = Phase::kInput;
// "other", "forward", "backward", "optimizer", "input"
std::string_view PhaseName(Phase phase);

// What one argument (input) or result (output) of an op holds. Serialized: never renumber.
enum class ArgKind : uint8_t {
  kTensor = 1,  // a readable tensor: dtype, shape, digest, optional stats
  kScalar = 2,  // a non-tensor value (number, bool, string, int list, ...): `text` is its repr
  kAlias = 3,   // a view: an output aliasing an input, or an input a view op never reads
  kUninit = 4,  // a tensor whose values are not defined yet (empty*, resize_): dtype, shape
  kNone = 5,    // None / absent optional
  kOpaque = 6,  // a tensor upguard cannot read (sparse, meta, another device): dtype, shape
};
std::string_view ArgKindName(ArgKind kind);

struct ArgRecord {
  ArgKind kind = ArgKind::kNone;
  StringId name = kEmptyString;   // schema argument name ("self", "weight"); empty if unknown
  DType dtype = DType::kInvalid;  // tensor kinds only
  std::vector<int64_t> shape;     // tensor kinds only
  Digest128 digest;               // kTensor: of the values; kScalar: of the text
  bool has_stats = false;         // kTensor with a floating dtype
  TensorStats stats;
  // Decoded only: has_stats, but the record left the statistics out (trace.md §5.3.1);
  // SharedStats::Resolve fills them in and clears this.
  bool stats_shared = false;
  StringId text = kEmptyString;  // kScalar only
  // The tensor's name in the user's model ("fc.weight", "exp_avg_sq of fc.weight"), empty when
  // unknown. Descriptive only: never compared, never part of any digest (trace.md §5.3.2).
  StringId label = kEmptyString;
};

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
struct StepEndRecord {
  uint32_t step = 0;
  uint64_t op_count = 0;
  Digest128 digest;
};

// The interned strings of one trace. Ids are dense, assigned in order of first use from 1.
// Each string's DigestBytes is computed once, when it is added: it is a scalar argument's value
// digest, needed for every scalar a reader decodes and a writer folds into a step digest.
class StringTable {
 public:
  StringTable();
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
  std::vector<std::string> strings_;
  std::vector<Digest128> digests_;
  std::unordered_map<std::string, StringId> ids_;
};

}  // namespace upguard
