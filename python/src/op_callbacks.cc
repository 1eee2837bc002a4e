// The ATen RecordFunction callbacks that feed every operator to the core Recorder.
//
// Two global callbacks: one for operators (FUNCTION scope, with inputs and outputs) and one
// for scopes that set context (BACKWARD_FUNCTION: an autograd node is running;
// USER_SCOPE "Optimizer.step#..." / "Optimizer.zero_grad#...": the optimizer is).
//
// Per thread we keep the nesting depth of operators, the forward module stack (pushed by the
// Python nn.Module hooks), the running autograd nodes and the optimizer scope; they decide the
// phase, module path and call site of each op. Inputs are digested at entry (before in-place
// ops change them), outputs at exit. Backward ops get the module and call site of the forward
// op that created their autograd node (origins.h). Outside the recorded steps only the
// bookkeeping runs; call sites (a GIL acquire and a frame walk) are computed only when needed.
//
// Nothing here may disturb the training: all work is read-only, every callback catches all
// exceptions, and the first failure turns recording off.
#include <ATen/Parallel.h>
#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "adapter.h"
#include "call_site.h"
#include "capture.h"
#include "collectives.h"
#include "digest_cache.h"
#include "ivalue_args.h"
#include "model_state.h"
#include "op_info.h"
#include "origins.h"
#include "rng_state.h"
#include "string_pool.h"
#include "tensor_names.h"
#include "thread_state.h"
#include "written_inputs.h"

