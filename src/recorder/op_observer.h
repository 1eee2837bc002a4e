// What the recorder shows each op it writes to, when one is given (RecorderOptions::observer):
// the online check of `record --against` (online/online_check.h) is one. The recorder depends on
// this interface only; the diff side implements it, so the recorder never links the diff.
//
//   auto checker = OnlineChecker::Open("runs/a", rank);   // an OpObserver
//   options.against = "runs/a";
//   options.observer = std::move(*checker);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/records.h"

namespace upguard {

// The first divergence an observer found, as online.json reports it.
struct OnlineDivergence {
  std::string kind;  // "culprit", "propagated", "structural", "reference ended"
  uint32_t step = 0;
  uint64_t index = 0;  // the candidate's op in its step (compared by position outside the
                       // input pipeline: the reference's index differs by its input ops)
  std::string op;      // the candidate's op
  std::string reference_op;
  std::string detail;  // "output 0 differs", "input 1 (other) differs", ...
};

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  // The recorder just wrote `op` (its string ids are the recorder's; `op_name` is its name) at
  // `index` of its step. Called under the recorder's lock, in trace order. Returns the first
  // divergence once it is certain; after that, nothing more.
  virtual std::optional<OnlineDivergence> Check(const OpRecord& op, uint64_t index,
                                                std::string_view op_name) = 0;
  // What the ops are compared with ("runs/a"), and notes that did not stop the check.
  virtual const std::string& reference_dir() const = 0;
  virtual const std::vector<std::string>& notes() const = 0;
};

}  // namespace upguard
