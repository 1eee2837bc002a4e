// What the operator schema says about an op's arguments, cached per op name.
//
// Alias annotations decide what is a value: a result that aliases an input without writing it
// (`Tensor(a)`) is a view and is not digested; a written alias (`Tensor(a!)`, in-place and out=
// results) is. `out=` arguments are inputs whose old contents the op never reads. The empty*
// and resize_ family defines no values at all. In-place ops that change only metadata
// (as_strided_, set_, squeeze_, ...) are written aliases that write no values: their result is
// a view too. Writes the schema does not declare come from undeclared_writes.h.
#pragma once

#include <ATen/core/function_schema.h>
#include <ATen/record_function.h>

#include <string>
#include <vector>

namespace upguard::torch_adapter {

enum class ResultKind : uint8_t { kValue, kView, kUninit };

struct OpInfo {
  std::string name;
  bool skip = false;  // profiler bookkeeping ops: never recorded
  // Every result is a view and nothing is written: the op never reads its inputs' values, so
  // they are recorded as kAlias (shape only). Digesting them would also read memory that may
  // not be initialized yet (a kernel's output buffer viewed before it is filled).
  bool pure_view = false;
  // The op overwrites `self` without reading it (fill_, zero_, copy_, random fills): its
  // old contents are recorded as kAlias, for the same reason.
  bool overwrites_self = false;
  // torch.tensor(data) (and as_tensor, new_tensor, from_numpy, default_collate of numbers)
  // makes its tensor with aten::empty, fills it from Python without an op, and hands it to
  // aten::lift_fresh: from there on `self`'s values are defined, so its storage is no longer
  // "uninit" and this op and the ones after it digest it (a DataLoader's labels).
  bool defines_self_values = false;
  // Some argument is written: `Tensor(a!)` (in-place and out= ops), or a write the schema
  // does not declare (undeclared_writes.h).
  bool writes_inputs = false;
  // The inputs the op writes, by argument index, declared or not (not for collectives, whose
  // writes are recorded at completion). Recorded again as outputs after the op when no result
  // returns them, and dropped from the digest cache.
  std::vector<int> written_inputs;
  bool undeclared_writes = false;  // some of written_inputs are not in the schema
  // Every input the op may write, by argument index: written_inputs, and the declared writes
  // that change only metadata (resize_ may move the memory) or that a collective makes at its
  // completion. The recorder's hash pool is waited for before the op runs (adapter.h).
  std::vector<int> mutable_inputs;
  bool has_schema = false;  // without one, any input may be written
  // A c10d collective (collectives.h): the argument whose tensors it writes (-1: none, as for
  // send and barrier) and the ProcessGroup argument. Its tensor results alias its arguments.
  bool collective = false;
  int collective_written_arg = -1;
  int collective_group_arg = -1;
  // A functional collective (_c10d_functional::*, collectives.h): it writes its results (new
  // tensors, or for all_reduce_ and the like its written argument, returned) and completes
  // at the wait_tensor on them; its group is named by the `group_name` argument.
  bool collective_functional = false;
  int collective_group_name_arg = -1;
  // _c10d_functional::wait_tensor(s): the functional collectives writing its argument
  // complete as it returns. It returns its argument: a view.
  bool collective_wait = false;
  // Index of a `Generator?` argument (random ops), or -1.
  int generator_arg = -1;
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
