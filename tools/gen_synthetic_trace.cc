// upguard_gen_synthetic_trace: writes a synthetic GPT-like run directory for benchmarks and tests
// (tools/synthetic_trace.h).
//
//   upguard_gen_synthetic_trace /tmp/a --ops 10000000 --steps 1000
//   upguard_gen_synthetic_trace /tmp/b --ops 10000000 --steps 1000 --diverge-at 5000000
//   upguard diff /tmp/a /tmp/b
//
// Prints one line on what it wrote and, with --diverge-at, one `planted ...` line naming the op
// the diff should report. Exit codes: 0 ok, 1 error.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/flags.h"
#include "tools/synthetic_trace.h"

namespace {

constexpr const char* kUsage =
    "usage: upguard_gen_synthetic_trace OUT_DIR [--ops N] [--steps S] [--seed X]\n"
    "           [--diverge-at K [--diverge-kind culprit|argument|structural]]\n"
    "           [--no-stats] [--no-step-ends] [--no-end] [--shift-ids]\n"
    "Writes OUT_DIR/meta.json and OUT_DIR/rank0.ugt: N ops (default 1000000) of a GPT-like\n"
    "training run over S steps (default 100), deterministic from the seed (default 1).\n"
    "  --diverge-at K     plant a change at op K (or the first op after it that can take it):\n"
    "                     culprit (default) an output computes differently; argument a\n"
    "                     non-tensor argument differs; structural an extra op runs there.\n"
    "                     Later ops that consume the changed value differ too.\n"
    "  --no-stats         no tensor statistics\n"
    "  --no-step-ends     no StepEnd records: a diff must read every op\n"
    "  --no-end           no End record, as if the process died\n"
    "  --shift-ids        every string id one higher: no op record is byte-identical to an\n"
    "                     unshifted run's, so a diff must decode every op it compares\n";

int Fail(const std::string& message) {
  std::cerr << "upguard_gen_synthetic_trace: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace upguard;
  Flags flags("upguard_gen_synthetic_trace", {{"ops", 0, true},
                                              {"steps", 0, true},
                                              {"seed", 0, true},
                                              {"diverge-at", 0, true},
                                              {"diverge-kind", 0, true},
                                              {"no-stats", 0, false},
                                              {"no-step-ends", 0, false},
                                              {"no-end", 0, false},
                                              {"shift-ids", 0, false},
                                              {"help", 'h', false}});
  if (Status status = flags.Parse(argc, argv, 1); !status.ok()) {
    return Fail(status.message() + "\n" + kUsage);
  }
  if (flags.Has("help")) {
    std::cout << kUsage;
    return 0;
  }
  if (flags.positionals().size() != 1) return Fail(std::string("expects OUT_DIR\n") + kUsage);
  synthetic::SyntheticOptions options;
  for (auto [name, target] : {std::pair<const char*, uint64_t*>{"ops", &options.ops},
                              {"seed", &options.seed},
                              {"diverge-at", &options.plant_at}}) {
    StatusOr<int64_t> value = flags.GetInt(name, static_cast<int64_t>(*target));
    if (!value.ok()) return Fail(value.status().message());
    if (*value < 0) return Fail(std::string("--") + name + " must not be negative");
    *target = static_cast<uint64_t>(*value);
  }
  StatusOr<int64_t> steps = flags.GetInt("steps", options.steps);
  if (!steps.ok()) return Fail(steps.status().message());
  if (*steps < 1 || *steps > UINT32_MAX) return Fail("--steps must be in 1..2^32-1");
  options.steps = static_cast<uint32_t>(*steps);
  options.stats = !flags.Has("no-stats");
  options.step_ends = !flags.Has("no-step-ends");
  options.end_record = !flags.Has("no-end");
  options.shift_ids = flags.Has("shift-ids");
  if (flags.Has("diverge-at")) {
    StatusOr<synthetic::Plant> plant =
        synthetic::PlantOfFlag(flags.Has("diverge-kind"), flags.Get("diverge-kind"));
    if (!plant.ok()) return Fail(plant.status().message());
    options.plant = *plant;
  } else if (flags.Has("diverge-kind")) {
    return Fail("--diverge-kind needs --diverge-at K");
  }

  const auto start = std::chrono::steady_clock::now();
  StatusOr<synthetic::SyntheticSummary> summary =
      synthetic::WriteSyntheticRun(flags.positionals()[0], options);
  if (!summary.ok()) return Fail(summary.status().message());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%s: %llu ops in %u steps (%llu-op model per step), %llu bytes, %.2f s, %.1f M ops/s\n",
      flags.positionals()[0].c_str(), static_cast<unsigned long long>(summary->ops), summary->steps,
      static_cast<unsigned long long>(summary->ops_per_template),
      static_cast<unsigned long long>(summary->bytes), seconds,
      static_cast<double>(summary->ops) / seconds / 1e6);
  if (summary->planted.planted) {
    std::printf("planted %s\n", synthetic::PlantedFields(options.plant, summary->planted).c_str());
  }
  return 0;
}
