#include "op_callbacks.h"

#include <ATen/Parallel.h>
#include <ATen/SequenceNumber.h>

#include <atomic>
#include <cstring>
#include <string_view>

#include "adapter.h"
#include "capture.h"
#include "collectives.h"
#include "digest_cache.h"
#include "divergence.h"
#include "ivalue_args.h"
#include "list_labels.h"
#include "model_state.h"
#include "op_info.h"
#include "origins.h"
#include "rng_state.h"
#include "session.h"
#include "steps.h"
#include "string_pool.h"
#include "tensor_names.h"
#include "thread_state.h"
#include "written_inputs.h"

namespace upguard::torch_adapter {
namespace {

std::atomic<int> g_compiling{0};

struct OpContext : at::ObserverContext {
  const OpInfo* info = nullptr;  // found at entry: the exit needs it too
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

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// What the op does, not what it runs inside: backward inside autograd nodes; forward inside a
// module's forward and between a module call and the backward after it (the loss); optimizer
// for the rest of Optimizer.step; everything else (initialization, data preparation, gradient
// clipping, zero_grad) is "other". A closure's forward and backward run inside Optimizer.step
// (LBFGS; Lightning's automatic optimization calls optimizer.step(closure)): they are forward
// and backward, and only the optimizer's own ops around them are optimizer.
Phase CurrentPhase(const ThreadState& ts, const Session& session) {
  if (ts.Recomputing()) return Phase::kRecompute;
  if (!ts.nodes.empty()) return Phase::kBackward;
  if (ts.zero_grad > 0) return Phase::kOther;
  if (!ts.modules.empty()) return Phase::kForward;
  const bool in_optimizer = ts.optimizer > 0;
  if (session.ForwardBeforeBackward(in_optimizer)) return Phase::kForward;
  return in_optimizer ? Phase::kOptimizer : Phase::kOther;
}

std::unique_ptr<at::ObserverContext> EnterOp(const OpCall& fn, ThreadState& ts, uint32_t depth) {
  Session* session = Session::Active();
  if (session == nullptr || ts.busy || !session->recorder()->StepWanted() || OnCollectiveWorker() ||
      at::in_parallel_region()) {
    return nullptr;
  }
  Recorder* recorder = session->recorder();
  const OpInfo& info = fn.info;
  if (info.skip) return nullptr;
  // Before any filter (--ops, depth): an empty storage filled from Python is defined here
  // whether or not this op is recorded.
  if (info.defines_self_values && !fn.inputs.empty() && fn.inputs[0].isTensor()) {
    ForgetWritten(fn.inputs[0].toTensor());
  }

  // A recompute op is read like a forward op: module stack, call site, the nodes it creates.
  if (depth == 0 && (ts.nodes.empty() || ts.Recomputing())) {
    ts.python_known = false;
    ts.first_node = at::sequence_number::peek();
  }
  if (!recorder->Wants(fn.name, depth)) return nullptr;
  if (!session->rng_recorded()) RecordRngState(*session);
  // Module calls that raised are no forward scope (a recompute that stopped early included).
  if (ts.nodes.empty() || ts.Recomputing()) ts.ReadPython();
  const bool backward = !ts.nodes.empty() && !ts.Recomputing();
  const Phase phase = CurrentPhase(ts, *session);

  ts.busy = true;
  auto ctx = std::make_unique<OpContext>();
  ctx->info = &info;
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
  if (!fn.call_site.empty()) ctx->call_site = fn.call_site;
  ScopedBatch scoped(0);
  ArgBatch& batch = *scoped;
  AppendInputs(info, fn.inputs, &batch);
  AppendGeneratorState(info, fn.inputs, &batch);
  // State an optimizer creates in its first step is named once it holds it: names are read
  // again at the first op of the step that reads a tensor without a name. Not at an op without
  // a schema: autograd's own `detach_` of torch.tensor(0.) (AdamW's step counter, made before
  // the moments) would read them before the moments exist, and they would go unnamed.
  const size_t unnamed = LabelArgs(&batch);
  if (unnamed > 0 && info.has_schema && phase == Phase::kOptimizer && !ts.names_refreshed) {
    ts.names_refreshed = true;
    ResetTensorNames(ReadModelTensors());
    LabelArgs(&batch);
  }
  if (phase == Phase::kOptimizer) LabelListElements(&batch, &ts.list_order);
  // Inputs the op may write are digested here, before it runs.
  if (info.has_schema && info.mutable_inputs.empty()) OfferToHashPool(*recorder, &batch);
  ctx->inputs = recorder->DigestArgs(batch.args);
  RememberDigests(batch, ctx->inputs);
  ctx->held = HoldInputs(info, batch, ctx->inputs, recorder->step(), recorder->ops_in_step(),
                         recorder->compared_in_step(), fn.name, ctx->module, ctx->phase);
  for (int idx : info.written_inputs) {
    if (static_cast<size_t>(idx) < fn.inputs.size()) {
      ctx->written.emplace_back(info.input_names[idx], fn.inputs[idx]);
    }
  }
  ts.busy = false;
  return ctx;
}

// At the end of a top-level forward op: the autograd nodes it created map to its module and
// call site, for the backward ops they will run.
void RememberOrigins(ThreadState& ts, Session& session) {
  const uint64_t end = at::sequence_number::peek();
  if (end <= ts.first_node) return;
  session.origins().Add(ts.first_node, end, Origin{ts.Module(), ts.CallSite()});
}

// The autograd engine wraps each node in a FUNCTION-scope record with this prefix; it also
// covers the engine's own ops around the node (summing broadcast gradients). It opens a
// backward scope rather than being an op.
constexpr std::string_view kEvaluateFunction = "autograd::engine::evaluate_function: ";

// The name an op is recorded by. torch.compile's scope around a compiled frame carries the
// frame's compile id ("Torch-Compiled Region: 1/0"), which a recompilation counts up (1/1):
// recorded without it, so the same frame pairs across runs.
const char* RecordedName(const char* name) {
  static constexpr std::string_view kCompiledRegion = "Torch-Compiled Region";
  return StartsWith(name, kCompiledRegion) ? kCompiledRegion.data() : name;
}

bool IsEvaluateFunction(const at::RecordFunction& fn) {
  return StartsWith(fn.name(), kEvaluateFunction);
}

void EnterNode(ThreadState& ts, std::string_view name, int64_t seq_nr) {
  Session* session = Session::Active();
  Origin origin = session != nullptr ? session->origins().Find(seq_nr) : Origin{};
  if (origin.module.empty() && origin.call_site.empty() && !ts.nodes.empty()) {
    origin = ts.nodes.back().origin;
  }
  ts.nodes.push_back(Node{Pooled(name), origin, ts.depth});
  ts.depth = 0;  // ops inside a node count their depth from it
  if (session != nullptr) session->NoteBackward();
}

void ExitNode(ThreadState& ts) {
  if (ts.nodes.empty()) return;
  ts.depth = ts.nodes.back().saved_depth;
  ts.nodes.pop_back();
  ts.DropModuleCallsAbove(ts.nodes.size());
}

// As Optimizer.step begins: the gradients of this step and the optimizer's state get their
// names (tensor_names.h).
void RefreshTensorNamesForStep(ThreadState& ts) {
  Session* session = Session::Active();
  ts.names_refreshed = false;
  ts.list_order.clear();
  if (session == nullptr || ts.busy || !session->recorder()->StepWanted()) return;
  ts.busy = true;
  ResetTensorNames(ReadModelTensors());
  ts.busy = false;
}

// Runs `body`; an exception turns recording off instead of reaching the training.
template <typename Body>
auto Guarded(const char* op, ThreadState& ts, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    ts.busy = false;
    Session::Disable(op, e.what());
  } catch (...) {
    ts.busy = false;
    Session::Disable(op, "unknown exception");
  }
  return decltype(body())();
}

void LaunchIfCollective(const at::RecordFunction& fn, ThreadState& ts, uint32_t depth) {
  Session* session = Session::Active();
  if (session == nullptr || ts.busy || OnCollectiveWorker()) return;
  const OpInfo& info = LookupOpInfo(fn);
  if (!info.collective && !info.collective_wait) return;
  ts.busy = true;
  session->collectives().OpEntered(info, fn.inputs(), depth);
  ts.busy = false;
}

std::unique_ptr<at::ObserverContext> OnOpEnter(const at::RecordFunction& fn) {
  ThreadState& ts = Tls();
  if (IsEvaluateFunction(fn)) {
    // While torch.compile traces, autograd nodes run on fake tensors too: no backward scope.
    if (Compiling()) return nullptr;
    Guarded(fn.name(), ts, [&] {
      EnterNode(ts, std::string_view(fn.name()).substr(kEvaluateFunction.size()), fn.seqNr());
    });
    return nullptr;
  }
  // Before anything of the op runs: what it may write is not being digested (hash pool).
  Session* active = Session::Active();
  if (active != nullptr && active->recorder()->HashesPending()) {
    Guarded(fn.name(), ts,
            [&] { WaitBeforeOpWrites(active->recorder(), LookupOpInfo(fn), fn.inputs()); });
  }
  const uint32_t depth = ts.depth++;
  if (Compiling()) return nullptr;  // fake tensors while torch.compile traces (adapter.h)
  // A collective's own work on this thread (collectives.h): its exit may complete the call.
  if (!ts.busy &&
      Guarded(fn.name(), ts, [&] { return EnteringCollectiveImplementation(fn, depth); })) {
    return nullptr;
  }
  auto ctx = Guarded(fn.name(), ts, [&] {
    return EnterOp(OpCall{RecordedName(fn.name()), LookupOpInfo(fn), fn.inputs()}, ts, depth);
  });
  if (ctx == nullptr && !ts.busy && Session::Active() != nullptr) {
    Guarded(fn.name(), ts, [&] { ForgetUndeclaredWrites(fn); });
  }
  // After EnterOp: the collective's inputs are digested before they count as in flight.
  if (MayBeCollective(fn.name())) {
    Guarded(fn.name(), ts, [&] { LaunchIfCollective(fn, ts, depth); });
  }
  return ctx;
}

RecordedOp ExitOp(const char* name, const OpInfo& info, const std::vector<c10::IValue>& results,
                  at::ObserverContext* ctx_base, ThreadState& ts, uint32_t depth) {
  Session* session = Session::Active();
  if (session == nullptr || ts.busy) return {};
  Recorder* recorder = session->recorder();
  TrackResults(info, results);
  if (depth == 0 && (ts.nodes.empty() || ts.Recomputing()) && recorder->StepWanted() &&
      !at::in_parallel_region()) {
    RememberOrigins(ts, *session);
  }
  if (ctx_base == nullptr) return {};
  // An op that raised has no results: recorded without them, it would read as an op whose
  // outputs changed (a functional collective's wait raises when a peer died).
  if (results.empty() && !info.results.empty()) return {};
  auto* ctx = static_cast<OpContext*>(ctx_base);
  ts.busy = true;
  ForgetWrittenInputs(ctx->written);
  ScopedBatch scoped(1);
  ArgBatch& batch = *scoped;
  AppendOutputs(info, results, &batch);
  AppendWrittenInputs(ctx->written, results, &batch);
  LabelArgs(&batch);
  if (ctx->phase == Phase::kOptimizer) LabelListElements(&batch, &ts.list_order);
  OfferToHashPool(*recorder, &batch);
  std::vector<ArgRecord> outputs = recorder->DigestArgs(batch.args);
  RememberDigests(batch, outputs);
  std::vector<Digest128> output_digests;
  if (ctx->held.held) {
    for (const ArgRecord& output : outputs) output_digests.push_back(output.digest);
  }
  OpEvent event;
  event.op = name;
  event.phase = ctx->phase;
  event.depth = ctx->depth;
  event.module = ctx->module;
  event.call_site = ctx->call_site;
  event.node = ctx->node;
  const RecordedOp recorded = recorder->Record(event, std::move(ctx->inputs), std::move(outputs));
  if (recorded.diverged) {
    OnDivergence(*session, recorded, event, ctx->held, batch, output_digests);
  } else if (ctx->held.held &&
             WriteCaptureIfSelected(recorded, event, ctx->held, batch, output_digests)) {
    StopAfterCapture();
  }
  ts.busy = false;
  return recorded;
}

Recorder* ActiveRecorder() {
  Session* session = Session::Active();
  return session != nullptr ? session->recorder() : nullptr;
}

void OnOpExit(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  ThreadState& ts = Tls();
  if (IsEvaluateFunction(fn)) return Compiling() ? void() : ExitNode(ts);
  if (ts.depth > 0) --ts.depth;
  const uint32_t depth = ts.depth;
  if (Compiling()) return;
  const RecordedOp recorded = Guarded(fn.name(), ts, [&] {
    const OpInfo& info = ctx != nullptr ? *static_cast<OpContext*>(ctx)->info : LookupOpInfo(fn);
    return ExitOp(RecordedName(fn.name()), info, fn.outputs(), ctx, ts, depth);
  });
  Guarded(fn.name(), ts,
          [&] { CollectiveTable::OpExited(depth, ActiveRecorder(), recorded, fn.outputs()); });
}

std::unique_ptr<at::ObserverContext> OnScopeEnter(const at::RecordFunction& fn) {
  ThreadState& ts = Tls();
  if (fn.scope() == at::RecordScope::USER_SCOPE && IsCollectiveScope(fn.name())) {
    // Opened outside any op: the backend's worker thread runs the collective (collectives.h).
    Session* latest = Session::Latest();
    return Guarded(fn.name(), ts, [&] {
      return CollectiveTable::ScopeEntered(latest != nullptr ? &latest->collectives() : nullptr, fn,
                                           /*outside_ops=*/ts.depth == 0);
    });
  }
  // torch.compile tracing (adapter.h): its autograd nodes run on fake tensors. A collective on
  // a backend's thread meanwhile is still the training's (above).
  if (Compiling()) return nullptr;
  Guarded(fn.name(), ts, [&] {
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
  if (Compiling() && ctx == nullptr) return;
  if (ctx != nullptr) {  // only collective scopes have one
    if (ts.busy) return CollectiveTable::ScopeLeft(ctx);
    ts.busy = true;
    Guarded(fn.name(), ts, [&] { CollectiveTable::ScopeEnded(ctx, ActiveRecorder()); });
    ts.busy = false;
    return;
  }
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    ExitNode(ts);
  } else if (StartsWith(fn.name(), "Optimizer.step#")) {
    if (ts.optimizer > 0 && --ts.optimizer == 0) {
      Session* session = Session::Active();
      if (session != nullptr && !session->explicit_steps()) {
        Guarded(fn.name(), ts, [&] { EndStep(*session); });
      }
    }
  } else if (StartsWith(fn.name(), "Optimizer.zero_grad#")) {
    if (ts.zero_grad > 0) --ts.zero_grad;
  }
}

}  // namespace

std::vector<at::CallbackHandle> InstallOpCallbacks() {
  std::vector<at::CallbackHandle> handles;
  handles.push_back(at::addGlobalCallback(at::RecordFunctionCallback(OnOpEnter, OnOpExit)
                                              .needsInputs(true)
                                              .needsOutputs(true)
                                              .scopes({at::RecordScope::FUNCTION})));
  handles.push_back(at::addGlobalCallback(at::RecordFunctionCallback(OnScopeEnter, OnScopeExit)
                                              .scopes({at::RecordScope::BACKWARD_FUNCTION})));
  handles.push_back(
      at::addGlobalCallback(at::RecordFunctionCallback(OnScopeEnter, OnScopeExit)
                                .needsInputs(true)  // a collective scope names the work's tensors
                                .scopes({at::RecordScope::USER_SCOPE})));
  return handles;
}

void OptimizerStepDone() {
  Session* session = Session::Active();
  if (session == nullptr || session->explicit_steps() || session->following_ops()) return;
  ThreadState& ts = Tls();
  if (ts.busy) return;
  Guarded("Optimizer.step", ts, [&] { EndStep(*session); });
}

// adapter.h: the module scopes and tensor names, from Python's hooks.

void EnterModule(const std::string& path, const void* frame) {
  ThreadState& ts = Tls();
  ts.modules.push_back(ModuleCall{Pooled(path), frame, ts.nodes.size()});
  // Not a recompute inside backward (activation checkpointing): that is no new forward.
  Session* session = Session::Active();
  if (session != nullptr && ts.nodes.empty()) session->NoteForward(ts.optimizer > 0);
}

void ExitModule(const void* frame) { Tls().PopModuleCall(frame); }

bool InBackward() { return !Tls().nodes.empty(); }

void SetCompiling(bool compiling) {
  if (compiling) {
    g_compiling.fetch_add(1);
  } else if (g_compiling.fetch_sub(1) <= 0) {
    g_compiling.store(0);  // an end without its start (callbacks installed mid-compile)
  }
}

bool Compiling() { return g_compiling.load(std::memory_order_relaxed) > 0; }

std::unique_ptr<at::ObserverContext> EnterAnnouncedOp(const OpCall& call) {
  ThreadState& ts = Tls();
  const uint32_t depth = ts.depth++;
  if (Compiling()) return nullptr;
  // Its kernels write memory no op callback sees: nothing may be in the hash pool's hands.
  if (Session* active = Session::Active()) active->recorder()->WaitForHashes();
  // A compiled forward graph starts the model's forward as a module call does: with
  // model.compile() the module hooks run inside the graph, traced, and never for real.
  Session* session = Session::Active();
  if (session != nullptr && ts.nodes.empty() &&
      (std::strcmp(call.name, "inductor::forward") == 0 ||
       std::strcmp(call.name, "inductor::inference") == 0)) {
    session->NoteForward(ts.optimizer > 0);
  }
  return Guarded(call.name, ts, [&] { return EnterOp(call, ts, depth); });
}

void ExitAnnouncedOp(const OpCall& call, std::unique_ptr<at::ObserverContext> ctx,
                     const std::vector<c10::IValue>& results) {
  ThreadState& ts = Tls();
  if (ts.depth > 0) --ts.depth;
  const uint32_t depth = ts.depth;
  if (Compiling()) return;
  Guarded(call.name, ts,
          [&] { return ExitOp(call.name, call.info, results, ctx.get(), ts, depth); });
}

void RefreshTensorNames() {
  ThreadState& ts = Tls();
  if (Session::Active() == nullptr || ts.busy) return;
  ts.busy = true;
  ResetTensorNames(ReadModelTensors());
  ts.busy = false;
}

}  // namespace upguard::torch_adapter
