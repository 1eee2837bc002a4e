// Statistics shared between equal tensors of one step (docs/formats/trace.md §5.3.1).
//
// Most tensors an op reads were written by an earlier op of the same step, so their digest and
// statistics are already in the trace. A writer leaves such statistics out (flag bit 1); a
// reader fills them in from the latest earlier argument with the same digest. Equal digests
// mean equal dtype, shape and values (digest.md), hence equal statistics. Both sides walk the
// same scope: the Op records of one step as the diff groups them, ended by a StepEnd record and
// by an op whose step number differs from the previous op's.
//
//   SharedStats shared;                            // writer
//   shared.Enter(op.step);
//   for each tensor arg with stats, inputs then outputs: flags |= shared.Share(arg) ? kShared : 0
//   ... at StepEnd: shared.EndStep();
//
//   shared.Enter(op.step);                         // reader, after DecodeOp
//   if (!shared.Resolve(&op, &error)) ... damage ...
#pragma once

#include <cstdint>
#include <unordered_map>

#include "trace/record_codec.h"
#include "trace/records.h"

namespace upguard {

class SharedStats {
 public:
  // Before each op: starts a new scope when `step` differs from the previous op's or the
  // previous scope was ended.
  void Enter(uint32_t step) {
    if (!open_ || step != step_) {
      stats_.clear();
      open_ = true;
      step_ = step;
    }
  }
  // At a StepEnd record.
  void EndStep() { open_ = false; }
  // Writer: true when `arg` (a tensor with statistics) may leave them out; otherwise remembers
  // them for later arguments.
  bool Share(const ArgRecord& arg);
  // Forgets the scope (a writer whose op was not written after Share saw it).
  void Reset() {
    stats_.clear();
    open_ = false;
  }
  // Reader: fills in the statistics of `op`'s arguments decoded with `stats_shared`, inputs then
  // outputs, and remembers the others. False (with `error`) when a shared argument has no
  // earlier one with its digest in the scope.
  bool Resolve(OpRecord* op, RecordError* error);

 private:
  struct DigestHash {
    size_t operator()(const Digest128& digest) const { return static_cast<size_t>(digest.low); }
  };
  bool ResolveArg(const char* side, size_t arg_idx, ArgRecord* arg, RecordError* error);

  std::unordered_map<Digest128, TensorStats, DigestHash> stats_;
  uint32_t step_ = 0;
  bool open_ = false;
};

}  // namespace upguard
