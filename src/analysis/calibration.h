// `upguard calibrate`: the reference's own run-to-run noise, learned from N recordings of it.
//
// Every pair of the N runs is compared op by op (ops paired by their place in the step; a step
// whose op streams differ is left out with a note: calibration learns numbers, not structure).
// Every tensor slot whose digests differ widens the envelope of its op identity (phase,
// module, op): the smallest statistics tolerance it passes (tolerant_compare.h), as ULP and as
// rel, powers of two apart. An op whose output differed while every tensor input was
// identical is a source of noise (a nondeterministic op); the others carry noise from one.
//
// The policy written from it (PolicyText) is the existing policy format
// (capture/tolerance.h): `default bitwise` (`default ulp:64` once anything varied), then one `at
// PHASE MODULE OP TOLERANCE` rule per identity that differed, its observed need times a margin;
// identities whose difference no statistics tolerance bounds (dtype, shape or NaN/Inf counts
// differ, no statistics) get a `nondeterministic OP` rule. `upguard diff --tolerance-policy` then
// judges a candidate against the reference's own noise.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run/run_loader.h"
#include "upguard/status.h"

namespace upguard {

struct OpEnvelope {
  std::string phase;   // PhaseName
  std::string module;  // "" outside every module
  std::string op;
  uint64_t calls = 0;         // op pairs compared (every step, every run against run 1)
  uint64_t calls_differ = 0;  // of them, with a tensor that differs
  int runs_differ = 0;        // pairs of runs in which it differed at least once
  bool source = false;        // differed once with every tensor input identical
  // The smallest power of two N such that every difference passed ulp:N; 0 when none is
  // within 2^24 ULP (then only need_rel bounds it).
  uint64_t need_ulp = 0;
  double need_rel = 0;     // the same for rel:X (abs 0)
  bool unbounded = false;  // a difference no statistics tolerance covers
  double max_l2_rel = 0;   // the largest |L2_a - L2_b| / max(L2): how much it differed
  // Where it first differed: "step 0 #131".
  std::string first_seen;
  uint32_t first_step = 0;
  uint64_t first_index = 0;
  int first_rank = 0;
  // Element by element, from captures of its first differing call in three more runs
  // (AddElementComparison): the largest fraction of an output's elements that differ, and by
  // how many ULP at most; -1 when not measured (not captured, or another step or rank).
  double element_fraction = -1;
  uint64_t element_max_ulp = 0;
};

struct Calibration {
  int runs = 0;
  int pairs = 0;                      // pairs of runs compared (every pair)
  uint64_t calls = 0;                 // op pairs compared, all identities
  uint64_t identities = 0;            // distinct identities seen
  std::vector<OpEnvelope> envelopes;  // identities that differed, in the order first seen
  std::vector<std::string> notes;     // steps left out, ranks or steps missing
};

// `runs[0]` is the reference every other run is compared with. Fails for fewer than 2 runs or
// runs of different world sizes.
StatusOr<Calibration> Calibrate(const std::vector<Run>& runs);

// How much margin the policy adds on the observed need (N runs do not show the worst case).
inline constexpr uint64_t kCalibrationMargin = 32;
// The default rule of a policy in which something varied: ops that never did get this many ULP
// (a loss that rounds to the same float in three runs may not in a fourth).
inline constexpr uint64_t kCalibrationDefaultUlp = 64;

// The tolerance a calibrated rule gives: ulp:(need*margin) when the need is at most 64 ULP,
// else rel:(need_rel*margin).
std::string EnvelopeTolerance(const OpEnvelope& envelope);
// "stable" is never listed; "ulp", "noisy" (rel) or "unbounded".
std::string EnvelopeClass(const OpEnvelope& envelope);

// The op indices of `step` (rank 0) whose identities first differed there: what to capture
// for AddElementComparison ("12|40|977"); "" when none.
std::string FirstDifferingIndices(const Calibration& calibration, uint32_t step);

// Compares the captures two more runs wrote of those ops (`run_a` and `run_b`, recorded with
// --capture step=S,index=...) element by element, filling element_fraction and
// element_max_ulp of each identity first seen in `step` on rank 0 (the largest over the calls
// for several pairs).
Status AddElementComparison(const std::string& run_a, const std::string& run_b, uint32_t step,
                            Calibration* calibration);

// The policy file. `about` goes into its first line: "# upguard calibrate: <about>".
std::string PolicyText(const Calibration& calibration, const std::string& about);
nlohmann::json CalibrationJson(const Calibration& calibration);

}  // namespace upguard