namespace upguard::torch_adapter {
namespace {

struct OpContext : at::ObserverContext {
  std::vector<ArgRecord> inputs;
  Phase phase = Phase::kOther;
  uint32_t depth = 0;
  std::string_view module;
  std::string_view call_site;
  std::string_view node;
  HeldInputs held;  // for a targeted capture (capture.h)
  // The inputs the op writes (OpInfo::written_inputs), kept from entry: the RecordFunction's
  // inputs are gone at exit. Recorded as outputs when no result returns them.
  WrittenInputs written;
};

std::atomic<Recorder*> g_recorder{nullptr};
std::atomic<bool> g_explicit_steps{false};
std::atomic<bool> g_continue_after_divergence{false};
std::atomic<bool> g_rng_recorded{false};         // upguard::rng_state was recorded in this step
std::atomic<bool> g_forward_seen{false};         // a module ran forward in this step
std::atomic<bool> g_backward_seen{false};        // an autograd node ran in this step
std::mutex g_lifecycle_mu;                       // Start / Stop
std::optional<DistributedOnline> g_distributed;  // set at Start, before the callbacks
std::vector<at::CallbackHandle> g_handles;
std::vector<std::unique_ptr<Recorder>> g_recorders;  // closed ones stay alive: late callbacks

OriginTable g_origins;

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Backward inside autograd nodes, optimizer inside Optimizer.step, forward inside a module's
// forward and between the step's first module call and its backward (the loss); everything
// else (initialization, data preparation, gradient clipping, zero_grad) is "other".
Phase CurrentPhase(const ThreadState& ts) {
  if (!ts.nodes.empty()) return Phase::kBackward;
  if (ts.optimizer > 0) return Phase::kOptimizer;
  if (ts.zero_grad > 0) return Phase::kOther;
  if (!ts.modules.empty()) return Phase::kForward;
  return g_forward_seen.load(std::memory_order_relaxed) &&
                 !g_backward_seen.load(std::memory_order_relaxed)
             ? Phase::kForward
             : Phase::kOther;
}

void Disable(const char* where, const char* what) {
  Recorder* recorder = g_recorder.exchange(nullptr);
  if (recorder != nullptr) {
    std::fprintf(stderr, "upguard: recording stopped, training continues: %s: %s\n", where, what);
  }
}

// The default CPU generator's state at the start of a step, as the input of a pseudo-op
// (rng_state.h), recorded before the step's first recorded op (so a run that ends after its
// last optimizer.step gets no extra step). Not for step 0: recording starts at `import torch`,
// where torch seeds itself from the OS, before the program's manual_seed; step 0's random ops
// record the state they draw from.
void OnDivergence(const RecordedOp& recorded, const OpEvent& event, const HeldInputs& held,
                  const ArgBatch& outputs, const std::vector<Digest128>& output_digests);

void RecordRngState(Recorder* recorder) {
  constexpr std::string_view kOp = "upguard::rng_state";
  g_rng_recorded.store(true);
  if (!recorder->Wants(kOp, 0)) return;
  ThreadState& ts = Tls();
  if (ts.busy) return;
  ts.busy = true;  // reading the state runs ATen code: not ops of the training
  const at::Tensor state = DefaultCpuGeneratorState();
  OpEvent event;
  event.op = kOp;
  event.inputs = {GeneratorStateArg("cpu", state)};
  const RecordedOp recorded = recorder->Record(event);
  if (recorded.diverged) OnDivergence(recorded, event, HeldInputs{}, ArgBatch{}, {});
  ts.busy = false;
}

[[noreturn]] void CloseAndExit(const char* why, int code);
[[noreturn]] void StopAfterCapture();

// The model's parameters, buffers and optimizer state as the step ends (model_state.h).
// Reading them runs Python (with the GIL) but no torch op.
void RecordModelStateAtStepEnd(Recorder* recorder) {
  ThreadState& ts = Tls();
  if (ts.busy || !recorder->StepWanted()) return;
  ts.busy = true;
  RecordedState recorded;
  try {
    const std::vector<NamedTensor> tensors = ReadModelTensors();
    if (!tensors.empty()) recorded = RecordModelState(recorder, tensors);
    ResetTensorNames(tensors);  // gradients and state made in this step are named from now on
  } catch (const std::exception& e) {
    ts.busy = false;
    return Disable("the model state at the step's end", e.what());
  }
  ts.busy = false;
  if (recorded.recorded.diverged) {
    OpEvent event;
    event.op = kStateOp;
    OnDivergence(recorded.recorded, event, recorded.held, ArgBatch{}, {});
  }
  if (recorded.stop_after_capture) StopAfterCapture();
}

void StepBoundary(Recorder* recorder) {
  FlushCollectives(recorder);
  RecordModelStateAtStepEnd(recorder);
  recorder->MarkStep();
  g_rng_recorded.store(false);
  g_forward_seen.store(false);
  g_backward_seen.store(false);
  g_origins.Clear();
  Uninit().DropExpired();
  Digests().Trim();
  if (g_distributed && g_distributed->agree(recorder->step() - 1)) {
    CloseAndExit(
        "as another rank diverged from the reference (the ranks stop together at "
        "the end of the step)",
        kExitDivergedOnline);
  }
}

// Closes the trace (meta.json included) and ends the process at once with `code`, saying
// `why`: a long training run re-run only to capture one op, or one that already diverged from
// its reference, should not go on.
[[noreturn]] void CloseAndExit(const char* why, int code) {
  Recorder* recorder = g_recorder.exchange(nullptr);
  if (recorder != nullptr) FlushCollectives(recorder);
  const Status status = recorder != nullptr ? recorder->Close() : Status::Ok();
  std::fprintf(stderr, "upguard: stopping the program here, %s%s%s\n", why,
               status.ok() ? "" : "; the trace did not close: ",
               status.ok() ? "" : status.message().c_str());
  std::fflush(nullptr);
  std::_Exit(status.ok() ? code : 2);
}

// The capture selector said `stop`.
[[noreturn]] void StopAfterCapture() {
  std::fprintf(stderr, "upguard: %s\n", CaptureSummary().c_str());
  CloseAndExit("as --capture ... stop asks", kExitAfterCapture);
}

// The first divergence from the --against reference: its live tensors are captured at once,
// then the program stops (exit code 1) unless told to continue.
void OnDivergence(const RecordedOp& recorded, const OpEvent& event, const HeldInputs& held,
                  const ArgBatch& outputs, const std::vector<Digest128>& output_digests) {
  const std::string capture =
      WriteDivergenceCapture(recorded, event, held, outputs, output_digests);
  std::fprintf(stderr, "upguard: diverged from the reference at step %u #%llu (%.*s)%s%s\n",
               recorded.step, static_cast<unsigned long long>(recorded.index),
               static_cast<int>(event.op.size()), event.op.data(),
               capture.empty() ? "" : "; captured to ", capture.c_str());
  if (g_continue_after_divergence.load()) return;
  if (g_distributed) {  // record on to the step's end, where every rank stops
    Recorder* recorder = g_recorder.load(std::memory_order_acquire);
    g_distributed->notice(recorder != nullptr ? recorder->divergence_json() : "{}");
    return;
  }
  CloseAndExit("(--continue records on)", kExitDivergedOnline);
}

std::unique_ptr<at::ObserverContext> EnterOp(const at::RecordFunction& fn, ThreadState& ts,
                                             uint32_t depth) {
  Recorder* recorder = g_recorder.load(std::memory_order_acquire);
  if (recorder == nullptr || ts.busy || !recorder->StepWanted() || OnCollectiveWorker() ||
      at::in_parallel_region()) {
    return nullptr;
  }
  const OpInfo& info = LookupOpInfo(fn);
  if (info.skip) return nullptr;

  const bool backward = !ts.nodes.empty();
  if (depth == 0 && !backward) {
    ts.python_known = false;
    ts.first_node = at::sequence_number::peek();
  }
  if (!recorder->Wants(fn.name(), depth)) return nullptr;
  if (!g_rng_recorded.load(std::memory_order_relaxed)) RecordRngState(recorder);
  if (!backward) ts.ReadPython();  // module calls that raised are no forward scope
  const Phase phase = CurrentPhase(ts);

  ts.busy = true;
  auto ctx = std::make_unique<OpContext>();
  ctx->phase = phase;
  ctx->depth = depth;
  if (backward) {
    ctx->module = ts.nodes.back().origin.module;
    ctx->call_site = ts.nodes.back().origin.call_site;
    ctx->node = ts.nodes.back().name;
  } else {
    ctx->module = ts.Module();
    ctx->call_site = ts.CallSite();
    // DataLoader work outside the model: its ops interleave with the training's in the order
    // worker batches arrive, so they are its own phase, which the diff does not compare by
    // position (the batch entering the model is recorded as upguard::batch).
    if (ts.input_pipeline && ts.modules.empty() && phase != Phase::kOptimizer) {
      ctx->phase = Phase::kInput;
    }
  }
  ArgBatch batch;
  AppendInputs(info, fn.inputs(), &batch);
  AppendGeneratorState(info, fn.inputs(), &batch);
  // State an optimizer creates in its first step is named once it holds it.
  if (LabelArgs(&batch) > 0 && phase == Phase::kOptimizer && !ts.names_refreshed) {
    ts.names_refreshed = true;
    ResetTensorNames(ReadModelTensors());
    LabelArgs(&batch);
  }
  ctx->inputs = recorder->DigestArgs(batch.args);
  RememberDigests(batch, ctx->inputs);
  ctx->held = HoldInputs(info, batch, ctx->inputs, recorder->step(), recorder->ops_in_step(),
                         fn.name(), ctx->module, ctx->phase);
  for (int idx : info.written_inputs) {
    if (static_cast<size_t>(idx) < fn.inputs().size()) {
      ctx->written.emplace_back(info.input_names[idx], fn.inputs()[idx]);
    }
  }
  ts.busy = false;
  return ctx;
}

// At the end of a top-level forward op: the autograd nodes it created map to its module and
// call site, for the backward ops they will run.
void RememberOrigins(ThreadState& ts) {
  const uint64_t end = at::sequence_number::peek();
  if (end <= ts.first_node) return;
  g_origins.Add(ts.first_node, end, Origin{ts.Module(), ts.CallSite()});
}

// The autograd engine wraps each node in a FUNCTION-scope record with this prefix; it also
// covers the engine's own ops around the node (summing broadcast gradients). It opens a
// backward scope rather than being an op.
constexpr std::string_view kEvaluateFunction = "autograd::engine::evaluate_function: ";

bool IsEvaluateFunction(const at::RecordFunction& fn) {
  return StartsWith(fn.name(), kEvaluateFunction);
}

void EnterNode(ThreadState& ts, std::string_view name, int64_t seq_nr) {
  Origin origin = g_origins.Find(seq_nr);
  if (origin.module.empty() && origin.call_site.empty() && !ts.nodes.empty()) {
    origin = ts.nodes.back().origin;
  }
  ts.nodes.push_back(Node{Pooled(name), origin, ts.depth});
  ts.depth = 0;  // ops inside a node count their depth from it
  g_backward_seen.store(true, std::memory_order_relaxed);
}

void ExitNode(ThreadState& ts) {
  if (ts.nodes.empty()) return;
  ts.depth = ts.nodes.back().saved_depth;
  ts.nodes.pop_back();
}

// As Optimizer.step begins: the gradients of this step and the optimizer's state get their
// names (tensor_names.h).
void RefreshTensorNamesForStep(ThreadState& ts) {
  Recorder* recorder = g_recorder.load(std::memory_order_acquire);
  ts.names_refreshed = false;
  if (recorder == nullptr || ts.busy || !recorder->StepWanted()) return;
  ts.busy = true;
  ResetTensorNames(ReadModelTensors());
  ts.busy = false;
}

// Runs `body`; an exception turns recording off instead of reaching the training.
template <typename Body>
auto Guarded(const at::RecordFunction& fn, ThreadState& ts, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    ts.busy = false;
    Disable(fn.name(), e.what());
  } catch (...) {
    ts.busy = false;
    Disable(fn.name(), "unknown exception");
  }
  return decltype(body())();
}

void LaunchIfCollective(const at::RecordFunction& fn, ThreadState& ts, uint32_t depth) {
  if (g_recorder.load(std::memory_order_acquire) == nullptr || ts.busy || OnCollectiveWorker()) {
    return;
  }
  const OpInfo& info = LookupOpInfo(fn);
  if (!info.collective) return;
  ts.busy = true;
  CollectiveOpEntered(info, fn.inputs(), depth);
  ts.busy = false;
}

std::unique_ptr<at::ObserverContext> OnOpEnter(const at::RecordFunction& fn) {
  ThreadState& ts = Tls();
  if (IsEvaluateFunction(fn)) {
    Guarded(fn, ts, [&] {
      EnterNode(ts, std::string_view(fn.name()).substr(kEvaluateFunction.size()), fn.seqNr());
    });
    return nullptr;
  }
  const uint32_t depth = ts.depth++;
  auto ctx = Guarded(fn, ts, [&] { return EnterOp(fn, ts, depth); });
  if (ctx == nullptr && !ts.busy && g_recorder.load(std::memory_order_acquire) != nullptr) {
    Guarded(fn, ts, [&] { ForgetUndeclaredWrites(fn); });
  }
  // After EnterOp: the collective's inputs are digested before they count as in flight.
  if (std::strncmp(fn.name(), "c10d::", 6) == 0) {
    Guarded(fn, ts, [&] { LaunchIfCollective(fn, ts, depth); });
  }
  return ctx;
}

RecordedOp ExitOp(const at::RecordFunction& fn, at::ObserverContext* ctx_base, ThreadState& ts,
                  uint32_t depth) {
  Recorder* recorder = g_recorder.load(std::memory_order_acquire);
  if (recorder == nullptr || ts.busy) return {};
  const OpInfo& info = LookupOpInfo(fn);
  TrackResults(info, fn.outputs());
  if (depth == 0 && ts.nodes.empty() && recorder->StepWanted() && !at::in_parallel_region()) {
    RememberOrigins(ts);
  }
  if (ctx_base == nullptr) return {};
  auto* ctx = static_cast<OpContext*>(ctx_base);
  ts.busy = true;
  ForgetWrittenInputs(ctx->written);
  ArgBatch batch;
  AppendOutputs(info, fn.outputs(), &batch);
  AppendWrittenInputs(ctx->written, fn.outputs(), &batch);
  LabelArgs(&batch);
  std::vector<ArgRecord> outputs = recorder->DigestArgs(batch.args);
  RememberDigests(batch, outputs);
  std::vector<Digest128> output_digests;
  if (ctx->held.held) {
    for (const ArgRecord& output : outputs) output_digests.push_back(output.digest);
  }
  OpEvent event;
  event.op = fn.name();
  event.phase = ctx->phase;
  event.depth = ctx->depth;
  event.module = ctx->module;
  event.call_site = ctx->call_site;
  event.node = ctx->node;
  const RecordedOp recorded = recorder->Record(event, std::move(ctx->inputs), std::move(outputs));
  if (recorded.diverged) {
    OnDivergence(recorded, event, ctx->held, batch, output_digests);
  } else if (ctx->held.held &&
             WriteCaptureIfSelected(recorded, event, ctx->held, batch, output_digests)) {
    StopAfterCapture();
  }
  ts.busy = false;
  return recorded;
}

void OnOpExit(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  ThreadState& ts = Tls();
  if (IsEvaluateFunction(fn)) return ExitNode(ts);
  if (ts.depth > 0) --ts.depth;
  const uint32_t depth = ts.depth;
  const RecordedOp recorded = Guarded(fn, ts, [&] { return ExitOp(fn, ctx, ts, depth); });
  Guarded(fn, ts, [&] {
    CollectiveOpExited(depth, g_recorder.load(std::memory_order_acquire), recorded, fn.outputs());
  });
}

std::unique_ptr<at::ObserverContext> OnScopeEnter(const at::RecordFunction& fn) {
  ThreadState& ts = Tls();
  if (fn.scope() == at::RecordScope::USER_SCOPE && IsCollectiveScope(fn.name())) {
    // Opened outside any op: the backend's worker thread runs the collective (collectives.h).
    return Guarded(fn, ts,
                   [&] { return CollectiveScopeEntered(fn, /*outside_ops=*/ts.depth == 0); });
  }
  Guarded(fn, ts, [&] {
    if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
      EnterNode(ts, fn.name(), fn.seqNr());
    } else if (StartsWith(fn.name(), "Optimizer.step#")) {
      if (ts.optimizer++ == 0) RefreshTensorNamesForStep(ts);
    } else if (StartsWith(fn.name(), "Optimizer.zero_grad#")) {
      ++ts.zero_grad;
    }
  });
  return nullptr;
}

