"""Writes per-machine metrics of a data-parallel job as the CSV `upguard machines detect` reads
(docs/formats/machine-metrics-csv.md): cpu_utilization, memory_used_bytes and
training_step_seconds for every machine, with noise, and the job's phases moving every machine
together. With --faulty, that machine is CPU-starved from --fault-at on: busier, slower steps.

    python3 examples/machine_metrics.py -o metrics.csv --faulty 3
    upguard machines detect --input metrics.csv

Synthetic, for trying the detector; real metrics come from `upguard machines agent` or any
monitoring export turned into the same four columns.
"""

from __future__ import annotations

import argparse
import datetime
import random
from pathlib import Path
from typing import List, Optional

START = 1733331200  # 2024-12-04T17:33:20Z


def write_cluster(path: Path, machines: int, points: int, step: float, faulty: Optional[int],
                  fault_at: int, seed: int, iso: bool = False, start: float = START) -> None:
    rng = random.Random(seed)
    lines: List[str] = ["time,machine,metric,value"]
    for point in range(points):
        phase = (point // 40) % 2  # the job's phases move every machine together
        for machine in range(machines):
            t = start + point * step + rng.uniform(-0.05, 0.05) * step  # scrapes jitter
            if iso:
                stamp = datetime.datetime.fromtimestamp(round(t), datetime.timezone.utc)
                stamp_text = stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
            else:
                stamp_text = f"{t:.3f}"
            cpu = 0.55 + 0.1 * phase + rng.gauss(0, 0.02)
            mem = 40e9 + 1e9 * phase + rng.gauss(0, 2e8)
            step_s = 0.8 + rng.gauss(0, 0.01)
            if machine == faulty and point >= fault_at:
                cpu, step_s = cpu + 0.3, step_s + 0.4
            name = f"node-{machine}"
            lines += [f"{stamp_text},{name},cpu_utilization,{cpu:.5f}",
                      f"{stamp_text},{name},memory_used_bytes,{mem:.0f}",
                      f"{stamp_text},{name},training_step_seconds,{step_s:.5f}"]
    body = lines[1:]
    rng.shuffle(body)  # any order is valid
    path.write_text("\n".join([lines[0]] + body) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--machines", type=int, default=8)
    parser.add_argument("--points", type=int, default=300)
    parser.add_argument("--step", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--faulty", type=int, help="the index of the starved machine")
    parser.add_argument("--fault-at", type=int, default=150, help="the point it starts at")
    parser.add_argument("--iso", action="store_true", help="ISO 8601 times")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    write_cluster(args.output, args.machines, args.points, args.step, args.faulty, args.fault_at,
                  args.seed, args.iso)


if __name__ == "__main__":
    main()
