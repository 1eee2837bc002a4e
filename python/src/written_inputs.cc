#include "written_inputs.h"

#include "op_info.h"

namespace upguard::torch_adapter {

// An op not recorded still changes what it writes: forget the digests of its undeclared
// writes now (declared ones move the version counter). Nothing digests them before it ends:
// a nested op that does is recorded and forgets them itself at its exit.
void ForgetUndeclaredWrites(const at::RecordFunction& fn) {
  const OpInfo& info = LookupOpInfo(fn);
  if (!info.undeclared_writes) return;
  for (int idx : info.written_inputs) {
    if (static_cast<size_t>(idx) >= fn.inputs().size()) continue;
    ForEachTensor(fn.inputs()[idx], [](const at::Tensor& t) { ForgetWritten(t); });
  }
}

namespace {

bool Returned(const at::Tensor& tensor, const std::vector<c10::IValue>& results) {
  bool found = false;
  for (const c10::IValue& result : results) {
    ForEachTensor(result, [&](const at::Tensor& t) {
      found |= t.unsafeGetTensorImpl() == tensor.unsafeGetTensorImpl();
    });
  }
  return found;
}

}  // namespace

// The inputs the op wrote: their cached digests are stale now (before anything is digested),
// and those no result returns are recorded as outputs (running statistics, a foreach op's
// tensors), digested as they are after the op.
void ForgetWrittenInputs(const WrittenInputs& written) {
  for (const auto& entry : written) {
    ForEachTensor(entry.second, [](const at::Tensor& t) { ForgetWritten(t); });
  }
}

void AppendWrittenInputs(const WrittenInputs& written, const std::vector<c10::IValue>& results,
                         ArgBatch* batch) {
  for (const auto& [name, value] : written) {
    bool returned = true;
    ForEachTensor(value, [&](const at::Tensor& t) { returned &= Returned(t, results); });
    if (!returned) AppendTensorValues(value, name, batch);
  }
}

}  // namespace upguard::torch_adapter
