"""Training-step overhead of `upguard record --fingerprint`, measured side by side in one process.

Blocks of N training steps run in pairs, one untraced and one inside a fingerprint recording
(upguard.record(..., fingerprint=True)), the order alternating from pair to pair. Each
recording's start and stop, and one warm-up step, fall outside the timed steps: in a long run
they happen once. The ratio is the median of the pairs' ratios, so a slow period of the shared
machine weighs on both sides of a pair alike. Also the trace bytes a step.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/fingerprint_overhead.py [--quick]

Prints a Markdown table; --json writes the rows (bench/run_all.py judges the 1.02x target).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from typing import Dict, List

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import upguard  # noqa: E402
from training_overhead import make_trainer  # noqa: E402


def measure(name: str, layers: int, width: int, block: int, batch: int, steps_per_block: int,
            pairs: int) -> Dict:
    steps = make_trainer(layers, width, block, batch)
    steps(2)  # warm up
    untraced: List[float] = []
    traced: List[float] = []
    trace_bytes: List[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(pairs):
            def fingerprinted() -> float:
                run_dir = os.path.join(tmp, f"run{pair}")
                with upguard.record(run_dir, fingerprint=True) as rec:
                    steps(1)  # the recording's first step names the model's tensors
                    size = os.path.getsize(rec.trace_path)
                    seconds = steps(steps_per_block)
                    trace_bytes.append((os.path.getsize(rec.trace_path) - size) / steps_per_block)
                return seconds

            if pair % 2 == 0:
                untraced.append(steps(steps_per_block))
                traced.append(fingerprinted())
            else:
                traced.append(fingerprinted())
                untraced.append(steps(steps_per_block))
    ratios = [t / u for t, u in zip(traced, untraced)]
    return {"size": name, "untraced_ms": statistics.median(untraced) * 1e3,
            "fingerprint_ms": statistics.median(traced) * 1e3,
            "ratio": statistics.median(ratios), "bytes_per_step": statistics.median(trace_bytes),
            "pairs": pairs, "steps_per_block": steps_per_block}


def table(rows: List[Dict]) -> str:
    out = ["| model | step untraced (ms) | step fingerprinted (ms) | ratio (median of pairs) | "
           "trace bytes/step |", "|---|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['size']} | {r['untraced_ms']:.2f} | {r['fingerprint_ms']:.2f} | "
                   f"{r['ratio']:.3f}x | {r['bytes_per_step']:.0f} |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="demo size only, fewer pairs")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = [measure("demo GPT 2x64, seq 32, batch 8", 2, 64, 32, 8, steps_per_block=20,
                    pairs=6 if args.quick else 60)]
    if not args.quick:
        rows.append(measure("GPT 6x256, seq 128, batch 4", 6, 256, 128, 4, steps_per_block=4,
                            pairs=20))
    print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
