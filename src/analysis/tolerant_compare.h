// The diff's tolerance from a policy (capture/tolerance.h): when two tensor records whose
// digests differ still count as the same, judged from their statistics, and how the command
// line's --tolerance, --tolerance-policy and --allow-nondeterministic make one policy.
//
//   ASSIGN_OR_RETURN(TolerancePolicy policy,
//                    PolicyFromOptions("rel:1e-5", "tol.txt", "aten::index_add_*"));
//   DiffOptions options;
//   options.tolerance = std::make_shared<PolicyJudge>(std::move(policy));
//
// Statistics rules (docs/cli.md "Tolerances with statistics only"): the four counts must be
// equal; min and max are element values and pass as an element pair would (ulp:N measures ULPs
// in the tensor's dtype); mean and L2 are derived, so they get the bound that elements passing
// the tolerance imply: with scale = the largest |min| or |max| of both sides, K = finite count,
//   ulp:N        |mean_a - mean_b| <= N * ulp(scale)     |L2_a - L2_b| <= N * eps * max(L2)
//   rel:X,abs:Y  |mean_a - mean_b| <= Y + X * scale      |L2_a - L2_b| <= Y * sqrt(K) + X * max(L2)
// with ulp() and eps (the ULP of 1) at the dtype's precision. Passing is necessary for the
// elements to be within tolerance, not sufficient: statistics cannot see two elements swap.
#pragma once

#include <string>
#include <string_view>

#include "capture/tolerance.h"
#include "diff/tolerance_judge.h"
#include "upguard/status.h"

namespace upguard {

// Whether statistics `a` and `b` of two `dtype` tensors pass `t` (rules above). kBitwise: never
// (the digests differ).
bool StatsWithin(const Tolerance& t, DType dtype, const TensorStats& a, const TensorStats& b);

// ULP distance between two values of a floating dtype (exact for values the dtype holds, as
// min and max are); +0 and -0 are 0 apart. Saturates at UINT64_MAX.
uint64_t UlpDistanceIn(DType dtype, double a, double b);

class PolicyJudge : public ToleranceJudge {
 public:
  explicit PolicyJudge(TolerancePolicy policy) : policy_(std::move(policy)) {}

  // Different dtype or shape: kBeyond. Bitwise tolerance: kBeyond. A side without statistics
  // (recorded with --no-stats, integer and bool tensors): kNoStats. Else StatsWithin.
  Tolerated Judge(const ArgRecord& a, const ArgRecord& b, std::string_view op,
                  std::string_view module, std::string_view phase) const override;
  std::string Describe(std::string_view op, std::string_view module,
                       std::string_view phase) const override;
  bool Nondeterministic(std::string_view op) const override;
  // The rules as a policy file writes them, "; "-separated, "default bitwise" first when no
  // default rule is given: "default rel:1e-05; op aten::mm ulp:4; nondeterministic aten::i*".
  std::string Summary() const override;

 private:
  TolerancePolicy policy_;
};

// The policy of `upguard diff`'s options (an empty text: option not given): `tolerance` is a
// `default` rule ahead of the file's rules (so a `default` line in the file overrides it), the
// file's rules follow in order, and each comma-separated glob of `nondeterministic` adds a
// `nondeterministic` rule. Errors name the option (and the file's line).
StatusOr<TolerancePolicy> PolicyFromOptions(const std::string& tolerance,
                                            const std::string& policy_path,
                                            const std::string& nondeterministic);

}  // namespace upguard
