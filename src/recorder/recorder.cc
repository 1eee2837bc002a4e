// Recorder: digests op arguments off the lock, then interns strings and appends records under
// one mutex. The first failure disables recording (training goes on) and is kept for Close().
#include "upguard/recorder.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <unordered_map>

#include "base/file.h"
#include "base/glob.h"
#include "base/text.h"
#include "digest/digest.h"
#include "digest/hash_pool.h"
#include "recorder/arg_vectors.h"
#include "recorder/deferred_ops.h"
#include "recorder/intern_cache.h"
#include "recorder/online_report.h"
#include "recorder/op_observer.h"
#include "recorder/progress_file.h"
#include "recorder/run_meta.h"
#include "recorder/run_place.h"
#include "recorder/thread_names.h"
#include "trace/unread_tally.h"
#include "trace/writer.h"

namespace upguard {
namespace {

std::atomic<uint64_t> next_recorder_serial{1};

}  // namespace

class Recorder::Impl {
 public:
  explicit Impl(const RecorderOptions& options) : options_(options) {
    digest_options_.stats = options.stats;
    digest_options_.stats_version = kStatsVersionLatest;  // run_meta.cc writes it
    digest_options_.threads =
        options.digest_threads > 0
            ? options.digest_threads
            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // With `against` each op is compared as it ends, its digests known.
    if (options.hash_threads > 0 && options.against.empty()) {
      pool_ = std::make_unique<HashPool>(options.hash_threads, digest_options_);
    }
  }

  Status Open() {
    ASSIGN_OR_RETURN(meta_, RecordingMeta(options_));
    if (!options_.against.empty()) {
      if (options_.observer == nullptr) {
        return InvalidArgument("recording against " + options_.against +
                               " needs its online checker (RecorderOptions::observer)");
      }
      checker_ = options_.observer;
      meta_["against"] = options_.against;
    }
    started_ = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(place_, RunPlace::Open(options_));
    trace_path_ = TracePathIn(place_->dir());
    const uint64_t share = options_.max_bytes / static_cast<uint64_t>(options_.world_size);
    if (options_.max_bytes > 0 && share == 0) {
      return InvalidArgument("recorder: a byte budget of " + std::to_string(options_.max_bytes) +
                             " bytes shared by " + std::to_string(options_.world_size) +
                             " ranks leaves none to each (record --max-bytes)");
    }
    ASSIGN_OR_RETURN(writer_, TraceWriter::Create(trace_path_, meta_.dump(), share));
    if (options_.rank == 0) RETURN_IF_ERROR(WriteRunMeta(/*complete=*/false));
    progress_writer_ = ProgressWriter::Open(options_.progress_path);
    progress_.rank = options_.rank;
    WriteProgressLocked();
    return Status::Ok();
  }

  // Requires mu_ (or no other thread yet): the progress record as recording stands now.
  void WriteProgressLocked() {
    // Once stopped, the step it stopped at (record-progress.md): what `upguard record` reports.
    progress_.step = stopped_ ? stopped_->step : step_.load();
    if (writer_) {
      progress_.ops = writer_->ops_written();
      progress_.trace_bytes = writer_->bytes_written();
    }
    progress_writer_.Write(progress_);
  }

  Status UpdateEngineMeta(std::string_view engine_meta_json) {
    nlohmann::json engine = nlohmann::json::parse(engine_meta_json, nullptr, false);
    if (!engine.is_object()) {
      return InvalidArgument("recorder engine metadata is not a JSON object: " +
                             std::string(engine_meta_json.substr(0, 80)));
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, value] : engine.items()) meta_[key] = value;
    return Status::Ok();
  }

  Status WriteRunMeta(bool complete) {
    nlohmann::json run = meta_;
    if (pool_ != nullptr) {  // rank 0's: what its hash pool took over
      run["hash_pool"] = {{"threads", options_.hash_threads},
                          {"min_bytes", options_.hash_async_bytes},
                          {"digests", offloaded_.load()}};
    }
    run.erase("rank");
    run.erase("pid");
    run["complete"] = complete;
    return WriteFileAtomically(place_->dir() + "/meta.json", run.dump(2) + "\n");
  }

