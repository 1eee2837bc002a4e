// StepStore: where a RankTrace's steps and ops come from. Either the whole trace was read when
// it was loaded (TraceReader: every op in memory), or it is mapped and indexed (TraceIndex) as
// far as a caller asks, and a step's ops are decoded when first asked for and kept in a small
// cache. Both give the same steps and the same ops (tested).
//
//   std::shared_ptr<StepStore> store = StepStore::FromIndex(std::move(index), allow_damaged);
//   for (size_t idx = 0;; ++idx) {
//     ASSIGN_OR_RETURN(bool more, store->HasStep(idx));      // indexes on as needed
//     if (!more) break;
//     ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> ops, store->Ops(idx));
//     ... ops->ops[k] ...            // valid while `ops` is held, whatever the cache drops
//   }
//   RETURN_IF_ERROR(store->IndexAll());   // damage after the last step asked for, if any
//
// Memory of the lazy store: the index, the steps its callers hold, and a few cached steps whose
// buffers are reused for the next step decoded (no allocation per op once they have grown).
//
// An op payload that turns out malformed when its step is decoded (possible only behind a valid
// CRC) is damage found late. Without allow_damaged Ops() fails with the damage message. With
// it, the trace is cut before that op, as TraceReader would have cut it: steps(), complete() and
// damage() change and cuts() goes up, so a caller that walked earlier steps starts over.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <vector>

#include "trace/reader.h"
#include "trace/records.h"
#include "trace/trace_index.h"
#include "upguard/status.h"

namespace upguard {

struct StepOps {
  uint32_t step = 0;
  std::vector<OpRecord> ops;
  std::optional<StepEndRecord> end;  // absent when the trace stops inside the step
};

// A step as the index knows it, before its ops are decoded.
struct StepInfo {
  uint32_t step = 0;
  uint64_t op_count = 0;
  std::optional<StepEndRecord> end;
};

class StepStore {
 public:
  static std::shared_ptr<StepStore> FromDecoded(std::vector<StepOps> steps, StringTable strings,
                                                bool complete, std::optional<StoppedRecord> stopped,
                                                std::optional<TraceDamage> damage,
                                                bool allow_damaged);
  static std::shared_ptr<StepStore> FromIndex(std::unique_ptr<TraceIndex> index,
                                              bool allow_damaged);

  // The steps known so far, in order; every step once IndexAll() returned.
  const std::vector<StepInfo>& steps() const { return steps_; }
  // Indexes on until steps()[step_idx] is known or the trace ends; whether it exists.
  StatusOr<bool> HasStep(size_t step_idx);
  // Indexes on until every step numbered `step` or less is known; the index of the first one
  // numbered `step`.
  StatusOr<std::optional<size_t>> FindStep(uint32_t step);
  // Indexes to the end; then damage is an error unless allow_damaged.
  Status IndexAll();

  // The strings of the records known so far (every id an op of a known step uses).
  const StringTable& strings() const { return index_ ? index_->strings() : strings_; }
  // Meaningful once IndexAll() returned.
  bool complete() const { return index_ ? index_->complete() : complete_; }
  // The Stopped record the trace ends with (trace.md §5.7), if it does.
  const std::optional<StoppedRecord>& stopped() const {
    return index_ ? index_->stopped() : stopped_;
  }
  const std::optional<TraceDamage>& damage() const { return index_ ? index_->damage() : damage_; }
  // The mapped trace the lazy store decodes from; null when every step was decoded at load.
  const TraceIndex* index() const { return index_.get(); }
  // How many times Ops() cut the trace.
  uint64_t cuts() const { return cuts_; }

  // The ops of steps()[step_idx]. Precondition: step_idx < steps().size().
  StatusOr<std::shared_ptr<const StepOps>> Ops(size_t step_idx);

 private:
  static constexpr size_t kCachedSteps = 4;
  struct Cached {
    size_t step_idx;
    std::shared_ptr<StepOps> ops;
  };

  // Brings steps_ up to the index's final steps.
  void Sync();

  std::vector<StepInfo> steps_;
  uint64_t cuts_ = 0;
  bool allow_damaged_ = false;
  // Loaded whole:
  std::vector<std::shared_ptr<StepOps>> decoded_;
  StringTable strings_;
  bool complete_ = false;
  std::optional<StoppedRecord> stopped_;
  std::optional<TraceDamage> damage_;
  // Or indexed:
  std::unique_ptr<TraceIndex> index_;
  std::list<Cached> cache_;  // most recently used first
};

// The error for damage when --allow-damaged was not given.
Status DamageError(const TraceDamage& damage);

}  // namespace upguard