void OnScopeExit(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  ThreadState& ts = Tls();
  if (ctx != nullptr) {  // only collective scopes have one
    if (ts.busy) return CollectiveScopeLeft(ctx);
    ts.busy = true;
    Guarded(fn, ts, [&] { CollectiveScopeEnded(ctx, g_recorder.load(std::memory_order_acquire)); });
    ts.busy = false;
    return;
  }
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    ExitNode(ts);
  } else if (StartsWith(fn.name(), "Optimizer.step#")) {
    if (ts.optimizer > 0 && --ts.optimizer == 0 && !g_explicit_steps.load()) {
      Recorder* recorder = g_recorder.load(std::memory_order_acquire);
      if (recorder != nullptr) Guarded(fn, ts, [&] { StepBoundary(recorder); });
    }
  } else if (StartsWith(fn.name(), "Optimizer.zero_grad#")) {
    if (ts.zero_grad > 0) --ts.zero_grad;
  }
}

// A forked child (a DataLoader worker) must never write into the parent's trace: forget the
// recorders without closing them, so no buffered bytes reach the shared file descriptor.
void ForgetRecordersInChild() {
  g_recorder.store(nullptr);
  for (std::unique_ptr<Recorder>& recorder : g_recorders) (void)recorder.release();
  g_recorders.clear();
}

}  // namespace