  bool StepWanted() const {
    return enabled_.load(std::memory_order_relaxed) &&
           options_.steps.Contains(step_.load(std::memory_order_relaxed));
  }

  bool FingerprintStep() const {
    return options_.fingerprint && enabled_.load(std::memory_order_relaxed) &&
           !options_.steps.Contains(step_.load(std::memory_order_relaxed));
  }

  bool Wants(std::string_view op, uint32_t depth) const {
    if (FingerprintStep()) return IsFingerprintOp(op);
    if (!StepWanted()) return false;
    if (options_.max_depth >= 0 && depth > static_cast<uint32_t>(options_.max_depth)) return false;
    if (options_.ops.empty()) return true;
    for (const std::string& pattern : options_.ops) {
      if (GlobMatch(pattern, op)) return true;
    }
    return false;
  }

  // Digests without the lock; names and texts are interned later, under it.
  void DigestInto(const std::vector<Arg>& args, std::vector<ArgRecord>* out) {
    out->resize(args.size());
    for (size_t arg_idx = 0; arg_idx < args.size(); ++arg_idx) {
      const Arg& arg = args[arg_idx];
      ArgRecord& rec = (*out)[arg_idx];
      ResetKeepingShape(&rec);  // a reused vector's records hold an earlier op's
      rec.kind = arg.kind;
      if (arg.kind == ArgKind::kScalar) {
        rec.digest = DigestBytes(arg.text.data(), arg.text.size());
        continue;
      }
      if (arg.kind == ArgKind::kNone) continue;
      rec.dtype = arg.tensor.dtype;
      rec.shape.assign(arg.tensor.sizes, arg.tensor.sizes + arg.tensor.ndim);
      rec.unread = arg.unread;
      if (arg.kind != ArgKind::kTensor) continue;
      if (arg.known != nullptr) {
        rec.digest = arg.known->digest;
        rec.has_stats = arg.known->has_stats && options_.stats;
        rec.stats = arg.known->stats;
        continue;
      }
      if (arg.known_pending != nullptr) {
        rec.pending = arg.known_pending;  // the pool's options are these: stats alike
        // Done already (always, once its recorder closed): in the record now, not deferred.
        if (!rec.pending->done()) continue;
        const Status resolved = ResolvePendingArg(&rec);
        if (!resolved.ok()) {
          rec.pending.reset();
          Fail(resolved);
        }
        rec.has_stats = rec.has_stats && options_.stats;
        continue;
      }
      if (Offload(arg)) {
        offloaded_.fetch_add(1, std::memory_order_relaxed);
        rec.pending = pool_->Submit(arg.tensor, arg.owner, arg.memory);
        continue;
      }
      StatusOr<TensorDigest> digest = DigestTensor(arg.tensor, digest_options_);
      if (!digest.ok()) {
        Fail(digest.status());
        continue;
      }
      rec.digest = digest->digest;
      rec.has_stats = digest->has_stats;
      rec.stats = digest->stats;
    }
  }

  // Whether `arg` goes to the hash pool: large, owned, and the pool not too far behind (beyond
  // kMaxQueued digests the caller digests its own: the pool holds every queued tensor alive).
  bool Offload(const Arg& arg) const {
    static constexpr uint64_t kMaxQueued = 64;
    if (pool_ == nullptr || arg.owner == nullptr || pool_->pending() >= kMaxQueued) return false;
    return Offloads(arg.tensor.numel() * static_cast<int64_t>(DTypeSize(arg.tensor.dtype)));
  }

  void WaitBeforeWrite(const void* memory) {
    if (pool_ != nullptr) pool_->WaitFor(memory);
  }
  bool HashesPending() const { return pool_ != nullptr && pool_->pending() > 0; }
  void WaitForHashes() {
    if (pool_ != nullptr) pool_->WaitAll();
  }
  bool Offloads(int64_t bytes) const {
    return pool_ != nullptr && bytes > 0 && bytes >= options_.hash_async_bytes;
  }

