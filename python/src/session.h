// The adapter's process state for one recording: a Session, created by Start and closed by
// Stop, that the RecordFunction callbacks (op_callbacks.h) reach through one atomic pointer,
// Session::Active().
//
//   Status status = Session::Start(options);     // adapter.h Start()
//   if (Session* session = Session::Active()) {  // in a callback: null = do not record
//     session->recorder()->Record(event);
//   }
//   Session::Stop(final_engine_meta_json, died);  // adapter.h Stop()
//
// Lifetime (Start and Stop are serialized by one mutex; one session records at a time):
//   Start    opens the trace, resets the per-recording tables (digest cache, tensor names,
//            call-site and capture settings; the previous session's collective calls are
//            forgotten: a session has its own CollectiveTable), makes a new Session the latest,
//            publishes it as the active one and then installs the callbacks.
//   Disable  the first failure inside a callback unpublishes it: recording is off and the
//            training continues. It is still the latest session; Stop closes its trace.
//   fork     a forked child (a DataLoader worker) inherits the parent's sessions but must never
//            write into the parent's trace: the child unpublishes the active session and forgets
//            every session's Recorder without closing it, so no buffered bytes reach the file
//            descriptor it shares with the parent. (No lock is taken there: a parent thread may
//            have held it at the fork.)
//   Stop     ends the last step (its model state), removes the callbacks of every session that
//            still has them, unpublishes the active session, writes its collectives that did not
//            complete, and closes the latest session's trace.
//   CloseAndExit (a capture that asked to stop, a divergence from the --against reference)
//            unpublishes it, closes its trace and ends the process.
//
// A session is never destroyed, not even after Stop: a callback on another thread (an autograd
// worker, a collective backend's thread) may have loaded the pointer just before Stop and still
// use the session and its Recorder, and nothing tells when it has returned. A process records a
// few times at most, so the closed sessions cost little.
#pragma once

#include <ATen/record_function.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "adapter.h"
#include "collectives.h"
#include "origins.h"
#include "upguard/recorder.h"
#include "upguard/status.h"

namespace upguard::torch_adapter {

class Session {
 public:
  static Status Start(const AdapterOptions& options);
  // `final_engine_meta_json` and `died`: as adapter.h Stop(). Every error it returns has been
  // said on stderr already (the recorder says its first failure as it happens).
  static Status Stop(const std::string& final_engine_meta_json, bool died);

  // The session recording now; null when none is (never started, turned off, stopped, or this
  // is a forked child). One atomic load: for every callback.
  static Session* Active() { return active_.load(std::memory_order_acquire); }
  // The session started last, recording or not; null before the first Start. A collective's
  // backend scope is matched to the calls of this session's table.
  static Session* Latest() { return latest_.load(std::memory_order_acquire); }

  // Turns recording off after a failure in `where` (an op, a scope, the step's end); says so
  // once, on stderr. The training continues.
  static void Disable(const char* where, const char* what);

  // Closes the active session's trace (meta.json included) and ends the process at once with
  // `code`, saying `why`: a long training run re-run only to capture one op, or one that already
  // diverged from its reference, should not go on. `before_exit`, when given, runs after the
  // trace closed (the ranks wait there for each other: none is killed before it closed).
  [[noreturn]] static void CloseAndExit(const char* why, int code,
                                        const std::function<void()>& before_exit = {});

  // The latest session's recorder: its step, ops and trace path (adapter.h); 0 / "" when none.
  static int64_t LatestStep();
  static uint64_t LatestOpsRecorded();
  static std::string LatestTracePath();

  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  Recorder* recorder() const { return recorder_.get(); }

  // After the first upguard.step(), only it ends steps; Optimizer.step no longer does.
  bool explicit_steps() const { return explicit_steps_.load(); }
  void UseExplicitSteps() { explicit_steps_.store(true); }

  // With --against: record on after the first divergence instead of stopping.
  bool continue_after_divergence() const { return continue_after_divergence_; }
  // Online mode with several ranks (adapter.h); absent otherwise.
  const std::optional<DistributedOnline>& distributed() const { return distributed_; }
  // The step at whose start the process stops (AdapterOptions::stop_at_step).
  const std::optional<int64_t>& stop_at_step() const { return stop_at_step_; }

  // Facts of the running step, forgotten at its end (ForgetStep).
  // upguard::rng_state was recorded in this step (or is not wanted: step 0, see steps.h).
  bool rng_recorded() const { return rng_recorded_.load(std::memory_order_relaxed); }
  void NoteRngRecorded() { rng_recorded_.store(true); }
  // A module call began outside backward (on a thread inside Optimizer.step when
  // `in_optimizer`: a closure's forward) / an autograd node began.
  void NoteForward(bool in_optimizer) {
    stage_.store(in_optimizer ? Stage::kClosureForward : Stage::kForward,
                 std::memory_order_relaxed);
  }
  void NoteBackward() { stage_.store(Stage::kIdle, std::memory_order_relaxed); }
  // Between a module call and the backward after it: the loss is forward too. Inside
  // Optimizer.step only a forward begun there counts (a closure's: LBFGS, Lightning's
  // automatic optimization); the optimizer's own update after a forward whose backward upguard
  // never saw stays optimizer.
  bool ForwardBeforeBackward(bool in_optimizer) const {
    const Stage stage = stage_.load(std::memory_order_relaxed);
    return stage == Stage::kClosureForward || (stage == Stage::kForward && !in_optimizer);
  }
  // Which forward op created each autograd node of this step (origins.h).
  OriginTable& origins() { return origins_; }
  // The collective calls this recording launched (collectives.h).
  CollectiveTable& collectives() { return collectives_; }
  void ForgetStep();
  // Whether the op callbacks run (op_callbacks.h): not in a fingerprint step, where following
  // every op would cost several percent of the step for nothing recorded. Called as recording
  // starts and at each step's end (steps.cc), on a step boundary, where no op is open on the
  // thread that ends the step; RecordFunction keeps the callbacks an op started with, so an op
  // open on another thread ends as it began.
  void FollowOps(bool follow);
  bool following_ops() {
    std::lock_guard<std::mutex> lock(op_callbacks_mu_);
    return !op_callbacks_.empty();
  }

 private:
  Session(std::unique_ptr<Recorder> recorder, const AdapterOptions& options);

  static void ForgetAllInChild();

  static std::atomic<Session*> active_;
  static std::atomic<Session*> latest_;

  std::unique_ptr<Recorder> recorder_;  // null in a forked child (forgotten, never closed)
  std::mutex op_callbacks_mu_;
  std::vector<at::CallbackHandle> op_callbacks_;  // FollowOps
  const bool continue_after_divergence_;
  const std::optional<DistributedOnline> distributed_;
  const std::optional<int64_t> stop_at_step_;
  std::atomic<bool> explicit_steps_{false};
  std::atomic<bool> rng_recorded_{true};  // none for step 0 (steps.h)
  // Where the running step stands for the ops outside modules and autograd nodes
  // (ForwardBeforeBackward). kIdle at the step's start and after each backward; a module call
  // outside backward makes it kForward, or kClosureForward inside Optimizer.step. Several
  // forwards and backwards in one step (gradient accumulation, a closure called again by
  // LBFGS) each get their loss as forward.
  enum class Stage : uint8_t { kIdle, kForward, kClosureForward };
  std::atomic<Stage> stage_{Stage::kIdle};
  OriginTable origins_;
  CollectiveTable collectives_;
};

}  // namespace upguard::torch_adapter
