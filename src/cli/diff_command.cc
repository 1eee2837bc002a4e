// `upguard diff A B`: the first op where two runs part ways, with the verdict.
#include <cstdio>
#include <string>

#include "analysis/conclude.h"
#include "analysis/tolerant_compare.h"
#include "cli/command.h"
#include "cli/diff_exit.h"
#include "cli/diff_html_writer.h"
#include "cli/explain_runner.h"
#include "cli/flags.h"
#include "cli/progress_line.h"
#include "cli/zoom_runner.h"
#include "report/conclusion_report.h"
#include "report/term_color.h"

namespace upguard {

const char kDiffUsage[] =
    R"(usage: upguard diff RUN_A RUN_B [--json [--spread]] [--html FILE] [--allow-damaged]
                    [--explain] [--zoom] [--trust-run DIR]...
                    [--tolerance SPEC] [--tolerance-policy FILE] [--allow-nondeterministic GLOBS]

Compares two run directories written by `upguard record` and names the first operator where
they part ways: its step, phase, module path and call site, every input and output (bitwise
identical or not, with the magnitude of the difference), and the verdict:
  culprit     every tensor input identical, an output differs: this op computed differently
  propagated  an input already differed; says which earlier op produced it
  structural  the runs executed different ops (only one run ran them); they are listed,
              grouped by module, and the verdict when no numerical divergence comes first
  identical   no divergence in the recorded steps
Steps with equal step digests are skipped. In other steps the ops are paired in place when
both runs ran the same op names in order, otherwise by aligning the two op streams on op
identity (phase, module, op, depth, enclosing op): a longest common subsequence, anchored on
identities unique to both sides. Ops left over are the structural differences.

options:
  --json            print the result as JSON (schema upguard.diff/1, see docs/cli.md)
  --spread          with --json: add each rank's "spread" (every op of the first divergent
                    step with the size of its difference, and each step compared)
  --html FILE       also write the report as one self-contained page (no network needed):
                    the verdict, how the divergence spread through its step and the steps
                    before it, the module tree, the elements (--explain), setup checks,
                    structural differences and the ranks; drawn from the --json model
  --allow-damaged   compare the readable part of a damaged or truncated trace
  --explain         re-run both recorded commands up to the first divergent op, capture its
                    tensors (RUN/explain/captures/) and compare them element by element: how
                    many elements differ, by how many ULP, where, and whether inputs are equal
  --zoom            for fingerprint runs (record --fingerprint): re-run both recorded commands
                    recording the first divergent step and the one before it in full (from
                    the latest upguard.resume_point snapshot before them, if any; into
                    RUN/zoom), check that each re-run reproduced its run there, and report
                    the first divergent op of the re-runs
  --trust-run DIR   let --explain and --zoom re-run DIR's recorded command although DIR is
                    not known to be yours (recorded by another user id, on another host, in
                    a directory that no longer resolves to where it was, or by an upguard
                    that did not record who and where); give it once per run. Without it such
                    a run's command, cwd and environment are printed and the diff refuses
                    (exit 4), or asks when stdin and stderr are a terminal. A re-run sets
                    only the numerics variables of the run's environment, never a loader or
                    path variable
  --tolerance SPEC  bitwise (default) | ulp:N | rel:X[,abs:Y]: tensors whose digests differ
                    count as equal when their statistics (min, max, mean, L2, counts) pass;
                    with --explain, when their captured elements do
  --tolerance-policy FILE
                    per-op and per-module tolerances and nondeterministic ops, one rule a line
                    (`default T`, `op GLOB T`, `module GLOB T`, `nondeterministic GLOB`); its
                    rules come after --tolerance, the last match wins
  --allow-nondeterministic GLOBS
                    comma-separated op-name globs of ops known to be nondeterministic: their
                    differences, and what follows from them, are listed, not the verdict
  --jobs N          ranks diffed at once, one thread each (default: the CPU count); the
                    result does not depend on it, memory grows with it

Several ranks: each rank's first divergence is found, then they are ordered through the
collectives that carried differences between ranks: the origin rank and op, the path
(origin -> collective #k in group G -> receiving ranks), or a collective that computed
differently from identical inputs. The verdict and --explain are the origin's.

exit codes: 0 identical (within tolerance), 1 diverged, 2 error, 4 refused to re-run a
recorded command without consent (--explain, --zoom: see --trust-run).

examples:
  upguard diff runs/a runs/b
  upguard diff runs/a runs/b --html report.html
  upguard diff runs/fp_a runs/fp_b --zoom
  upguard diff runs/a runs/b --tolerance rel:1e-5 --allow-nondeterministic 'aten::index_add_*'
)";

