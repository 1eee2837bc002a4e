// StepDigester: the rolling digest of one step's ops stored in StepEnd records
// (docs/formats/trace.md §5.4). The writer folds every op it writes; a verifier folds the ops it
// reads and compares with the StepEnd.
//
//   StepDigester digester;
//   for (const OpRecord& op : ops_of_step) digester.AddOp(op, strings);
//   for (each Collective record of the step, by op_seq)    // after every op (§5.4)
//     digester.AddCollective(op_seq - first_seq_of_step, info, strings);
//   StepEndRecord end{step, digester.op_count(), digester.Finish()};
//   digester.Reset();
//
// It covers exactly what the diff compares (version 3): op names, arg kinds, tensor and scalar
// digests, the dtype and shape of args without values; not input-pipeline ops, and not nested
// ops enclosed by a top-level op with a result (the diff does not let those make a verdict when
// their top-level op is equal). Module paths and call sites name an op, they do not change what
// it computed. A scalar's digest is DigestBytes(text), recomputed from the string table
// (ArgRecord::digest is not trusted for scalars).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "digest/digest.h"
#include "trace/records.h"

namespace upguard {

class StepDigester {
 public:
  StepDigester();
  ~StepDigester();
  StepDigester(const StepDigester&) = delete;
  StepDigester& operator=(const StepDigester&) = delete;

  // Precondition: every string id in `op` is < strings.size().
  void AddOp(const OpRecord& op, const StringTable& strings);
  // A Collective record of the step; `op_index` is its op_seq minus the seq of the step's first
  // op. Call after the step's last AddOp, in increasing op_index order. What is hashed is the
  // op's position among the step's ops that are not input-pipeline ops (version 5): how many
  // batches a DataLoader's workers delivered before a collective depends on timing.
  void AddCollective(uint64_t op_index, const CollectiveInfo& info, const StringTable& strings);
  // The digest of the ops added since the last Reset (does not reset).
  Digest128 Finish() const;
  uint64_t op_count() const { return op_count_; }
  void Reset();

 private:
  void FoldPending();
  struct State;
  std::unique_ptr<State> state_;
  uint64_t op_count_ = 0;
  std::vector<uint64_t> input_ops_;  // the step indices of its input-pipeline ops, increasing
};

}  // namespace upguard
