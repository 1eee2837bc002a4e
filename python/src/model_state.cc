#include "model_state.h"

#include <c10/util/intrusive_ptr.h>

#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <unordered_set>
#include <utility>

#include "digest_cache.h"
#include "ivalue_args.h"

namespace upguard::torch_adapter {
namespace {

std::mutex g_source_mu;
std::function<void(const ModelTensorSink&)> g_source;

// Says once per tensor name that its bytes changed while its cached digest said otherwise.
void WarnStale(std::string_view name, uint32_t step) {
  static std::mutex mu;
  static std::unordered_set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (!warned.emplace(name).second) return;
  std::fprintf(stderr,
               "upguard: %.*s changed at step %u without a write upguard saw (a kernel writing "
               "an input its schema does not declare, or memory written outside PyTorch); its "
               "digest as an op input may have been stale until the step's end\n",
               static_cast<int>(name.size()), name.data(), step);
}

}  // namespace

at::Tensor ReclaimTensor(uintptr_t impl) {
  auto ptr =
      c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::unsafe_reclaim_from_nonowning(
          reinterpret_cast<c10::TensorImpl*>(impl));
  return at::Tensor(std::move(ptr));
}

void SetModelTensorSource(std::function<void(const ModelTensorSink&)> source) {
  std::lock_guard<std::mutex> lock(g_source_mu);
  g_source = std::move(source);
}

std::vector<NamedTensor> ReadModelTensors() {
  std::function<void(const ModelTensorSink&)> source;
  {
    std::lock_guard<std::mutex> lock(g_source_mu);
    source = g_source;
  }
  std::vector<NamedTensor> tensors;
  if (!source) return tensors;
  source([&tensors](const ModelTensorRef& ref) {
    if (ref.impl == 0) return;
    tensors.push_back(NamedTensor{std::string(ref.name), ref.role, ReclaimTensor(ref.impl)});
  });
  return tensors;
}

RecordedState RecordModelState(Recorder* recorder, const std::vector<NamedTensor>& tensors) {
  if (!recorder->Wants(kStateOp, 0)) return {};
  std::deque<c10::IValue> values;  // what batch.tensors point into
  ArgBatch batch;
  for (const NamedTensor& named : tensors) {
    if (named.role == TensorRole::kGradient) continue;
    values.emplace_back(named.tensor);
    AppendTensorValues(values.back(), named.name, &batch);
  }
  // Hash every tensor afresh; remember what the cache said, to check it.
  std::vector<std::optional<Digest128>> cached(batch.args.size());
  for (size_t idx = 0; idx < batch.args.size(); ++idx) {
    Arg& arg = batch.args[idx];
    if (arg.known_pending != nullptr) {  // the hash pool's, of the bytes the cache last saw
      const StatusOr<TensorDigest>& made = arg.known_pending->Wait();
      if (made.ok()) cached[idx] = made->digest;
      arg.known_pending = nullptr;
    }
    if (arg.known == nullptr) continue;
    cached[idx] = arg.known->digest;
    arg.known = nullptr;
  }
  std::vector<ArgRecord> inputs = recorder->DigestArgs(batch.args);
  // A fingerprint step saw none of the writes: its cached digests are not evidence of any, and
  // the cache is dropped at its end (steps.cc EndStep).
  const bool fingerprint = recorder->FingerprintStep();
  for (size_t idx = 0; idx < inputs.size() && !fingerprint; ++idx) {
    if (!cached[idx] || *cached[idx] == inputs[idx].digest || batch.tensors[idx] == nullptr) {
      continue;
    }
    Digests().Invalidate(*batch.tensors[idx]);
    WarnStale(batch.args[idx].name, static_cast<uint32_t>(recorder->step()));
  }
  if (!fingerprint) RememberDigests(batch, inputs);
  static const OpInfo kReadsOnly;  // writes nothing: held by reference
  RecordedState out;
  out.held = HoldInputs(kReadsOnly, batch, inputs, recorder->step(), recorder->ops_in_step(),
                        recorder->compared_in_step(), kStateOp, "", Phase::kOther);
  OpEvent event;
  event.op = kStateOp;
  event.phase = Phase::kOther;
  out.recorded = recorder->Record(event, std::move(inputs), {});
  if (out.held.held && !out.recorded.diverged) {
    out.stop_after_capture = WriteCaptureIfSelected(out.recorded, event, out.held, ArgBatch{}, {});
  }
  return out;
}

void RecordGradients(Recorder* recorder, const std::vector<NamedTensor>& tensors) {
  if (!recorder->FingerprintStep() || !recorder->Wants(kGradsOp, 0)) return;
  std::deque<c10::IValue> values;  // what batch.tensors point into
  ArgBatch batch;
  for (const NamedTensor& named : tensors) {
    if (named.role != TensorRole::kGradient) continue;
    values.emplace_back(named.tensor);
    AppendTensorValues(values.back(), named.name, &batch);
  }
  if (batch.args.empty()) return;
  for (Arg& arg : batch.args) {
    arg.known = nullptr;
    arg.known_pending = nullptr;
  }
  OpEvent event;
  event.op = kGradsOp;
  event.phase = Phase::kOther;
  event.inputs = std::move(batch.args);
  recorder->Record(event);
}

}  // namespace upguard::torch_adapter
