// The recorder API: what a training engine calls to record its operators into a run directory.
//
// It knows nothing of PyTorch. The PyTorch adapter (python/src) implements it with ATen
// RecordFunction callbacks; a C++ engine can call it directly:
//
//   upguard::RecorderOptions options;
//   options.run_dir = "runs/a";
//   ASSIGN_OR_RETURN(auto recorder, upguard::Recorder::Open(options));
//   upguard::OpEvent op{"mylib::matmul", upguard::Phase::kForward};
//   op.inputs = {upguard::Arg::Tensor("a", a_view), upguard::Arg::Tensor("b", b_view)};
//   op.outputs = {upguard::Arg::Tensor("out", c_view)};
//   recorder->Record(op);        // digests inputs and outputs now
//   recorder->MarkStep();        // end of a training step
//   recorder->Close();
//
// Ops that mutate their inputs must have the inputs digested before they run: call
// DigestInputs() at op entry and Record() with the pre-digested inputs at exit.
//
// Thread-safe. Failures never propagate into the training: the first error (a write the system
// refused, the byte budget reached, any other) disables the recorder, is printed once to
// stderr, and is returned by Close(); the trace then ends with a Stopped record that names the
// step and the reason (docs/formats/trace.md §5.7).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "upguard/arg_record.h"
#include "upguard/digest_types.h"
#include "upguard/status.h"
#include "upguard/tensor.h"

namespace upguard {

class OpObserver;  // src/recorder/op_observer.h

// One input or output of an op as the engine sees it. Borrowed views: valid during the call.
struct Arg {
  ArgKind kind = ArgKind::kNone;
  std::string_view name;
  TensorView tensor;      // tensor kinds (for kAlias/kUninit/kOpaque only dtype and shape)
  std::string_view text;  // kScalar; kUnread: the reason's detail ("cuda:0")
  // kTensor: a digest the caller already knows for exactly these values (e.g. cached from
  // when the same tensor was an earlier op's output); the recorder then does not hash.
  const TensorDigest* known = nullptr;
  // The tensor's name in the user's model ("fc.weight", "fc.weight.grad", "exp_avg_sq of
  // fc.weight"), empty when unknown. Descriptive only: never compared, never part of any digest
  // (trace.md §5.3.2). Set it after the factories below: `arg.label = "fc.weight";`.
  std::string_view label;
  // kTensor: with RecorderOptions::hash_threads, a tensor of at least hash_async_bytes whose
  // `owner` is set is digested on the recorder's hash pool while the caller goes on. `owner`
  // keeps its memory alive until then; `memory` names that memory (a storage) for
  // WaitBeforeWrite, which whatever writes it must call first.
  std::shared_ptr<const void> owner;
  const void* memory = nullptr;
  // kTensor: a digest the pool is still making for exactly these values (an earlier op's
  // output); like `known`, the recorder does not hash.
  std::shared_ptr<const PendingDigest> known_pending;
  UnreadReason unread = UnreadReason::kUnknown;  // kUnread: why the values were not read