  // Requires mu_. Writes the deferred records that are ready (every one with `all`).
  void WriteDeferredLocked(bool all) {
    if (deferred_.empty()) return;
    const Status status = deferred_.WriteReady(writer_.get(), all);
    if (!status.ok()) FailLocked(status);
  }

  // Requires mu_.
  StringId Intern(std::string_view s) {
    return intern_cache_.Intern(s, [this](std::string_view text) { return writer_->Intern(text); });
  }

  // Requires mu_. Argument names, labels and scalar texts; the thread's memo learns them.
  void InternNames(const std::vector<Arg>& args, std::vector<ArgRecord>* out, ThreadNames* memo) {
    for (size_t arg_idx = 0; arg_idx < args.size(); ++arg_idx) {
      const Arg& arg = args[arg_idx];
      ArgRecord& rec = (*out)[arg_idx];
      rec.name = Intern(arg.name);
      rec.label = Intern(arg.label);
      // A scalar's text is made per op, at a new address each time: the address cache would
      // miss and evict a name that lives on; the table finds it by its text.
      if (HasText(arg)) rec.text = writer_->Intern(arg.text);  // "" is kEmptyString
      memo->Learn(arg, rec);
    }
  }

  std::vector<ArgRecord> DigestArgs(const std::vector<Arg>& args) {
    std::vector<ArgRecord> records = TakeArgVector();
    DigestInto(args, &records);
    ThreadNames& memo = ThreadNamesFor(serial_);
    if (NamesFromMemo(args, memo, &records)) return records;
    std::lock_guard<std::mutex> lock(mu_);
    if (writer_) InternNames(args, &records, &memo);
    return records;
  }

  // `outputs` were digested by DigestArgs, names included.
  RecordedOp Record(const OpEvent& op, std::vector<ArgRecord> inputs,
                    std::vector<ArgRecord> outputs) {
    OpRecord record;
    record.inputs = std::move(inputs);
    record.outputs = std::move(outputs);
    std::lock_guard<std::mutex> lock(mu_);
    if (!writer_ || !enabled_.load()) return RecordedOp{};
    // An op that began in a step recorded in full and ends in a fingerprint step (on another
    // thread than the one that ended the step) is not part of the fingerprint.
    if (FingerprintStep() && !IsFingerprintOp(op.op)) return RecordedOp{};
    record.step = static_cast<uint32_t>(step_.load());
    record.phase = op.phase;
    record.depth = op.depth;
    record.op = Intern(op.op);
    record.module = Intern(op.module);
    record.call_site = Intern(op.call_site);
    record.node = Intern(op.node);
    const uint64_t seq = writer_->ops_written() + deferred_.size();  // what WriteOp assigns
    if (!deferred_.empty() ||
        (pool_ != nullptr && DeferredOps::HasPending(record))) {  // never with checker_
      deferred_.Push(std::move(record));
      WriteDeferredLocked(/*all=*/false);
      if (!enabled_.load()) return RecordedOp{};
      return Placed(op.phase, static_cast<uint32_t>(step_.load()), seq);
    }
    Status status = writer_->WriteOp(record);
    if (!status.ok()) {
      FailLocked(status);
      return RecordedOp{};
    }
    RecordedOp recorded = Placed(op.phase, record.step, seq);
    if (checker_ != nullptr) {
      std::optional<OnlineDivergence> divergence = checker_->Check(record, recorded.index, op.op);
      if (divergence) recorded.diverged = NoteDivergenceLocked(*divergence, op);
    }
    GiveBackArgVector(std::move(record.inputs));  // for this thread's next op
    GiveBackArgVector(std::move(record.outputs));
    return recorded;
  }

  // Requires mu_. The index and position of an op of `phase` just written, counted.
  RecordedOp Placed(Phase phase, uint32_t step, uint64_t seq) {
    RecordedOp recorded;
    recorded.written = true;
    recorded.step = step;
    recorded.seq = seq;
    recorded.index = ops_in_step_.fetch_add(1, std::memory_order_relaxed);
    recorded.position = phase == Phase::kInput
                            ? compared_in_step_.load(std::memory_order_relaxed)
                            : compared_in_step_.fetch_add(1, std::memory_order_relaxed);
    return recorded;
  }