Status Start(const AdapterOptions& options) {
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  if (g_recorder.load() != nullptr) {
    return FailedPrecondition("upguard is already recording to " + g_recorder.load()->trace_path() +
                              "; stop that recording first");
  }
  static const int fork_handler = pthread_atfork(nullptr, nullptr, ForgetRecordersInChild);
  (void)fork_handler;
  ASSIGN_OR_RETURN(std::unique_ptr<Recorder> recorder, Recorder::Open(options.recorder));
  ConfigureCallSites(options.skip_prefixes, options.cwd);
  ConfigureCapture(options.capture, options.recorder.run_dir, options.recorder.rank,
                   /*hold_all=*/!options.recorder.against.empty());
  g_continue_after_divergence.store(options.continue_after_divergence);
  g_distributed = options.distributed_online;
  Digests().Clear();  // digests depend on the options (stats on or off)
  ResetCollectives();
  g_origins.Clear();
  g_explicit_steps.store(false);
  g_forward_seen.store(false);
  g_backward_seen.store(false);
  g_recorders.push_back(std::move(recorder));
  ClearTensorNames();
  g_recorder.store(g_recorders.back().get(), std::memory_order_release);
  g_rng_recorded.store(true);  // none for step 0 (see RecordRngState)
  g_handles.push_back(at::addGlobalCallback(at::RecordFunctionCallback(OnOpEnter, OnOpExit)
                                                .needsInputs(true)
                                                .needsOutputs(true)
                                                .scopes({at::RecordScope::FUNCTION})));
  g_handles.push_back(at::addGlobalCallback(at::RecordFunctionCallback(OnScopeEnter, OnScopeExit)
                                                .scopes({at::RecordScope::BACKWARD_FUNCTION})));
  g_handles.push_back(
      at::addGlobalCallback(at::RecordFunctionCallback(OnScopeEnter, OnScopeExit)
                                .needsInputs(true)  // a collective scope names the work's tensors
                                .scopes({at::RecordScope::USER_SCOPE})));
  return Status::Ok();
}

