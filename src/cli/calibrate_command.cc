// `upguard calibrate -n N -o DIR -- CMD`: records the reference N times and learns its own
// run-to-run noise per op identity (analysis/calibration.h), written as a tolerance policy.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "analysis/calibration.h"
#include "base/file.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "cli/record_runner.h"
#include "upguard/recorder.h"

namespace upguard {

const char kCalibrateUsage[] =
    R"(usage: upguard calibrate -n N -o DIR [--steps A:B] [--max-depth D] [--ops GLOBS] -- COMMAND...

Records COMMAND N times (N >= 3) into DIR/run1 .. DIR/runN, compares every pair of runs op by
op, and learns, per op identity (phase, module, op), the envelope of the reference's own
run-to-run variation: bitwise stable, within k ULP, or noisy (by how much, relative), or
unbounded (dtype, shape or NaN/Inf counts differ). Writes:
  DIR/policy.txt        a tolerance policy (docs/cli.md "Policy files"): `default ulp:64`, then
                        one `at PHASE MODULE OP TOL` rule per identity that varied, its observed
                        need times a margin of 32
  DIR/calibration.json  every envelope (schema upguard.calibration/1)
Three more runs (DIR/elements1..3) capture, in the step where the noise first shows,
the first call of each identity that varied there: how many of their elements differ, and by
how many ULP.
A candidate is then judged against the reference's own noise:
  upguard diff DIR/run1 CANDIDATE --tolerance-policy DIR/policy.txt
and the report separates what is inside that noise (not a finding) from what is outside it.

options:
  -n N              runs of the reference (3 or more; more runs see more of the noise)
  -o DIR            a new directory (refused if it holds a calibration already)
  --steps, --max-depth, --ops   as for `upguard record`; record the candidate the same way

exit codes: 0 calibrated (whether or not anything varied), 2 error (a run failed or recorded
nothing: its messages are in DIR/runK.stderr.txt).

example:
  upguard calibrate -n 3 -o runs/cal -- /usr/bin/python3 examples/gpt_train.py --noisy-sum
)";

namespace {

std::string Quoted(const std::vector<std::string>& command) {
  std::string text;
  for (const std::string& word : command) text += (text.empty() ? "" : " ") + word;
  return text;
}

void PrintSummary(const Calibration& c, const std::string& dir) {
  int ulp = 0, noisy = 0, unbounded = 0, sources = 0;
  for (const OpEnvelope& e : c.envelopes) {
    const std::string kind = EnvelopeClass(e);
    ulp += kind == "ulp";
    noisy += kind == "noisy";
    unbounded += kind == "unbounded";
    sources += e.source;
  }
  std::printf("upguard calibrate: %d runs, %llu op calls compared, %llu op identities\n", c.runs,
              static_cast<unsigned long long>(c.calls),
              static_cast<unsigned long long>(c.identities));
  std::printf("  stable      %llu identities bitwise equal in every run\n",
              static_cast<unsigned long long>(c.identities - c.envelopes.size()));
  std::printf("  within ULP  %d identities\n  noisy       %d identities\n  unbounded   %d\n", ulp,
              noisy, unbounded);
  if (sources > 0) {
    std::printf("  sources of the noise (differ from identical inputs):\n");
    for (const OpEnvelope& e : c.envelopes) {
      if (!e.source) continue;
      std::printf(
          "    %s %s %s, from %s, differed in %d of %d pairs of runs (L2 up to %.3g relative)\n",
          e.phase.c_str(), e.module.empty() ? "-" : e.module.c_str(), e.op.c_str(),
          e.first_seen.c_str(), e.runs_differ, c.pairs, e.max_l2_rel);
    }
  }
  if (!c.envelopes.empty()) {
    const OpEnvelope& first = c.envelopes.front();
    std::printf("  the noise first shows at %s: %s %s %s\n", first.first_seen.c_str(),
                first.phase.c_str(), first.module.empty() ? "-" : first.module.c_str(),
                first.op.c_str());
  }
  for (const std::string& note : c.notes) std::printf("  note: %s\n", note.c_str());
  std::printf("wrote %s/policy.txt (%zu rules) and %s/calibration.json\n", dir.c_str(),
              c.envelopes.size(), dir.c_str());
  std::printf(
      "judge a candidate against this noise:\n  upguard diff %s/run1 CANDIDATE "
      "--tolerance-policy %s/policy.txt\n",
      dir.c_str(), dir.c_str());
}

// Records the command once into DIR/`name` (its messages in DIR/`name`.stderr.txt).
StatusOr<Run> RecordOnce(const RecordRequest& base, const std::string& dir, const std::string& name,
                         const std::string& capture, int64_t k, int64_t of) {
  RecordRequest request = base;
  request.run_dir = dir + "/" + name;
  request.stderr_path = dir + "/" + name + ".stderr.txt";
  if (!capture.empty()) {
    request.capture = capture;
    request.steps = capture.substr(5, capture.find(',') - 5);  // "step=S,...": only step S
  }
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(RecordOutcome outcome, RunRecorded(request));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!outcome.recorded || outcome.exit_code != 0) {
    return FailedPrecondition(name + " of the command exited with " +
                              std::to_string(outcome.exit_code) +
                              (outcome.recorded ? "" : " and recorded nothing") +
                              "; its messages are in " + request.stderr_path);
  }
  std::fprintf(stderr, "upguard calibrate: %s recorded (%.1f s)%s\n", name.c_str(), seconds,
               capture.empty()
                   ? (", run " + std::to_string(k) + " of " + std::to_string(of)).c_str()
                   : ", capturing the ops that varied");
  LoadOptions load;
  load.index_on_demand = true;
  return LoadRun(request.run_dir, load);
}

