#include "cli/zoom_runner.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>

#include "analysis/fingerprint_check.h"
#include "base/file.h"
#include "cli/record_runner.h"
#include "cli/rerun_request.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;

// The latest step S in 1..`at` for which RUN/resume/ holds every rank's snapshot
// step-S.rank<R>.pt (python/upguard/_resume.py); -1 when none.
int64_t LatestSnapshot(const Run& run, uint32_t at) {
  std::error_code error;
  fs::directory_iterator it(run.dir + "/resume", error);
  if (error) return -1;
  std::set<std::pair<int64_t, int>> have;
  for (const fs::directory_entry& entry : it) {
    long long step = 0;
    int rank = 0;
    char tail = 0;
    const std::string name = entry.path().filename().string();
    if (std::sscanf(name.c_str(), "step-%lld.rank%d.p%c", &step, &rank, &tail) == 3 &&
        name == "step-" + std::to_string(step) + ".rank" + std::to_string(rank) + ".pt") {
      have.emplace(step, rank);
    }
  }
  int64_t best = -1;
  for (const auto& [step, rank] : have) {
    if (rank != 0 || step < 1 || step > at || step <= best) continue;
    bool all = true;
    for (int r = 1; r < run.world_size && all; ++r) all = have.count({step, r}) > 0;
    if (all) best = step;
  }
  return best;
}

constexpr char kPurpose[] = "to record its divergent step";

std::string ZoomDir(const Run& run) { return run.dir + "/zoom"; }

std::string SnapshotPrefix(const Run& run, int64_t step) {
  return run.dir + "/resume/step-" + std::to_string(step);
}

// What of the zoomed steps `rerun` fails to reproduce of `recorded`, rank by rank; "" if none.
StatusOr<std::string> Departs(const Run& recorded, const Run& rerun, const Zoom& zoom) {
  if (rerun.ranks.size() != recorded.ranks.size()) {
    return std::string("it has " + std::to_string(rerun.ranks.size()) + " ranks, the run " +
                       std::to_string(recorded.ranks.size()));
  }
  for (size_t rank = 0; rank < recorded.ranks.size(); ++rank) {
    for (uint32_t step = zoom.first; step <= zoom.step; ++step) {
      ASSIGN_OR_RETURN(std::string departs,
                       ReRunDeparts(recorded.ranks[rank], rerun.ranks[rank], step));
      if (!departs.empty()) {
        return "at step " + std::to_string(step) +
               (recorded.ranks.size() > 1 ? " on rank " + std::to_string(rank) : "") + ", " +
               departs;
      }
    }
  }
  return std::string();
}

// One re-run of `run` into RUN/zoom, from the snapshot of step `resume_at` (-1: step 0).
// Returns what of the recorded run it failed to reproduce ("" when it did).
StatusOr<std::string> ReRun(const Run& run, const char* side, const Zoom& zoom, int64_t resume_at,
                            RerunConsent& consent, ZoomedRun* out) {
  out->dir = ZoomDir(run);
  out->resumed_at = resume_at;
  out->resumed_from = resume_at < 0 ? "" : SnapshotPrefix(run, resume_at);
  ASSIGN_OR_RETURN(RecordRequest request, RerunRequest(run, side, kPurpose, out->dir, consent));
  request.steps = std::to_string(zoom.first) + ":" + std::to_string(zoom.step + 1);
  request.stop_after_steps = true;
  request.resume_from = out->resumed_from;
  request.overwrite = true;  // RUN/zoom is upguard's: the last re-run replaces the one before
  RETURN_IF_ERROR(MakeDirectories(out->dir));
  request.stderr_path = out->dir + "/stderr.txt";
  std::fprintf(
      stderr, "upguard diff --zoom: re-running run %s (%s), steps %u..%u in full, %s\n", side,
      run.dir.c_str(), zoom.first, zoom.step,
      resume_at < 0 ? "from step 0" : ("resuming at step " + std::to_string(resume_at)).c_str());
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(RecordOutcome outcome, RunRecorded(request));
  out->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!outcome.recorded || outcome.exit_code != 0) {
    return FailedPrecondition(
        "re-running run " + std::string(side) + "'s command to record steps " +
        std::to_string(zoom.first) + ".." + std::to_string(zoom.step) + " failed (it exited with " +
        std::to_string(outcome.exit_code) + (outcome.recorded ? "" : ", no trace") +
        "); it needs the files and environment it had when recorded (argv, cwd and env are in " +
        run.dir + "/meta.json); its messages are in " + request.stderr_path);
  }
  LoadOptions load;
  load.index_on_demand = true;
  ASSIGN_OR_RETURN(Run rerun, LoadRun(out->dir, load));
  return Departs(run, rerun, zoom);
}