StatusOr<int> RunDiffCommand(int argc, char** argv) {
  Flags flags("diff", {{"json", 0, false},
                       {"spread", 0, false},
                       {"html", 0, true},
                       {"allow-damaged", 0, false},
                       {"explain", 0, false},
                       {"zoom", 0, false},
                       {"trust-run", 0, true},
                       {"tolerance", 0, true},
                       {"tolerance-policy", 0, true},
                       {"allow-nondeterministic", 0, true},
                       {"jobs", 0, true}});
  RETURN_IF_ERROR(flags.Parse(argc, argv, 2));
  if (flags.positionals().size() != 2) {
    return InvalidArgument("expects two run directories: upguard diff RUN_A RUN_B");
  }
  if (flags.Has("spread") && !flags.Has("json")) {
    return InvalidArgument("--spread adds to the JSON report: use it with --json");
  }
  for (const char* option : {"tolerance", "tolerance-policy", "allow-nondeterministic", "html"}) {
    if (flags.Has(option) && flags.Get(option).empty()) {
      return InvalidArgument("--" + std::string(option) +
                             " needs a value; see upguard diff --help");
    }
  }
  ConcludeOptions options;
  ASSIGN_OR_RETURN(const int64_t jobs, flags.GetInt("jobs", 0));
  if (jobs < 0 || jobs > 4096) {
    return InvalidArgument("--jobs " + std::to_string(jobs) +
                           ": expects a count of threads from 1 to 4096 (0: the CPU count)");
  }
  options.diff.jobs = static_cast<int>(jobs);
  if (flags.Has("tolerance") || flags.Has("tolerance-policy") ||
      flags.Has("allow-nondeterministic")) {
    ASSIGN_OR_RETURN(options.policy,
                     PolicyFromOptions(flags.Get("tolerance"), flags.Get("tolerance-policy"),
                                       flags.Get("allow-nondeterministic")));
  }
  if (flags.Has("trust-run") && !flags.Has("explain") && !flags.Has("zoom")) {
    return InvalidArgument(
        "--trust-run DIR lets --explain or --zoom re-run DIR's command: use it "
        "with one of them");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<RerunConsent> consent,
                   RerunConsent::Make(flags.GetAll("trust-run")));
  if (flags.Has("explain")) options.explain = ReRunExplainer(consent);
  LoadOptions load;
  load.allow_damaged = flags.Has("allow-damaged");
  load.index_on_demand = true;  // DiffRuns indexes each step as it compares it
  ASSIGN_OR_RETURN(Run a, LoadRun(flags.positionals()[0], load));
  ASSIGN_OR_RETURN(Run b, LoadRun(flags.positionals()[1], load));
  std::optional<Zoom> zoom;
  if (flags.Has("zoom")) {
    ConcludeOptions fingerprint_options = options;
    fingerprint_options.explain = nullptr;  // the re-runs are explained, not the fingerprints
    ASSIGN_OR_RETURN(Conclusion fingerprints, ConcludeDiff(a, b, fingerprint_options));
    ASSIGN_OR_RETURN(zoom, ZoomIn(a, b, fingerprints, *consent));
    if (zoom) {
      ASSIGN_OR_RETURN(a, LoadRun(zoom->a.dir, load));
      ASSIGN_OR_RETURN(b, LoadRun(zoom->b.dir, load));
    } else if (!flags.Has("json")) {
      std::printf(
          "upguard diff --zoom: no rank's first divergence lies in a fingerprint step: "
          "nothing to re-record\n\n");
    }
  }
  ProgressLine progress("upguard diff");
  options.diff.progress = progress.Callback();
  ASSIGN_OR_RETURN(Conclusion conclusion, ConcludeDiff(a, b, options));
  progress.Done();
  if (flags.Has("html") || flags.Has("spread")) {
    ASSIGN_OR_RETURN(nlohmann::json model, DiffPageModel(conclusion, a, b));
    if (flags.Has("zoom")) model["zoom"] = zoom ? ZoomJson(*zoom) : nlohmann::json();
    if (flags.Has("html")) {
      RETURN_IF_ERROR(WriteDiffHtml(model, flags.Get("html")));
      std::fprintf(stderr, "upguard diff: wrote %s\n", flags.Get("html").c_str());
    }
    if (flags.Has("spread")) {
      std::printf("%s\n", model.dump(2).c_str());
      return DiffExitCode(conclusion.result.verdict);
    }
  }
  if (flags.Has("json")) {
    nlohmann::json json = ConclusionToJson(conclusion, a, b);
    if (flags.Has("zoom")) json["zoom"] = zoom ? ZoomJson(*zoom) : nlohmann::json();
    std::printf("%s\n", json.dump(2).c_str());
  } else {
    if (zoom) std::printf("%s", ZoomText(*zoom).c_str());
    std::string text = RenderConclusionText(conclusion, a, b);
    if (ColorWanted(stdout)) text = ColorizeDiffText(text);
    std::printf("%s", text.c_str());
  }
  return DiffExitCode(conclusion.result.verdict);
}

}  // namespace upguard
