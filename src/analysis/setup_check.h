// Setup checks: what the two runs were given before any op computed — random state, data,
// environment — so a seed or a shuffled batch is named as the root cause instead of the first
// op it reached (docs/cli.md, "Setup differences").
//
// The recorder puts the setup into the trace as values the diff already compares: a random
// op's `generator` argument is the generator's state, the pseudo-op `upguard::rng_state` holds
// the CPU generator's state at each step start, and `upguard::batch` holds the tensors entering
// the outermost module. The environment (thread counts, deterministic flags, versions,
// numerics-relevant variables) is in meta.json.
//
//   for (const EnvironmentDifference& d : CompareEnvironment(a.meta, b.meta)) ... d.Text() ...
//   switch (ClassifySetup(*rank.numeric, a.ranks[0])) { case SetupCause::kRng: ... }
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "diff/diff.h"

namespace upguard {

inline constexpr std::string_view kRngStateOp = "upguard::rng_state";
inline constexpr std::string_view kBatchOp = "upguard::batch";

struct EnvironmentDifference {
  std::string key;  // "intra_op_threads", "OMP_NUM_THREADS" (from "env"), ...
  std::string a;    // the value as JSON text, "(unset)" when absent
  std::string b;
  // For a backend flag a run changed after step 0 began: "run B: True at start, False at
  // end"; empty otherwise.
  std::string note;
  // "OMP_NUM_THREADS 1 vs 2", "torch.backends.mkldnn.enabled True vs False (run B: ...)"
  std::string Text() const {
    return key + " " + a + " vs " + b + (note.empty() ? "" : " (" + note + ")");
  }
};

// The numerics-relevant facts of two runs' metadata that differ, in a fixed order: versions,
// thread counts, deterministic flags, world size, backend flags by name, then environment
// variables by name. A backend flag ("backend_flags": read at the end of the run, and
// "backend_flags_at_start": as step 0 began) differs when either reading differs; `a` and `b`
// are the values at the end. When both runs have backend flags, the older top-level
// `deterministic_algorithms` and `cudnn_deterministic` are left to them.
std::vector<EnvironmentDifference> CompareEnvironment(const nlohmann::json& a,
                                                      const nlohmann::json& b);

enum class SetupCause : uint8_t {
  kNone = 0,
  kRng = 1,   // the first difference is a generator state
  kData = 2,  // the first difference is the batch entering the model
};

// What a numeric divergence says about the setup: a propagated divergence whose differing
// input is a random op's generator state (or the step-start state) is kRng; one at
// upguard::batch is kData.
SetupCause ClassifySetup(const NumericDivergence& divergence, const RankTrace& trace);

// Runs the setup checks on a diff: a rank whose first numerical divergence is a setup
// difference gets verdict kRng or kData and its `setup` text (and so does the result, when
// that rank decides it); the environment differences go to result->environment. Then the
// model-state check (state_check.h).
void ApplySetupChecks(const Run& a, const Run& b, DiffResult* result);

}  // namespace upguard