StatusOr<ZoomedRun> ZoomSide(const Run& run, const char* side, const Zoom& zoom,
                             RerunConsent& consent) {
  ZoomedRun out;
  const int64_t snapshot = LatestSnapshot(run, zoom.first);
  ASSIGN_OR_RETURN(std::string departs, ReRun(run, side, zoom, snapshot, consent, &out));
  if (!departs.empty() && snapshot >= 0) {
    // The snapshot missed something the steps depend on: from the start, nothing is missed.
    out.retried = "resumed at step " + std::to_string(snapshot) + ", it departed from the run " +
                  departs + " (the snapshot misses something the steps depend on: see " +
                  "docs/long-runs.md)";
    std::fprintf(stderr, "upguard diff --zoom: run %s's re-run %s; re-running from step 0\n", side,
                 out.retried.c_str());
    ASSIGN_OR_RETURN(departs, ReRun(run, side, zoom, -1, consent, &out));
  }
  if (!departs.empty()) {
    return FailedPrecondition("run " + std::string(side) + "'s re-run (" + out.dir +
                              ") does not reproduce it " + departs +
                              ": the program is not deterministic from run to run, so no op of "
                              "the re-run can be trusted to be the run's; see "
                              "docs/long-runs.md");
  }
  return out;
}

}  // namespace

StatusOr<std::optional<Zoom>> ZoomIn(const Run& a, const Run& b, const Conclusion& fingerprints,
                                     RerunConsent& consent) {
  // The first divergent step; of the ranks there, the one the ranks' order names first.
  const RankDiff* first = nullptr;
  const std::optional<int> named = fingerprints.order ? fingerprints.order->first : std::nullopt;
  for (const RankDiff& rank : fingerprints.result.ranks) {
    if (!rank.fingerprint) continue;
    if (first == nullptr || rank.fingerprint->step < first->fingerprint->step ||
        (rank.fingerprint->step == first->fingerprint->step && named == rank.rank)) {
      first = &rank;
    }
  }
  if (first == nullptr) return std::optional<Zoom>();
  Zoom zoom;
  zoom.step = first->fingerprint->step;
  zoom.first = zoom.step == 0 ? 0 : zoom.step - 1;
  zoom.rank = first->rank;
  zoom.fingerprint = first->setup;
  // Both sides asked before either runs: no re-run of A spent when B's is refused.
  RETURN_IF_ERROR(RerunRequest(a, "A", kPurpose, ZoomDir(a), consent).status());
  RETURN_IF_ERROR(RerunRequest(b, "B", kPurpose, ZoomDir(b), consent).status());
  ASSIGN_OR_RETURN(zoom.a, ZoomSide(a, "A", zoom, consent));
  ASSIGN_OR_RETURN(zoom.b, ZoomSide(b, "B", zoom, consent));
  return std::optional<Zoom>(std::move(zoom));
}

namespace {

std::string SideText(const char* side, const ZoomedRun& run) {
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.1f s", run.seconds);
  std::string text = std::string("  run ") + side + ": " +
                     (run.resumed_at < 0 ? "from step 0"
                                         : "resumed at step " + std::to_string(run.resumed_at) +
                                               " (" + run.resumed_from + ")") +
                     ", " + seconds + " -> " + run.dir + "\n";
  if (!run.retried.empty()) text += "    (re-run from step 0: " + run.retried + ")\n";
  return text;
}

nlohmann::json SideJson(const ZoomedRun& run) {
  return {{"dir", run.dir},
          {"resumed_at", run.resumed_at < 0 ? nlohmann::json() : nlohmann::json(run.resumed_at)},
          {"resumed_from", run.resumed_from},
          {"seconds", run.seconds},
          {"retried", run.retried}};
}

}  // namespace

std::string ZoomText(const Zoom& zoom) {
  std::string text = "upguard diff --zoom: the fingerprints first differ at step " +
                     std::to_string(zoom.step) + " (rank " + std::to_string(zoom.rank) +
                     "): " + zoom.fingerprint + "\n";
  text += "re-recorded steps " + std::to_string(zoom.first) + ".." + std::to_string(zoom.step) +
          " of both runs in full:\n";
  text += SideText("A", zoom.a) + SideText("B", zoom.b);
  text += "both re-runs reproduced their runs on these steps (batches and model state)\n\n";
  return text;
}

nlohmann::json ZoomJson(const Zoom& zoom) {
  return {{"step", zoom.step},     {"first", zoom.first},
          {"rank", zoom.rank},     {"fingerprint", zoom.fingerprint},
          {"a", SideJson(zoom.a)}, {"b", SideJson(zoom.b)}};
}

}  // namespace upguard
