"""`make bench`: runs every benchmark and writes BENCHMARKS.md (command, machine, date, tables).

    /usr/bin/python3 bench/run_all.py --build build/release [--quick] [--out BENCHMARKS.md]
    /usr/bin/python3 bench/run_all.py --build build/release --only multirank   # one section

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
from typing import List, Tuple
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


def fingerprint_section(build: Path, quick: bool) -> str:
    env = dict(os.environ, PYTHONPATH=str(build / "python"))
    with tempfile.NamedTemporaryFile(suffix=".json") as rows_file:
        table = run([PYTHON, "bench/fingerprint_overhead.py", "--json", rows_file.name] +
                    (["--quick"] if quick else []), env=env)
        try:
            rows = json.load(open(rows_file.name))
        except (OSError, ValueError):
            rows = []
    verdicts = [f"- {row['size']}: {row['ratio']:.3f}x, target <= 1.02x: "
                f"**{'PASS' if row['ratio'] <= 1.02 else 'MISS'}**; "
                f"{row['bytes_per_step'] / 1024:.1f} KiB a step" for row in rows]
    return ("## Fingerprint overhead (record --fingerprint)\n\n`bench/fingerprint_overhead.py`: "
            "blocks of training steps in pairs, untraced and fingerprinted, the order "
            "alternating; the median of the pairs' ratios.\n\n" + table + "\n\n" +
            "\n".join(verdicts))


def torch_builds(build: Path) -> List[Tuple[str, str, Path]]:
    """(label, python, build directory) of Debian's torch 1.13 and, where `make build-torch2`
    made one, of PyPI's torch 2.x in .venv-torch2."""
    torch2 = REPO / ".venv-torch2" / "bin" / "python"
    facts = subprocess.run([str(torch2), "cmake/interpreter_facts.py", "--make"], cwd=REPO,
                           capture_output=True, text=True) if torch2.exists() else None
    builds = [("1.13 (Debian)", PYTHON, build)]
    if facts is not None and facts.returncode == 0:
        torch2_build = REPO / facts.stdout.split()[0]
        if (torch2_build / "python").is_dir():
            builds.append(("2.x (PyPI)", str(torch2), torch2_build))
    return builds


def op_cost_section(build: Path, quick: bool) -> str:
    lines: List[str] = []
    for _, python, torch_build in torch_builds(build):  # a row per torch, one after the other
        env = dict(os.environ, PYTHONPATH=str(torch_build / "python"))
        table = run([python, "bench/op_cost.py"] + (["--rounds", "4"] if quick else []),
                    env=env).splitlines()
        lines += table if not lines else table[2:]  # one header
    return ("## Host time per recorded op (issue 19, part 1)\n\n`bench/op_cost.py`: rounds of "
            "the demo GPT's steps, a block untraced and a block under each recording, the order "
            "rotating; per round the added time over the ops a full recording records; medians. "
            "A row per torch (`make build-torch2` adds the torch 2.x one). Where the time goes, "
            "with the recorder's own options: *no stats* records with `stats=False` (the "
            "difference to the full figure is the statistics' share); *step skipped* keeps the "
            "recording on while the timed steps fall outside its `steps`, so the op callbacks "
            "run and record nothing: torch boxing every op's inputs and outputs for them, the "
            "module hooks and upguard's per-op bookkeeping of writes and allocations, the floor "
            "under any recorded op; *torch only* records nothing and registers callbacks as the "
            "recorder's that do nothing (`_C.probe_interception`): torch's own cost of "
            "intercepting every op, boxing its inputs and outputs (docs/design-notes.md, "
            "\"Where torch 2.15's 7.6 us go\").\n\n" +
            "\n".join(lines))