  // `outputs` were digested by DigestArgs, names included. The op must be of the current step:
  // once MarkStep ended its step, the StepEnd is written and the record could not follow it.
  void RecordCollective(const CollectiveEvent& event, std::vector<ArgRecord> outputs) {
    CollectiveInfo info;
    info.ranks = event.ranks;
    info.group_rank = event.group_rank;
    info.group_size = event.group_size;
    info.seq = event.seq;
    info.completed = event.completed;
    info.ops_before_completion = event.ops_before_completion;
    info.outputs = std::move(outputs);
    // An output whose digest the cache had pending (the pool's): a Collective record is written
    // at once.
    const Status resolved = ResolvePending("collective output", &info.outputs);
    if (!resolved.ok()) return Fail(resolved);
    std::lock_guard<std::mutex> lock(mu_);
    if (!writer_ || !enabled_.load()) return;
    if (!event.op.written || event.op.step != step_.load()) {
      ++collectives_dropped_;
      return;
    }
    info.group = Intern(event.group);
    WriteDeferredLocked(/*all=*/true);  // its op first
    const Status status = writer_->WriteCollective(event.op.seq, info);
    if (!status.ok()) FailLocked(status);
  }

  uint64_t collectives_dropped() const {
    std::lock_guard<std::mutex> lock(mu_);
    return collectives_dropped_;
  }

