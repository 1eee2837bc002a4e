// One rank of a diff (diff.cc), for DiffRuns (diff_runs.cc). Internal to src/diff.
#pragma once

#include "diff/diff.h"

namespace upguard {

// One attempt at a rank: its steps walked in order up to its first numerical divergence. When
// decoding finds damage in an op payload (--allow-damaged) the trace is cut there and the
// attempt stops early: the caller starts the rank over.
StatusOr<RankDiff> DiffRank(const RankTrace& ta, const RankTrace& tb, const DiffOptions& options);

}  // namespace upguard
