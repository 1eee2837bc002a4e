// Tolerances: when two captured tensors that are not bitwise equal still count as the same
// (docs/cli.md "Tolerances"), per element, per comparison, and per op or module from a policy.
//
//   ASSIGN_OR_RETURN(Tolerance t, ParseTolerance("rel:1e-5,abs:1e-7"));
//   bool same = ComparisonWithin(t, comparison);
//
//   ASSIGN_OR_RETURN(TolerancePolicy policy, ParseTolerancePolicy(text, "tolerances.txt"));
//   Tolerance for_op = policy.For("aten::softmax", "blocks.0.attn");
//   bool expected = policy.Nondeterministic("aten::index_add_");
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "capture/element_compare.h"
#include "upguard/status.h"
#include "upguard/tensor.h"

namespace upguard {

struct Tolerance {
  enum class Kind : uint8_t { kBitwise = 0, kUlp = 1, kRel = 2 };
  Kind kind = Kind::kBitwise;
  uint64_t ulp = 0;  // kUlp: ULP distance (integers: |a - b|) at most this
  double rel = 0;    // kRel: |a - b| <= abs + rel * max(|a|, |b|)
  double abs = 0;
  // The text ParseTolerance reads back: "bitwise", "ulp:4", "rel:1e-06", "rel:1e-05,abs:1e-07".
  std::string ToString() const;
};

// "bitwise" | "ulp:N" | "rel:X" | "rel:X,abs:Y" (X, Y finite and >= 0); InvalidArgument
// quoting the text and listing the forms otherwise.
StatusOr<Tolerance> ParseTolerance(std::string_view text);

// One element pair: a and b as values, `ulp` their distance (CompareElements' definition).
// Bitwise equal pairs always pass (under kBitwise only they do); a NaN passes only against a
// NaN; under kRel an infinity passes only against itself.
bool WithinTolerance(const Tolerance& t, DType dtype, double a, double b, uint64_t ulp);

// True when every element pair of the comparison passes WithinTolerance: decided from its
// counts, max_ulp and error_frontier, exactly. False when the tensors are not comparable.
bool ComparisonWithin(const Tolerance& t, const ElementComparison& c);

// Tolerances per op and module, read from a policy file (docs/cli.md "Tolerances"):
//   default rel:1e-6
//   op aten::softmax* ulp:4
//   module blocks.*.attn rel:1e-5,abs:1e-7
//   nondeterministic aten::index_add_*
//   at forward blocks.0.mlp aten::index_add_ ulp:16   # one op identity: phase, module, op
// Globs use '*' and '?' (GlobMatch); for a tolerance the last matching rule wins. In an `at`
// rule the module "-" stands for no module (ops called outside every module).
struct TolerancePolicy {
  struct Rule {
    enum class Kind : uint8_t { kDefault, kOp, kModule, kNondeterministic, kAt };
    Kind kind = Kind::kDefault;
    std::string pattern;  // empty for kDefault; the op glob for kAt
    std::string phase;    // kAt: the phase glob ("forward", "*")
    std::string module;   // kAt: the module glob ("" for "-")
    Tolerance tolerance;  // unused for kNondeterministic
    int line = 0;         // where it was read, 1-based
  };
  std::vector<Rule> rules;  // in file order
  // What `upguard calibrate` wrote in the file's first line ("# upguard calibrate: 3 runs of
  // `...`"); "" for a policy written by hand.
  std::string calibrated;

  // The tolerance of the last default, op, module or at rule that matches; bitwise if none
  // does. `phase` is PhaseName's ("forward"); an `at` rule matches only an op whose phase,
  // module and name its globs match.
  Tolerance For(std::string_view op, std::string_view module, std::string_view phase) const;
  // True when a nondeterministic rule matches the op.
  bool Nondeterministic(std::string_view op) const;
};

// One rule per line; '#' starts a comment; blank lines are fine. Errors are InvalidArgument
// "<path>:<line>: <what>; <hint>".
StatusOr<TolerancePolicy> ParseTolerancePolicy(std::string_view text, std::string_view path);

}  // namespace upguard
