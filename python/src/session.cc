#include "session.h"

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "call_site.h"
#include "capture.h"
#include "collectives.h"
#include "digest_cache.h"
#include "op_callbacks.h"
#include "python_release.h"
#include "steps.h"
#include "tensor_names.h"

namespace upguard::torch_adapter {

std::atomic<Session*> Session::active_{nullptr};
std::atomic<Session*> Session::latest_{nullptr};

namespace {

std::mutex g_lifecycle_mu;  // Start / Stop, and the registry below
// Every session this process started, the latest last; none is ever destroyed (session.h), not
// even at exit: what a session still holds then (a collective's tensors) is not let go after
// the interpreter has finalized.
std::vector<std::unique_ptr<Session>>& g_sessions = *new std::vector<std::unique_ptr<Session>>();

Recorder* LatestRecorderLocked() {
  return g_sessions.empty() ? nullptr : g_sessions.back()->recorder();
}

}  // namespace

Session::Session(std::unique_ptr<Recorder> recorder, const AdapterOptions& options)
    : recorder_(std::move(recorder)),
      continue_after_divergence_(options.continue_after_divergence),
      distributed_(options.distributed_online),
      stop_at_step_(options.stop_at_step) {}

void Session::FollowOps(bool follow) {
  std::lock_guard<std::mutex> lock(op_callbacks_mu_);
  if (follow && op_callbacks_.empty()) op_callbacks_ = InstallOpCallbacks();
  if (!follow) {
    for (at::CallbackHandle handle : op_callbacks_) at::removeCallback(handle);
    op_callbacks_.clear();
  }
}

void Session::ForgetStep() {
  rng_recorded_.store(false);
  stage_.store(Stage::kIdle);
  origins_.Clear();
}

void Session::ForgetAllInChild() {
  active_.store(nullptr);
  for (std::unique_ptr<Session>& session : g_sessions) (void)session->recorder_.release();
}

Status Session::Start(const AdapterOptions& options) {
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  if (Session* active = Active()) {
    return FailedPrecondition("upguard is already recording to " +
                              active->recorder()->trace_path() + "; stop that recording first");
  }
  static const int fork_handler = pthread_atfork(nullptr, nullptr, ForgetAllInChild);
  (void)fork_handler;
  ASSIGN_OR_RETURN(std::unique_ptr<Recorder> recorder, Recorder::Open(options.recorder));
  ConfigureCallSites(options.skip_prefixes, options.cwd);
  // Captures go where the trace goes: the staging directory until the run moves into run_dir.
  ConfigureCapture(options.capture, recorder->write_dir(), options.recorder.rank,
                   /*hold_all=*/!options.recorder.against.empty());
  Digests().Clear();  // digests depend on the options (stats on or off)
  if (Session* previous = Latest()) previous->collectives().Reset();
  ClearTensorNames();
  g_sessions.push_back(std::unique_ptr<Session>(new Session(std::move(recorder), options)));
  Session* session = g_sessions.back().get();
  latest_.store(session, std::memory_order_release);
  active_.store(session, std::memory_order_release);
  session->FollowOps(!session->recorder()->FingerprintStep());
  return Status::Ok();
}

Status Session::Stop(const std::string& final_engine_meta_json, bool died) {
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  // The last step ends here (not when it died inside, nor when it holds no op yet).
  Session* running = Active();
  if (running != nullptr && !died && running->recorder()->ops_in_step() > 0) {
    RecordModelStateAtStepEnd(*running);
  }
  for (std::unique_ptr<Session>& session : g_sessions) {
    session->FollowOps(false);
  }
  Session* stopped = active_.exchange(nullptr);
  if (stopped != nullptr) stopped->collectives().Flush(stopped->recorder());
  ClearTensorNames();
  Recorder* latest = LatestRecorderLocked();
  if (latest == nullptr) return Status::Ok();
  // The trace closes whatever happens to the facts read at the end: meta.json keeps those of the
  // start then.
  const Status engine = final_engine_meta_json.empty()
                            ? Status::Ok()
                            : latest->UpdateEngineMeta(final_engine_meta_json);
  if (!engine.ok()) {
    std::fprintf(stderr, "upguard: meta.json keeps the facts read at the start: %s\n",
                 engine.message().c_str());
  }
  return latest->Close(/*end_last_step=*/!died);
}

void Session::Disable(const char* where, const char* what) {
  if (active_.exchange(nullptr) != nullptr) {
    std::fprintf(stderr, "upguard: recording stopped, training continues: %s: %s\n", where, what);
  }
}

void Session::CloseAndExit(const char* why, int code, const std::function<void()>& before_exit) {
  Session* session = active_.exchange(nullptr);
  Recorder* recorder = session != nullptr ? session->recorder() : nullptr;
  if (recorder != nullptr) session->collectives().Flush(recorder);
  const Status status = recorder != nullptr ? recorder->Close() : Status::Ok();
  std::fprintf(stderr, "upguard: stopping the program here, %s%s%s\n", why,
               status.ok() ? "" : "; the trace did not close: ",
               status.ok() ? "" : status.message().c_str());
  std::fflush(nullptr);
  if (before_exit) before_exit();
  std::_Exit(status.ok() ? code : 2);
}

int64_t Session::LatestStep() {
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  Recorder* latest = LatestRecorderLocked();
  return latest == nullptr ? 0 : latest->step();
}

uint64_t Session::LatestOpsRecorded() {
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  Recorder* latest = LatestRecorderLocked();
  return latest == nullptr ? 0 : latest->ops_recorded();
}

std::string Session::LatestTracePath() {
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  Recorder* latest = LatestRecorderLocked();
  return latest == nullptr ? "" : latest->trace_path();
}

// adapter.h: the lifecycle entry points.

Status Start(const AdapterOptions& options) { return Session::Start(options); }

Status Stop(const std::string& final_engine_meta_json, bool died) {
  return Session::Stop(final_engine_meta_json, died);
}

bool Active() { return Session::Active() != nullptr; }

int64_t CurrentStep() { return Session::LatestStep(); }

bool FingerprintStep() {
  Session* session = Session::Active();
  return session != nullptr && session->recorder()->FingerprintStep();
}

uint64_t OpsRecorded() { return Session::LatestOpsRecorded(); }

std::string TracePath() { return Session::LatestTracePath(); }

std::string WriteDir() {
  const std::string trace = Session::LatestTracePath();
  const size_t slash = trace.rfind('/');
  return slash == std::string::npos ? "" : trace.substr(0, slash);
}

}  // namespace upguard::torch_adapter
