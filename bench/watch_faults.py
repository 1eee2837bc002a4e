"""`upguard watch` against every injected fault (issue 14, part 4): the full table.

For each fault kind and cluster size (each rank a network namespace of its own:
tests/faults/cluster.py), the time from the fault to the first alert and to the alert naming
the right rank and cause; then healthy training for --healthy seconds, which must raise no
alert; then the watch's overhead on the DDP GPT (bench/watch_overhead.py, side by side), and
the monitor's report of the SIGSTOP case. Root only. Prints Markdown.

    /usr/bin/python3 bench/watch_faults.py --build build/release [--hosts 2 3 4] [--healthy 600]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "faults"))
from watch_cases import CASES, healthy_alerts, run_case  # noqa: E402

ALERT_TARGET_S, CAUSE_TARGET_S = 5.0, 10.0


def seconds(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=str(REPO / "build" / "release"))
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--hosts", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--healthy", type=float, default=600.0, help="seconds of healthy training")
    args = parser.parse_args()
    build = Path(args.build).resolve()
    lines = ["| fault (on rank 1) | hosts | first alert (s) | right cause (s) | trigger | cause | "
             "ranks | result |", "|---|---:|---:|---:|---|---|---|---|"]
    misses = []
    sigstop_report = ""
    with tempfile.TemporaryDirectory() as tmp:
        for hosts in args.hosts:
            for name, case in CASES.items():
                result = run_case(name, build, Path(tmp), hosts=hosts, python=args.python)
                found = result.right or result.first or {}
                ok = (result.correct and result.alert_s is not None
                      and result.alert_s <= ALERT_TARGET_S and result.cause_s <= CAUSE_TARGET_S
                      and result.first["ranks"] in ([1], list(range(hosts))))
                if not ok:
                    misses.append(f"{name} on {hosts} hosts")
                if name == "sigstop" and not sigstop_report:
                    sigstop_report = result.report
                lines.append(f"| {name} | {hosts} | {seconds(result.alert_s)} | "
                             f"{seconds(result.cause_s)} | {found.get('trigger', '-')} | "
                             f"{found.get('cause', '-')} | {found.get('ranks', '-')} | "
                             f"{'PASS' if ok else 'MISS'} |")
        alerts, steps = healthy_alerts(build, Path(tmp), seconds=args.healthy, python=args.python)
    lines.append("")
    lines.append(f"Targets: first alert <= {ALERT_TARGET_S:.0f} s and the right rank and cause "
                 f"<= {CAUSE_TARGET_S:.0f} s, no other rank blamed first: "
                 f"**{'PASS' if not misses else 'MISS (' + ', '.join(misses) + ')'}**.")
    lines.append(f"Healthy training, 2 hosts, {args.healthy:.0f} s ({steps} steps): "
                 f"{len(alerts)} alerts, target 0: **{'PASS' if not alerts else 'MISS'}**"
                 + ("" if not alerts else f" ({[a['trigger'] for a in alerts]})") + ".")
    overhead = subprocess.run(
        [args.python, str(REPO / "tests" / "faults" / "torchrun.py"), "--nproc_per_node=2",
         str(REPO / "bench" / "watch_overhead.py"), "--build", str(build)],
        capture_output=True, text=True, cwd=REPO)
    try:
        measured = json.loads(overhead.stdout.strip().splitlines()[-1])
        lines.append(f"Overhead on the DDP GPT (2 ranks, gloo, `bench/watch_overhead.py`, "
                     f"{measured['rounds']} alternating blocks of {measured['steps_per_block']} "
                     f"steps): {measured['untraced_ms']:.1f} ms a step untraced, "
                     f"{measured['watch_ms']:.1f} ms watched, **{measured['ratio']:.3f}x**, "
                     f"target <= 1.01x: **{'PASS' if measured['ratio'] <= 1.01 else 'MISS'}**.")
    except (IndexError, ValueError, KeyError):
        lines.append(f"Overhead: not measured ({overhead.stderr[-500:]})")
    if sigstop_report:
        lines += ["", f"The monitor's report of the sigstop case ({args.hosts[0]} hosts), as it "
                  "printed it when stopped:", "", "```", sigstop_report.rstrip(), "```"]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
