// adapter.h's announced ops: what Python says about an op no RecordFunction sees, turned into
// the OpInfo and IValues the op callbacks record (op_callbacks.h).
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "adapter.h"
#include "ivalue_args.h"
#include "model_state.h"
#include "op_callbacks.h"
#include "string_pool.h"

namespace upguard::torch_adapter {
namespace {

// One OpInfo per op name and argument list, alive for the process (OpCall refers to it).
const OpInfo& InfoFor(const std::string& name, const std::vector<AnnouncedArg>& inputs) {
  std::string key = name;
  for (const AnnouncedArg& arg : inputs) {
    key += '\0';
    key += arg.name;
    key += static_cast<char>('0' + static_cast<int>(arg.role));
  }
  static std::mutex mu;
  static auto* infos = new std::map<std::string, OpInfo>();  // never freed
  std::lock_guard<std::mutex> lock(mu);
  auto it = infos->find(key);
  if (it != infos->end()) return it->second;
  OpInfo info;
  info.name = name;
  for (size_t idx = 0; idx < inputs.size(); ++idx) {
    const AnnouncedRole role = inputs[idx].role;
    info.input_names.push_back(inputs[idx].name);
    info.input_is_out.push_back(role == AnnouncedRole::kOutput);
    if (role != AnnouncedRole::kRead) info.written_inputs.push_back(static_cast<int>(idx));
  }
  info.writes_inputs = !info.written_inputs.empty();
  return infos->emplace(std::move(key), std::move(info)).first->second;
}

struct Announced {
  const char* name;
  const OpInfo* info;
  std::vector<c10::IValue> inputs;  // alive until the exit: written inputs are read again then
  std::unique_ptr<at::ObserverContext> ctx;
};

}  // namespace

uint64_t EnterAnnouncedOpFromHost(const std::string& name, const std::vector<AnnouncedArg>& inputs,
                                  const std::string& call_site) {
  auto op = std::make_unique<Announced>();
  op->name = Pooled(name).data();  // the pool keeps a terminated copy
  op->info = &InfoFor(name, inputs);
  op->inputs.reserve(inputs.size());
  for (const AnnouncedArg& arg : inputs) {
    if (arg.tensor != 0) {
      op->inputs.emplace_back(ReclaimTensor(arg.tensor));
    } else {
      op->inputs.emplace_back(arg.text);
    }
  }
  op->ctx = EnterAnnouncedOp(OpCall{
      op->name, *op->info, c10::ArrayRef<const c10::IValue>(op->inputs.data(), op->inputs.size()),
      Pooled(call_site)});
  // Digested now; the op's context keeps the written ones, read again after it.
  op->inputs.clear();
  return reinterpret_cast<uint64_t>(op.release());
}

void ExitAnnouncedOpFromHost(uint64_t handle, const std::vector<uintptr_t>& results) {
  std::unique_ptr<Announced> op(reinterpret_cast<Announced*>(handle));
  if (op == nullptr) return;
  std::vector<c10::IValue> values;
  values.reserve(results.size());
  for (uintptr_t impl : results) values.emplace_back(ReclaimTensor(impl));
  ExitAnnouncedOp(OpCall{op->name, *op->info,
                         c10::ArrayRef<const c10::IValue>(op->inputs.data(), op->inputs.size())},
                  std::move(op->ctx), values);
}

void NoteCompiling(bool compiling) { SetCompiling(compiling); }

void NoteUninitialized(uintptr_t tensor) {
  if (tensor != 0) Uninit().MarkUninit(ReclaimTensor(tensor));
}

}  // namespace upguard::torch_adapter
