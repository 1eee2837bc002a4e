// `upguard demo`: the main job on a built-in example. Trains the small GPT in examples/ twice,
// a reference and a candidate with one realistic change, records both and diffs them.
#include <chrono>
#include <cstdio>

#include "analysis/conclude.h"
#include "cli/command.h"
#include "cli/diff_exit.h"
#include "cli/diff_html_writer.h"
#include "cli/explain_runner.h"
#include "cli/flags.h"
#include "cli/paths.h"
#include "cli/record_runner.h"
#include "report/conclusion_report.h"
#include "report/explain_report.h"
#include "report/term_color.h"

namespace upguard {

const char kDemoUsage[] = R"(usage: upguard demo [--out DIR] [--plant CHANGE] [--steps N]

Trains a 2-layer character-level GPT (examples/gpt_train.py, AdamW) twice: a reference run
and a candidate with one planted change, records both with upguard and prints the diff.

options:
  --out DIR        where the two runs go (default runs/demo: DIR/reference, DIR/candidate)
  --plant CHANGE   the candidate's change (default gelu-tanh: the tanh approximation of GELU
                   in blocks.1.mlp from step 2); see examples/gpt_train.py --help for others
  --steps N        training steps per run (default 4)

exit code: 1 when the diff finds the divergence (as it should), 0 if the runs match, 2 error.
)";

StatusOr<int> RunDemoCommand(int argc, char** argv) {
  Flags flags("demo", {{"out", 'o', true}, {"plant", 0, true}, {"steps", 0, true}});
  RETURN_IF_ERROR(flags.Parse(argc, argv, 2));
  const std::string out = flags.Get("out", "runs/demo");
  const std::string plant = flags.Get("plant", "gelu-tanh");
  ASSIGN_OR_RETURN(int64_t steps, flags.GetInt("steps", 4));
  if (steps < 1) return InvalidArgument("--steps must be at least 1");
  const std::string script = ExamplesDir() + "/gpt_train.py";
  const auto started = std::chrono::steady_clock::now();

  std::printf("upguard demo: training a 2-layer character GPT twice (%lld steps, AdamW)\n",
              static_cast<long long>(steps));
  std::printf("  reference: %s\n  candidate: the same, with --plant %s\n\n", script.c_str(),
              plant.c_str());
  for (const auto& [name, extra] : {std::pair<std::string, std::string>{"reference", "none"},
                                    std::pair<std::string, std::string>{"candidate", plant}}) {
    RecordRequest request;
    request.run_dir = out + "/" + name;
    request.overwrite = true;  // the demo's own directories, replaced on every run
    request.command = {PythonInterpreter(),   script,    "--steps",
                       std::to_string(steps), "--plant", extra};
    request.quiet = true;
    const auto run_started = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(RecordOutcome outcome, RunRecorded(request));
    if (outcome.exit_code != 0) {
      return Internal("the " + name + " training run failed with exit code " +
                      std::to_string(outcome.exit_code) + "; run it by hand to see why: " +
                      PythonInterpreter() + " " + script + " --plant " + extra);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - run_started).count();
    std::printf("  recorded %-9s -> %s  (%.1f s, %.1f MiB)\n", name.c_str(),
                request.run_dir.c_str(), seconds, outcome.trace_bytes / 1048576.0);
  }

  ASSIGN_OR_RETURN(Run a, LoadRun(out + "/reference", LoadOptions{}));
  ASSIGN_OR_RETURN(Run b, LoadRun(out + "/candidate", LoadOptions{}));
  ConcludeOptions options;
  ASSIGN_OR_RETURN(Conclusion conclusion, ConcludeDiff(a, b, options));
  std::string text = RenderConclusionText(conclusion, a, b);
  if (ColorWanted(stdout)) text = ColorizeDiffText(text);
  std::printf("\n%s", text.c_str());
  // How the culprit's values differ: both runs re-run up to it, its tensors captured. The
  // report above is printed first: the re-runs take a while.
  // The demo recorded both runs just now, with its own command: they are trusted as such.
  ASSIGN_OR_RETURN(std::shared_ptr<RerunConsent> consent,
                   RerunConsent::Make({out + "/reference", out + "/candidate"}, false));
  options.explain = ReRunExplainer(consent);
  RETURN_IF_ERROR(ExplainConclusion(a, b, options, &conclusion));
  if (conclusion.explained) std::printf("%s", RenderExplainText(*conclusion.explained).c_str());
  const std::string page = out + "/report.html";
  ASSIGN_OR_RETURN(nlohmann::json model, DiffPageModel(conclusion, a, b));
  RETURN_IF_ERROR(WriteDiffHtml(model, page));
  std::printf("\nthe report as a page (open it in a browser; it works offline): %s\n",
              page.c_str());
  const DiffResult& result = conclusion.result;
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("\ndemo finished in %.1f s.\n\n", total);
  std::printf(
      "what to try next:\n"
      "  the ops of the divergent step:\n    %s show %s/candidate --step %u --max-depth 0\n"
      "  the same result for scripts:\n    %s diff %s/reference %s/candidate --json\n"
      "  the element-level explanation again (re-runs both):\n"
      "    %s diff %s/reference %s/candidate --explain\n"
      "  other planted changes (backward, optimizer, data, structural):\n"
      "    %s demo --plant backward-scale | adamw-eps | data-shift | extra-op\n"
      "  your own training, twice, then diff:\n"
      "    %s record -o runs/mine -- %s your_train.py\n",
      argv[0], out.c_str(),
      result.ranks.empty() || !result.ranks[0].numeric ? 0u : result.ranks[0].numeric->a.step,
      argv[0], out.c_str(), out.c_str(), argv[0], out.c_str(), out.c_str(), argv[0], argv[0],
      PythonInterpreter().c_str());
  return DiffExitCode(result.verdict);
}

}  // namespace upguard
