// `upguard record -o DIR -- CMD...`: runs an unmodified training command with recording armed.
//
// The command runs as a child process with UPGUARD_RECORD_* in its environment and upguard's
// bootstrap directory first on PYTHONPATH; the bootstrap sitecustomize starts recording when
// the program imports torch (python/upguard/_autostart.py). The exit code is the command's.
#include <chrono>
#include <cstdio>

#include "cli/command.h"
#include "cli/flags.h"
#include "cli/online_runner.h"
#include "cli/record_runner.h"
#include "cli/rerun_request.h"
#include "recorder/capture_selector.h"
#include "run/run_loader.h"
#include "rundir/job.h"
#include "upguard/recorder.h"

namespace upguard {

const char kRecordUsage[] = R"(usage: upguard record -o DIR [options] -- COMMAND [ARGS...]

Runs COMMAND, a Python program that uses PyTorch, and records a digest of every operator's
inputs and outputs into the run directory DIR (meta.json and rank<N>.ugt). No code change:
recording starts when the program imports torch and stops when it exits. Steps end at each
optimizer.step() unless the program calls upguard.step(). The run is recorded into
DIR/.upguard-record-<pid> and moved into DIR only when the command has ended and left a
trace: a command that records nothing leaves DIR as it was. One recording writes into DIR at
a time (DIR/.upguard-lock): a second is refused, naming the first's pid and host.

options:
  -o, --out DIR      the run directory to write (required). A DIR that already holds a run
                     (rank<N>.ugt, meta.json) is refused unless --overwrite; other files in DIR
                     are kept
  --overwrite        replace the run DIR holds, once the new one is complete: removes only
                     the files upguard wrote there (rank<N>.ugt, meta.json, online*.json, its
                     captures/ and explain/, watch/ and alerts.jsonl) and interrupted
                     recordings (see `upguard recover`)
  --job ID           this is one host of a job whose hosts all record into DIR: every host's
                     `upguard record` names the same ID, each writes its ranks, and the last
                     to end moves the run into DIR (default under Slurm: the job step,
                     SLURM_JOB_ID.SLURM_STEP_ID; else none: a second recording is refused)
  --steps RANGE      record only steps A..B-1 ("A:B"), step N ("N"), "A:" or ":B"
  --fingerprint      record a fingerprint of every step instead of its ops (the loss, the
                     batch, the random state, every gradient, parameter and optimizer state
                     tensor after the step): a few KB a step, so it can stay on for the whole
                     run; with --steps, the steps outside RANGE are fingerprinted and those in
                     it recorded in full. `upguard diff` names the first divergent step
  --max-depth N      record ops nested at most N deep; 0 = only ops called from user code
                     (default: every nested op, which pins a culprit inside composite ops)
  --ops GLOBS        record only ops whose names match one of these comma-separated globs
  --no-stats         record digests without min/max/mean/L2 statistics
  --hash-threads N   digest tensors of 256 KiB or more on N threads of upguard's while the
                     training goes on; an op that writes such a tensor waits for its digest
                     first, and the trace is the one recorded without them (default 0: every
                     digest on the training's thread; no effect with --capture or --against)
  --capture SEL      also write the full input and output tensors of the selected ops to
                     DIR/captures/ as safetensors files. SEL: comma-separated terms, all must
                     hold: step=N, index=N (the "#N" of diff/show), op=GLOB, module=GLOB,
                     phase=forward|backward|optimizer|other, limit=N, stop (end the program
                     once captured); e.g. --capture step=2,index=731
  --against REF      compare every op with the reference run REF while recording; at the first
                     divergence capture the op's tensors, stop the program, re-run REF up to
                     that op and explain the difference (exit code 1)
  --continue         with --against: record on after the first divergence
  --trust-run REF    with --against: let REF's recorded command run although REF is not
                     known to be yours (recorded by another user id, on another host, in a
                     directory that no longer resolves to where it was, or by an upguard that
                     did not record who and where). Without it such a REF's command, cwd and
                     environment are printed before anything runs and record refuses (exit
                     4), or asks when stdin and stderr are a terminal
  --no-compile       run with torch.compile disabled (TORCH_COMPILE_DISABLE=1): compiled
                     regions run eagerly, so every op is recorded and a run can be compared op
                     by op with an eager one (docs/torch-compile.md)
  --watch            also watch the ranks for hangs and stragglers, as `upguard watch` does:
                     findings on stderr as they are seen; rings (watch/) and alerts.jsonl in
                     DIR beside the traces (docs/watch.md)
  --exchange XDIR    with --watch, several hosts: share what this host's monitor sees with the
                     other hosts' through XDIR, as `upguard watch --exchange` does
  --host-name NAME   with --exchange: this host's summary is XDIR/NAME.json (default: the
                     hostname)
  --max-bytes N      keep the run's traces within N bytes (a K, M, G or T suffix: powers of
                     1024; e.g. 10G), each rank's trace within N / world size: past it the
                     rank stops recording with one warning, the training goes on, and its
                     trace ends there, readable, marked incomplete
  --no-progress      no progress line: on a terminal, the last row otherwise shows the ranks
                     recording, their step, the steps and ops recorded and the ops per second
                     while the command's output scrolls above it

exit code: the command's own (1 after a divergence with --against); 2 if upguard could not
run it, DIR holds a run (or an interrupted recording) and --overwrite was not given, another
recording writes into DIR, or the command exited 0 having recorded nothing; 4 if --against
REF's recorded command may not run (see --trust-run). A recording that stopped early (a full
disk, a file size limit, --max-bytes) never fails the command: the exit code stays the
command's, and the last line says which rank stopped recording at which step, and why.

