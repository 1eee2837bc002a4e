"""Host time per recorded op (issue 19, part 1): the demo GPT's training step recorded in full
(digests and statistics) against the same step untraced, side by side in one process.

Blocks of N steps run in pairs, one untraced and one inside upguard.record(...), the order
alternating from pair to pair; each recording's start, stop and first step fall outside the
timed steps. Per pair: (recorded - untraced) / ops recorded a step; printed is the median of
the pairs, with the step ratio and the issue's targets (<= 1.0 us an op, <= 1.25x a step).

    PYTHONPATH=build/release/python /usr/bin/python3 bench/op_cost.py [--pairs N] [--json F]
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
from upguard import _C  # noqa: E402
from training_overhead import make_trainer  # noqa: E402


def measure(pairs: int, steps_per_block: int) -> Dict:
    steps = make_trainer(2, 64, 32, 8)
    steps(2)  # warm up
    untraced: List[float] = []
    recorded: List[float] = []
    ops: List[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(pairs):
            def record() -> float:
                with upguard.record(os.path.join(tmp, f"run{pair}")):
                    steps(1)  # the first recorded step names the model's tensors
                    before = _C.ops_recorded()
                    seconds = steps(steps_per_block)
                    ops.append((_C.ops_recorded() - before) / steps_per_block)
                return seconds

            if pair % 2 == 0:
                untraced.append(steps(steps_per_block))
                recorded.append(record())
            else:
                recorded.append(record())
                untraced.append(steps(steps_per_block))
    per_op = [(r - u) / o * 1e6 for u, r, o in zip(untraced, recorded, ops)]
    return {"untraced_ms": statistics.median(untraced) * 1e3,
            "recorded_ms": statistics.median(recorded) * 1e3,
            "ops_per_step": statistics.median(ops),
            "us_per_op": statistics.median(per_op),
            "us_per_op_range": [min(per_op), max(per_op)],
            "ratio": statistics.median(r / u for u, r in zip(untraced, recorded)),
            "pairs": pairs, "steps_per_block": steps_per_block, "torch": torch.__version__}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--json", help="also write the row here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    row = measure(args.pairs, steps_per_block=5)
    print("| model | torch | step untraced (ms) | step recorded (ms) | ops a step | "
          "host time an op (us, median; range) | target | step ratio | target |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| demo GPT 2x64, seq 32, batch 8 | {row['torch']} | {row['untraced_ms']:.2f} | "
          f"{row['recorded_ms']:.2f} | {row['ops_per_step']:.0f} | {row['us_per_op']:.2f}; "
          f"{row['us_per_op_range'][0]:.2f}-{row['us_per_op_range'][1]:.2f} | <= 1.00 "
          f"**{'PASS' if row['us_per_op'] <= 1.0 else 'MISS'}** | {row['ratio']:.2f}x | <= 1.25x "
          f"**{'PASS' if row['ratio'] <= 1.25 else 'MISS'}** |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(row, f, indent=1)


if __name__ == "__main__":
    main()
