"""Time `upguard diff --zoom` saves by resuming at an upguard.resume_point snapshot.

Two fingerprint runs of the example GPT (examples/gpt_train.py, a snapshot every --every
steps), the second with GELU's tanh approximation planted from step --plant on. `upguard diff
--zoom` re-runs both commands to record steps plant-1..plant in full: once with the runs'
snapshots (each re-run resumes at the latest snapshot at or before step plant-1), once with
copies of the runs without them (each re-run trains from step 0). The two zooms alternate,
--repeats times each, in one run of this script; medians. Both must name the same op. Also the
cost of a snapshot: writing one (torch.save of what upguard.resume_point saves), timed alone.

    /usr/bin/python3 bench/zoom_resume.py --build build/release [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parents[1]
TRAIN = REPO / "examples" / "gpt_train.py"
PYTHON = "/usr/bin/python3"


def timed(args: List[str]) -> float:
    start = time.monotonic()
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode not in (0, 1):
        sys.exit(f"{' '.join(args)} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return time.monotonic() - start


def snapshot_write_seconds(snapshot: Path, out: Path) -> float:
    """What upguard.resume_point pays at a snapshot step: torch.save of the snapshot."""
    code = ("import sys, time, statistics, torch\n"
            "s = torch.load(sys.argv[1], weights_only=False)\n"
            "t = []\n"
            "for _ in range(5):\n"
            "    start = time.perf_counter(); torch.save(s, sys.argv[2]); "
            "t.append(time.perf_counter() - start)\n"
            "print(statistics.median(t))\n")
    out_text = subprocess.run([PYTHON, "-c", code, str(snapshot), str(out)], capture_output=True,
                              text=True, check=True).stdout
    return float(out_text.strip())


def zoom_report(upguard: str, a: Path, b: Path) -> Dict:
    out = subprocess.run([upguard, "diff", str(a), str(b), "--zoom", "--json"],
                         capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(f"upguard diff --zoom failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build/release")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", help="also write the row here")
    args = parser.parse_args()
    upguard = str((REPO / args.build / "upguard").resolve())
    steps, plant, every, repeats = (200, 180, 50, 1) if args.quick else (300, 280, 50, 3)
    model = ["--layers", "4", "--width", "128"]
    train = [PYTHON, str(TRAIN), "--quiet", "--steps", str(steps)] + model
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)

        def record(name: str, *extra: str) -> float:
            return timed([upguard, "record", "-o", str(tmp / name), "--fingerprint", "--"] +
                         train + list(extra))

        record_s = record("a", "--resume-every", str(every))
        record("b", "--resume-every", str(every), "--plant", "gelu-tanh", "--plant-step",
               str(plant))
        snapshots = sorted((tmp / "a" / "resume").iterdir())
        snapshot_bytes = statistics.median(p.stat().st_size for p in snapshots)
        save_s = snapshot_write_seconds(snapshots[0], tmp / "write.pt")
        for name in ("a", "b"):
            shutil.copytree(tmp / name, tmp / f"{name}0", ignore=shutil.ignore_patterns("resume"))
        resumed: List[float] = []
        from_zero: List[float] = []
        reports = {}
        for _ in range(repeats):
            for label, a, b, into in (("resumed", "a", "b", resumed),
                                      ("from 0", "a0", "b0", from_zero)):
                start = time.monotonic()
                reports[label] = zoom_report(upguard, tmp / a, tmp / b)
                into.append(time.monotonic() - start)
    ops = {label: (r["ranks"][0]["divergence"] or {}).get("op") for label, r in reports.items()}
    resumed_at = reports["resumed"]["zoom"]["a"]["resumed_at"]
    row = {"steps": steps, "plant_step": plant, "every": every, "resumed_at": resumed_at,
           "zoom_from_zero_s": statistics.median(from_zero),
           "zoom_resumed_s": statistics.median(resumed), "repeats": repeats,
           "same_op": ops["resumed"] == ops["from 0"], "op": ops["resumed"],
           "record_s": record_s, "snapshot_write_s": save_s, "snapshots": len(snapshots),
           "snapshot_bytes": snapshot_bytes}
    row["saved"] = 1 - row["zoom_resumed_s"] / row["zoom_from_zero_s"]
    print("| run | first divergent step | zoom from step 0 | zoom resumed at step | saved | "
          "same op |")
    print("|---|---|---|---|---|---|")
    print(f"| GPT 4x128, {steps} steps, snapshot every {every} | {plant} | "
          f"{row['zoom_from_zero_s']:.1f} s | {resumed_at}: {row['zoom_resumed_s']:.1f} s | "
          f"{row['saved'] * 100:.0f} % | {row['same_op']} ({row['op']}) |")
    print()
    print(f"Writing a snapshot ({snapshot_bytes / 2**20:.1f} MiB) takes {save_s * 1e3:.0f} ms "
          f"(median of 5); the run wrote {len(snapshots)} in its {record_s:.1f} s recording.")
    if args.json:
        Path(args.json).write_text(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
