#include "steps.h"

#include <string_view>
#include <vector>

#include "call_site.h"
#include "collectives.h"
#include "digest_cache.h"
#include "divergence.h"
#include "ivalue_args.h"
#include "model_state.h"
#include "rng_state.h"
#include "string_pool.h"
#include "tensor_names.h"
#include "thread_state.h"
#include "unread_args.h"

namespace upguard::torch_adapter {

void RecordRngState(Session& session) {
  constexpr std::string_view kOp = "upguard::rng_state";
  session.NoteRngRecorded();
  Recorder* recorder = session.recorder();
  if (!recorder->Wants(kOp, 0)) return;
  ThreadState& ts = Tls();
  if (ts.busy) return;
  ts.busy = true;  // reading the state runs ATen code: not ops of the training
  const at::Tensor state = DefaultCpuGeneratorState();
  OpEvent event;
  event.op = kOp;
  event.inputs = {GeneratorStateArg("cpu", state)};
  const RecordedOp recorded = recorder->Record(event);
  if (recorded.diverged) OnDivergence(session, recorded, event, HeldInputs{}, ArgBatch{}, {});
  ts.busy = false;
}

void RecordModelStateAtStepEnd(Session& session) {
  Recorder* recorder = session.recorder();
  ThreadState& ts = Tls();
  if (ts.busy || !(recorder->StepWanted() || recorder->FingerprintStep())) return;
  ts.busy = true;
  RecordedState recorded;
  try {
    const std::vector<NamedTensor> tensors = ReadModelTensors();
    if (recorder->FingerprintStep()) RecordGradients(recorder, tensors);
    if (!tensors.empty()) recorded = RecordModelState(recorder, tensors);
    // Gradients and state made in this step are named from now on (a fingerprint step records
    // no op to name: the step after it renames them if it records ops, EndStep).
    if (!recorder->FingerprintStep()) ResetTensorNames(tensors);
  } catch (const std::exception& e) {
    ts.busy = false;
    return Session::Disable("the model state at the step's end", e.what());
  }
  ts.busy = false;
  if (recorded.recorded.diverged) {
    OpEvent event;
    event.op = kStateOp;
    OnDivergence(session, recorded.recorded, event, recorded.held, ArgBatch{}, {});
  }
  if (recorded.stop_after_capture) StopAfterCapture();
}

namespace {

// What the step about to begin needs, as the step before it (`was_fingerprint` or not) ended.
// A fingerprint step follows no op (Session::FollowOps), so no write and no allocation: it
// starts with nothing known, so that no digest cached before it, nor a storage once
// uninitialized and written during it, is taken for what it was.
void BeginStep(Session& session, bool was_fingerprint) {
  const bool fingerprint = session.recorder()->FingerprintStep();
  if (fingerprint) {
    Digests().Clear();
    Uninit().Clear();
  } else if (was_fingerprint) {
    RefreshTensorNames();
  }
  session.FollowOps(!fingerprint);
}

}  // namespace

void EndStep(Session& session) {
  Recorder* recorder = session.recorder();
  session.collectives().Flush(recorder);
  RecordModelStateAtStepEnd(session);
  const bool was_fingerprint = recorder->FingerprintStep();
  recorder->MarkStep();
  session.ForgetStep();
  Uninit().DropExpired();
  Digests().Trim();
  BeginStep(session, was_fingerprint);
  const int64_t ended = recorder->step() - 1;
  if (session.distributed() && session.distributed()->agree(ended)) {
    const DistributedOnline hooks = *session.distributed();
    Session::CloseAndExit(
        "as another rank diverged from the reference (the ranks stop together at "
        "the end of the step)",
        kExitDivergedOnline, [hooks, ended] { hooks.depart(ended); });
  }
  if (session.stop_at_step() && recorder->step() >= *session.stop_at_step()) {
    Session::CloseAndExit("as the steps to record ended (stop_after_steps)", kExitAfterSteps);
  }
}

void ResumeAt(int64_t step) {
  Session* session = Session::Active();
  if (session == nullptr || step <= session->recorder()->step()) return;
  Recorder* recorder = session->recorder();
  session->collectives().Flush(recorder);
  const bool was_fingerprint = recorder->FingerprintStep();
  recorder->SkipTo(step);
  session->ForgetStep();
  // The checkpoint's tensors were loaded over what the program held: nothing known of them
  // before holds, and the optimizer's state tensors are new ones to name.
  Digests().Clear();
  Uninit().Clear();
  BeginStep(*session, was_fingerprint);
  if (!recorder->FingerprintStep()) RefreshTensorNames();
}

// adapter.h: the step and the batch, from Python.

void MarkStep() {
  Session* session = Session::Active();
  if (session == nullptr) return;
  session->UseExplicitSteps();
  EndStep(*session);
}

namespace {

// What a tensor from Python records as: its values where upguard can read them, else read
// another way or recorded unread with why (unread_args.h); a nested tensor: its dtype only.
Arg PyTensorArg(std::string_view name, const at::Tensor& tensor, ArgBatch* batch) {
  if (IsReadable(tensor)) return Arg::Tensor(name, ViewOf(tensor));
  TensorView view;
  view.dtype = ToDType(tensor.scalar_type());
  if (tensor.is_nested()) return Arg::Unread(name, view, UnreadReason::kLayout, "nested");
  view.ndim = static_cast<int>(tensor.dim());
  view.sizes = tensor.sizes().data();
  return OtherwiseReadArg(tensor, name, view, ArgKind::kTensor, batch);
}

// Records `op` with `tensors` (from Python) as its inputs, at the caller's call site.
void RecordPyTensors(std::string_view op, Phase phase, const std::vector<PyTensorRef>& tensors,
                     bool fingerprint_only) {
  Session* session = Session::Active();
  if (session == nullptr || !session->recorder()->Wants(op, 0)) return;
  Recorder* recorder = session->recorder();
  if (fingerprint_only && !recorder->FingerprintStep()) return;
  ThreadState& ts = Tls();
  if (ts.busy) return;
  if (!session->rng_recorded()) RecordRngState(*session);
  OpEvent event;
  event.op = op;
  event.phase = phase;
  event.call_site = Pooled(CurrentCallSite());
  std::vector<at::Tensor> held;  // what event.inputs point into
  held.reserve(tensors.size());
  ArgBatch made;  // what an unread or resolved tensor's Arg points into
  for (const PyTensorRef& ref : tensors) {
    if (ref.impl == 0) continue;
    held.push_back(ReclaimTensor(ref.impl));
    event.inputs.push_back(PyTensorArg(ref.name, held.back(), &made));
  }
  const RecordedOp recorded = recorder->Record(event);
  // A pseudo-op has no tensors of its own to capture: the message and the stop only.
  if (recorded.diverged) OnDivergence(*session, recorded, event, HeldInputs{}, ArgBatch{}, {});
}

}  // namespace

void RecordModelInputs(const std::vector<PyTensorRef>& tensors) {
  RecordPyTensors("upguard::batch", Phase::kForward, tensors, /*fingerprint_only=*/false);
}

void RecordLoss(const std::vector<PyTensorRef>& tensors) {
  RecordPyTensors(kLossOp, Phase::kBackward, tensors, /*fingerprint_only=*/true);
}

}  // namespace upguard::torch_adapter