  // Requires mu_. Writes online.json (rank-suffixed beyond rank 0) for `upguard record`.
  bool NoteDivergenceLocked(const OnlineDivergence& d, const OpEvent& op) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    divergence_ = OnlineReport(d, op, *checker_, options_.rank, seconds);
    const Status status = WriteFileAtomically(place_->dir() + "/" + OnlineReportName(options_.rank),
                                              divergence_.dump(2) + "\n");
    if (!status.ok()) FailLocked(status);
    return true;
  }

  std::string divergence_json() const {
    std::lock_guard<std::mutex> lock(mu_);
    return divergence_.is_null() ? "" : divergence_.dump();
  }

  uint64_t ops_in_step() const { return ops_in_step_.load(std::memory_order_relaxed); }
  uint64_t compared_in_step() const { return compared_in_step_.load(std::memory_order_relaxed); }

  void MarkStep() {
    std::lock_guard<std::mutex> lock(mu_);
    EndStepLocked();
    step_.fetch_add(1);
    ops_in_step_.store(0, std::memory_order_relaxed);
    compared_in_step_.store(0, std::memory_order_relaxed);
    WriteProgressLocked();
  }

  void SkipTo(int64_t step) {
    std::lock_guard<std::mutex> lock(mu_);
    if (step <= step_.load()) return;
    EndStepLocked();
    step_.store(step);
    ops_in_step_.store(0, std::memory_order_relaxed);
    compared_in_step_.store(0, std::memory_order_relaxed);
    WriteProgressLocked();
  }

  void EndStepLocked() {
    if (!writer_ || !enabled_.load()) return;
    WriteDeferredLocked(/*all=*/true);
    if (!enabled_.load()) return;
    uint64_t flags = 0;
    if (!options_.steps.Contains(step_.load())) {
      if (!options_.fingerprint) return;
      flags = kStepFingerprint;
    }
    Status status = writer_->EndStep(static_cast<uint32_t>(step_.load()), flags);
    if (status.ok()) status = writer_->Flush();
    if (!status.ok()) return FailLocked(status);
    ++(flags == kStepFingerprint ? progress_.steps_fingerprinted : progress_.steps_recorded);
  }

  Status Close(bool end_last_step) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!writer_) return first_error_;
    if (end_last_step && ops_in_step_ > 0) EndStepLocked();
    if (enabled_.load()) WriteDeferredLocked(/*all=*/true);  // a step that gets no StepEnd
    Status status = writer_->Close(stopped_ ? &*stopped_ : nullptr);
    if (!status.ok()) FailLocked(status);
    ops_total_ = writer_->ops_written();
    SayUnread(writer_->UnreadTotal());
    progress_.closed = true;
    WriteProgressLocked();
    writer_.reset();
    enabled_.store(false);
    if (options_.rank == 0) {
      Status meta_status = WriteRunMeta(/*complete=*/first_error_.ok());
      if (!meta_status.ok() && first_error_.ok()) {
        first_error_ = meta_status;
        std::fprintf(stderr, "upguard: the trace is closed, but meta.json was not updated: %s\n",
                     meta_status.message().c_str());
      }
    }
    // The run moves into run_dir (incomplete or not: it is marked so) when this is the last
    // rank of the job.
    const Status placed = place_->Close();
    if (!placed.ok() && first_error_.ok()) first_error_ = placed;
    trace_path_ = TracePathIn(place_->dir());
    return first_error_;
  }

  // At the end, what was not read (a line a reason): a diff of this run cannot say what those
  // tensors held ("412 op(s) were not digested (1,236 tensor(s) on cuda:0: upguard reads CPU
  // tensors only)").
  void SayUnread(const std::vector<UnreadCount>& counts) const {
    for (const UnreadCount& count : counts) {
      if (!UnreadHidesValues(count.reason)) continue;
      std::fprintf(stderr,
                   "upguard: rank %d: %s op(s) were not digested (%s tensor(s) %s); a diff of "
                   "this run cannot compare them and says unverified\n",
                   options_.rank, GroupedThousands(count.ops).c_str(),
                   GroupedThousands(count.tensors).c_str(), UnreadWhy(count).c_str());
    }
  }

  std::string TracePathIn(const std::string& dir) const {
    return dir + "/rank" + std::to_string(options_.rank) + ".ugt";
  }

  void Fail(const Status& status) {
    std::lock_guard<std::mutex> lock(mu_);
    FailLocked(status);
  }

  // The first failure ends the recording (the training goes on): said once, and kept for the
  // Stopped record that ends the trace (trace.md §5.7) and for the progress record.
  void FailLocked(const Status& status) {
    if (!first_error_.ok()) return;
    first_error_ = status;
    enabled_.store(false);
    StoppedRecord& stopped = stopped_.emplace();
    stopped.step = static_cast<uint32_t>(step_.load());
    stopped.reason = writer_ ? writer_->failure_reason() : StopReason::kError;
    stopped.message = status.message().substr(0, kMaxStopMessageBytes);
    progress_.stop_reason = stopped.reason;
    progress_.stopped = true;
    WriteProgressLocked();
    std::fprintf(stderr,
                 "upguard: recording stopped, training continues: %s; the trace is incomplete: "
                 "it ends in step %u\n",
                 status.message().c_str(), stopped.step);
  }

  int64_t step() const { return step_.load(); }
  bool enabled() const { return enabled_.load(); }
  uint64_t ops_recorded() const {
    std::lock_guard<std::mutex> lock(mu_);
    return writer_ ? writer_->ops_written() + deferred_.size() : ops_total_;
  }
  std::string trace_path() const {
    std::lock_guard<std::mutex> lock(mu_);
    return trace_path_;
  }
  std::string write_dir() const {
    std::lock_guard<std::mutex> lock(mu_);
    return place_ != nullptr ? place_->dir() : options_.run_dir;
  }

 private:
  const RecorderOptions options_;
  const uint64_t serial_ = next_recorder_serial.fetch_add(1);  // whose ids a ThreadNames holds
  DigestOptions digest_options_;
  nlohmann::json meta_;
  std::unique_ptr<RunPlace> place_;  // set by Open; its dir() changes at Close (under mu_)
  std::string trace_path_;           // guarded by mu_ once Open returned
  mutable std::mutex mu_;
  std::unique_ptr<TraceWriter> writer_;  // guarded by mu_
  std::shared_ptr<OpObserver> checker_;  // guarded by mu_; with options_.against
  nlohmann::json divergence_;            // guarded by mu_; the first, once found
  std::chrono::steady_clock::time_point started_;
  InternCache intern_cache_;  // guarded by mu_
  DeferredOps deferred_;      // guarded by mu_: ops waiting for pool_'s digests, in order
  std::atomic<bool> enabled_{true};
  std::atomic<int64_t> step_{0};
  std::atomic<uint64_t> ops_in_step_{0};       // written under mu_
  std::atomic<uint64_t> compared_in_step_{0};  // of them, outside phase input; under mu_
  uint64_t ops_total_ = 0;                     // guarded by mu_
  uint64_t collectives_dropped_ = 0;           // guarded by mu_: events after their step ended
  Status first_error_;                         // guarded by mu_
  std::optional<StoppedRecord> stopped_;       // guarded by mu_: set with first_error_
  ProgressWriter progress_writer_;             // options_.progress_path's; guarded by mu_
  RankProgress progress_;                      // guarded by mu_
  std::unique_ptr<HashPool> pool_;             // with options_.hash_threads
  std::atomic<uint64_t> offloaded_{0};         // digests handed to pool_
};