  static Arg Tensor(std::string_view name, TensorView view) {
    return {ArgKind::kTensor, name, view, {}, nullptr, {}, nullptr, nullptr, nullptr};
  }
  static Arg Scalar(std::string_view name, std::string_view text) {
    return {ArgKind::kScalar, name, {}, text, nullptr, {}, nullptr, nullptr, nullptr};
  }
  static Arg Shaped(ArgKind kind, std::string_view name, TensorView view) {
    return {kind, name, view, {}, nullptr, {}, nullptr, nullptr, nullptr};
  }
  // A tensor whose values are not read (ArgKind::kUnread): its dtype and shape, why, and a
  // detail ("cuda:0"); the diff then never calls the op's values equal.
  static Arg Unread(std::string_view name, TensorView view, UnreadReason reason,
                    std::string_view detail) {
    Arg arg{ArgKind::kUnread, name, view, detail, nullptr, {}, nullptr, nullptr, nullptr};
    arg.unread = reason;
    return arg;
  }
  static Arg None(std::string_view name) {
    return {ArgKind::kNone, name, {}, {}, nullptr, {}, nullptr, nullptr, nullptr};
  }
};

struct OpEvent {
  std::string_view op;
  Phase phase = Phase::kOther;
  uint32_t depth = 0;
  std::string_view module;
  std::string_view call_site;
  std::string_view node;
  std::vector<Arg> inputs;
  std::vector<Arg> outputs;
};

// Steps [first, last) are recorded; last < 0 means no upper bound.
struct StepRange {
  int64_t first = 0;
  int64_t last = -1;
  bool Contains(int64_t step) const { return step >= first && (last < 0 || step < last); }
};

struct RecorderOptions {
  // The run directory. A run_dir that holds a run (a rank<N>.ugt, or a meta.json upguard
  // wrote) or an interrupted recording is refused unless `overwrite`; a meta.json upguard did
  // not write is refused always; so is a run_dir another recording writes into (its lock names
  // the process, docs/cli.md). The run is recorded into run_dir/.upguard-record-<pid> and moved
  // into run_dir at Close, once every rank of the job closed; the earlier run stays until then.
  // A staging directory `upguard record` made (its command's UPGUARD_RECORD_DIR) is written
  // into as it is.
  std::string run_dir;
  bool overwrite = false;
  // The ranks that record one run together name the same job; "" = the job their launcher's
  // environment names (torchrun, Slurm, MASTER_ADDR:MASTER_PORT; rundir/job.h).
  std::string job;
  // How the caller's API spells `overwrite`, for the refusal ("overwrite=True" in Python).
  std::string overwrite_option = "RecorderOptions::overwrite = true";
  int rank = 0;
  int world_size = 1;
  StepRange steps;
  // Fingerprint the steps outside `steps` instead of skipping them: such a step records only
  // the fingerprint pseudo-ops (IsFingerprintOp) and its StepEnd says so (kStepFingerprint).
  // `upguard record --fingerprint` (without --steps, `steps` is empty: every step).
  bool fingerprint = false;
  int max_depth = -1;  // record ops nested at most this deep; -1 = every depth
  // Glob patterns ('*' and '?') over op names; an op is recorded if it matches any. Empty = all.
  std::vector<std::string> ops;
  bool stats = true;
  int digest_threads = 0;  // 0 = hardware concurrency
  // Threads that digest large tensors while the training goes on (Arg::owner); 0: every digest
  // on the calling thread. Not with `against` (each op is compared as it ends).
  int hash_threads = 0;
  int64_t hash_async_bytes = 256 << 10;  // smaller tensors are digested on the calling thread
  // A JSON object with engine facts (torch version, thread counts, argv, env...), merged into
  // the rank's RunMeta record and into meta.json. Must parse as an object.
  std::string engine_meta_json = "{}";
  // A reference run directory: each op is compared with the reference's op at the same step
  // and index as it is recorded (`upguard record --against`); "" = none. The comparison is
  // `observer`'s (online/online_check.h opens one), required with `against`.
  std::string against;
  std::shared_ptr<OpObserver> observer;
  // Where to keep this rank's progress record for `upguard record`'s progress line
  // (docs/formats/record-progress.md); "" = none.
  std::string progress_path;
  // The run's byte budget for its traces (`record --max-bytes`); 0 = none. Each rank's trace
  // gets an equal share, max_bytes / world_size, and stays within it: past it the recording
  // stops as after any failure, the trace ending with its Stopped record.
  uint64_t max_bytes = 0;
};

// The pseudo-ops a fingerprint step records, in the order a step records them: the random
// state as the step starts, the batch, the loss of each backward, the gradients and the model
// state as it ends (upguard::rng_state, ::batch, ::loss, ::grads, ::state).
bool IsFingerprintOp(std::string_view op);

// Parses "A:B", "A:", ":B" or "N" (just step N) into a StepRange; errors name the text.
StatusOr<StepRange> ParseStepRange(std::string_view text);

// Parses a byte count: digits with an optional K, M, G or T (powers of 1024, either case):
// "500000", "100K", "10M", "1G". Errors name the text and `what` (the option).
StatusOr<uint64_t> ParseByteSize(std::string_view text, std::string_view what);

// Where Record() put an op: its step and index in that step (what `upguard diff` and
// `upguard show` print as "step S, #I"). `written` is false when nothing was written (recording
// off or failed).
struct RecordedOp {
  bool written = false;
  uint32_t step = 0;
  uint64_t index = 0;
  uint64_t seq = 0;  // the op's seq in the trace (OpRecord::seq)
  // With RecorderOptions::against: this op is the first divergence from the reference (for a
  // difference inside a nested op: the enclosing op that made it certain). The recorder has
  // written RUN_DIR/online.json.
  bool diverged = false;
  // The op's position among its step's ops outside the input pipeline (phase input), from 0:
  // what stays put when a DataLoader's workers deliver batches at other times. For an input op,
  // the position the next op outside the pipeline will get.
  uint64_t position = 0;
};

// A collective op's completion (trace.md §5.6), reported after Record() wrote the op itself.
struct CollectiveEvent {
  RecordedOp op;  // what Record() returned for the collective op
  std::string_view group;
  std::vector<int32_t> ranks;  // global ranks of the group's members; empty if unknown
  uint32_t group_rank = 0;
  uint32_t group_size = 0;
  uint64_t seq = 0;  // number of the collective within its group, from 0
  bool completed = false;
  uint64_t ops_before_completion = 0;
};

class Recorder {
 public:
  static StatusOr<std::unique_ptr<Recorder>> Open(const RecorderOptions& options);
  ~Recorder();

