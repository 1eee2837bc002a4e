// The diff report's per-op block (used by diff_text.cc): an op pair with its inputs and outputs
// side by side — digests, magnitudes from statistics, the model's names of its tensors — and
// the reason of its verdict (culprit, propagated, latent), or the model state that differs.
#pragma once

#include <sstream>
#include <string>

#include "diff/diff.h"

namespace upguard::diff_text {

struct Ctx {
  const Run& a;
  const Run& b;
  const RankTrace& ta;
  const RankTrace& tb;
  std::ostringstream& out;
  // The policy is a calibrated one (upguard calibrate): "within tolerance" is "inside the
  // reference's own noise", and a divergence is outside it.
  bool calibrated = false;
};

// "L2 3.4 vs 3.6 (4.5%), mean ..., max ..." — how much a slot differs, from its statistics;
// empty without statistics.
std::string Magnitude(const ArgRecord& a, const ArgRecord& b);

// A numerical divergence (culprit, propagated or latent): header, slots, verdict line.
void Numeric(const Ctx& ctx, const NumericDivergence& numeric);

// Verdict state: the model's tensors that differ as the step ends, and where they came from.
void State(const Ctx& ctx, const RankDiff& diff);
// A first divergence in a fingerprint step (record --fingerprint): what differs there, and how
// to record the step in full.
void Fingerprint(const Ctx& ctx, const RankDiff& diff);

}  // namespace upguard::diff_text
