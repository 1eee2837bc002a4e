#include "write_probe.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>

#include "ivalue_args.h"
#include "thread_state.h"
#include "undeclared_writes.h"

namespace upguard::torch_adapter {
namespace {

struct ProbeState {
  std::mutex mu;
  std::optional<at::CallbackHandle> handle;
  std::set<std::pair<std::string, std::string>> found;
};

ProbeState& Probe() {
  static auto* state = new ProbeState();  // lives until exit; callbacks may run late
  return *state;
}

struct Snapshot {
  std::string arg;  // the schema's name
  at::Tensor tensor;
  at::Tensor before;  // a contiguous copy taken at entry
};

struct ProbeContext : at::ObserverContext {
  std::string_view op;
  std::vector<Snapshot> inputs;
};

bool SharesStorage(const at::Tensor& a, const at::Tensor& b) {
  return a.has_storage() && b.has_storage() &&
         a.storage().unsafeGetStorageImpl() == b.storage().unsafeGetStorageImpl();
}

bool Probeable(const at::Tensor& tensor) {
  return IsReadable(tensor) && tensor.numel() > 0 && !tensor.is_inference();
}

// Declared writes, and every input sharing storage with one (a view written through its base).
std::vector<at::Tensor> DeclaredWrites(const at::RecordFunction& fn) {
  std::vector<at::Tensor> written;
  c10::optional<c10::FunctionSchema> schema = fn.operator_schema();
  if (!schema) return written;
  const auto& values = fn.inputs();
  for (size_t idx = 0; idx < values.size() && idx < schema->arguments().size(); ++idx) {
    const c10::AliasInfo* alias = schema->arguments()[idx].alias_info();
    if (alias == nullptr || !alias->isWrite()) continue;
    ForEachTensor(values[idx], [&](const at::Tensor& t) { written.push_back(t); });
  }
  return written;
}

// Every result aliases an input without writing it: the recorder records such an op's inputs
// as aliases and never digests them, so what happens to their bytes cannot make a stale digest.
// (Measured: the bytes under aten::as_strided / slice / narrow move when the view is of an
// output buffer that an enclosing kernel is filling, as aten::any does with its result.)
bool PureView(const c10::FunctionSchema& schema) {
  if (schema.returns().empty()) return false;
  for (const c10::Argument& arg : schema.arguments()) {
    if (arg.alias_info() != nullptr && arg.alias_info()->isWrite()) return false;
  }
  for (const c10::Argument& ret : schema.returns()) {
    if (ret.alias_info() == nullptr || ret.alias_info()->isWrite()) return false;
  }
  return true;
}

std::unique_ptr<at::ObserverContext> OnEnter(const at::RecordFunction& fn) {
  ThreadState& ts = Tls();
  if (ts.busy || std::strncmp(fn.name(), "aten::", 6) != 0) return nullptr;
  c10::optional<c10::FunctionSchema> schema = fn.operator_schema();
  if (!schema || PureView(*schema)) return nullptr;
  ts.busy = true;
  auto ctx = std::make_unique<ProbeContext>();
  try {
    const std::vector<at::Tensor> declared = DeclaredWrites(fn);
    const auto& values = fn.inputs();
    for (size_t idx = 0; idx < values.size() && idx < schema->arguments().size(); ++idx) {
      const c10::Argument& arg = schema->arguments()[idx];
      if (arg.alias_info() != nullptr && arg.alias_info()->isWrite()) continue;
      ForEachTensor(values[idx], [&](const at::Tensor& t) {
        if (!Probeable(t)) return;
        for (const at::Tensor& w : declared) {
          if (SharesStorage(t, w)) return;
        }
        ctx->inputs.push_back(Snapshot{arg.name(), t, t.clone(at::MemoryFormat::Contiguous)});
      });
    }
    ctx->op = fn.name();
  } catch (const std::exception& e) {
    ctx->inputs.clear();
  }
  ts.busy = false;
  if (ctx->inputs.empty()) return nullptr;
  return ctx;
}

void OnExit(const at::RecordFunction& fn, at::ObserverContext* ctx_base) {
  if (ctx_base == nullptr) return;
  ThreadState& ts = Tls();
  const bool was_busy = ts.busy;
  ts.busy = true;
  auto* ctx = static_cast<ProbeContext*>(ctx_base);
  try {
    for (const Snapshot& snap : ctx->inputs) {
      const at::Tensor now = snap.tensor.contiguous();
      const bool same = now.sizes().equals(snap.before.sizes()) &&
                        std::memcmp(now.data_ptr(), snap.before.data_ptr(), now.nbytes()) == 0;
      if (same) continue;
      ProbeState& probe = Probe();
      std::lock_guard<std::mutex> lock(probe.mu);
      probe.found.emplace(std::string(fn.name()), std::string(snap.arg));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "upguard write probe: %s: %s\n", fn.name(), e.what());
  }
  ts.busy = was_busy;
}

}  // namespace

void StartWriteProbe() {
  ProbeState& probe = Probe();
  std::lock_guard<std::mutex> lock(probe.mu);
  if (probe.handle) return;
  probe.found.clear();
  probe.handle = at::addGlobalCallback(at::RecordFunctionCallback(OnEnter, OnExit)
                                           .needsInputs(true)
                                           .scopes({at::RecordScope::FUNCTION}));
}

std::vector<WriteFinding> StopWriteProbe() {
  ProbeState& probe = Probe();
  std::lock_guard<std::mutex> lock(probe.mu);
  if (probe.handle) at::removeCallback(*probe.handle);
  probe.handle.reset();
  std::vector<WriteFinding> findings;
  for (const auto& [op, arg] : probe.found) {
    findings.emplace_back(op, arg, IsUndeclaredWrite(op, arg));
  }
  return findings;
}

}  // namespace upguard::torch_adapter