example:
  upguard record -o runs/a -- /usr/bin/python3 train.py --lr 3e-4
)";

StatusOr<int> RunRecordCommand(int argc, char** argv) {
  Flags flags("record", {{"out", 'o', true},
                         {"overwrite", 0, false},
                         {"job", 0, true},
                         {"steps", 0, true},
                         {"fingerprint", 0, false},
                         {"max-depth", 0, true},
                         {"ops", 0, true},
                         {"no-stats", 0, false},
                         {"hash-threads", 0, true},
                         {"capture", 0, true},
                         {"against", 0, true},
                         {"continue", 0, false},
                         {"trust-run", 0, true},
                         {"no-compile", 0, false},
                         {"watch", 0, false},
                         {"exchange", 0, true},
                         {"host-name", 0, true},
                         {"max-bytes", 0, true},
                         {"no-progress", 0, false}});
  RETURN_IF_ERROR(flags.Parse(argc, argv, 2));
  if (!flags.Has("out")) return InvalidArgument("missing -o DIR (the run directory to write)");
  if (flags.rest().empty()) {
    return InvalidArgument(
        "missing the command to record after `--`, e.g. "
        "`upguard record -o runs/a -- /usr/bin/python3 train.py`");
  }
  if (!flags.positionals().empty()) {
    return InvalidArgument("unexpected argument '" + flags.positionals()[0] +
                           "'; put the command to record after `--`");
  }
  RecordRequest request;
  request.run_dir = flags.Get("out");
  request.overwrite = flags.Has("overwrite");
  request.job = flags.Has("job") ? flags.Get("job") : SchedulerJob();
  if (flags.Has("job") && request.job.empty()) {
    return InvalidArgument("--job needs an ID that every host's upguard record names alike");
  }
  request.command = flags.rest();
  if (flags.Has("steps")) {
    RETURN_IF_ERROR(ParseStepRange(flags.Get("steps")).status());
    request.steps = flags.Get("steps");
  }
  ASSIGN_OR_RETURN(int64_t max_depth, flags.GetInt("max-depth", -1));
  if (max_depth < -1) return InvalidArgument("--max-depth must be 0 or more");
  request.fingerprint = flags.Has("fingerprint");
  if (request.fingerprint && flags.Has("against")) {
    return InvalidArgument(
        "--fingerprint does not go with --against: an online comparison compares every op; "
        "record the reference and the candidate with --fingerprint and compare them with "
        "`upguard diff`");
  }
  request.max_depth = static_cast<int>(max_depth);
  request.ops = flags.Get("ops");
  request.stats = !flags.Has("no-stats");
  ASSIGN_OR_RETURN(int64_t hash_threads, flags.GetInt("hash-threads", 0));
  if (hash_threads < 0 || hash_threads > 64) {
    return InvalidArgument("--hash-threads must be 0 (off) to 64, not " +
                           std::to_string(hash_threads));
  }
  request.hash_threads = static_cast<int>(hash_threads);
  if (flags.Has("max-bytes")) {
    ASSIGN_OR_RETURN(request.max_bytes, ParseByteSize(flags.Get("max-bytes"), "--max-bytes"));
    if (request.max_bytes == 0) return InvalidArgument("--max-bytes must be more than 0");
  }
  request.watch = flags.Has("watch");
  request.progress = !flags.Has("no-progress");
  if ((flags.Has("exchange") && !request.watch) ||
      (flags.Has("host-name") && !flags.Has("exchange"))) {
    return InvalidArgument("--exchange XDIR goes with --watch, and --host-name with --exchange");
  }
  request.watch_exchange = flags.Get("exchange");
  request.watch_host_name = flags.Get("host-name");
  if (flags.Has("no-compile")) request.env.emplace_back("TORCH_COMPILE_DISABLE", "1");
  if (flags.Has("capture")) {
    RETURN_IF_ERROR(ParseCaptureSelector(flags.Get("capture")).status());
    request.capture = flags.Get("capture");
  }
  if ((flags.Has("continue") || flags.Has("trust-run")) && !flags.Has("against")) {
    return InvalidArgument("--continue and --trust-run go with --against REF (online comparison)");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<RerunConsent> consent,
                   RerunConsent::Make(flags.GetAll("trust-run")));
  if (flags.Has("against")) {
    request.against = flags.Get("against");
    request.continue_after_divergence = flags.Has("continue");
    LoadOptions load;
    load.index_on_demand = true;  // checks the directory and its traces open, reads no ops
    ASSIGN_OR_RETURN(Run reference, LoadRun(request.against, load));
    // At a divergence REF's command is re-run: consent before anything runs, not after the
    // training. (A REF without an argv fails only there, as it always did.)
    StatusOr<RecordRequest> rerun =
        RerunRequest(reference, "the reference", "up to the op where this run first differs",
                     request.against + "/explain", *consent);
    if (!rerun.ok() && rerun.status().code() == StatusCode::kUntrusted) return rerun.status();
  }
  const auto started = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(RecordOutcome outcome, RunRecorded(request));
  std::fprintf(stderr, "%s", outcome.summary.c_str());
  // Nothing recorded: run_dir was left as it was, and its online.json (if any) is not this run's.
  if (request.against.empty() || !outcome.recorded) return outcome.exit_code;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return ReportOnline(request, outcome, seconds, std::move(consent));
}

}  // namespace upguard
