"""Host time per recorded op (issue 19, part 1): the demo GPT's training step recorded in full
(digests and statistics) against the same step untraced, side by side in one process, and
where that time goes, with the recorder's own options:

  recorded      every op's inputs and outputs digested, with statistics (the default)
  no stats      the same with stats=False: the difference is the statistics' share
  step skipped  recording on, the timed steps outside `steps`: the op callbacks run and record
                nothing (torch boxing every op's inputs and outputs for them, the module hooks,
                upguard's per-op bookkeeping of writes and allocations): the floor under any
                recorded op
  torch only    no recording; callbacks registered as the recorder's that do nothing
                (_C.probe_interception): torch's own cost of intercepting every op, boxing its
                inputs and outputs

Blocks of N steps run in rounds, one block per configuration and one untraced, the order
rotating from round to round; each recording's start, stop and first step fall outside the
timed steps. Per round and configuration: (its step - the untraced step) / ops recorded a step
(the full recording's count for all three); printed are the medians of the rounds, with the
step ratio and the issue's targets (<= 1.0 us an op, <= 1.25x a step) for the full recording.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/op_cost.py [--rounds N] [--json F]
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


CONFIGS = {"recorded": {}, "no stats": {"stats": False}, "step skipped": {"steps": "0"}}


def measure(rounds: int, steps_per_block: int) -> Dict:
    steps = make_trainer(2, 64, 32, 8)
    steps(2)  # warm up
    names = ["untraced"] + list(CONFIGS) + ["torch only"]
    times: Dict[str, List[float]] = {name: [] for name in names}
    ops: List[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for round_idx in range(rounds):
            order = names[round_idx % len(names):] + names[:round_idx % len(names)]
            for name in order:
                if name == "untraced":
                    times[name].append(steps(steps_per_block))
                    continue
                if name == "torch only":
                    _C.probe_interception(True)
                    times[name].append(steps(steps_per_block))
                    _C.probe_interception(False)
                    continue
                with upguard.record(os.path.join(tmp, f"run{round_idx}-{len(times[name])}-"
                                                 f"{name.replace(' ', '_')}"), **CONFIGS[name]):
                    steps(1)  # the first recorded step names the model's tensors
                    before = _C.ops_recorded()
                    times[name].append(steps(steps_per_block))
                    if name == "recorded":
                        ops.append((_C.ops_recorded() - before) / steps_per_block)
    per_op = {name: [(t - u) / o * 1e6 for t, u, o in zip(times[name], times["untraced"], ops)]
              for name in list(CONFIGS) + ["torch only"]}
    recorded = per_op["recorded"]
    return {"untraced_ms": statistics.median(times["untraced"]) * 1e3,
            "recorded_ms": statistics.median(times["recorded"]) * 1e3,
            "ops_per_step": statistics.median(ops),
            "us_per_op": statistics.median(recorded),
            "us_per_op_range": [min(recorded), max(recorded)],
            "ratio": statistics.median(r / u for u, r in zip(times["untraced"],
                                                              times["recorded"])),
            "no_stats_us_per_op": statistics.median(per_op["no stats"]),
            "skipped_us_per_op": statistics.median(per_op["step skipped"]),
            "skipped_ratio": statistics.median(
                r / u for u, r in zip(times["untraced"], times["step skipped"])),
            "torch_only_us_per_op": statistics.median(per_op["torch only"]),
            "rounds": rounds, "steps_per_block": steps_per_block, "torch": torch.__version__}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", "--pairs", type=int, default=12, dest="rounds")
    parser.add_argument("--json", help="also write the row here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    row = measure(args.rounds, steps_per_block=5)
    print("| model | torch | step untraced (ms) | step recorded (ms) | ops a step | "
          "host time an op (us, median; range) | target | step ratio | target | "
          "no stats (us an op) | step skipped (us an op; ratio) | torch only (us an op) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| demo GPT 2x64, seq 32, batch 8 | {row['torch']} | {row['untraced_ms']:.2f} | "
          f"{row['recorded_ms']:.2f} | {row['ops_per_step']:.0f} | {row['us_per_op']:.2f}; "
          f"{row['us_per_op_range'][0]:.2f}-{row['us_per_op_range'][1]:.2f} | <= 1.00 "
          f"**{'PASS' if row['us_per_op'] <= 1.0 else 'MISS'}** | {row['ratio']:.2f}x | <= 1.25x "
          f"**{'PASS' if row['ratio'] <= 1.25 else 'MISS'}** | {row['no_stats_us_per_op']:.2f} | "
          f"{row['skipped_us_per_op']:.2f}; {row['skipped_ratio']:.2f}x | "
          f"{row['torch_only_us_per_op']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(row, f, indent=1)


if __name__ == "__main__":
    main()
