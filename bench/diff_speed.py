#!/usr/bin/python3
"""How fast `upguard diff` finds the first divergence, and in how much memory.

usage: diff_speed.py UPGUARD GEN_TOOL [--sizes 1000000,10000000] [--repeat 3] [--cache DIR]

For each size N it makes (once; cached under build/bench-traces/, keyed by the parameters) a
synthetic GPT-like run of N ops over N/10,000 steps with upguard_gen_synthetic_trace, and
candidate runs: an identical one, one with a culprit planted at the start, the middle and near
the end, and two that step digests cannot help with: no StepEnd records (every op compared; the
ops are byte-identical), and no StepEnd records with every string id shifted (every op parsed
field by field). It times `upguard diff --json REFERENCE CANDIDATE` (best of --repeat runs),
checks that the verdict names the planted op, and times `upguard show REFERENCE --step 0`, which
decodes every op of the run (the full decoder, what a diff pays for a step it must walk). It
prints a Markdown table:

  records/s   op records read and compared, both runs together, per second of wall time (show:
              op records of the one run decoded)
  peak RSS    ru_maxrss of the diff process (os.wait4), mapped trace pages included

Targets: a scan at >= 20 M records/s; the divergence (or identity) of two 10 M-op runs found
in <= 1 s when step digests allow skipping; peak RSS that does not grow with the traces.
Exit code 1 when a diff fails or names the wrong op; misses of a target are reported, not fatal.
"""

import argparse
import json
import os
import subprocess
import sys
import time

GEN_VERSION = 1  # bump when the generator's output changes, to regenerate cached traces
OPS_PER_STEP = 10_000
SCAN_TARGET = 20e6  # records/s
SKIP_TARGET = 1.0  # seconds, for 10 M-op runs
MiB = 1 << 20


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("upguard")
    parser.add_argument("gen_tool")
    parser.add_argument("--sizes", default="1000000,10000000",
                        help="comma-separated op counts per run (default 1000000,10000000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case (best kept)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--cache", default=os.path.join(root, "build", "bench-traces"),
                        help="where generated runs are kept between invocations")
    return parser.parse_args()