  // Cheap pre-checks before digesting anything. StepWanted: recording is enabled and the
  // current step is in range. Wants: that, and the depth and op filters pass; in a
  // fingerprint step, only for the fingerprint pseudo-ops (every filter aside).
  bool StepWanted() const;
  // Recording is enabled and the current step is a fingerprint step.
  bool FingerprintStep() const;
  bool Wants(std::string_view op, uint32_t depth) const;

  // Digests `args` now (e.g. inputs at op entry). The result feeds Record().
  std::vector<ArgRecord> DigestArgs(const std::vector<Arg>& args);
  // With hash_threads: returns when no digest of `memory` (an Arg::memory) is still being made.
  // Whatever writes memory the recorder was given with an owner must call it first. One atomic
  // load when nothing is pending.
  void WaitBeforeWrite(const void* memory);
  // Digests are being made on the hash pool (WaitBeforeWrite has work to do).
  bool HashesPending() const;
  // Returns when every digest handed to the pool so far is done (before a write the caller
  // cannot place, as a compiled graph's).
  void WaitForHashes();
  // An Arg of `bytes` with an owner would go to the hash pool (hash_threads, hash_async_bytes).
  bool Offloads(int64_t bytes) const;
  // Records an op whose inputs were digested earlier by DigestArgs; digests the outputs now.
  // With hash_threads, an op whose digests are not done yet is written once they are, in the
  // order ops were recorded (RecordedOp is known at once); MarkStep and Close wait for them.
  RecordedOp Record(const OpEvent& op, std::vector<ArgRecord> inputs);
  // Records an op whose inputs and outputs were both digested by DigestArgs.
  RecordedOp Record(const OpEvent& op, std::vector<ArgRecord> inputs,
                    std::vector<ArgRecord> outputs);
  // Digests inputs and outputs now.
  RecordedOp Record(const OpEvent& op);
  // Writes the Collective record of an op Record() wrote in the current step; `outputs` (from
  // DigestArgs, after completion) must be empty unless event.completed; their labels are not
  // written (a reader keeps the labels of the op's own outputs, trace.md §5.6). Thread-safe:
  // called from the backend's worker thread. An event for an op of an earlier step is dropped
  // (the caller writes uncompleted collectives before MarkStep).
  void RecordCollective(const CollectiveEvent& event, std::vector<ArgRecord> outputs);
  // Collective events dropped because their op's step had ended (or the op was not written).
  uint64_t collectives_dropped() const;
  // Ops recorded so far in the current step: the index the next op to end will get.
  uint64_t ops_in_step() const;
  // Of those, the ops outside the input pipeline: the position the next such op will get.
  uint64_t compared_in_step() const;

  // Ends the current step (writes its StepEnd record if it is in range) and starts the next.
  void MarkStep();
  // Ends the current step as MarkStep does, then starts step `step` (> the current one) instead
  // of the next: a program resumed from a checkpoint of step `step` (upguard.resume_point)
  // skipped the steps between. No-op when `step` is not after the current step.
  void SkipTo(int64_t step);
  int64_t step() const;
  bool enabled() const;

  // Merges engine facts learned since Open (a thread count the program set after it started)
  // into the metadata meta.json will get at Close. Must parse as a JSON object.
  Status UpdateEngineMeta(std::string_view engine_meta_json);

  // Ends the last step if it recorded ops, closes the trace, writes meta.json (rank 0), and
  // moves the run into run_dir when this is the last rank of the job to close.
  // Returns the first error the recorder met, if any. `end_last_step` false: the program died
  // inside the step (an uncaught exception); it gets no StepEnd record (trace.md §5.5).
  Status Close(bool end_last_step = true);

  uint64_t ops_recorded() const;
  // With RecorderOptions::against: the first divergence as written to online.json, or "".
  std::string divergence_json() const;
  // Where this rank's trace is: in the staging directory (write_dir()) until Close moved the
  // run into run_dir.
  std::string trace_path() const;
  // The directory this recording writes into (the staging directory; captures and online.json
  // go there too), and after Close the one that holds the run.
  std::string write_dir() const;

 private:
  class Impl;
  explicit Recorder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace upguard