Status Stop(const std::string& final_engine_meta_json, bool died) {
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  // The last step ends here (not when it died inside, nor when it holds no op yet).
  Recorder* running = g_recorder.load();
  if (running != nullptr && !died && running->ops_in_step() > 0) {
    RecordModelStateAtStepEnd(running);
  }
  for (at::CallbackHandle handle : g_handles) at::removeCallback(handle);
  g_handles.clear();
  Recorder* recorder = g_recorder.exchange(nullptr);
  if (recorder != nullptr) FlushCollectives(recorder);
  ClearTensorNames();
  if (g_recorders.empty()) return Status::Ok();
  if (!final_engine_meta_json.empty()) {
    RETURN_IF_ERROR(g_recorders.back()->UpdateEngineMeta(final_engine_meta_json));
  }
  return g_recorders.back()->Close(/*end_last_step=*/!died);
}

bool Active() { return g_recorder.load() != nullptr; }

void MarkStep() {
  g_explicit_steps.store(true);
  Recorder* recorder = g_recorder.load(std::memory_order_acquire);
  if (recorder != nullptr) StepBoundary(recorder);
}

int64_t CurrentStep() {
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  return g_recorders.empty() ? 0 : g_recorders.back()->step();
}

uint64_t OpsRecorded() {
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  return g_recorders.empty() ? 0 : g_recorders.back()->ops_recorded();
}

