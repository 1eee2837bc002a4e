// Online comparison with a reference run while the candidate records (`upguard record
// --against REF`): each op the candidate writes is compared with the op at the same step and
// index of the reference trace, and the first divergence is reported at once, so the run can be
// stopped there instead of finishing and being diffed afterwards.
//
//   ASSIGN_OR_RETURN(auto checker, OnlineChecker::Open("runs/a", /*rank=*/0));
//   if (std::optional<OnlineDivergence> d = checker->Check(record, index, "aten::gelu")) ...
//
// It is the recorder's OpObserver (recorder/op_observer.h): whoever opens a recorder with
// `against` opens the checker and hands it over (RecorderOptions::observer).
//
// The rules are the diff's (diff.h), applied as ops complete: ops are compared by position
// among the step's ops outside the input pipeline (phase input, whose ops come when a
// DataLoader's workers deliver, is not compared); a different op name there is structural. A nested
// op (depth > 0) that differs is only pending until the top-level op around it completes: if that
// op's inputs and outputs match, the difference stayed inside it (kernel scratch memory) and is
// dropped; otherwise the first pending op is the divergence (the innermost op, as in the diff). The
// reference's steps are decoded one at a time as the candidate reaches them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "recorder/op_observer.h"
#include "run/run_loader.h"
#include "upguard/status.h"

namespace upguard {

class OnlineChecker : public OpObserver {
 public:
  static StatusOr<std::unique_ptr<OnlineChecker>> Open(const std::string& reference_dir, int rank);

  // The candidate just recorded `op` (its string ids are the candidate's; `op_name` is its
  // name) at `index` of its step. Returns the first divergence once it is certain; after that,
  // nothing more.
  std::optional<OnlineDivergence> Check(const OpRecord& op, uint64_t index,
                                        std::string_view op_name) override;
  // Notes that cannot stop the run: a reference without the step, a damaged reference.
  const std::vector<std::string>& notes() const override { return notes_; }
  const std::string& reference_dir() const override { return reference_dir_; }

 private:
  OnlineChecker(std::string reference_dir, RankTrace trace)
      : reference_dir_(std::move(reference_dir)), trace_(std::move(trace)) {}
  // The reference's ops of `step`, or null when it has none (a note says why).
  const StepOps* ReferenceStep(uint32_t step);
  std::optional<OnlineDivergence> Settle(std::optional<OnlineDivergence> found, uint32_t depth);

  std::string reference_dir_;
  RankTrace trace_;
  std::shared_ptr<const StepOps> step_ops_;
  std::optional<uint32_t> step_;  // the step step_ops_ holds (null: none)
  std::vector<size_t> compared_;  // indices of step_ops_'s ops outside the input pipeline
  size_t position_ = 0;           // the candidate's ops outside the input pipeline so far
  std::optional<OnlineDivergence> pending_;  // a nested op's difference, not yet certain
  bool done_ = false;
  std::vector<std::string> notes_;
};

}  // namespace upguard