Recorder::Recorder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Recorder::~Recorder() { (void)impl_->Close(true); }

StatusOr<std::unique_ptr<Recorder>> Recorder::Open(const RecorderOptions& options) {
  if (options.run_dir.empty()) return InvalidArgument("recorder: run_dir is empty; pass -o DIR");
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return InvalidArgument("recorder: rank " + std::to_string(options.rank) +
                           " is outside world size " + std::to_string(options.world_size));
  }
  auto impl = std::make_unique<Impl>(options);
  RETURN_IF_ERROR(impl->Open());
  return std::unique_ptr<Recorder>(new Recorder(std::move(impl)));
}

bool Recorder::StepWanted() const { return impl_->StepWanted(); }
bool Recorder::FingerprintStep() const { return impl_->FingerprintStep(); }
bool Recorder::Wants(std::string_view op, uint32_t depth) const { return impl_->Wants(op, depth); }
std::vector<ArgRecord> Recorder::DigestArgs(const std::vector<Arg>& args) {
  return impl_->DigestArgs(args);
}
void Recorder::WaitBeforeWrite(const void* memory) { impl_->WaitBeforeWrite(memory); }
bool Recorder::HashesPending() const { return impl_->HashesPending(); }
void Recorder::WaitForHashes() { impl_->WaitForHashes(); }
bool Recorder::Offloads(int64_t bytes) const { return impl_->Offloads(bytes); }
RecordedOp Recorder::Record(const OpEvent& op, std::vector<ArgRecord> inputs) {
  return impl_->Record(op, std::move(inputs), impl_->DigestArgs(op.outputs));
}
RecordedOp Recorder::Record(const OpEvent& op, std::vector<ArgRecord> inputs,
                            std::vector<ArgRecord> outputs) {
  return impl_->Record(op, std::move(inputs), std::move(outputs));
}
RecordedOp Recorder::Record(const OpEvent& op) {
  return impl_->Record(op, impl_->DigestArgs(op.inputs), impl_->DigestArgs(op.outputs));
}
void Recorder::RecordCollective(const CollectiveEvent& event, std::vector<ArgRecord> outputs) {
  impl_->RecordCollective(event, std::move(outputs));
}
uint64_t Recorder::collectives_dropped() const { return impl_->collectives_dropped(); }
uint64_t Recorder::ops_in_step() const { return impl_->ops_in_step(); }
uint64_t Recorder::compared_in_step() const { return impl_->compared_in_step(); }
void Recorder::MarkStep() { impl_->MarkStep(); }
void Recorder::SkipTo(int64_t step) { impl_->SkipTo(step); }
Status Recorder::UpdateEngineMeta(std::string_view engine_meta_json) {
  return impl_->UpdateEngineMeta(engine_meta_json);
}
int64_t Recorder::step() const { return impl_->step(); }
bool Recorder::enabled() const { return impl_->enabled(); }
Status Recorder::Close(bool end_last_step) { return impl_->Close(end_last_step); }
uint64_t Recorder::ops_recorded() const { return impl_->ops_recorded(); }
std::string Recorder::divergence_json() const { return impl_->divergence_json(); }
std::string Recorder::trace_path() const { return impl_->trace_path(); }
std::string Recorder::write_dir() const { return impl_->write_dir(); }

}  // namespace upguard