std::string TracePath() {
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  return g_recorders.empty() ? "" : g_recorders.back()->trace_path();
}

void RecordModelInputs(const std::vector<HostTensor>& tensors) {
  constexpr std::string_view kOp = "upguard::batch";
  Recorder* recorder = g_recorder.load(std::memory_order_acquire);
  if (recorder == nullptr || !recorder->Wants(kOp, 0)) return;
  ThreadState& ts = Tls();
  if (ts.busy) return;
  if (!g_rng_recorded.load()) RecordRngState(recorder);
  OpEvent event;
  event.op = kOp;
  event.phase = Phase::kForward;
  event.call_site = Pooled(CurrentCallSite());
  for (const HostTensor& tensor : tensors) {
    TensorView view;
    view.dtype = tensor.dtype;
    view.ndim = static_cast<int>(tensor.sizes.size());
    view.sizes = tensor.sizes.data();
    view.strides = tensor.strides.data();
    view.data = reinterpret_cast<const void*>(tensor.data);
    const bool readable = tensor.dtype != DType::kInvalid && tensor.data != 0 &&
                          tensor.strides.size() == tensor.sizes.size();
    event.inputs.push_back(readable ? Arg::Tensor(tensor.name, view)
                                    : Arg::Shaped(ArgKind::kOpaque, tensor.name, view));
  }
  const RecordedOp recorded = recorder->Record(event);
  // A pseudo-op has no tensors of its own to capture: the message and the stop only.
  if (recorded.diverged) OnDivergence(recorded, event, HeldInputs{}, ArgBatch{}, {});
}

void EnterModule(const std::string& path, const void* frame) {
  Tls().modules.push_back(ModuleCall{Pooled(path), frame});
  g_forward_seen.store(true, std::memory_order_relaxed);
}

void ExitModule(const void* frame) { Tls().PopModuleCall(frame); }

void RefreshTensorNames() {
  ThreadState& ts = Tls();
  Recorder* recorder = g_recorder.load(std::memory_order_acquire);
  if (recorder == nullptr || ts.busy) return;
  ts.busy = true;
  ResetTensorNames(ReadModelTensors());
  ts.busy = false;
}

}  // namespace upguard::torch_adapter
