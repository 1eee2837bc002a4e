// `upguard nan`: the first op of one run that made a NaN or Inf, from the recorded statistics
// alone (every floating tensor argument carries finite/NaN/+Inf/-Inf counts). No reference run.
//
//   ASSIGN_OR_RETURN(Run run, LoadRun("runs/a", LoadOptions{.allow_damaged = true}));
//   ASSIGN_OR_RETURN(NanScan scan, ScanRunForNan(run, /*rank=*/std::nullopt));
//   for (const RankNanScan& rank : scan.ranks) {
//     if (rank.finding) ... rank.finding->at.op ... rank.finding->arg_index ...
//   }
//
// Algorithm, per rank, ops in completion order (a nested op before the op around it, so the
// first op to make a value is the innermost kernel that made it). A tensor argument's
// non-finite kinds (NaN, +Inf, -Inf) come from its statistics; a non-floating tensor holds
// none; a floating tensor without statistics (or an opaque one) is unknown. Scalars, views,
// uninitialized buffers and None are not values here. For each op:
//   1. an input holding a kind that no earlier op's output held entered from outside the
//      recorded ops (data, loaded parameters, an op before the recorded steps): kEntered;
//   2. with every tensor input known, the op "made" the kinds its outputs hold that its inputs
//      did not: any non-finite kind from finite inputs, or NaN from inputs holding only
//      infinities (inf - inf, a softmax over a fully masked row): kProduced.
// What an op made that is exactly the value of one of its scalar arguments
// (`masked_fill(mask, float("-inf"))`, `full(size, inf)`) was written on purpose: a deliberate
// fill, counted and not reported. A finding inside a top-level op (depth > 0) whose top-level
// op outputs only finite values never reached the program (kernel scratch memory, or an
// intermediate the op handles itself): counted as contained, not reported. The first finding
// ends the rank's scan.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diff/diff.h"
#include "run/run_loader.h"
#include "upguard/status.h"

namespace upguard {

// Non-finite kinds of values, as bits of a uint8_t set.
inline constexpr uint8_t kNanKind = 1;
inline constexpr uint8_t kPosInfKind = 2;
inline constexpr uint8_t kNegInfKind = 4;

// The kinds `stats` counts at least one of.
uint8_t NonFiniteKinds(const TensorStats& stats);
// The kinds a scalar argument's text is ("inf", "-inf", "nan"; 0 for anything else).
uint8_t ScalarNonFiniteKinds(std::string_view text);
// "NaN", "+Inf, -Inf", ... ("" for 0).
std::string NonFiniteKindsText(uint8_t kinds);

// Serialized in --json output as strings; values fixed.
enum class NanFindingKind : uint8_t {
  kProduced = 0,  // the op made non-finite values its inputs did not hold
  kEntered = 1,   // an input already held them and no recorded op had produced them
};
std::string_view NanFindingKindName(NanFindingKind kind);  // "produced", "entered"

struct NanFinding {
  NanFindingKind kind = NanFindingKind::kProduced;
  OpLocation at;
  std::vector<OpLocation> enclosing;  // the ops around `at`, nearest first
  // kProduced: the first output holding a kind the op made; kEntered: the first input holding
  // a kind no earlier op's output held.
  size_t arg_index = 0;
  uint8_t kinds = 0;             // kProduced: the kinds made; kEntered: the unexplained kinds
  bool inputs_finite = true;     // kProduced: every tensor input was finite
  std::optional<size_t> scalar;  // kProduced: a non-finite scalar input, the likely reason
};

struct RankNanScan {
  int rank = 0;  // the index of the trace in Run::ranks
  // The decoded steps the OpLocations in this result point into (kept alive with it).
  std::vector<std::shared_ptr<const StepOps>> held_steps;
  uint32_t steps_scanned = 0;
  uint64_t ops_scanned = 0;
  std::optional<uint32_t> first_step;
  std::optional<uint32_t> last_step;
  std::optional<NanFinding> finding;
  uint64_t deliberate_fills = 0;  // ops that made only a non-finite scalar argument's value
  std::optional<OpLocation> first_fill;
  uint64_t contained = 0;          // nested findings their top-level op did not output
  std::vector<std::string> notes;  // damage, a trace that ends early
};

struct NanScan {
  bool found = false;  // some rank has a finding
  std::vector<RankNanScan> ranks;
};

// Scans one rank's trace, indexing it on as needed (any LoadOptions route). Loaded with
// LoadOptions::allow_damaged, a damaged trace's readable prefix is scanned and a note says so.
StatusOr<RankNanScan> ScanRankForNan(const RankTrace& trace);
// Every rank, or only `rank`. FailedPrecondition when the run was recorded with --no-stats;
// InvalidArgument for a rank the run does not have.
StatusOr<NanScan> ScanRunForNan(const Run& run, std::optional<int> rank);

}  // namespace upguard
