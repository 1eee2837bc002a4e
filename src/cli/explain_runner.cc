#include "cli/explain_runner.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "base/file.h"
#include "cli/record_runner.h"
#include "cli/rerun_request.h"
#include "recorder/capture_selector.h"

namespace upguard {
namespace {

struct Recaptured {
  std::string path;
  double seconds = 0;
};

// The op's position among its step's ops outside the input pipeline (RecordedOp::position),
// counted in the decoded step the diff holds; none for an op of the input pipeline itself.
std::optional<uint64_t> PositionOf(const RankDiff& diff, const OpLocation& at) {
  if (at.op == nullptr || at.op->phase == Phase::kInput) return std::nullopt;
  for (const std::shared_ptr<const StepOps>& step : diff.held_steps) {
    const std::vector<OpRecord>& ops = step->ops;
    if (ops.empty() || at.op < ops.data() || at.op >= ops.data() + ops.size()) continue;
    if (static_cast<size_t>(at.op - ops.data()) != at.index) return std::nullopt;
    uint64_t position = 0;
    for (const OpRecord* op = ops.data(); op != at.op; ++op) {
      position += op->phase != Phase::kInput ? 1 : 0;
    }
    return position;
  }
  return std::nullopt;
}

// The one capture of `step` that a re-run wrote into the fresh `dir` (its index is the
// re-run's own), or "" when there is none or more than one.
std::string OnlyCapture(const std::string& dir, int rank, uint32_t step) {
  const std::string prefix = "rank" + std::to_string(rank) + ".step" + std::to_string(step) + ".op";
  std::string found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/captures", error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.size() < 12 ||
        name.compare(name.size() - 12, 12, ".safetensors") != 0) {
      continue;
    }
    if (!found.empty()) return "";
    found = entry.path().string();
  }
  return found;
}

// Re-runs `run` to capture op `at` of `rank`. An op outside the input pipeline is selected by
// its position among those ops (`position=P`), which stays put when a DataLoader's workers
// deliver batches at other times in the re-run; an input op by its index.
constexpr char kPurpose[] = "to capture tensors";

std::string ExplainDir(const Run& run) { return run.dir + "/explain"; }

StatusOr<Recaptured> Recapture(const Run& run, const char* side, const RankDiff& diff,
                               const OpLocation& at, RerunConsent& consent) {
  const uint32_t step = at.step;
  const size_t index = at.index;
  const std::optional<uint64_t> position = PositionOf(diff, at);
  const std::string out_dir = ExplainDir(run);
  ASSIGN_OR_RETURN(RecordRequest request, RerunRequest(run, side, kPurpose, out_dir, consent));
  request.steps = std::to_string(step);
  // Several ranks: only the divergent one captures and stops, wherever the others are then
  // (they fail at their next collective without it, and the launcher ends them).
  request.capture =
      "step=" + std::to_string(step) +
      (run.world_size > 1 ? ",rank=" + std::to_string(diff.rank) : std::string()) +
      (position ? ",position=" + std::to_string(*position) : ",index=" + std::to_string(index)) +
      ",stop";
  request.overwrite = true;  // RUN/explain is upguard's: the last re-run replaces the one before
  // The re-run's messages stay out of the report. They go straight into RUN/explain, not into
  // the staged run, so that they are there to read when the re-run recorded nothing.
  RETURN_IF_ERROR(MakeDirectories(out_dir));
  request.stderr_path = out_dir + "/stderr.txt";
  std::fprintf(stderr, "upguard diff --explain: re-running run %s (%s) to capture step %u #%zu\n",
               side, run.dir.c_str(), step, index);
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(RecordOutcome outcome, RunRecorded(request));
  Recaptured recaptured;
  recaptured.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Without a new run, a capture there is an earlier re-run's.
  if (outcome.recorded) {
    recaptured.path = position ? OnlyCapture(out_dir, diff.rank, step)
                               : CapturePath(out_dir, diff.rank, step, index);
  }
  if (recaptured.path.empty() || !std::filesystem::exists(recaptured.path)) {
    return FailedPrecondition(
        "re-running run " + std::string(side) + "'s command did not reach step " +
        std::to_string(step) + " #" + std::to_string(index) + " (it exited with " +
        std::to_string(outcome.exit_code) + ", no capture in " + out_dir +
        "/captures); the program may not run the same ops each time, or it needs files or an "
        "environment it had when recorded (argv, cwd and env are in " +
        run.dir + "/meta.json); its messages are in " + request.stderr_path);
  }
  return recaptured;
}

}  // namespace

StatusOr<ExplainedDivergence> ExplainDivergence(const Run& a, const Run& b,
                                                const RankDiff& rank_diff,
                                                const std::string& b_capture,
                                                RerunConsent& consent) {
  if (!rank_diff.numeric) {
    return FailedPrecondition(
        "--explain: the runs differ only structurally; there is no "
        "numerical divergence whose tensors could be compared");
  }
  const NumericDivergence& divergence = *rank_diff.numeric;
  ExplainedDivergence explained;
  explained.step_a = divergence.a.step;
  explained.index_a = divergence.a.index;
  explained.step_b = divergence.b.step;
  explained.index_b = divergence.b.index;
  // Both sides asked before either runs: no re-run of A spent when B's is refused.
  RETURN_IF_ERROR(RerunRequest(a, "A", kPurpose, ExplainDir(a), consent).status());
  if (b_capture.empty()) {
    RETURN_IF_ERROR(RerunRequest(b, "B", kPurpose, ExplainDir(b), consent).status());
  }
  ASSIGN_OR_RETURN(Recaptured ra, Recapture(a, "A", rank_diff, divergence.a, consent));
  Recaptured rb{b_capture, 0};
  if (b_capture.empty()) {
    ASSIGN_OR_RETURN(rb, Recapture(b, "B", rank_diff, divergence.b, consent));
  }
  explained.rerun_seconds_a = ra.seconds;
  explained.rerun_seconds_b = rb.seconds;
  explained.b_captured_live = !b_capture.empty();
  ASSIGN_OR_RETURN(explained.explanation,
                   ExplainCaptures(ra.path, rb.path, divergence, a.ranks[rank_diff.rank]));
  return explained;
}

Explainer ReRunExplainer(std::shared_ptr<RerunConsent> consent, const std::string& live_run) {
  return [consent, live_run](const Run& a, const Run& b, const RankDiff& rank) {
    std::string live;
    if (!live_run.empty() && rank.numeric) {
      live = CapturePath(live_run, rank.rank, rank.numeric->b.step, rank.numeric->b.index);
      if (!std::filesystem::exists(live)) live.clear();
    }
    std::fflush(stdout);  // what was printed comes before the re-runs' output
    return ExplainDivergence(a, b, rank, live, *consent);
  };
}

}  // namespace upguard