def hash_pool_section(build: Path, quick: bool) -> str:
    env = dict(os.environ, PYTHONPATH=str(build / "python"))
    return ("## Hashing off the training's thread (issue 19, part 3)\n\n`bench/hash_pool.py`: "
            "blocks of the larger GPT's steps (one torch thread) untraced, recorded with every "
            "digest on the training's thread, and recorded with `hash_threads=2`, the order "
            "rotating; medians. The traces are the same (tests/e2e/test_hash_pool.py).\n\n" +
            run([PYTHON, "bench/hash_pool.py"] + (["--rounds", "2"] if quick else []), env=env))


def zoom_section(build: Path, quick: bool) -> str:
    with tempfile.NamedTemporaryFile(suffix=".json") as row_file:
        table = run([PYTHON, "bench/zoom_resume.py", "--build", str(build), "--json",
                     row_file.name] + (["--quick"] if quick else []))
        try:
            row = json.load(open(row_file.name))
        except (OSError, ValueError):
            row = None
    verdict = ""
    if row is not None:
        ok = row["steps"] >= 200 and row["saved"] > 0 and row["same_op"]
        verdict = (f"- resuming saved {row['saved'] * 100:.0f} % of the zoom's time on a "
                   f"{row['steps']}-step run (target: measured on >= 200 steps): "
                   f"**{'PASS' if ok else 'MISS'}**; both zooms name {row['op']}")
    return ("## Zoom time saved by resume points (diff --zoom)\n\n`bench/zoom_resume.py`: "
            "`upguard diff --zoom` on two fingerprint runs, resumed at their "
            "`upguard.resume_point` snapshots and from step 0, alternating; medians.\n\n" +
            table + "\n\n" + verdict)


def torches_section(build: Path, quick: bool) -> str:
    """The training overhead under Debian's torch 1.13 and PyPI's torch 2.x, one after the
    other in this run: the same GPT, steps and configurations (ratios are within each torch)."""
    builds = torch_builds(build)
    out = ["## Training overhead on both torches", "",
           "`bench/training_overhead.py` under each torch, one after the other in one run "
           "(`bench/run_all.py --only torches`); each ratio is to the untraced step of the "
           "same torch.", "",
           "| torch | model | configuration | step (ms) | ratio to untraced | ops/step | "
           "bytes/op |", "|---|---|---|---:|---:|---:|---:|"]
    for label, python, torch_build in builds:
        env = dict(os.environ, PYTHONPATH=str(torch_build / "python"))
        with tempfile.NamedTemporaryFile(suffix=".json") as rows_file:
            version = run([python, "-c", "import torch; print(torch.__version__)"])
            result = run([python, "bench/training_overhead.py", "--json", rows_file.name] +
                         (["--quick"] if quick else []), env=env)
            try:
                rows = json.load(open(rows_file.name))
            except (OSError, ValueError):
                out.append(f"| {label} | - | {result} | | | | |")
                continue
        for row in rows:
            if row["config"] not in ("untraced", "digests", "digests+stats"):
                continue
            ops = f"{row['ops']:.0f}" if row.get("ops") else "-"
            per_op = f"{row['bytes'] / row['ops']:.0f}" if row.get("bytes") and row.get(
                "ops") else "-"
            out.append(f"| {version} | {row['size']} | {row['config']} | {row['step_ms']:.1f} | "
                       f"{row['ratio']:.2f}x | {ops} | {per_op} |")
    return "\n".join(out)


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


def multirank_section(build: Path, quick: bool) -> str:
    bench, synth = find(build, "upguard_diff_benchmark"), find(build, "upguard_synth_run")
    script = REPO / "bench" / "multirank_diff.py"
    if bench is None or synth is None or not script.exists():
        return "## Multi-rank diff\n\n(not built: upguard_diff_benchmark, upguard_synth_run)"
    return ("## Multi-rank diff\n\n`bench/multirank_diff.py`: `upguard_diff_benchmark` (LoadRun "
            "and DiffRuns with `DiffOptions::jobs`) on runs from `upguard_synth_run`.\n\n" +
            run([PYTHON, str(script), str(bench), str(synth)] +
                (["--steps", "8", "--repeat", "3"] if quick else [])))


