// Synthetic training runs for benchmarks and tests: a GPT-like op stream of any size, written
// through TraceWriter as a run directory (meta.json + rank0.ugt, or one file per rank of a
// data-parallel run), deterministic from a seed.
//
//   SyntheticOptions a;  a.ops = 10'000'000;  a.steps = 1000;
//   SyntheticOptions b = a;  b.plant = Plant::kCulprit;  b.plant_at = 5'000'000;
//   ASSIGN_OR_RETURN(SyntheticSummary ra, WriteSyntheticRun("/tmp/a", a));
//   ASSIGN_OR_RETURN(SyntheticSummary rb, WriteSyntheticRun("/tmp/b", b));
//   // `upguard diff /tmp/a /tmp/b` names rb.planted.op at rb.planted.step / .index.
//
// Values follow a dataflow (tools/synthetic_program.h): a planted change propagates to every op
// that later consumes it, through the weights into every later step, as in real training.
#pragma once

#include <cstdint>
#include <string>

#include "upguard/status.h"

namespace upguard::synthetic {

enum class Plant : uint8_t {
  kNone,
  kCulprit,     // the first op at or after `plant_at` with a tensor output computes differently
  kArgument,    // ... the first top-level op with a non-tensor argument gets a different one
  kStructural,  // an extra value-preserving aten::mul runs before the first top-level op there
};
// "culprit", "argument", "structural"; false for other text.
bool ParsePlant(const std::string& text, Plant* plant);
const char* PlantName(Plant plant);
// The tools' --diverge-kind: a culprit when not `given`, else the plant `text` names; the
// error names the flag and the choices.
StatusOr<Plant> PlantOfFlag(bool given, const std::string& text);

struct SyntheticOptions {
  uint64_t ops = 1'000'000;  // op records in the run (a structural plant adds one)
  uint32_t steps = 100;      // the ops are spread evenly over the steps
  uint64_t seed = 1;         // initial weights and data
  bool stats = true;         // tensor statistics on floating tensors
  bool step_ends = true;     // false: no StepEnd records (the diff cannot skip steps)
  bool end_record = true;    // false: no End record (a trace whose process died)
  // Intern one extra string first, so every string id is one higher than in a run without it
  // (as after a run interns one more name early): no op record is byte-identical to the other
  // run's, and a diff must decode every op it compares.
  bool shift_ids = false;
  Plant plant = Plant::kNone;
  uint64_t plant_at = 0;  // op index (seq) where the change is planted
  // One rank of a data-parallel run: the same program and initial weights on every rank, its
  // own batches (there is no all-reduce, so every value after the first batch is the rank's
  // own). Rank 0 writes the op records it always has.
  uint32_t rank = 0;
  uint32_t world_size = 1;
};

// Where a change was planted, in the run that has it.
struct PlantedChange {
  bool planted = false;
  uint64_t seq = 0;
  uint32_t step = 0;
  uint64_t index = 0;  // within the step
  std::string op;
};
// "kind=culprit op=aten::bmm seq=185011 step=18 index=5011", what the tools print after
// "planted " for the benchmarks to read.
std::string PlantedFields(Plant plant, const PlantedChange& planted);

struct SyntheticSummary {
  uint64_t ops = 0;
  uint32_t steps = 0;
  uint64_t bytes = 0;             // of the rank file
  uint64_t ops_per_template = 0;  // ops of one step's model before padding
  PlantedChange planted;
};

// Writes `dir`/meta.json and `dir`/rank0.ugt (creating `dir`). Fails on bad options (no ops,
// more steps than ops, plant_at past the last eligible op) and on I/O errors.
StatusOr<SyntheticSummary> WriteSyntheticRun(const std::string& dir,
                                             const SyntheticOptions& options);

// The two halves of WriteSyntheticRun, for runs of many ranks: `dir`/rank<options.rank>.ugt,
// and `dir`/meta.json for options.world_size ranks (trace.md §2). Each creates `dir`.
//
//   for (uint32_t rank = 0; rank < 64; ++rank) {
//     options.rank = rank;
//     ASSIGN_OR_RETURN(SyntheticSummary summary, WriteSyntheticRank(dir, options));
//   }
//   RETURN_IF_ERROR(WriteSyntheticRunMeta(dir, options));
StatusOr<SyntheticSummary> WriteSyntheticRank(const std::string& dir,
                                              const SyntheticOptions& options);
Status WriteSyntheticRunMeta(const std::string& dir, const SyntheticOptions& options);

}  // namespace upguard::synthetic
