"""`make bench`: runs every benchmark and writes BENCHMARKS.md (command, machine, date, tables).

    /usr/bin/python3 bench/run_all.py --build build/release [--quick] [--out BENCHMARKS.md]

Each benchmark measures its ratios side by side in one run (this machine is shared and
noisy); the tables mark each target PASS or MISS.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = "/usr/bin/python3"


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, {platform.platform()}"


def run(args, env=None, timeout=3600) -> str:
    result = subprocess.run(args, cwd=REPO, capture_output=True, text=True, env=env,
                            timeout=timeout)
    if result.returncode != 0:
        return f"(failed: exit {result.returncode})\n\n```\n{result.stderr[-2000:]}\n```"
    return result.stdout.strip()


def training_section(build: Path, quick: bool) -> str:
    env = dict(os.environ, PYTHONPATH=str(build / "python"))
    with tempfile.NamedTemporaryFile(suffix=".json") as rows_file:
        table = run([PYTHON, "bench/training_overhead.py", "--json", rows_file.name] +
                    (["--quick"] if quick else []), env=env)
        try:
            rows = json.load(open(rows_file.name))
        except (OSError, ValueError):
            rows = []
    verdicts = []
    for row in rows:
        if row["config"] != "digests+stats":
            continue
        target = 1.25 if row["size"].startswith("demo") else 1.10
        verdicts.append(f"- {row['size']}: digests + stats {row['ratio']:.2f}x, target "
                        f"<= {target:.2f}x: **{'PASS' if row['ratio'] <= target else 'MISS'}**; "
                        f"{row['bytes'] / row['ops']:.0f} bytes/op, target <= 64: "
                        f"**{'PASS' if row['bytes'] / row['ops'] <= 64 else 'MISS'}**")
    return ("## Training overhead\n\n`bench/training_overhead.py`: blocks of training steps "
            "under each configuration, interleaved and repeated; medians.\n\n" + table +
            "\n\n" + "\n".join(verdicts))


def find(build: Path, name: str):
    hits = sorted(build.rglob(name))
    return hits[0] if hits else None


def digest_section(build: Path) -> str:
    binary = find(build, "upguard_digest_benchmark")
    script = REPO / "bench" / "digest_throughput.py"
    if binary is None or not script.exists():
        return "## Digest throughput\n\n(not built: upguard_digest_benchmark)"
    return ("## Digest throughput\n\n`bench/digest_throughput.py` over the Google Benchmark "
            "binary `upguard_digest_benchmark`; the baseline reads the same buffer as uint64 "
            "sums in the same binary.\n\n" + run([PYTHON, str(script), str(binary)]))


def diff_section(build: Path) -> str:
    gen = find(build, "upguard_gen_synthetic_trace")
    script = REPO / "bench" / "diff_speed.py"
    if gen is None or not script.exists():
        return "## Diff speed\n\n(not built: upguard_gen_synthetic_trace)"
    return ("## Diff speed\n\n`bench/diff_speed.py`: synthetic traces from "
            "`upguard_gen_synthetic_trace`.\n\n" +
            run([PYTHON, str(script), str(build / "upguard"), str(gen)]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/release")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="BENCHMARKS.md")
    args = parser.parse_args()
    build = (REPO / args.build).resolve()
    sections = [training_section(build, args.quick), digest_section(build), diff_section(build)]
    command = "make bench" + ("  (quick)" if args.quick else "")
    text = (f"# Benchmarks\n\nCommand: `{command}`. Machine: {machine()}. "
            f"Date: {datetime.date.today().isoformat()}. Torch threads: 1 unless stated.\n\n" +
            "\n\n".join(sections) + "\n")
    (REPO / args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
