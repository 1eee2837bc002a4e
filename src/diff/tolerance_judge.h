// How the diff walk decides that a tensor whose digests differ in the two runs still counts as
// the same, and which ops may differ at all (DiffOptions::tolerance, docs/cli.md "Tolerances").
// The diff knows only this interface: analysis/tolerant_compare.h implements it from a tolerance
// policy (capture/tolerance.h), a library upguard_diff cannot depend on.
//
//   DiffOptions options;
//   options.tolerance = std::make_shared<PolicyJudge>(policy, "rel:1e-05");
//   Tolerated t = options.tolerance->Judge(a_out, b_out, "aten::mm", "blocks.0.mlp.fc");
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trace/records.h"

namespace upguard {

// A tensor slot judged against its op's tolerance.
enum class Tolerated : uint8_t {
  kNotJudged = 0,  // bitwise equal, not a tensor, or no tolerance given
  kWithin = 1,     // the digests differ, the statistics are within tolerance: counts as equal
  kBeyond = 2,     // the digests differ and the statistics are beyond tolerance
  kNoStats = 3,    // the digests differ and a side has no statistics: only bitwise passes
};

inline std::string_view ToleratedName(Tolerated tolerated) {
  switch (tolerated) {
    case Tolerated::kNotJudged:
      return "not_judged";
    case Tolerated::kWithin:
      return "within";
    case Tolerated::kBeyond:
      return "beyond";
    case Tolerated::kNoStats:
      return "no_stats";
  }
  return "not_judged";
}

class ToleranceJudge {
 public:
  virtual ~ToleranceJudge() = default;
  // Two tensor records whose digests differ, of op `op` (module path `module`, phase `phase`
  // as PhaseName writes it).
  virtual Tolerated Judge(const ArgRecord& a, const ArgRecord& b, std::string_view op,
                          std::string_view module, std::string_view phase) const = 0;
  // The tolerance the op gets, as text: "rel:1e-05", "bitwise".
  virtual std::string Describe(std::string_view op, std::string_view module,
                               std::string_view phase) const = 0;
  // Ops known to be nondeterministic: a divergence of their own is listed, not the verdict.
  virtual bool Nondeterministic(std::string_view op) const = 0;
  // One line for the report's header: "default rel:1e-05, 2 rules from tol.txt, ...".
  virtual std::string Summary() const = 0;
};

}  // namespace upguard
