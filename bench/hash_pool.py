"""Hashing off the training's thread (issue 19, part 3): the larger benchmark GPT's training
step untraced, recorded in full with every digest on the training's thread, and recorded with
the recorder's hash pool (`hash_threads`), side by side in one process.

Blocks of N steps rotate through the three settings, the order shifting from round to round;
each recording's start, stop and first step fall outside the timed steps. Printed: per setting
the median step time and its ratio to untraced, and what the pool saved of the recording's
added time. The training runs on one torch thread, so a spare core is there for the pool (the
case it is for: a GPU's training thread leaves the host's other cores idle).

    PYTHONPATH=build/release/python /usr/bin/python3 bench/hash_pool.py [--rounds N] [--json F]
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

SHAPE = (6, 256, 64, 8)  # layers, width, sequence, batch: the larger benchmark GPT


def measure(rounds: int, steps_per_block: int, threads: int) -> Dict:
    steps = make_trainer(*SHAPE)
    steps(2)  # warm up
    times: Dict[str, List[float]] = {"untraced": [], "recorded": [], "pool": []}
    digests: List[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        def recorded(name: str, hash_threads: int) -> float:
            run = os.path.join(tmp, f"{name}{len(times[name])}")
            with upguard.record(run, hash_threads=hash_threads):
                steps(1)  # the first recorded step names the model's tensors
                seconds = steps(steps_per_block)
            if hash_threads:
                with open(os.path.join(run, "meta.json")) as f:
                    digests.append(json.load(f)["hash_pool"]["digests"])
            return seconds

        settings = [("untraced", lambda: steps(steps_per_block)),
                    ("recorded", lambda: recorded("recorded", 0)),
                    ("pool", lambda: recorded("pool", threads))]
        for round_idx in range(rounds):
            for offset in range(3):
                name, run_block = settings[(round_idx + offset) % 3]
                times[name].append(run_block() / steps_per_block)
    untraced = statistics.median(times["untraced"])
    recorded_ms = statistics.median(times["recorded"])
    pool_ms = statistics.median(times["pool"])
    added = recorded_ms - untraced
    return {"untraced_ms": untraced * 1e3, "recorded_ms": recorded_ms * 1e3,
            "pool_ms": pool_ms * 1e3, "recorded_ratio": recorded_ms / untraced,
            "pool_ratio": pool_ms / untraced,
            "saved_of_added": (recorded_ms - pool_ms) / added if added > 0 else 0.0,
            "digests_per_block": statistics.median(digests) if digests else 0,
            "threads": threads, "rounds": rounds, "steps_per_block": steps_per_block,
            "torch": torch.__version__}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2, help="the pool's threads")
    parser.add_argument("--json", help="also write the row here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    row = measure(args.rounds, steps_per_block=3, threads=args.threads)
    layers, width, seq, batch = SHAPE
    print("| model | torch | step untraced (ms) | recorded (ms, ratio) | with the pool "
          "(ms, ratio) | pool threads | digests the pool took a block | share of the "
          "recording's cost saved |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    print(f"| GPT {layers}x{width}, seq {seq}, batch {batch} | {row['torch']} | "
          f"{row['untraced_ms']:.1f} | {row['recorded_ms']:.1f}, {row['recorded_ratio']:.3f}x | "
          f"{row['pool_ms']:.1f}, {row['pool_ratio']:.3f}x | {row['threads']} | "
          f"{row['digests_per_block']:.0f} | {100 * row['saved_of_added']:.0f} % |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(row, f, indent=1)


if __name__ == "__main__":
    main()