// Element by element: three more runs capture, in the step where the noise first shows, the
// first call of each identity that varied there; their tensors are compared.
Status MeasureElements(const RecordRequest& base, const std::string& dir, Calibration* c) {
  if (c->envelopes.empty()) return Status::Ok();
  const uint32_t step = c->envelopes[0].first_step;
  const std::string indices = FirstDifferingIndices(*c, step);
  if (indices.empty()) return Status::Ok();
  const std::string capture = "step=" + std::to_string(step) + ",index=" + indices + ",stop";
  // Three runs, every pair compared: two runs of a random order may draw the same one.
  for (const char* name : {"elements1", "elements2", "elements3"}) {
    RETURN_IF_ERROR(RecordOnce(base, dir, name, capture, 0, 0).status());
  }
  for (const auto& [x, y] : {std::pair{1, 2}, std::pair{1, 3}, std::pair{2, 3}}) {
    RETURN_IF_ERROR(AddElementComparison(dir + "/elements" + std::to_string(x),
                                         dir + "/elements" + std::to_string(y), step, c));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<int> RunCalibrateCommand(int argc, char** argv) {
  Flags flags("calibrate", {{"runs", 'n', true},
                            {"out", 'o', true},
                            {"steps", 0, true},
                            {"max-depth", 0, true},
                            {"ops", 0, true}});
  RETURN_IF_ERROR(flags.Parse(argc, argv, 2));
  if (!flags.Has("out")) return InvalidArgument("missing -o DIR (the calibration to write)");
  ASSIGN_OR_RETURN(const int64_t runs, flags.GetInt("runs", 0));
  if (runs < 3 || runs > 1000) {
    return InvalidArgument("-n " + std::to_string(runs) +
                           ": calibration needs 3 runs or more (-n 3): two runs show one "
                           "difference, not its spread");
  }
  if (flags.rest().empty()) {
    return InvalidArgument(
        "missing the command to calibrate after `--`, e.g. "
        "`upguard calibrate -n 3 -o runs/cal -- /usr/bin/python3 train.py`");
  }
  if (!flags.positionals().empty()) {
    return InvalidArgument("unexpected argument '" + flags.positionals()[0] +
                           "'; put the command after `--`");
  }
  const std::string dir = flags.Get("out");
  if (std::filesystem::exists(dir + "/policy.txt") || std::filesystem::exists(dir + "/run1")) {
    return FailedPrecondition(dir +
                              " holds a calibration already; choose another -o DIR "
                              "(upguard deletes nothing it did not create)");
  }
  ASSIGN_OR_RETURN(const int64_t max_depth, flags.GetInt("max-depth", -1));
  if (flags.Has("steps")) RETURN_IF_ERROR(ParseStepRange(flags.Get("steps")).status());
  RETURN_IF_ERROR(MakeDirectories(dir));
  RecordRequest base;
  base.command = flags.rest();
  base.steps = flags.Get("steps");
  base.max_depth = static_cast<int>(max_depth);
  base.ops = flags.Get("ops");
  base.quiet = true;
  std::vector<Run> recorded;
  for (int64_t k = 1; k <= runs; ++k) {
    ASSIGN_OR_RETURN(Run run, RecordOnce(base, dir, "run" + std::to_string(k), "", k, runs));
    recorded.push_back(std::move(run));
  }
  ASSIGN_OR_RETURN(Calibration calibration, Calibrate(recorded));
  RETURN_IF_ERROR(MeasureElements(base, dir, &calibration));
  const std::string about = std::to_string(runs) + " runs of `" + Quoted(flags.rest()) + "`" +
                            (flags.Has("steps") ? ", steps " + flags.Get("steps") : "");
  RETURN_IF_ERROR(WriteFileAtomically(dir + "/policy.txt", PolicyText(calibration, about)));
  RETURN_IF_ERROR(
      WriteFileAtomically(dir + "/calibration.json", CalibrationJson(calibration).dump(2) + "\n"));
  PrintSummary(calibration, dir);
  return kExitOk;
}

}  // namespace upguard
