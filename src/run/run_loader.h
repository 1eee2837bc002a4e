// Loads a run directory (meta.json + rank<N>.ugt) for the diff and `show`.
//
//   ASSIGN_OR_RETURN(Run run, LoadRun("runs/a", LoadOptions{}));
//   const RankTrace& rank = run.ranks[0];
//   for (size_t idx = 0; idx < rank.steps().size(); ++idx) {
//     if (skippable(rank.steps()[idx])) continue;            // step number, op count, StepEnd
//     ASSIGN_OR_RETURN(std::shared_ptr<const StepOps> ops, rank.Ops(idx));
//   }
//
// By default a trace is mapped and indexed (TraceIndex) and a step's ops are decoded when first
// asked for, so memory does not grow with the trace; LoadOptions::decode_all reads every op up
// front with TraceReader instead (the reference route the tests compare with). Errors name the
// directory or file and say what to do. A trace that ends without its End record (the process
// died) loads; a damaged one loads its readable prefix only when LoadOptions::allow_damaged is
// set, and otherwise fails with the reader's message.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "run/step_store.h"
#include "trace/reader.h"
#include "trace/records.h"
#include "upguard/status.h"

namespace upguard {

struct RankTrace {
  int rank = 0;
  std::string path;
  nlohmann::json meta;   // the RunMeta record
  uint16_t version = 0;  // the file's format version (trace.md §7)
  std::shared_ptr<StepStore> store;

  const StringTable& strings() const { return store->strings(); }
  const std::string& Str(StringId id) const { return strings().Get(id); }
  // The steps known so far, in step order: all of them, unless the trace was loaded with
  // LoadOptions::index_on_demand and not indexed to the end (IndexAll) yet.
  const std::vector<StepInfo>& steps() const { return store->steps(); }
  // Whether steps()[step_idx] exists, indexing on as far as needed.
  StatusOr<bool> HasStep(size_t step_idx) const { return store->HasStep(step_idx); }
  // The index in steps() of the first step numbered `step`, indexing on as far as needed.
  StatusOr<std::optional<size_t>> FindStep(uint32_t step) const { return store->FindStep(step); }
  // Indexes to the end; damage is then an error unless LoadOptions::allow_damaged.
  Status IndexAll() const { return store->IndexAll(); }
  // Once indexed to the end: whether the End record was read, and the damage met.
  bool complete() const { return store->complete(); }
  // The Stopped record the trace ends with: its recording stopped early (trace.md §5.7).
  const std::optional<StoppedRecord>& stopped() const { return store->stopped(); }
  const std::optional<TraceDamage>& damage() const { return store->damage(); }
  // The ops of steps()[step_idx], decoded on first use; valid while the pointer is held. A
  // step whose ops turn out damaged cuts the trace (see StepStore): then steps(), complete()
  // and damage() change and cuts() goes up.
  StatusOr<std::shared_ptr<const StepOps>> Ops(size_t step_idx) const {
    return store->Ops(step_idx);
  }
  uint64_t cuts() const { return store->cuts(); }
  // Decodes every step once, so that damage hiding in an op payload is found (and the trace
  // cut, or an error returned) before anything is reported.
  Status CheckAllOps() const;
};

struct Run {
  std::string dir;
  nlohmann::json meta;  // meta.json (empty object if the directory has none)
  int world_size = 1;
  std::vector<RankTrace> ranks;  // by rank

  // What the run says of itself: meta.json, or rank 0's RunMeta record when the directory has
  // no meta.json with an argv (traces written by tools, or copied without it).
  const nlohmann::json& Meta() const {
    return meta.contains("argv") || ranks.empty() ? meta : ranks[0].meta;
  }
};

// Adds a note when `trace` is damaged or ends without its End record; `done` says what was
// done with the part that was read ("compared", "scanned").
void NoteIncomplete(const RankTrace& trace, const char* done, std::vector<std::string>* notes);

struct LoadOptions {
  bool allow_damaged = false;
  // Read every op into memory at load with TraceReader (the reference route), instead of
  // mapping the trace and decoding steps when asked for.
  bool decode_all = false;
  // Index a mapped trace only as far as callers ask (the diff), instead of to the end at load.
  // Damage is then found, and reported by IndexAll(), only when indexing reaches it.
  bool index_on_demand = false;
};

StatusOr<RankTrace> LoadRankTrace(const std::string& path, const LoadOptions& options);
StatusOr<Run> LoadRun(const std::string& dir, const LoadOptions& options);

}  // namespace upguard
