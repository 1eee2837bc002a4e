// upguard_diff_benchmark: times the multi-rank diff with a given pool size, without the CLI
// (bench/multirank_diff.py runs it on runs from upguard_synth_run and prints the table).
//
//   upguard_diff_benchmark RUN_A RUN_B [--jobs J] [--per-rank]
//
// Loads both runs as `upguard diff` does (mapped, indexed as the diff walks), diffs them with
// DiffOptions::jobs = J (default 1) and prints one JSON object:
//
//   {"ranks": 64, "jobs": 2, "threads": 2, "load_s": 0.01, "diff_s": 1.2, "diff_cpu_s": 2.3,
//    "verdict": "culprit", "divergent_ranks": [37], "steps_compared": 1280,
//    "steps_identical": 1279, "rss_after_load_kib": 9000, "peak_rss_kib": 60000}
//
// With --per-rank each rank is diffed on its own, one after another (its two traces as a
// one-rank run, on the calling thread), and "rank_s" lists each rank's diff time. Exit codes:
// 0 ok, 1 error.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/flags.h"
#include "diff/diff.h"
#include "diff/rank_pool.h"

namespace upguard {
namespace {

constexpr const char* kUsage =
    "usage: upguard_diff_benchmark RUN_A RUN_B [--jobs J] [--per-rank]\n";

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Usage {
  double cpu_s = 0;
  long max_rss_kib = 0;
};

Usage SelfUsage() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return Usage{seconds(usage.ru_utime) + seconds(usage.ru_stime), usage.ru_maxrss};
}

// Rank `rank_idx` of `run` as a run of its own.
Run OneRank(const Run& run, size_t rank_idx) {
  Run one;
  one.dir = run.dir;
  one.meta = run.meta;
  one.world_size = 1;
  one.ranks = {run.ranks[rank_idx]};
  return one;
}

Status Main(int argc, char** argv) {
  Flags flags("upguard_diff_benchmark", {{"jobs", 'j', true}, {"per-rank", 0, false}});
  RETURN_IF_ERROR(flags.Parse(argc, argv, 1));
  if (flags.positionals().size() != 2) return InvalidArgument(std::string("two runs\n") + kUsage);
  ASSIGN_OR_RETURN(const int64_t jobs, flags.GetInt("jobs", 1));
  if (jobs < 0 || jobs > 4096) return InvalidArgument("--jobs must be in 0..4096");

  LoadOptions load;
  load.index_on_demand = true;
  const auto load_start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(Run a, LoadRun(flags.positionals()[0], load));
  ASSIGN_OR_RETURN(Run b, LoadRun(flags.positionals()[1], load));
  const double load_s = Seconds(load_start);
  const Usage loaded = SelfUsage();

  DiffOptions options;
  options.jobs = static_cast<int>(jobs);
  nlohmann::json out = {{"ranks", a.ranks.size()},
                        {"jobs", jobs},
                        {"threads", RankThreads(options.jobs, a.ranks.size())},
                        {"load_s", load_s},
                        {"rss_after_load_kib", loaded.max_rss_kib}};
  std::vector<DiffResult> results;
  std::vector<double> rank_s;
  const auto diff_start = std::chrono::steady_clock::now();
  if (flags.Has("per-rank")) {
    for (size_t rank_idx = 0; rank_idx < a.ranks.size(); ++rank_idx) {
      const auto rank_start = std::chrono::steady_clock::now();
      ASSIGN_OR_RETURN(DiffResult one,
                       DiffRuns(OneRank(a, rank_idx), OneRank(b, rank_idx), options));
      rank_s.push_back(Seconds(rank_start));
      results.push_back(std::move(one));
    }
  } else {
    ASSIGN_OR_RETURN(DiffResult all, DiffRuns(a, b, options));
    results.push_back(std::move(all));
  }
  out["diff_s"] = Seconds(diff_start);
  const Usage done = SelfUsage();
  out["diff_cpu_s"] = done.cpu_s - loaded.cpu_s;
  out["peak_rss_kib"] = done.max_rss_kib;

  Verdict verdict = Verdict::kIdentical;
  nlohmann::json divergent = nlohmann::json::array();
  uint64_t steps_compared = 0, steps_identical = 0;
  size_t rank_idx = 0;
  for (const DiffResult& result : results) {
    if (verdict == Verdict::kIdentical) verdict = result.verdict;
    for (const RankDiff& rank : result.ranks) {
      if (rank.verdict != Verdict::kIdentical) divergent.push_back(rank_idx);
      steps_compared += rank.steps_compared;
      steps_identical += rank.steps_identical;
      ++rank_idx;
    }
  }
  out["verdict"] = VerdictName(verdict);
  out["divergent_ranks"] = divergent;
  out["steps_compared"] = steps_compared;
  out["steps_identical"] = steps_identical;
  if (!rank_s.empty()) out["rank_s"] = rank_s;
  std::printf("%s\n", out.dump().c_str());
  return Status::Ok();
}

}  // namespace
}  // namespace upguard

int main(int argc, char** argv) {
  const upguard::Status status = upguard::Main(argc, argv);
  if (status.ok()) return 0;
  std::cerr << "upguard_diff_benchmark: " << status.message() << "\n";
  return 1;
}
