// upguard_synth_run: writes a synthetic data-parallel run of many ranks (tools/synthetic_trace.h:
// the GPT-like op stream, each rank with its own batches), optionally with a change planted on
// one rank, for scale tests and benchmarks of the multi-rank diff.
//
//   upguard_synth_run --ranks 64 --steps 20 --ops-per-step 10000 --out /tmp/a
//   upguard_synth_run --ranks 64 --steps 20 --ops-per-step 10000 --out /tmp/b
//       --diverge-rank 37 --diverge-step 18 --diverge-op 5000     (one command line)
//   upguard diff /tmp/a /tmp/b            # names rank 37, step 18, the planted op
//
// Prints one line on what it wrote and, with --diverge-rank, one `planted ...` line naming the
// op the diff should report. Exit codes: 0 ok, 1 error.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <vector>

#include "cli/flags.h"
#include "diff/rank_pool.h"
#include "tools/synthetic_trace.h"

namespace {

constexpr const char* kUsage =
    "usage: upguard_synth_run --out DIR [--ranks N] [--steps S] [--ops-per-step K] [--seed X]\n"
    "           [--diverge-rank R [--diverge-step S2] [--diverge-op I]\n"
    "            [--diverge-kind culprit|argument|structural]] [--jobs J]\n"
    "Writes DIR/meta.json and DIR/rank0.ugt .. rank<N-1>.ugt: N ranks (default 8) of a GPT-like\n"
    "data-parallel training run, S steps (default 10) of K ops each (default 10000), the same\n"
    "program and initial weights on every rank, each rank's own batches; deterministic from the\n"
    "seed.\n"
    "  --diverge-rank R   plant a change on rank R only, at op I (default 0) of step S2\n"
    "                     (default 0), or the first op after it that can take it: culprit\n"
    "                     (default) an output computes differently; argument a non-tensor\n"
    "                     argument differs; structural an extra op runs there.\n"
    "  --jobs J           ranks written at once (default: the hardware's concurrency)\n";

int Fail(const std::string& message) {
  std::cerr << "upguard_synth_run: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace upguard;
  Flags flags("upguard_synth_run", {{"out", 'o', true},
                                    {"ranks", 0, true},
                                    {"steps", 0, true},
                                    {"ops-per-step", 0, true},
                                    {"seed", 0, true},
                                    {"diverge-rank", 0, true},
                                    {"diverge-step", 0, true},
                                    {"diverge-op", 0, true},
                                    {"diverge-kind", 0, true},
                                    {"jobs", 'j', true},
                                    {"help", 'h', false}});
  if (Status status = flags.Parse(argc, argv, 1); !status.ok()) {
    return Fail(status.message() + "\n" + kUsage);
  }
  if (flags.Has("help")) {
    std::cout << kUsage;
    return 0;
  }
  if (!flags.positionals().empty() || flags.Get("out").empty()) {
    return Fail(std::string("expects --out DIR and no other argument\n") + kUsage);
  }
  // A whole-number flag within [min, max], or `fallback` when not given.
  std::string error;
  const auto bounded = [&](const char* name, int64_t fallback, int64_t min, int64_t max) {
    if (!flags.Has(name)) return fallback;
    StatusOr<int64_t> value = flags.GetInt(name, fallback);
    if (!value.ok()) {
      error = value.status().message();
    } else if (*value < min || *value > max) {
      error = std::string("--") + name + " must be in " + std::to_string(min) + ".." +
              std::to_string(max) + " (got " + std::to_string(*value) + ")";
    }
    return value.ok() ? *value : fallback;
  };
  const int64_t ranks = bounded("ranks", 8, 1, 999'999);  // rank<N>.ugt: six digits at most
  const int64_t steps = bounded("steps", 10, 1, UINT32_MAX);
  const int64_t ops_per_step = bounded("ops-per-step", 10'000, 1, int64_t{1} << 40);
  const int64_t seed = bounded("seed", 1, 0, INT64_MAX);
  const int64_t jobs = bounded("jobs", 0, 0, 4096);
  const int64_t plant_rank = bounded("diverge-rank", -1, 0, ranks - 1);
  const int64_t plant_step = bounded("diverge-step", 0, 0, steps - 1);
  const int64_t plant_op = bounded("diverge-op", 0, 0, ops_per_step - 1);
  if (!error.empty()) return Fail(error);

  synthetic::SyntheticOptions options;
  options.ops = static_cast<uint64_t>(steps * ops_per_step);
  options.steps = static_cast<uint32_t>(steps);
  options.seed = static_cast<uint64_t>(seed);
  options.world_size = static_cast<uint32_t>(ranks);
  synthetic::SyntheticOptions planted = options;
  if (flags.Has("diverge-rank")) {
    StatusOr<synthetic::Plant> plant =
        synthetic::PlantOfFlag(flags.Has("diverge-kind"), flags.Get("diverge-kind"));
    if (!plant.ok()) return Fail(plant.status().message());
    planted.plant = *plant;
    planted.plant_at = static_cast<uint64_t>(plant_step * ops_per_step + plant_op);
  } else if (flags.Has("diverge-step") || flags.Has("diverge-op") || flags.Has("diverge-kind")) {
    return Fail("--diverge-step, --diverge-op and --diverge-kind need --diverge-rank R");
  }

  const std::string dir = flags.Get("out");
  const auto start = std::chrono::steady_clock::now();
  std::vector<synthetic::SyntheticSummary> summaries(static_cast<size_t>(ranks));
  const Status written =
      RunRanks(summaries.size(), static_cast<int>(jobs), [&](size_t rank_idx) -> Status {
        synthetic::SyntheticOptions rank =
            static_cast<int64_t>(rank_idx) == plant_rank ? planted : options;
        rank.rank = static_cast<uint32_t>(rank_idx);
        ASSIGN_OR_RETURN(summaries[rank_idx], synthetic::WriteSyntheticRank(dir, rank));
        return Status::Ok();
      });
  if (!written.ok()) return Fail(written.message());
  if (Status status = synthetic::WriteSyntheticRunMeta(dir, options); !status.ok()) {
    return Fail(status.message());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  uint64_t bytes = 0, ops = 0;
  for (const synthetic::SyntheticSummary& summary : summaries) {
    bytes += summary.bytes;
    ops += summary.ops;
  }
  std::printf(
      "%s: %lld ranks x %lld steps x %lld ops, %llu bytes (%.0f per rank per step, %.1f per op), "
      "%.2f s\n",
      dir.c_str(), static_cast<long long>(ranks), static_cast<long long>(steps),
      static_cast<long long>(ops_per_step), static_cast<unsigned long long>(bytes),
      static_cast<double>(bytes) / static_cast<double>(ranks * steps),
      static_cast<double>(bytes) / static_cast<double>(ops), seconds);
  if (plant_rank >= 0) {
    std::printf(
        "planted rank=%lld %s\n", static_cast<long long>(plant_rank),
        synthetic::PlantedFields(planted.plant, summaries[static_cast<size_t>(plant_rank)].planted)
            .c_str());
  }
  return 0;
}
