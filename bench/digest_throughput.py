#!/usr/bin/python3
"""Digest throughput against a memory read of the same bytes, as a Markdown table.

    bench/digest_throughput.py BINARY [--large] [--filter REGEX]

BINARY is upguard_digest_benchmark (src/digest/digest_benchmark.cc). It runs with three
repetitions, interleaved, and the table shows medians; every ratio divides two numbers measured
in the same run, at the same size and thread count (the machine is shared and noisy). --large
adds the 256 MiB and 1 GiB sizes (UPGUARD_BENCH_LARGE=1); --filter runs only the benchmarks
whose names match (Google Benchmark's --benchmark_filter; keep MemoryRead in it for the
ratios). GB/s are 10^9 bytes per second.

Targets (the "Performance" issue and issue 19): with statistics v2 (the default), contiguous
float32, bfloat16 and float16 at least 0.8x the memory read for tensors of 1 MiB or more, on one
thread and on all; transposed views of those at least 0.5x on one thread; and at most 1 us per
digest of a tiny tensor (1 to 64 elements). Statistics v1 and hash-only rows are reported beside
them, not judged. A summary table gives "x read" per case and size on one thread.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

RATIO_TARGET = 0.8
TRANSPOSED_TARGET = 0.5
RATIO_MIN_BYTES = 1 << 20
JUDGED_MODE = "stats_v2"
DTYPES = ("f32", "bf16", "f16")
MODES = ("stats_v1", "stats_v2", "hash")
TINY_TARGET_NS = 1000.0

NAME = re.compile(
    r"^(?P<kind>MemoryRead|DigestTiny|DigestMasked|Digest)/"
    r"(?:(?P<dtype>f32|bf16|f16)/)?(?:(?P<layout>contiguous|transposed)/)?"
    r"(?:(?P<mode>stats_v1|stats_v2|hash)/)?"
    r"(?:bytes:(?P<bytes>\d+)/)?(?:numel:(?P<numel>\d+))?(?:threads:(?P<threads>\d+))?")


def size_text(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size // scale} {unit}"
    return f"{size} B"


def run_benchmark(binary: str, large: bool, name_filter: str | None = None) -> dict:
    env = dict(os.environ)
    if large:
        env["UPGUARD_BENCH_LARGE"] = "1"
    else:
        env.pop("UPGUARD_BENCH_LARGE", None)
    extra = [f"--benchmark_filter={name_filter}"] if name_filter else []
    result = subprocess.run(
        [binary, *extra, "--benchmark_format=json", "--benchmark_repetitions=3",
         "--benchmark_report_aggregates_only=true",
         # Repetitions of all benchmarks in shuffled order, so that a burst of load from
         # another process spreads over cases instead of landing on one side of a ratio.
         "--benchmark_enable_random_interleaving=true"],
        capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"{binary} failed (exit {result.returncode}):\n{result.stderr[-2000:]}")
    return json.loads(result.stdout)


def medians(report: dict) -> list[dict]:
    """One row per benchmark: its parsed name, median seconds per call and bytes/s."""
    rows = []
    for bench in report["benchmarks"]:
        if bench.get("aggregate_name") != "median":
            continue
        match = NAME.match(bench["run_name"])
        if match is None:
            continue
        unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[bench.get("time_unit", "ns")]
        row = {key: value for key, value in match.groupdict().items() if value is not None}
        row["seconds"] = bench["real_time"] * unit
        row["bytes_per_second"] = bench.get("bytes_per_second")
        rows.append(row)
    return rows


def time_text(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def mode_text(mode: str) -> str:
    return {"stats_v1": "stats v1", "stats_v2": "stats v2", "hash": "hash only"}[mode]


def target_of(row: dict) -> float | None:
    """The least ratio to the read that a row must reach, or None when it is not judged."""
    if row["kind"] != "Digest" or row["mode"] != JUDGED_MODE or int(row["bytes"]) < RATIO_MIN_BYTES:
        return None
    if row["layout"] == "contiguous":
        return RATIO_TARGET
    return TRANSPOSED_TARGET if int(row["threads"]) == 1 else None


def table(rows: list[dict]) -> tuple[str, list[str]]:
    reads = {(int(r["bytes"]), int(r["threads"])): r["bytes_per_second"]
             for r in rows if r["kind"] == "MemoryRead"}
    lines = ["| size | case | threads | time per digest | GB/s | x read | target | result |",
             "| ---: | --- | ---: | ---: | ---: | ---: | --- | --- |"]
    judged = []  # (passed, text) per judged row
    order = {"MemoryRead": 0, "Digest": 1, "DigestMasked": 2}
    sized = sorted((r for r in rows if r["kind"] != "DigestTiny"),
                   key=lambda r: (int(r["threads"]), int(r["bytes"]), order[r["kind"]]))
    for row in sized:
        size, threads = int(row["bytes"]), int(row["threads"])
        read = reads.get((size, threads))
        rate = row["bytes_per_second"]
        if row["kind"] == "MemoryRead":
            case = "memory read (uint64 sum)"
        elif row["kind"] == "DigestMasked":
            case = f"f32 contiguous {mode_text(row['mode'])}, a causal mask's -Inf above the diagonal"
        else:
            case = f"{row['dtype']} {row['layout']} {mode_text(row['mode'])}"
        ratio = rate / read if read else None
        target = result = ""
        least = target_of(row)
        if least is not None and ratio is not None:
            target = f">= {least}x read"
            passed = ratio >= least
            result = "PASS" if passed else f"MISS ({ratio / least:.2f} of target)"
            judged.append((passed, f"{case}, {size_text(size)}, {threads} thread(s): {ratio:.2f}x"))
        lines.append(f"| {size_text(size)} | {case} | {threads} | {time_text(row['seconds'])} | "
                     f"{rate / 1e9:.1f} | {'' if ratio is None else f'{ratio:.2f}'} | {target} | "
                     f"{result} |")
    for row in sorted((r for r in rows if r["kind"] == "DigestTiny"),
                      key=lambda r: (r["dtype"], r["mode"], int(r["numel"]))):
        ns = row["seconds"] * 1e9
        passed = ns <= TINY_TARGET_NS
        judged.append((passed, f"tiny {row['dtype']} {row['mode']} {row['numel']} elements: "
                               f"{ns:.0f} ns"))
        numel = int(row["numel"])
        lines.append(f"| {numel} element{'s' if numel > 1 else ''} | {row['dtype']} tiny "
                     f"{mode_text(row['mode'])} | 1 | {ns:.0f} ns | | "
                     f"| <= 1 us | {'PASS' if passed else 'MISS'} |")
    return "\n".join(lines), [text for passed, text in judged if not passed]


def summary(rows: list[dict]) -> str:
    """x read per case (columns: sizes of 1 MiB or more), one thread: v1 beside v2."""
    sizes = sorted({int(r["bytes"]) for r in rows
                    if r["kind"] == "MemoryRead" and int(r["bytes"]) >= RATIO_MIN_BYTES})
    reads = {int(r["bytes"]): r["bytes_per_second"]
             for r in rows if r["kind"] == "MemoryRead" and int(r["threads"]) == 1}
    digests = {(r["dtype"], r["layout"], r["mode"], int(r["bytes"])): r["bytes_per_second"]
               for r in rows if r["kind"] == "Digest" and int(r["threads"]) == 1}
    head = "| case (1 thread) | " + " | ".join(size_text(size) for size in sizes) + " | target |"
    lines = [head, "| --- |" + " ---: |" * len(sizes) + " --- |",
             "| memory read, GB/s | " +
             " | ".join(f"{reads[size] / 1e9:.1f}" if size in reads else "" for size in sizes) +
             " | |"]
    for layout in ("contiguous", "transposed"):
        for dtype in DTYPES:
            for mode in MODES:
                cells = []
                for size in sizes:
                    rate = digests.get((dtype, layout, mode, size))
                    cells.append(f"{rate / reads[size]:.2f}" if rate and reads.get(size) else "")
                least = target_of({"kind": "Digest", "mode": mode, "layout": layout,
                                   "bytes": RATIO_MIN_BYTES, "threads": 1})
                lines.append(f"| {dtype} {layout} {mode_text(mode)} | " + " | ".join(cells) +
                             f" | {'' if least is None else f'>= {least}x'} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary", help="path to upguard_digest_benchmark")
    parser.add_argument("--large", action="store_true", help="add 256 MiB and 1 GiB")
    parser.add_argument("--filter", help="only benchmarks whose names match this regex")
    args = parser.parse_args()
    report = run_benchmark(args.binary, args.large, args.filter)
    rows = medians(report)
    text, misses = table(rows)
    context = report.get("context", {})
    kernel = context.get("stats_kernel", "?")
    print(f"Statistics kernel: {kernel}; leaf hash: {context.get('leaf_hash', '?')}; "
          f"memory read: {context.get('read_kernel', '?')} uint64 sum; "
          f"{context.get('num_cpus', '?')} CPUs; medians of 3 repetitions.\n")
    print(summary(rows))
    print()
    print(text)
    print()
    if misses:
        print("Targets missed: " + "; ".join(misses) + ".")
    else:
        print("All targets met.")


if __name__ == "__main__":
    main()