def watch_section(build: Path, quick: bool) -> str:
    script = REPO / "bench" / "watch_faults.py"
    return ("## Hangs and stragglers (upguard watch)\n\n`bench/watch_faults.py`: each fault "
            "on rank 1 of the DDP GPT, each rank a network namespace of its own, "
            "`upguard watch --attach` in the root namespace.\n\n" +
            run([PYTHON, str(script), "--build", str(build)] +
                (["--hosts", "2", "--healthy", "60"] if quick else [])))


def machines_section(build: Path, quick: bool) -> str:
    script = REPO / "bench" / "machines_eval.py"
    return ("## Faulty machines (upguard machines)\n\n`bench/machines_eval.py`: four "
            "machines, each a network namespace with a cgroup, an agent and one rank of the DDP "
            "GPT; each fault kind on one machine in turn; `upguard machines detect` per method, "
            "with and without the continuity check.\n\n" +
            run([PYTHON, str(script), "--build", str(build)] + (["--quick"] if quick else [])) +
            "\n\n### Scale\n\n`upguard_machines_scale`: one detection pass over 1,000 "
            "machines x 7 metrics x 15 minutes of 1 s samples, one planted machine (its CPU "
            "cut from minute 10); Minder with a model fit on 16 healthy machines.\n\n" +
            run([str(build / "tools" / "upguard_machines_scale")]))


def came_section(build: Path, quick: bool) -> str:
    env = dict(os.environ, PYTHONPATH=str(build / "python"))
    return ("## CAME optimizer (upguard.optim.CAME)\n\n`bench/came_bench.py`: optimizer state "
            "against torch.optim.AdamW, and the step of the fused C++ kernel against the same "
            "algorithm written with torch ops and against AdamW (the optimizers taking turns "
            "on the same gradients).\n\n" +
            run([PYTHON, "bench/came_bench.py"] + (["--quick"] if quick else []), env=env))


SECTIONS = {"training": training_section, "opcost": op_cost_section,
            "hashpool": hash_pool_section,
            "fingerprint": fingerprint_section,
            "zoom": zoom_section,
            "torches": torches_section, "watch": watch_section,
            "machines": machines_section, "came": came_section,
            "digest": lambda build, quick: digest_section(build),
            "diff": lambda build, quick: diff_section(build), "multirank": multirank_section}


def replace_section(text: str, section: str) -> str:
    """`text` with the `## ` section that `section` starts with replaced (appended if absent)."""
    heading = section.split("\n", 1)[0]
    start = text.find(heading + "\n")
    if start < 0:
        return text.rstrip("\n") + "\n\n" + section + "\n"
    end = text.find("\n## ", start + len(heading))
    return text[:start] + section + ("\n" + text[end:] if end >= 0 else "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/release")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="BENCHMARKS.md")
    parser.add_argument("--only", choices=sorted(SECTIONS),
                        help="run one benchmark and replace its section of --out")
    args = parser.parse_args()
    build = (REPO / args.build).resolve()
    if args.only:
        section = SECTIONS[args.only](build, args.quick)
        date = datetime.date.today().isoformat()
        heading, body = section.split("\n", 1)
        section = (f"{heading}\n\nCommand: `bench/run_all.py --only {args.only}`, {date}, "
                   f"{machine()}.\n{body}")
        out = REPO / args.out
        out.write_text(replace_section(out.read_text() if out.exists() else "# Benchmarks\n",
                                       section))
        print(section)
        return
    sections = [SECTIONS[name](build, args.quick) for name in SECTIONS]
    command = "make bench" + ("  (quick)" if args.quick else "")
    text = (f"# Benchmarks\n\nCommand: `{command}`. Machine: {machine()}. "
            f"Date: {datetime.date.today().isoformat()}. Torch threads: 1 unless stated.\n\n" +
            "\n\n".join(sections) + "\n")
    (REPO / args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
