// RunRanks: the per-rank work of a multi-rank diff on a bounded pool of threads, with the
// answer a loop over the ranks in order would give.
//
//   std::vector<RankDiff> diffs(a.ranks.size());
//   RETURN_IF_ERROR(RunRanks(diffs.size(), options.jobs, [&](size_t rank_idx) -> Status {
//     ASSIGN_OR_RETURN(diffs[rank_idx], DiffOneRank(rank_idx));
//     return Status::Ok();
//   }));
//
// Ranks are handed out in increasing order to at most `jobs` threads (the caller's thread is
// one of them), so at most `jobs` ranks are being worked on at once: the pool, not the world
// size, bounds what is in memory. Once the work of rank r fails no further rank is started
// (higher ranks already running finish); every rank below r was handed out before r and runs
// to its end, so the error returned is the lowest failing rank's, the one a sequential loop
// would have stopped at. `work` must touch only its rank's state and read shared state only:
// ranks run concurrently.
#pragma once

#include <cstddef>
#include <functional>

#include "upguard/status.h"

namespace upguard {

// The threads RunRanks uses for `jobs` (0: the hardware's concurrency) and `count` ranks: at
// least 1, at most `count`.
size_t RankThreads(int jobs, size_t count);

// Calls work(rank_idx) once for each rank_idx in [0, count) (fewer after a failure, see above)
// on RankThreads(jobs, count) threads; returns the failure of the lowest rank that failed.
// An exception out of `work` (a bug: the core returns Status) is that rank's failure, an
// Internal status, rather than std::terminate in a pool thread.
Status RunRanks(size_t count, int jobs, const std::function<Status(size_t)>& work);

}  // namespace upguard
