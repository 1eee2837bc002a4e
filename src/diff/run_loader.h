// Loads a run directory (meta.json + rank<N>.ugt) into memory, step by step, for the diff.
//
//   ASSIGN_OR_RETURN(Run run, LoadRun("runs/a", LoadOptions{}));
//   for (const RankTrace& rank : run.ranks) for (const StepOps& step : rank.steps) ...
//
// Errors name the directory or file and say what to do. A trace that ends without its End
// record (the process died) loads; a damaged one loads its readable prefix only when
// LoadOptions::allow_damaged is set, and otherwise fails with the reader's message.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trace/reader.h"
#include "trace/records.h"
#include "upguard/status.h"

namespace upguard {

struct StepOps {
  uint32_t step = 0;
  std::vector<OpRecord> ops;
  std::optional<StepEndRecord> end;  // absent when the trace stops inside the step
};

struct RankTrace {
  int rank = 0;
  std::string path;
  nlohmann::json meta;  // the RunMeta record
  StringTable strings;
  std::vector<StepOps> steps;  // in step order
  bool complete = false;
  std::optional<TraceDamage> damage;

  const std::string& Str(StringId id) const { return strings.Get(id); }
  const StepOps* FindStep(uint32_t step) const;
};

struct Run {
  std::string dir;
  nlohmann::json meta;  // meta.json (empty object if the directory has none)
  int world_size = 1;
  std::vector<RankTrace> ranks;  // by rank
};

struct LoadOptions {
  bool allow_damaged = false;
};

StatusOr<RankTrace> LoadRankTrace(const std::string& path, const LoadOptions& options);
StatusOr<Run> LoadRun(const std::string& dir, const LoadOptions& options);

}  // namespace upguard
