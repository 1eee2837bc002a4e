#!/usr/bin/python3
"""The diff of a many-rank run: time per rank, total time and peak memory, one thread vs two.

usage: multirank_diff.py DIFF_BENCH SYNTH_RUN [--ranks 64] [--steps 16] [--ops-per-step 10000]
                         [--repeat 5] [--cache DIR]

Makes (once; cached under build/bench-traces/, keyed by the parameters) four runs of RANKS
ranks with upguard_synth_run: a reference, an identical run in its own files, one with a
culprit planted on one rank (rank RANKS*0.6) two steps before the end, and one on other data
(every rank diverges at its first op, as when a divergence has spread through an all-reduce). For each candidate it
runs `upguard_diff_benchmark REF CAND --jobs J` for J = 1 and 2, interleaved, --repeat times
(medians), and 3 times with --per-rank (each rank diffed alone, for the time per rank). Prints a
Markdown table:

  diff s        wall time of DiffRuns (after loading: opening and mapping 2 x RANKS files)
  cpu s         CPU time of DiffRuns, all threads
  ms per rank   wall time / ranks: what each rank adds to the diff on this pool
  peak RSS      ru_maxrss of the process, mapped trace pages included

and the trace volume (bytes per rank per step, per op). Exit code 1 when a diff fails, names the
wrong rank, or gives a different answer with two threads than with one.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

GEN_VERSION = 1  # bump when the generator's output changes, to regenerate cached runs
MiB = 1 << 20


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("diff_bench")
    parser.add_argument("synth_run")
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--ops-per-step", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per case (median)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--cache", default=os.path.join(root, "build", "bench-traces"),
                        help="where generated runs are kept between invocations")
    return parser.parse_args()


def generate(args, name, flags):
    """The run directory for these generator flags, generated unless cached; its output lines."""
    key = (f"multirank_v{GEN_VERSION}_r{args.ranks}_s{args.steps}_k{args.ops_per_step}_{name}")
    run_dir = os.path.join(args.cache, key)
    info_path = os.path.join(run_dir, "generated.txt")
    if not os.path.exists(info_path):
        started = time.perf_counter()
        result = subprocess.run(
            [args.synth_run, "--out", run_dir, "--ranks", str(args.ranks), "--steps",
             str(args.steps), "--ops-per-step", str(args.ops_per_step)] + flags,
            capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"multirank_diff: {args.synth_run} failed:\n{result.stderr}")
        with open(info_path, "w") as f:
            f.write(result.stdout)
        print(f"  generated {key} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    with open(info_path) as f:
        return run_dir, f.read()


def diff(args, a, b, jobs, per_rank=False):
    command = [args.diff_bench, a, b, "--jobs", str(jobs)] + (["--per-rank"] if per_rank else [])
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"multirank_diff: {' '.join(command)} failed:\n{result.stderr}")
    return json.loads(result.stdout)


def trace_bytes(run_dir):
    return sum(os.path.getsize(os.path.join(run_dir, name)) for name in os.listdir(run_dir)
               if name.endswith(".ugt"))


def main():
    args = parse_args()
    os.makedirs(args.cache, exist_ok=True)
    load_before = os.getloadavg()[0]
    planted_rank = args.ranks * 6 // 10
    planted_step = max(0, args.steps - 2)
    reference, _ = generate(args, "a", [])
    identical, _ = generate(args, "b", [])
    diverged, info = generate(args, f"diverge{planted_rank}", [
        "--diverge-rank", str(planted_rank), "--diverge-step", str(planted_step),
        "--diverge-op", str(args.ops_per_step // 2)])
    other_data, _ = generate(args, "seed2", ["--seed", "2"])
    planted = dict(field.split("=", 1) for line in info.splitlines()
                   if line.startswith("planted ") for field in line.split()[1:])
    every_rank = list(range(args.ranks))
    cases = [("identical", identical, "identical", []),
             (f"culprit on rank {planted_rank}, step {planted['step']}", diverged, "culprit",
              [planted_rank]),
             ("other data: every rank diverges at step 0", other_data, "propagated", every_rank)]
    failures, rows, per_rank_rows = [], [], []
    for name, candidate, expected_verdict, expected_ranks in cases:
        runs = {1: [], 2: []}
        for _ in range(args.repeat):
            for jobs in runs:  # interleaved: the machine's noise falls on both alike
                runs[jobs].append(diff(args, reference, candidate, jobs))
        answers = {(r["verdict"], tuple(r["divergent_ranks"])) for rs in runs.values() for r in rs}
        if answers != {(expected_verdict, tuple(expected_ranks))}:
            failures.append(f"{name}: answers {sorted(answers)}")
        base = statistics.median(r["diff_s"] for r in runs[1])
        for jobs, results in runs.items():
            wall = statistics.median(r["diff_s"] for r in results)
            cpu = statistics.median(r["diff_cpu_s"] for r in results)
            rss = statistics.median(r["peak_rss_kib"] for r in results) * 1024
            load = statistics.median(r["load_s"] for r in results)
            first = results[0]
            rows.append(f"| {name} | {first['verdict']} ({len(first['divergent_ranks'])} "
                        f"ranks) | {jobs} | {wall:.3f} | "
                        f"{base / wall:.2f}x | {cpu:.3f} | {1000 * wall / args.ranks:.1f} | "
                        f"{load * 1000:.0f} | {rss / MiB:.0f} |")
        # Each rank's median over 3 passes (one pass is at the mercy of the machine's noise).
        passes = [diff(args, reference, candidate, 1, per_rank=True)["rank_s"] for _ in range(3)]
        alone = [statistics.median(times) for times in zip(*passes)]
        slowest = max(range(len(alone)), key=lambda idx: alone[idx])
        per_rank_rows.append(f"| {name} | {1000 * statistics.median(alone):.1f} | "
                             f"{1000 * max(alone):.1f} (rank {slowest}) | "
                             f"{1000 * sum(alone):.0f} |")

    volume = trace_bytes(reference)
    ops = args.ranks * args.steps * args.ops_per_step
    print(f"{args.ranks} ranks x {args.steps} steps x {args.ops_per_step:,} GPT-like ops per run: "
          f"{volume / MiB:,.0f} MiB per run, **{volume / (args.ranks * args.steps) / 1024:,.0f} "
          f"KiB per rank per step** ({volume / ops:.1f} bytes per op).\n")
    print("| candidate | verdict | jobs | diff s | speedup | cpu s | ms per rank | load ms "
          "| peak RSS MiB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(row)
    print("\nEach rank diffed alone (one thread, one rank at a time; each rank's median of 3 "
          "passes):\n")
    print("| candidate | median ms per rank | slowest ms | sum ms |")
    print("|---|---:|---:|---:|")
    for row in per_rank_rows:
        print(row)
    load = os.getloadavg()[0]
    print(f"\nMedians of {args.repeat} runs, jobs 1 and 2 interleaved; traces in the page cache; "
          f"{os.cpu_count()} cores, load average {load_before:.1f} before and {load:.1f} after. "
          "Same verdict and divergent ranks with 1 and 2 threads: "
          f"**{'PASS' if not failures else 'FAIL'}**.")
    for failure in failures:
        print("FAIL", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
