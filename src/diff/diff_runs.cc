// DiffRuns: two runs' ranks paired and diffed on a bounded pool (rank_pool.h), with the checks
// that make two runs incomparable. One rank's walk is DiffRank (diff.cc).
#include <string>
#include <vector>

#include "diff/diff.h"
#include "diff/diff_rank.h"
#include "diff/rank_pool.h"
#include "trace/unread_tally.h"

namespace upguard {
namespace {

std::string ScriptOf(const Run& run) {
  const nlohmann::json& meta = run.Meta();
  const nlohmann::json argv = meta.contains("argv") ? meta["argv"] : nlohmann::json();
  if (!argv.is_array()) return "?";
  for (size_t idx = 1; idx < argv.size(); ++idx) {  // argv[0] is the interpreter
    if (argv[idx].is_string() && argv[idx].get<std::string>().rfind("-", 0) != 0) {
      return argv[idx].get<std::string>();
    }
  }
  return argv.empty() ? "?" : argv[0].dump();
}

// The op count of the first known step numbered `step`.
uint64_t StepOpCount(const RankTrace& trace, uint32_t step) {
  for (const StepInfo& info : trace.steps()) {
    if (info.step == step) return info.op_count;
  }
  return 0;
}

// The first compared step of the two runs has no op in common (or its alignment gave up from the
// first op on): they ran different programs.
bool SharesNoOps(const RankDiff& diff, const RankTrace& ta, const RankTrace& tb) {
  if (!diff.structural || diff.structural->step != *diff.first_step) return false;
  const StructuralDivergence& s = *diff.structural;
  if (s.index_a != 0 || s.index_b != 0) return false;
  return !s.realigned ||
         (s.only_a_count == StepOpCount(ta, s.step) && s.only_b_count == StepOpCount(tb, s.step));
}

// One rank of two runs, with the checks that make two runs incomparable.
StatusOr<RankDiff> DiffRankOfRuns(const Run& a, const Run& b, size_t rank_idx,
                                  const DiffOptions& options) {
  const RankTrace& ta = a.ranks[rank_idx];
  const RankTrace& tb = b.ranks[rank_idx];
  RankDiff diff;
  while (true) {  // again after each cut: every cut shortens a trace, so this ends
    const uint64_t cuts = ta.cuts() + tb.cuts();
    ASSIGN_OR_RETURN(diff, DiffRank(ta, tb, options));
    if (ta.cuts() + tb.cuts() == cuts) break;
  }
  // Reports index runs' ranks and result.ranks by RankDiff::rank: it is the position here.
  diff.rank = static_cast<int>(rank_idx);
  if (diff.steps_compared == 0) {
    std::string why;
    for (const std::string& note : diff.notes) why += (why.empty() ? " (" : "; ") + note;
    return FailedPrecondition("rank " + std::to_string(rank_idx) + ": " + a.dir + " and " + b.dir +
                              " recorded no step in common; record overlapping steps "
                              "(upguard record --steps A:B)" +
                              (why.empty() ? "" : why + ")"));
  }
  if (SharesNoOps(diff, ta, tb)) {
    return FailedPrecondition("the runs appear to record different programs (" + a.dir + ": " +
                              ScriptOf(a) + ", " + b.dir + ": " + ScriptOf(b) +
                              "): their first step compared has no op in common; compare two "
                              "runs of the same training script (inspect each with `upguard "
                              "show`)");
  }
  return diff;
}

}  // namespace

StatusOr<DiffResult> DiffRuns(const Run& a, const Run& b, const DiffOptions& options) {
  if (a.world_size != b.world_size || a.ranks.size() != b.ranks.size()) {
    return FailedPrecondition("the runs have different world sizes (" + a.dir + ": " +
                              std::to_string(a.world_size) + " rank(s), " + b.dir + ": " +
                              std::to_string(b.world_size) +
                              "); compare runs recorded with the same number of ranks");
  }
  DiffResult result;
  if (options.tolerance) result.tolerance = options.tolerance->Summary();
  // Each rank reads only its own two traces (and the shared, read-only runs and options).
  std::vector<RankDiff> diffs(a.ranks.size());
  RETURN_IF_ERROR(RunRanks(diffs.size(), options.jobs, [&](size_t rank_idx) -> Status {
    ASSIGN_OR_RETURN(diffs[rank_idx], DiffRankOfRuns(a, b, rank_idx, options));
    return Status::Ok();
  }));
  // The verdict of the lowest rank that diverged; else unverified if any rank is.
  UnreadTally unread_a;
  UnreadTally unread_b;
  for (RankDiff& diff : diffs) {
    if (!Diverged(result.verdict) && diff.verdict != Verdict::kIdentical) {
      result.verdict = diff.verdict;
    }
    unread_a.Merge(diff.unread_a);
    unread_b.Merge(diff.unread_b);
    result.ranks.push_back(std::move(diff));
  }
  result.unread_a = unread_a.Take();
  result.unread_b = unread_b.Take();
  return result;
}

}  // namespace upguard
