// What the operator schema says about an op's arguments, cached per op name.
//
// Alias annotations decide what is a value: a result that aliases an input without writing it
// (`Tensor(a)`) is a view and is not digested; a written alias (`Tensor(a!)`, in-place and out=
// results) is. `out=` arguments are inputs whose old contents the op never reads. The empty*
// and resize_ family defines no values at all.
#pragma once

#include <ATen/record_function.h>

#include <string>
#include <vector>

namespace upguard::torch_adapter {

enum class ResultKind : uint8_t { kValue, kView, kUninit };

struct OpInfo {
  bool skip = false;  // profiler bookkeeping ops: never recorded
  std::vector<std::string> input_names;
  std::vector<bool> input_is_out;
  std::vector<ResultKind> results;
  std::vector<std::string> result_names;

  ResultKind Result(size_t idx) const {
    return idx < results.size() ? results[idx] : ResultKind::kValue;
  }
};

// Thread-safe; the reference stays valid for the life of the process.
const OpInfo& LookupOpInfo(const at::RecordFunction& fn);

}  // namespace upguard::torch_adapter