def generate(gen_tool, cache, ops, flags):
    """The run directory for these generator flags, generated unless cached; its planted op."""
    key = f"v{GEN_VERSION}_ops{ops}" + "".join(
        "_" + f.lstrip("-").replace("-", "") for f in flags)
    run_dir = os.path.join(cache, key)
    info_path = os.path.join(run_dir, "generated.txt")
    if not os.path.exists(info_path):
        steps = max(1, ops // OPS_PER_STEP)
        started = time.perf_counter()
        result = subprocess.run([gen_tool, run_dir, "--ops", str(ops), "--steps", str(steps)] +
                                flags, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"diff_speed: {gen_tool} failed:\n{result.stderr}")
        with open(info_path, "w") as f:
            f.write(result.stdout)
        print(f"  generated {key} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    planted = None
    with open(info_path) as f:
        for line in f:
            if line.startswith("planted "):
                planted = dict(field.split("=", 1) for field in line.split()[1:])
    return run_dir, planted


def run_diff(upguard, a, b, repeat):
    """Best wall time of `repeat` runs of `upguard diff --json a b`, with that run's CPU time,
    peak RSS (os.wait4 rusage) and JSON output."""
    return run_timed(upguard, ["diff", "--json", a, b], repeat)


def run_timed(upguard, argv, repeat):
    """Best wall time of `repeat` runs of `upguard ARGV`, with that run's CPU time, peak RSS
    (os.wait4 rusage) and JSON output (None when ARGV has no --json)."""
    best = None
    for _ in range(repeat):
        read_fd, write_fd = os.pipe()
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            os.dup2(write_fd, 1)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            os.execv(upguard, [upguard] + argv)
        os.close(write_fd)
        chunks = []
        while True:
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(read_fd)
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            sys.exit(f"diff_speed: upguard {' '.join(argv)} exited {code}")
        output = b"".join(chunks)
        run = {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
               "rss": usage.ru_maxrss * 1024,
               "json": json.loads(output) if "--json" in argv else None}
        if best is None or wall < best["wall"]:
            best = run
    return best


def verdict_text(result, planted):
    """The verdict, and whether it names the planted op; False as 2nd value when it does not."""
    rank = result["ranks"][0]
    verdict = result["verdict"]
    if verdict == "identical":
        return "identical", planted is None
    where = rank["divergence"] or {}
    if verdict == "structural":
        s = rank["structural"]
        where = {"op": s["only_b"][0]["op"] if s["only_b"] else "?", "step": s["step"],
                 "index_b": s["index_b"]}
    text = f"{verdict} {where.get('op')} step {where.get('step')} #{where.get('index_b')}"
    ok = planted is not None and (str(where.get("op")), str(where.get("step")),
                                  str(where.get("index_b"))) == (planted["op"], planted["step"],
                                                                 planted["index"])
    return text + (" (planted)" if ok else " (NOT the planted op)"), ok


def main():
    args = parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    os.makedirs(args.cache, exist_ok=True)
    rows, failures, rss_by_size = [], [], {}
    for ops in sizes:
        reference, _ = generate(args.gen_tool, args.cache, ops, [])
        trace_bytes = os.path.getsize(os.path.join(reference, "rank0.ugt"))
        cases = [
            # The seed is the default: a byte-identical run in its own file.
            ("identical", ["--seed", "1"], "skip"),
            ("diverge at start", ["--diverge-at", "0"], "skip"),
            ("diverge in the middle", ["--diverge-at", str(ops // 2 + 1234)], "skip"),
            ("diverge near the end", ["--diverge-at", str(ops - 500)], "skip"),
            ("scan: no StepEnd", ["--no-step-ends"], "scan"),
            ("scan: no StepEnd, ids shifted", ["--no-step-ends", "--shift-ids"], "scan"),
        ]
        for name, flags, kind in cases:
            candidate, planted = generate(args.gen_tool, args.cache, ops, flags)
            run = run_diff(args.upguard, reference, candidate, args.repeat)
            verdict, ok = verdict_text(run["json"], planted)
            if not ok:
                failures.append(f"{ops} ops, {name}: {verdict}")
            records = 2 * ops
            rate = records / run["wall"]
            if kind == "scan":
                target = ">= 20 M rec/s"
                met = rate >= SCAN_TARGET
                miss = f"MISS ({rate / SCAN_TARGET - 1:+.1%})"
            else:
                target = "<= 1 s" if ops >= 10_000_000 else "-"
                met = run["wall"] <= SKIP_TARGET
                miss = f"MISS ({run['wall'] / SKIP_TARGET - 1:+.1%})"
            result = ("PASS" if met else miss) if target != "-" else ""
            rss_by_size.setdefault(ops, []).append(run["rss"])
            rows.append(f"| {ops:,} | {name} | {verdict} | {run['wall']:.3f} | "
                        f"{run['cpu']:.3f} | {rate / 1e6:.1f} M | {run['rss'] / MiB:.0f} | "
                        f"{target} | {result} |")
        # Every op of the reference decoded (RankTrace::CheckAllOps), step 0 printed.
        run = run_timed(args.upguard, ["show", reference, "--step", "0"], args.repeat)
        rows.append(f"| {ops:,} | decode: show --step 0 (every op) | - | {run['wall']:.3f} | "
                    f"{run['cpu']:.3f} | {ops / run['wall'] / 1e6:.1f} M | "
                    f"{run['rss'] / MiB:.0f} | - |  |")
        rows.append(f"| {ops:,} | (trace size) | {trace_bytes / MiB:,.0f} MiB per run | | | | | "
                    f"| |")

    print("| ops per run | case | verdict | wall s | cpu s | records/s | peak RSS MiB | target "
          "| result |")
    print("|---:|---|---|---:|---:|---:|---:|---|---|")
    for row in rows:
        print(row)
    if len(rss_by_size) >= 2:
        small, large = min(rss_by_size), max(rss_by_size)
        rss_small, rss_large = max(rss_by_size[small]) / MiB, max(rss_by_size[large]) / MiB
        flat = rss_large <= 1.5 * rss_small + 16
        print(f"\npeak RSS: {rss_small:.0f} MiB at {small:,} ops, {rss_large:.0f} MiB at "
              f"{large:,} ops ({large // small}x the trace) — memory bounded: "
              f"{'PASS' if flat else 'MISS'}")
    print("\nrecords/s: op records of both runs per second of wall time; one thread "
          "(cpu s ~ wall s). Best of", args.repeat, "runs; traces in the page cache.")
    for failure in failures:
        print("FAIL", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
